#include "timelineindex.h"

#include "timelinestyle.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

namespace rpcscope {

void TimelineIndex::setLayoutOptions(LaneGrouping grouping, const LaneFilter &filter, bool connectionLanes,
                                     const LaneMetrics &metrics, bool changed)
{
    m_grouping = grouping;
    m_filter = filter;
    m_connectionLanes = connectionLanes;
    m_metrics = metrics;
    if (changed) m_layoutDirty = true;
}

void TimelineIndex::setMaxConnectionLanes(size_t n)
{
    if (n == m_maxConnectionLanes) return;
    m_maxConnectionLanes = n;
    m_layoutDirty = true;
}

void TimelineIndex::setRatesEnabled(bool on)
{
    if (on == m_ratesEnabled) return;
    m_ratesEnabled = on;
    if (on) m_rates.sync(*m_store);
}

void TimelineIndex::invalidate()
{
    m_pending.reset();
    m_cacheGeneration = ~std::uint64_t(0);
    m_layoutDirty = true;
    m_framesIndexed = m_pingsIndexed = m_stallsIndexed = 0;
    m_connIndex.clear();
    m_labIndexed = 0;
}

void TimelineIndex::noteChanges(std::uint64_t previousGeneration, const StoreChanges &changes)
{
    if (m_pending) {
        // Two batches before a paint: their changes add up while they follow each other.
        if (m_pending->generation != previousGeneration) {
            m_pending.reset();
            return;
        }
        PendingChanges merged = *m_pending;
        merged.generation = m_store->generation();
        auto &c = merged.changes;
        for (size_t i : changes.changedCalls)
            if (i < c.firstNewCall) c.changedCalls.push_back(i);
        for (size_t i : changes.callsWithNewAttempts)
            if (i < c.firstNewCall) c.callsWithNewAttempts.push_back(i);
        m_pending = std::move(merged);
        return;
    }
    m_pending = PendingChanges{previousGeneration, m_store->generation(), changes};
}

void TimelineIndex::prepareEviction(const std::vector<size_t> &evicted)
{
    refreshLayout();
    m_evictFrom = m_store->generation();
    const auto &calls = m_store->calls();
    for (size_t i : evicted)
        if (i < calls.size() && m_labByCall.count(calls[i].key)) m_evictedWithMarkers.push_back(calls[i].key);
}

void TimelineIndex::listBandMarker(const std::string &key, std::uint64_t pos)
{
    // Kept in position order, so a cut drops a prefix.
    auto &list = m_bandByCall[key];
    list.insert(std::upper_bound(list.begin(), list.end(), pos), pos);
}

void TimelineIndex::markersOfEvictedCallsToBand()
{
    // As if placed with no lane for their call (indexLabEvents): markers on the band, in the store's order,
    // findable by call; suppressed retries stay listed by call.
    if (m_evictedWithMarkers.empty()) return;
    std::vector<std::string> waiting; // their calls are not evicted yet
    for (std::string &key : std::exchange(m_evictedWithMarkers, {})) {
        const auto it = m_labByCall.find(key);
        if (it == m_labByCall.end()) continue;
        if (m_store->callIndex(key)) {
            waiting.push_back(std::move(key));
            continue;
        }
        LabRefs kept;
        const LabRefs &refs = it->second;
        for (size_t j = refs.head; j < refs.refs.size(); ++j) {
            const LabEventRecord *e = refs.refs[j];
            const std::uint64_t pos = refs.at[j];
            if (e->kind == "retry-suppressed") {
                kept.push(e, pos);
                continue;
            }
            const size_t at = m_bandMarkers.insertInOrder(e, pos);
            const auto band = m_bandMarkers.events();
            const size_t k = at - m_bandMarkers.head;
            if ((k > 0 && band[k - 1]->tNs > e->tNs) || (k + 1 < band.size() && e->tNs > band[k + 1]->tNs))
                m_bandInOrder = false;
            listBandMarker(key, pos);
        }
        if (kept.empty())
            m_labByCall.erase(it);
        else
            it->second = std::move(kept);
    }
    m_evictedWithMarkers = std::move(waiting);
}

void TimelineIndex::applyEviction(const std::vector<size_t> &evicted)
{
    const std::uint64_t from = std::exchange(m_evictFrom, ~std::uint64_t(0));
    // The evicted calls stay counted; only their records go (a sync that cannot follow matches by serial).
    if (from == m_cacheGeneration && m_ratesEnabled) m_rates.evict(evicted);
    size_t spans = 0;
    for (size_t i : evicted)
        spans += i < m_callSpanCount.size() ? m_callSpanCount[i] : 0;
    // Only from caches that were current just before, one eviction ago.
    if (from != m_cacheGeneration || from != m_layoutGeneration || m_layoutDirty ||
        m_store->generation() != from + 1 ||
        m_callFirstSpan.size() != m_store->calls().size() + evicted.size() ||
        m_deadSpans + spans > m_spans.size()) {
        invalidate();
        return;
    }
    const EvictionShift remap(evicted);
    constexpr Span kDead{std::numeric_limits<qint64>::min(), std::numeric_limits<qint64>::min(), 0};

    for (size_t i : evicted) {
        for (std::uint32_t k = 0; k < m_callSpanCount[i]; ++k)
            m_spans[m_callFirstSpan[i] + k] = kDead;
        m_deadSpans += m_callSpanCount[i];
    }
    size_t write = 0;
    for (size_t i = 0; i < m_callFirstSpan.size(); ++i) {
        if (remap.gone(i)) continue;
        m_callFirstSpan[write] = m_callFirstSpan[i];
        m_callSpanCount[write] = m_callSpanCount[i];
        ++write;
    }
    m_callFirstSpan.resize(write);
    m_callSpanCount.resize(write);
    std::unordered_map<std::uint64_t, std::uint32_t> extra;
    for (const auto &[key, span] : m_extraSpans) {
        const size_t call = size_t(key >> 32);
        if (remap.gone(call)) {
            m_spans[span] = kDead;
            ++m_deadSpans;
        } else {
            extra.emplace((std::uint64_t(remap(call)) << 32) | (key & 0xFFFFFFFFu), span);
        }
    }
    m_extraSpans = std::move(extra);
    std::erase_if(m_openSpans,
                  [&](const std::pair<std::uint32_t, std::uint32_t> &o) { return remap.gone(o.first); });
    for (auto &o : m_openSpans)
        o.first = std::uint32_t(remap(o.first));
    // The trace now starts at the oldest call kept or lab event (both are in nearly time order).
    m_dataLo = std::numeric_limits<qint64>::max();
    const auto &calls = m_store->calls();
    for (size_t i = 0; i < std::min<size_t>(calls.size(), 256); ++i)
        m_dataLo = std::min<qint64>(m_dataLo, calls[i].startNs());
    const auto &events = m_store->labEvents();
    for (size_t i = 0; i < std::min<size_t>(events.size(), 256); ++i)
        m_dataLo = std::min<qint64>(m_dataLo, events[i].tNs);
    for (size_t i = m_labSeen > m_store->labEventsCut() ? size_t(m_labSeen - m_store->labEventsCut()) : 0;
         i < events.size(); ++i)
        m_dataHi = std::max<qint64>(m_dataHi, events[i].tNs);
    m_labSeen = m_store->labEventsCut() + events.size();
    // Calls evicted from below the ones the lab index looked at: it need not look at any again.
    m_labCalls -= std::min(m_labCalls, evicted.size());
    if (2 * m_deadSpans > m_spans.size()) compactSpans();
    m_spansCurrent = m_store->generation();

    // Connection markers: the frames the store kept from its trimmed front are now first, the rest moved up.
    const auto &frames = m_store->frames();
    const auto trim = m_store->lastFrameTrim();
    if (m_framesIndexed == frames.size() + trim.scanned - trim.kept && trim.kept <= trim.scanned) {
        const std::uint32_t shift = std::uint32_t(trim.scanned - trim.kept);
        for (auto &[conn, index] : m_connIndex) {
            std::erase_if(index.marks, [&](std::uint32_t f) { return f < trim.scanned; });
            for (std::uint32_t &f : index.marks)
                f -= shift;
            index.pings.clear();
            index.stalls.clear();
        }
        std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> front;
        for (size_t i = 0; i < trim.kept; ++i)
            if (isConnectionMark(frames[i])) front[frames[i].connection].push_back(std::uint32_t(i));
        for (auto &[conn, marks] : front) {
            auto &to = m_connIndex[conn].marks;
            to.insert(to.begin(), marks.begin(), marks.end());
        }
        m_framesIndexed = frames.size();
        m_firstFrameNs = frames.empty() ? 0 : frames.front().tNs;
        // Pings and stalls are few: indexed again at the next refresh.
        m_pingsIndexed = m_stallsIndexed = 0;
    }
    // Lanes move up; a layout that cannot follow is rebuilt at the next paint.
    if (m_layout.removeCalls(*m_store, remap, evicted.size(), m_metrics))
        m_layoutGeneration = m_store->generation();
    else
        m_layoutDirty = true;
}

void TimelineIndex::compactSpans()
{
    // Every live span moves down by the dead ones before it; the indices into m_spans follow.
    std::vector<std::uint32_t> newIndex(m_spans.size());
    std::uint32_t write = 0;
    for (size_t i = 0; i < m_spans.size(); ++i) {
        newIndex[i] = write;
        if (m_spans[i].start == std::numeric_limits<qint64>::min() &&
            m_spans[i].end == std::numeric_limits<qint64>::min())
            continue;
        m_spans[write++] = m_spans[i];
    }
    m_spans.resize(write);
    for (std::uint32_t &first : m_callFirstSpan)
        first = first < newIndex.size() ? newIndex[first] : write;
    for (auto &[key, span] : m_extraSpans)
        span = newIndex[span];
    m_deadSpans = 0;
}

void TimelineIndex::absorbAttempt(size_t call, size_t k)
{
    const Call &c = m_store->calls()[call];
    const Attempt &a = c.attempts[k];
    std::uint32_t index;
    if (k < m_callSpanCount[call]) {
        index = m_callFirstSpan[call] + std::uint32_t(k);
    } else {
        auto [it, added] =
            m_extraSpans.try_emplace((std::uint64_t(call) << 32) | k, std::uint32_t(m_spans.size()));
        if (added) m_spans.push_back({});
        index = it->second;
    }
    // Callers make sure an open attempt is not listed yet (absorbCall drops the call's entries, the open pass
    // takes the whole list).
    Span &s = m_spans[index];
    const qint64 end = a.endNs.value_or(m_store->latestNs());
    s = {a.startNs, end, statusGroup(a)};
    if (!a.ended()) m_openSpans.emplace_back(std::uint32_t(call), std::uint32_t(k));
    m_dataLo = std::min<qint64>(m_dataLo, a.startNs);
    m_dataHi = std::max<qint64>(m_dataHi, end);
    // Keep each expected backoff range in view, so a short gap shows how early it came.
    if (k + 1 < c.attempts.size() && a.endNs && (c.retryInitialMs > 0 || a.pushbackMs))
        if (const auto range = c.expectedGapNs(k))
            m_dataHi = std::max<qint64>(m_dataHi, *a.endNs + range->second);

    // What the legend needs to explain.
    std::uint32_t use = 1u << s.group;
    if (a.responseHeadersNs) use |= 1u << kUsePhases;
    if (k > 0) {
        use |= 1u << kUseGap;
        if (c.transparentRetry(k))
            use |= 1u << kUseTransparent;
        else if (c.attempts[k - 1].endNs && c.expectedGapNs(k - 1))
            use |= 1u << kUseExpected;
    }
    if (a.timeoutNs && k == 0)
        use |= 1u << kUseDeadline;
    else if (a.timeoutNs && c.deadlineNs() &&
             std::abs(a.startNs + *a.timeoutNs - *c.deadlineNs()) > attemptTimeoutSlack(*a.timeoutNs))
        use |= 1u << kUseAttemptTimeout;
    if (a.responseHeadersNs && !a.trailersOnly && a.status.value_or(0) != 0) use |= 1u << kUseCommit;
    if (a.pushbackMs && *a.pushbackMs < 0 && a.endNs) use |= 1u << kUsePushback;
    if (a.injected()) use |= 1u << kUseInjected;
    if (a.status) use |= 1u << kUseTrailers | 1u << kUseFrameTicks;
    // In flight is the only state an attempt leaves; it is taken from the open list instead.
    m_callUse |= use & ~(1u << 5);
}

void TimelineIndex::absorbCall(size_t call)
{
    const Call &c = m_store->calls()[call];
    if (call == m_callFirstSpan.size()) {
        m_callFirstSpan.push_back(std::uint32_t(m_spans.size()));
        m_callSpanCount.push_back(std::uint32_t(c.attempts.size()));
        m_spans.resize(m_spans.size() + c.attempts.size());
        // A call's deadline is fixed by its first attempt.
        // Kept sorted; calls arrive in start order, so this nearly always appends.
        if (const auto d = c.deadlineNs())
            m_deadlines.insert(std::upper_bound(m_deadlines.begin(), m_deadlines.end(), *d), *d);
    } else {
        // An open attempt is listed once: drop the call's old entries before absorbing it again.
        std::erase_if(m_openSpans,
                      [call](const std::pair<std::uint32_t, std::uint32_t> &o) { return o.first == call; });
    }
    for (size_t k = 0; k < c.attempts.size(); ++k)
        absorbAttempt(call, k);
}

void TimelineIndex::refresh()
{
    if (m_cacheGeneration == m_store->generation()) return;
    const std::uint64_t previousGeneration = m_cacheGeneration;
    m_cacheGeneration = m_store->generation();

    indexLabEvents();

    // The trace's extent, the overview's flat spans, and what the legend has to explain: updated from the
    // calls one batch changed when the view passed them (noteChanges), rebuilt from every call otherwise.
    const auto &calls = m_store->calls();
    const bool spansCurrent = m_spansCurrent == m_cacheGeneration; // applyEviction() brought them here
    const bool incremental = !spansCurrent && m_pending && m_pending->generation == m_cacheGeneration &&
                             m_pending->previous == previousGeneration &&
                             m_pending->changes.firstNewCall == m_callFirstSpan.size() &&
                             m_callFirstSpan.size() <= calls.size();
    if (spansCurrent) {
    } else if (!incremental) {
        m_deadSpans = 0;
        m_spans.clear();
        m_callFirstSpan.clear();
        m_callSpanCount.clear();
        m_extraSpans.clear();
        m_openSpans.clear();
        m_dataLo = std::numeric_limits<qint64>::max();
        m_dataHi = std::numeric_limits<qint64>::min();
        m_deadlines.clear();
        m_callUse = 0;
        m_labSeen = 0;
        for (size_t i = 0; i < calls.size(); ++i)
            absorbCall(i);
        if (m_ratesEnabled) m_rates.sync(*m_store);
    } else {
        if (m_ratesEnabled) m_rates.sync(*m_store, &m_pending->changes);
        for (size_t i : m_pending->changes.changedCalls)
            absorbCall(i);
        for (size_t i : m_pending->changes.callsWithNewAttempts)
            absorbCall(i);
        for (size_t i = m_pending->changes.firstNewCall; i < calls.size(); ++i)
            absorbCall(i);
        // Open attempts reach the latest event, which moved.
        const auto open = std::move(m_openSpans);
        m_openSpans.clear();
        for (const auto &[call, attempt] : open)
            absorbAttempt(call, attempt);
    }
    m_layoutChanges = incremental ? std::optional(m_pending->changes) : std::nullopt;
    m_pending.reset();
    {
        const auto &events = m_store->labEvents();
        const std::uint64_t cut = m_store->labEventsCut();
        for (size_t i = m_labSeen > cut ? size_t(m_labSeen - cut) : 0; i < events.size(); ++i) {
            m_dataLo = std::min<qint64>(m_dataLo, events[i].tNs);
            m_dataHi = std::max<qint64>(m_dataHi, events[i].tNs);
        }
        m_labSeen = cut + events.size();
    }
    const bool anyFastFail = m_anyFastFail, anyMarker = m_anyMarker;
    m_legendUse = m_callUse | (m_openSpans.empty() ? 0 : 1u << 5) | (anyMarker ? 1u << kUseMarker : 0) |
                  (anyFastFail ? 1u << kUseFastFail : 0) | (m_store->stalls().empty() ? 0 : 1u << kUseStall) |
                  (m_store->frames().empty() || calls.empty() ? 0 : 1u << kUsePhases);
    // What the band and the connection lanes may draw; the passes say what they did (PaintContext::drawn).
    if (m_hasBreaker)
        m_legendUse |= 1u << kUseBreakerClosed | 1u << kUseBreakerOpen | 1u << kUseBreakerHalfOpen |
                       1u << kUseTransition;
    if (anyMarker) m_legendUse |= 1u << kUseCluster;
    if (!m_store->connections().empty()) m_legendUse |= 1u << kUseConnection;
    if (!m_store->frames().empty()) m_legendUse |= 1u << kUseFrameTicks | 1u << kUseTrailers;
    if (const auto &frames = m_store->frames();
        m_dataLo > m_dataHi && !frames.empty() && frames.back().tNs > frames.front().firstNs()) {
        // Connections without calls (a flood, say): the span of their frames.
        const qint64 lo = frames.front().firstNs(), hi = frames.back().tNs;
        const qint64 margin = std::max<qint64>((hi - lo) / 25, 1'000'000);
        m_fullRange = {lo - margin, hi + margin};
    } else if (m_dataLo > m_dataHi) {
        const qint64 o = m_store->originNs();
        m_fullRange = {o, o + 1'000'000'000};
    } else {
        // Deadlines shortly after the last event are part of the story (a deadline chain's budgets); a 10 s
        // default deadline after a 150 ms scenario is not, and stays an arrow at the edge.
        qint64 lo = m_dataLo;
        qint64 hi = m_dataHi;
        // Frames of other connections (a flood beside the calls, a late GOAWAY) are in the picture too: a
        // fit that leaves a connection lane empty reads as "nothing happened there".
        if (const auto &frames = m_store->frames(); !frames.empty()) {
            lo = std::min<qint64>(lo, frames.front().firstNs());
            hi = std::max<qint64>(hi, frames.back().tNs);
        }
        if (auto it = std::upper_bound(m_deadlines.begin(), m_deadlines.end(), hi + (hi - lo) / 2);
            it != m_deadlines.begin())
            hi = std::max(hi, *std::prev(it));
        // 4% on each side so the first and last bars do not touch the edges.
        const qint64 margin = std::max<qint64>((hi - lo) / 25, 1'000'000);
        m_fullRange = {lo - margin, hi + margin};
    }

    // Per-connection markers, indexed incrementally: frames, pings and stalls are append-only until a clear,
    // which shrinks them or replaces the first frame.
    const auto &frames = m_store->frames();
    if (frames.size() < m_framesIndexed || m_store->pings().size() < m_pingsIndexed ||
        m_store->stalls().size() < m_stallsIndexed ||
        (!frames.empty() && frames.front().tNs != m_firstFrameNs)) {
        m_connIndex.clear();
        m_framesIndexed = m_pingsIndexed = m_stallsIndexed = 0;
        m_connUse = 0;
    }
    m_firstFrameNs = frames.empty() ? 0 : frames.front().tNs;
    for (; m_framesIndexed < frames.size(); ++m_framesIndexed) {
        const FrameRecord &f = frames[m_framesIndexed];
        if (!isConnectionMark(f)) continue;
        m_connIndex[f.connection].marks.push_back(std::uint32_t(m_framesIndexed));
        m_connUse |= 1u << (f.isRun()                  ? kUsePing
                            : f.type == FrameSettings  ? kUseSettings
                            : f.type == FrameRstStream ? kUseRst
                                                       : kUseGoaway);
    }
    for (; m_pingsIndexed < m_store->pings().size(); ++m_pingsIndexed) {
        m_connIndex[m_store->pings()[m_pingsIndexed].connection].pings.push_back(
            std::uint32_t(m_pingsIndexed));
        m_connUse |= 1u << kUsePing;
    }
    // The connection lanes' marks the store holds.
    m_legendUse |= m_connUse;
    if (std::any_of(m_store->connections().begin(), m_store->connections().end(),
                    [](const Connection &c) { return !c.openPings.empty(); }))
        m_legendUse |= 1u << kUseUnansweredPing;
    for (; m_stallsIndexed < m_store->stalls().size(); ++m_stallsIndexed)
        m_connIndex[m_store->stalls()[m_stallsIndexed].connection].stalls.push_back(
            std::uint32_t(m_stallsIndexed));
}

void TimelineIndex::LabRefs::push(const LabEventRecord *e, std::uint64_t pos)
{
    refs.push_back(e);
    at.push_back(pos);
}

size_t TimelineIndex::LabRefs::insertInOrder(const LabEventRecord *e, std::uint64_t pos)
{
    const size_t i = size_t(std::upper_bound(at.begin() + head, at.end(), pos) - at.begin());
    refs.insert(i, e);
    at.insert(i, pos);
    return i;
}

void TimelineIndex::LabRefs::dropBefore(std::uint64_t pos)
{
    head = size_t(std::lower_bound(at.begin() + head, at.end(), pos) - at.begin());
    if (head == refs.size()) {
        clear();
    } else if (2 * head >= refs.size()) {
        // The dropped are as many as the kept: moving the kept costs no more than dropping them did.
        refs.erasePrefix(head);
        at.erasePrefix(head);
        head = 0;
    }
}

void TimelineIndex::LabRefs::eraseAt(const std::vector<std::uint64_t> &sorted)
{
    size_t write = 0;
    for (size_t i = head; i < at.size(); ++i) {
        if (std::binary_search(sorted.begin(), sorted.end(), at[i])) continue;
        refs[write] = refs[i];
        at[write++] = at[i];
    }
    refs.truncate(write);
    at.truncate(write);
    head = 0;
}

void TimelineIndex::LabRefs::clear()
{
    refs.clear();
    at.clear();
    head = 0;
}

// Retention cut the store's oldest lab events (positions before `cut`): only their entries go; the rest stay
// where they are, since the store's deque does not move what it keeps.
void TimelineIndex::dropLabEventsBefore(std::uint64_t cut)
{
    m_bandMarkers.dropBefore(cut);
    m_breakerEvents.dropBefore(cut);
    m_fastFails.dropBefore(cut);
    // Only the calls that had an entry before the cut: each entry is taken once, and its call's list drops
    // its prefix (later entries of the same call then find nothing before the cut).
    while (!m_callRefsByPos.empty() && m_callRefsByPos.top().first < cut) {
        const std::string key = m_callRefsByPos.top().second;
        m_callRefsByPos.pop();
        ++m_labCutWork;
        if (const auto it = m_labByCall.find(key); it != m_labByCall.end()) {
            const size_t before = it->second.size();
            it->second.dropBefore(cut);
            m_labCutWork += before - it->second.size();
            if (it->second.empty()) m_labByCall.erase(it);
        }
        if (const auto it = m_bandByCall.find(key); it != m_bandByCall.end()) {
            // Kept in position order (see indexLabEvents).
            auto &list = it->second;
            const auto end = std::lower_bound(list.begin(), list.end(), cut);
            m_labCutWork += size_t(end - list.begin());
            list.erase(list.begin(), end);
            if (list.empty()) m_bandByCall.erase(it);
        }
    }
    // In position order: pushed as placed, and erase_if keeps the order.
    m_bandUnresolved.erase(m_bandUnresolved.begin(),
                           std::lower_bound(m_bandUnresolved.begin(), m_bandUnresolved.end(), cut));
    m_anyFastFail = !m_fastFails.empty();
    m_hasBreaker = m_anyFastFail || !m_breakerEvents.empty();
    m_anyMarker = m_lastMarker > cut;
    m_labIndexed = std::max(m_labIndexed, cut);
}

// Lab events by what they mean to the picture, so paint() never scans every lab event for every lane. Only
// the events new since the last refresh are placed (a burst of reported events must not cost each batch a
// walk of all of them), and a retention cut drops only its own; everything again only when the store
// cleared or moved them.
void TimelineIndex::indexLabEvents()
{
    const auto &events = m_store->labEvents();
    const auto &calls = m_store->calls();
    const std::uint64_t cut = m_store->labEventsCut();
    const bool stale = m_labMoved != m_store->labEventsMoved() || calls.size() < m_labCalls ||
                       m_labIndexed > cut + events.size() || cut < m_labCut;
    if (stale || m_labIndexed == 0) {
        m_hasBreaker = m_anyFastFail = m_anyMarker = false;
        m_bandInOrder = true;
        m_bandMarkers.clear();
        m_labByCall.clear();
        m_bandByCall.clear();
        m_bandUnresolved.clear();
        m_callRefsByPos = {};
        m_breakerEvents.clear();
        m_fastFails.clear();
        m_lastMarker = 0;
        m_labIndexed = cut;
        m_labMoved = m_store->labEventsMoved();
        m_labCalls = calls.size();    // every call is looked up directly below
        m_evictedWithMarkers.clear(); // placed afresh below
    } else if (cut > m_labCut) {
        dropLabEventsBefore(cut);
    }
    m_labCut = cut;
    // After the cut, which the eviction may have made with it: what the lists still hold is in the store.
    markersOfEvictedCallsToBand();
    auto hasLane = [&](const std::string &key) { return m_store->callIndex(key).has_value(); };
    // Band markers that may find their lane now: their call arrived, or their traceparent was resolved.
    std::vector<std::uint64_t> toLane;
    for (size_t i = m_labCalls; i < calls.size(); ++i)
        if (const auto it = m_bandByCall.find(calls[i].key); it != m_bandByCall.end()) {
            toLane.insert(toLane.end(), it->second.begin(), it->second.end());
            m_bandByCall.erase(it);
        }
    m_labCalls = calls.size();
    std::erase_if(m_bandUnresolved, [&](std::uint64_t pos) {
        const LabEventRecord &e = events[pos - cut];
        if (e.callId.empty()) return false;
        if (hasLane(e.callId)) {
            toLane.push_back(pos);
        } else {
            listBandMarker(e.callId, pos);
            m_callRefsByPos.emplace(pos, e.callId);
        }
        return true;
    });
    if (!toLane.empty()) {
        std::sort(toLane.begin(), toLane.end());
        for (std::uint64_t pos : toLane) {
            const LabEventRecord &e = events[pos - cut];
            // In the store's order, as if placed there at first.
            m_labByCall[e.callId].insertInOrder(&e, pos);
            m_callRefsByPos.emplace(pos, e.callId);
        }
        m_bandMarkers.eraseAt(toLane);
    }
    for (; m_labIndexed < cut + events.size(); ++m_labIndexed) {
        const LabEventRecord &e = events[m_labIndexed - cut];
        ++m_labPlaced;
        if (e.kind == "fast-fail") {
            m_anyFastFail = true;
            m_fastFails.push(&e, m_labIndexed);
        }
        if (e.kind == "breaker") m_breakerEvents.push(&e, m_labIndexed);
        if (e.kind == "breaker" || e.kind == "fast-fail") {
            m_hasBreaker = true;
        } else if (e.kind == "retry-suppressed" && !e.callId.empty()) {
            m_labByCall[e.callId].push(&e, m_labIndexed);
            m_callRefsByPos.emplace(m_labIndexed, e.callId);
        } else if (markerLabel(e.kind)) {
            // A marker about a call with a lane goes on that lane; the rest (a bulkhead rejection never
            // reaches the wire) on the policy band, until their call comes.
            m_anyMarker = true;
            m_lastMarker = m_labIndexed + 1;
            if (!e.callId.empty() && hasLane(e.callId)) {
                m_labByCall[e.callId].push(&e, m_labIndexed);
                m_callRefsByPos.emplace(m_labIndexed, e.callId);
                continue;
            }
            const auto band = m_bandMarkers.events();
            if (!band.empty() && band.back()->tNs > e.tNs) m_bandInOrder = false;
            if (e.kind == "retry-suppressed") m_bandInOrder = false;
            m_bandMarkers.push(&e, m_labIndexed);
            if (!e.callId.empty()) {
                m_bandByCall[e.callId].push_back(m_labIndexed);
                m_callRefsByPos.emplace(m_labIndexed, e.callId);
            } else if (!e.traceparent.empty()) {
                m_bandUnresolved.push_back(m_labIndexed);
            }
        }
        if (markerLabel(e.kind)) {
            m_anyMarker = true;
            m_lastMarker = m_labIndexed + 1;
        }
    }
}

void TimelineIndex::refreshLayout()
{
    refresh();
    if (!m_layoutDirty && m_layoutGeneration == m_store->generation()) return;
    // After one batch, only the lanes it touched move (when the layout allows it); otherwise every lane.
    const bool updated = !m_layoutDirty && m_layoutChanges &&
                         m_layoutGeneration + 1 >= m_store->generation() &&
                         m_layout.update(*m_store, *m_layoutChanges, m_metrics);
    if (!updated)
        m_layout.build(*m_store, m_grouping, m_filter, m_metrics,
                       m_connectionLanes ? m_maxConnectionLanes : 0);
    m_layoutGeneration = m_store->generation();
    m_layoutDirty = false;
}

const TimelineLayout &TimelineIndex::layout()
{
    refreshLayout();
    return m_layout;
}

} // namespace rpcscope
