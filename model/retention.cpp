// Retention: a live session left running for hours keeps only what its budget allows, evicting the oldest
// calls whole (never half a call) and keeping pinned ones.

#include "timelinestore.h"

#include <algorithm>
#include <unordered_set>

namespace rpcscope {

namespace {

// What the allocator (glibc's malloc) takes for a block of n bytes: an 8-byte header, 16-byte alignment and a
// 32-byte minimum. Counting requests alone undercounts small blocks by up to half.
size_t heap(size_t n)
{
    return n ? std::max<size_t>(32, (n + 8 + 15) & ~size_t(15)) : 0;
}

size_t stringBytes(const std::string &s)
{
    return s.capacity() > 15 ? heap(s.capacity() + 1) : 0; // beyond the small-string buffer
}

// A node of an unordered_map<K, V> (next pointer, cached hash, the pair) and its bucket pointer.
template <typename K, typename V> constexpr size_t hashNode()
{
    return (sizeof(void *) + sizeof(size_t) + sizeof(std::pair<const K, V>) + 8 + 15) / 16 * 16 + 8;
}

// A deque of T: its records, and per block of 512 bytes the block's header and its map slot.
template <typename T> size_t dequeBytes(const std::deque<T> &d)
{
    const size_t perBlock = std::max<size_t>(1, 512 / sizeof(T));
    return d.size() * sizeof(T) + (d.size() / perBlock + 1) * (16 + sizeof(void *));
}

template <typename T> size_t vectorBytes(const std::vector<T> &v)
{
    return heap(v.capacity() * sizeof(T));
}

constexpr size_t kFrameBytes = sizeof(FrameRecord) + (16 + sizeof(void *)) / (512 / sizeof(FrameRecord)) + 1;
// A call's entries in the key index and (while open) the open-stream index.
constexpr size_t kCallIndexBytes = hashNode<std::string, size_t>();

std::string count(size_t n)
{
    char buf[32];
    if (n >= 1'000'000)
        std::snprintf(buf, sizeof buf, "%.1f M", double(n) / 1e6);
    else if (n >= 10'000)
        std::snprintf(buf, sizeof buf, "%.0f k", double(n) / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%zu", n);
    return buf;
}

} // namespace

size_t TimelineStore::callBytes(const Call &c)
{
    // sizeof(CallSpan): its entry beside it (callsOverlapping).
    size_t n = sizeof(Call) + sizeof(CallSpan) + heap(c.attempts.capacity() * sizeof(Attempt)) +
               stringBytes(c.key) + stringBytes(c.method) + stringBytes(c.clientPeer) +
               stringBytes(c.traceId) + stringBytes(c.spanId) + stringBytes(c.hop) + kCallIndexBytes;
    for (const Attempt &a : c.attempts) {
        n += stringBytes(a.encoding) + stringBytes(a.faultRuleText);
        if (a.statusMessage) n += stringBytes(*a.statusMessage);
    }
    return n;
}

size_t TimelineStore::labEventHeapBytes(const LabEventRecord &e)
{
    return stringBytes(e.kind) + stringBytes(e.detail) + stringBytes(e.callId) + stringBytes(e.traceparent);
}

size_t TimelineStore::floorBytes() const
{
    // Connections are never evicted; the pending injections and the watches are bounded by themselves.
    size_t n =
        vectorBytes(m_unresolvedLabEvents) + m_recentEnded.size() * hashNode<std::uint64_t, std::uint64_t>() +
        m_recentEndedOrder.size() * sizeof(std::uint64_t) +
        m_pendingInjections.size() * (hashNode<std::uint64_t, FaultInjection>() + 32) +
        m_watchDeadline.size() * heap(32 + 16) + m_watchClose.size() * (hashNode<std::uint32_t, int>() + 32);
    n += vectorBytes(m_connections) + m_connections.size() * hashNode<std::uint32_t, size_t>();
    m_retentionWork += m_connections.size();
    for (const Connection &c : m_connections) {
        n += stringBytes(c.client) + stringBytes(c.server) + stringBytes(c.label) +
             stringBytes(c.closeReason) + stringBytes(c.decodeError) + vectorBytes(c.notes) +
             vectorBytes(c.openPings);
        for (const std::string &note : c.notes)
            n += stringBytes(note);
    }
    return n;
}

size_t TimelineStore::approxBytes(size_t *floor) const
{
    const size_t fixed = floorBytes();
    if (floor) *floor = fixed;
    // Sizes, not capacities, for the deques: after an eviction the spare capacity is what the next records
    // fill, so a session's real footprint settles at its budget plus that slack instead of growing.
    size_t n = fixed + dequeBytes(m_frames) + vectorBytes(m_pings) + vectorBytes(m_stalls) +
               m_openStalls.size() * heap(32 + 24);
    // Indices: a hash node per call key and per open stream, a member per traced call.
    n += m_callsByKey.size() * kCallIndexBytes +
         m_openStreams.size() * hashNode<std::uint64_t, AttemptRef>() +
         m_traces.size() * (hashNode<std::string, std::vector<size_t>>() + 32) +
         m_tracedCalls * sizeof(size_t);
    // Calls and attempts by count; their strings and spare capacity from a sample of one call in 64, so this
    // stays cheap enough to run on the GUI thread every few batches.
    n += dequeBytes(m_calls) + m_attemptCount * sizeof(Attempt);
    n += vectorBytes(m_changeLog) + vectorBytes(m_changeMarks); // bounded by the calls (changedSince())
    size_t sampled = 0, extra = 0;
    for (size_t i = 0; i < m_calls.size(); i += 64, ++sampled) {
        const Call &c = m_calls[i];
        extra += callBytes(c) - kCallIndexBytes - sizeof(Call) - c.attempts.size() * sizeof(Attempt);
    }
    if (sampled) n += size_t(double(extra) / double(sampled) * double(m_calls.size()));
    // Lab events by a running sum, kept on append and cut: a burst of millions must not cost each check a
    // walk of all of them.
    n += dequeBytes(m_labEvents) + m_labEventBytes;
    m_retentionWork += sampled;
    return n;
}

std::string TimelineStore::retentionNote() const
{
    const RetentionLoss &l = m_loss;
    std::vector<std::string> what;
    auto add = [&](size_t n, const char *one, const char *many) {
        if (n) what.push_back(count(n) + " " + (n == 1 ? one : many));
    };
    add(l.frames, "frame", "frames");
    add(l.pings, "ping", "pings");
    add(l.stalls, "stall", "stalls");
    add(l.labEvents, "lab event", "lab events");
    std::string note;
    if (!what.empty()) {
        note = "retention dropped ";
        for (size_t i = 0; i < what.size(); ++i)
            note += (i ? ", " : "") + what[i];
        char buf[96];
        std::snprintf(buf, sizeof buf, " (%.1f MB) older than %.1f s", double(l.bytes) / double(1 << 20),
                      double(l.beforeNs - m_originNs) / 1e9);
        note += buf;
    }
    if (l.inFlightCalls)
        note += (note.empty() ? "retention dropped " : "; and ") + count(l.inFlightCalls) +
                (l.inFlightCalls == 1 ? " call" : " calls") + " still in flight";
    return note;
}

void TimelineStore::setPinned(size_t call, bool pinned)
{
    if (call < m_calls.size() && m_calls[call].pinned != pinned) {
        m_calls[call].pinned = pinned;
        m_pinnedCalls += pinned ? 1 : -1;
        ++m_generation;
    }
}

std::vector<size_t> TimelineStore::enforce(const RetentionPolicy &policy, Evicted *gone)
{
    const size_t bytes = policy.maxBytes ? approxBytes() : 0;
    std::vector<size_t> calls = planEviction(policy, bytes);
    evict(calls, gone, planAgeCut(policy, calls, bytes));
    return calls;
}

namespace {
// Over a limit, the byte target eviction works down to; SIZE_MAX when within it.
size_t bytesTarget(const RetentionPolicy &policy, size_t bytes)
{
    if (!policy.maxBytes || bytes <= policy.maxBytes) return SIZE_MAX;
    const size_t floor = std::min(policy.floorBytes, policy.maxBytes);
    return floor + size_t(double(policy.maxBytes - floor) * std::clamp(policy.evictTo, 0.5, 1.0));
}
} // namespace

std::vector<size_t> TimelineStore::planEviction(const RetentionPolicy &policy, size_t knownBytes) const
{
    std::vector<size_t> evicted;
    if (m_calls.empty()) return evicted;
    // A cheap lower bound first, so a session far below its budget costs nothing here; the bytes themselves
    // when the caller knows them. (The bound alone missed a store over its limit whose calls held three times
    // the bound, the change log's capacity beside them: it grew by a few calls a pass past its limit.)
    const size_t floor =
        m_calls.size() * (sizeof(Call) + sizeof(Attempt)) + m_frames.size() * sizeof(FrameRecord);
    const bool nearBytes =
        policy.maxBytes &&
        (knownBytes ? knownBytes > policy.maxBytes
                    : floor > (policy.maxBytes - std::min(policy.floorBytes, policy.maxBytes)) / 2);
    if (!nearBytes && !(policy.maxCalls && m_calls.size() > policy.maxCalls) &&
        !(policy.maxAgeNs && m_calls.front().startNs() < m_latestNs - policy.maxAgeNs))
        return evicted;
    const size_t bytes = knownBytes ? knownBytes : approxBytes();
    const bool overBytes = policy.maxBytes && bytes > policy.maxBytes;
    const bool overCalls = policy.maxCalls && m_calls.size() > policy.maxCalls;
    const std::int64_t ageCut = policy.maxAgeNs ? m_latestNs - policy.maxAgeNs : INT64_MIN;
    const bool overAge = policy.maxAgeNs && m_calls.front().startNs() < ageCut;
    if (!overBytes && !overCalls && !overAge) return evicted;

    // Evict down to a fraction of the limits (90% by default), so eviction runs in chunks rather than on
    // every batch.
    const double to = std::clamp(policy.evictTo, 0.5, 1.0);
    const size_t target = bytesTarget(policy, bytes);
    const size_t callsTarget = overCalls ? size_t(double(policy.maxCalls) * to) : SIZE_MAX;
    size_t bytesLeft = bytes, callsLeft = m_calls.size();
    // What evicting a call frees besides the call itself: its share of the frames, its index entries.
    const size_t sharePerCall = m_frames.size() * kFrameBytes / m_calls.size();
    std::vector<size_t> open; // in flight, unpinned: the second choice
    size_t stopped = m_calls.size();
    for (size_t i = 0; i < m_calls.size(); ++i) {
        const Call &c = m_calls[i];
        const bool oldEnough = overAge && c.startNs() < ageCut;
        if (!oldEnough && bytesLeft <= target && callsLeft <= callsTarget) {
            stopped = i;
            break;
        }
        if (c.pinned) continue;
        // Whole calls: one still in flight (or waiting for a retry) stays while ended ones can make room.
        if (!c.endNs() || !c.attempts.back().ended()) {
            open.push_back(i);
            continue;
        }
        evicted.push_back(i);
        const size_t cb = callBytes(c) + sharePerCall;
        bytesLeft -= std::min(bytesLeft, cb);
        --callsLeft;
    }
    // Still over the bytes: the age cut takes frames, pings and lab events of any connection first (they are
    // what a flood fills memory with); only what it cannot free comes out of the calls still in flight, the
    // oldest first. The ones the loop above passed are those; any later ones follow.
    const size_t cuttable = m_frames.size() * kFrameBytes + vectorBytes(m_pings);
    const size_t claimed = evicted.size() * sharePerCall;
    if (bytesLeft > target && target != SIZE_MAX &&
        bytesLeft - target > cuttable - std::min(cuttable, claimed)) {
        size_t need = bytesLeft - target - (cuttable - std::min(cuttable, claimed));
        for (size_t i = stopped; i < m_calls.size(); ++i)
            if (!m_calls[i].pinned && (!m_calls[i].endNs() || !m_calls[i].attempts.back().ended()))
                open.push_back(i);
        std::vector<size_t> inFlight;
        for (size_t i : open) {
            if (!need) break;
            inFlight.push_back(i);
            need -= std::min(need, callBytes(m_calls[i]) + hashNode<std::uint64_t, AttemptRef>());
        }
        std::vector<size_t> merged;
        std::merge(evicted.begin(), evicted.end(), inFlight.begin(), inFlight.end(),
                   std::back_inserter(merged));
        evicted = std::move(merged);
    }
    return evicted;
}

std::int64_t TimelineStore::planAgeCut(const RetentionPolicy &policy, const std::vector<size_t> &calls,
                                       size_t knownBytes) const
{
    if (!policy.maxBytes || (m_frames.empty() && m_pings.empty() && m_labEvents.empty() && m_stalls.empty()))
        return INT64_MIN;
    const size_t bytes = knownBytes ? knownBytes : approxBytes();
    const size_t target = bytesTarget(policy, bytes);
    if (target == SIZE_MAX) return INT64_MIN;
    size_t freed = 0;
    const size_t sharePerCall = m_calls.empty() ? 0 : m_frames.size() * kFrameBytes / m_calls.size();
    for (size_t i : calls)
        freed += callBytes(m_calls[i]) + sharePerCall;
    if (bytes <= target + freed) return INT64_MIN;
    size_t need = bytes - target - freed;
    // The oldest of the records: frames are in (nearly) time order, pings, stalls and lab events too. Walk
    // them together from the front, by time, until they free enough.
    size_t f = 0, p = 0, l = 0;
    std::int64_t cut = INT64_MIN;
    while (need) {
        const std::int64_t tf = f < m_frames.size() ? m_frames[f].tNs : INT64_MAX;
        const std::int64_t tp = p < m_pings.size() ? m_pings[p].tNs : INT64_MAX;
        const std::int64_t tl = l < m_labEvents.size() ? m_labEvents[l].tNs : INT64_MAX;
        const std::int64_t t = std::min({tf, tp, tl});
        if (t == INT64_MAX) break;
        cut = t;
        if (t == tf) {
            need -= std::min(need, kFrameBytes);
            ++f;
        } else if (t == tp) {
            need -= std::min(need, sizeof(PingRecord));
            ++p;
        } else {
            need -= std::min(need, sizeof(LabEventRecord) + labEventHeapBytes(m_labEvents[l]));
            ++l;
        }
    }
    m_retentionWork += f + p + l;
    // Everything up to and including that time goes (a few more at the same time: harmless).
    return cut == INT64_MIN || cut == INT64_MAX ? cut : cut + 1;
}

void TimelineStore::evict(const std::vector<size_t> &evicted, Evicted *gone, std::int64_t ageCutNs)
{
    if (evicted.empty() && ageCutNs == INT64_MIN) return;
    // The work is proportional to the region the evicted calls span - the oldest calls, planEviction walks
    // from the front - not to everything the store keeps: calls and frames are deques, and the key and trace
    // indices hold ids that evicting the oldest calls leaves valid.
    const EvictionShift remap(evicted);
    const size_t region = remap.region();
    for (size_t i : evicted) {
        m_attemptCount -= m_calls[i].attempts.size();
        m_retentionCutNs = std::max(m_retentionCutNs, m_calls[i].endNs().value_or(0));
    }
    // The region's survivors (pinned, or still in flight) move up to just before the calls after the region.
    std::vector<size_t> keptInRegion;
    for (size_t i = 0; i < region; ++i)
        if (!remap.gone(i)) keptInRegion.push_back(i);
    const size_t removed = evicted.size();

    // Frames, pings, stalls and lab events older than every remaining unpinned call go too, except what
    // belongs to a pinned call. Calls are in (nearly) start order, so the earliest start is among the first
    // ones kept.
    std::int64_t keepFrom = INT64_MAX;
    for (size_t i = 0, unpinnedSeen = 0; i < m_calls.size() && unpinnedSeen < 256; ++i) {
        if (remap.gone(i)) continue;
        if (!m_calls[i].pinned) {
            keepFrom = std::min(keepFrom, m_calls[i].startNs());
            ++unpinnedSeen;
        }
    }
    keepFrom = std::min(keepFrom, m_retentionCutNs + 1);
    std::vector<std::uint64_t> pinnedStreams;
    std::unordered_set<std::string> pinnedKeys;
    if (m_pinnedCalls) {
        for (const Call &c : m_calls) {
            if (!c.pinned) continue;
            for (const Attempt &a : c.attempts)
                pinnedStreams.push_back(streamKey(a.connection, a.stream));
            pinnedKeys.insert(c.key);
        }
        std::sort(pinnedStreams.begin(), pinnedStreams.end());
    }
    // The evicted calls' own frames go whenever they happened (a call still in flight holds keepFrom back).
    std::vector<std::uint64_t> evictedStreams;
    std::int64_t evictedUntil = INT64_MIN;
    size_t inFlight = 0;
    for (size_t i : evicted) {
        inFlight += !m_calls[i].attempts.back().ended();
        for (const Attempt &a : m_calls[i].attempts) {
            evictedStreams.push_back(streamKey(a.connection, a.stream));
            // An attempt evicted in flight may still have frames coming: up to the latest event.
            evictedUntil = std::max(evictedUntil, a.endNs.value_or(m_latestNs));
        }
    }
    m_loss.inFlightCalls += inFlight;
    std::sort(evictedStreams.begin(), evictedStreams.end());
    if (gone) {
        gone->keepFromNs = keepFrom;
        gone->framesBeforeNs = ageCutNs;
        gone->untilNs = evictedUntil;
        gone->pinnedKept = !pinnedKeys.empty();
        gone->streams = evictedStreams;
        for (size_t i : evicted)
            gone->keys.push_back(m_calls[i].key);
    }

    // Indices: the evicted calls' entries go; the region's survivors get new ids; every other id stays.
    const size_t newBase = m_callBase + removed;
    std::vector<std::string> touchedTraces;
    for (size_t i : evicted) {
        const Call &c = m_calls[i];
        if (auto it = m_callsByKey.find(c.key); it != m_callsByKey.end() && it->second == i + m_callBase)
            m_callsByKey.erase(it);
        if (!c.traceId.empty()) touchedTraces.push_back(c.traceId);
    }
    // Each trace the evicted calls were in loses them in one pass.
    std::sort(touchedTraces.begin(), touchedTraces.end());
    touchedTraces.erase(std::unique(touchedTraces.begin(), touchedTraces.end()), touchedTraces.end());
    for (const std::string &trace : touchedTraces) {
        const auto it = m_traces.find(trace);
        if (it == m_traces.end()) continue;
        m_tracedCalls -= std::erase_if(it->second, [&](size_t id) { return remap.gone(id - m_callBase); });
        if (it->second.empty()) m_traces.erase(it);
    }
    for (size_t k = 0; k < keptInRegion.size(); ++k) {
        const size_t i = keptInRegion[k], oldId = i + m_callBase, newId = k + newBase;
        const Call &c = m_calls[i];
        if (auto it = m_callsByKey.find(c.key); it != m_callsByKey.end() && it->second == oldId)
            it->second = newId;
        if (!c.traceId.empty())
            if (auto it = m_traces.find(c.traceId); it != m_traces.end())
                std::replace(it->second.begin(), it->second.end(), oldId, newId);
    }
    // Open streams belong to calls still in flight; those evicted in flight are forgotten: what follows on
    // their streams (messages, trailers) finds no call and is ignored.
    for (auto it = m_openStreams.begin(); it != m_openStreams.end();) {
        if (it->second.call < region && remap.gone(it->second.call)) {
            it = m_openStreams.erase(it);
            continue;
        }
        it->second.call = remap(it->second.call);
        ++it;
    }

    // Calls: the survivors move up, the evicted ones leave the front of the deque.
    for (size_t k = keptInRegion.size(); k-- > 0;)
        if (keptInRegion[k] != removed + k) {
            m_calls[removed + k] = std::move(m_calls[keptInRegion[k]]);
            m_callSpans[removed + k] = m_callSpans[keptInRegion[k]];
        }
    m_calls.erase(m_calls.begin(), m_calls.begin() + std::ptrdiff_t(removed));
    m_callSpans.erase(m_callSpans.begin(), m_callSpans.begin() + std::ptrdiff_t(removed));
    m_callBase = newBase;
    // The recently ended streams of evicted calls lead nowhere now (late frames on them find no call either
    // way): their entries go with them, so that the index holds what the calls kept need.
    std::erase_if(m_recentEndedOrder, [&](std::uint64_t key) {
        const auto it = m_recentEnded.find(key);
        if (it == m_recentEnded.end() || indexOfSerial(it->second)) return false;
        m_recentEnded.erase(it);
        return true;
    });
    // Parent links are indices: every nested call's shifts (links into the evicted calls are cut). Only calls
    // of a trace have one.
    auto relink = [&](Call &c) {
        if (c.parentCall)
            c.parentCall =
                remap(*c.parentCall) == SIZE_MAX ? std::nullopt : std::optional(remap(*c.parentCall));
    };
    if (m_tracedCalls < m_calls.size() / 4) {
        for (const auto &[trace, members] : m_traces)
            for (size_t id : members)
                relink(callById(id));
    } else {
        for (Call &c : m_calls)
            relink(c);
    }
    m_evictedCalls += removed;

    // Frames are in (nearly) time order: only the front ones, up to the last evicted attempt's end and a
    // second of slack for batches that arrived out of order, can go.
    auto isIn = [](const std::vector<std::uint64_t> &sorted, std::uint64_t key) {
        return std::binary_search(sorted.begin(), sorted.end(), key);
    };
    // The age cut (planAgeCut) reaches into frames of any connection, except those that end a call: a kept
    // call must still replay from the event log to what it is now.
    const std::int64_t frameHorizon =
        std::max({evictedUntil, keepFrom, ageCutNs == INT64_MIN ? INT64_MIN : ageCutNs - 1'000'000'000}) +
        1'000'000'000;
    size_t scan = 0;
    while (scan < m_frames.size() && m_frames[scan].tNs <= frameHorizon)
        ++scan;
    size_t cutFrames = 0;
    const auto frameGone = [&](const FrameRecord &f) {
        const std::uint64_t key = streamKey(f.connection, f.stream);
        if ((f.stream && isIn(evictedStreams, key)) || (f.tNs < keepFrom && !isIn(pinnedStreams, key)))
            return true;
        if (f.tNs < ageCutNs && f.type != FrameRstStream && f.type != FrameGoaway &&
            !(f.stream && isIn(pinnedStreams, key))) {
            cutFrames += f.count;
            return true;
        }
        return false;
    };
    // Survivors of the scanned front move to its end; the front then leaves the deque.
    size_t write = scan;
    for (size_t i = scan; i-- > 0;)
        if (!frameGone(m_frames[i])) m_frames[--write] = m_frames[i];
    m_frames.erase(m_frames.begin(), m_frames.begin() + std::ptrdiff_t(write));
    m_lastFrameTrim = {scan, scan - write};
    const std::int64_t recordsFrom = std::max(keepFrom, ageCutNs);
    const size_t pingsBefore = m_pings.size(), stallsBefore = m_stalls.size(), labBefore = m_labEvents.size();
    std::erase_if(m_pings, [&](const PingRecord &p) { return p.tNs < recordsFrom; });
    std::erase_if(m_stalls, [&](const FlowStall &s) { return s.endNs && *s.endNs < recordsFrom; });
    m_openStalls.clear();
    for (size_t i = 0; i < m_stalls.size(); ++i)
        if (!m_stalls[i].endNs)
            m_openStalls[{m_stalls[i].connection, m_stalls[i].dir, m_stalls[i].stream}] = i;
    // Lab events are in (nearly) time order: the front ones before the cut go, but a pinned call's, which
    // move up to just before the rest. Only the front is touched, so a cut costs what it drops.
    size_t labScan = 0;
    while (labScan < m_labEvents.size() && m_labEvents[labScan].tNs < recordsFrom)
        ++labScan;
    size_t labWrite = labScan;
    for (size_t i = labScan; i-- > 0;) {
        LabEventRecord &e = m_labEvents[i];
        if (!e.callId.empty() && pinnedKeys.count(e.callId)) {
            if (--labWrite != i) m_labEvents[labWrite] = std::move(e);
        } else {
            m_labEventBytes -= labEventHeapBytes(e);
        }
    }
    const size_t labKept = labScan - labWrite;
    m_labEvents.erase(m_labEvents.begin(), m_labEvents.begin() + std::ptrdiff_t(labWrite));
    m_labEventsCut += labWrite;
    if (labKept) ++m_labEventsMoved;
    m_retentionWork += scan + labScan + evicted.size();
    // Capacity the cut left behind is counted (approxBytes), so give it back once it is most of it.
    auto shrink = [](auto &v) {
        if (v.capacity() > 64 && v.size() < v.capacity() / 2) v.shrink_to_fit();
    };
    shrink(m_pings);
    shrink(m_stalls);
    if (ageCutNs != INT64_MIN) {
        m_loss.frames += cutFrames;
        m_loss.pings += pingsBefore - m_pings.size();
        m_loss.stalls += stallsBefore - m_stalls.size();
        m_loss.labEvents += labBefore - m_labEvents.size();
        m_loss.bytes += (scan - m_lastFrameTrim.kept) * kFrameBytes +
                        (pingsBefore - m_pings.size()) * sizeof(PingRecord) +
                        (stallsBefore - m_stalls.size()) * sizeof(FlowStall);
        m_loss.beforeNs = std::max(m_loss.beforeNs, ageCutNs);
    }
    // Unresolved lab events (ascending indices) follow the cut; a pinned call's events are resolved.
    std::erase_if(m_unresolvedLabEvents, [&](size_t i) { return i < labScan; });
    for (size_t &i : m_unresolvedLabEvents)
        i -= labWrite;
    ++m_generation;
}

} // namespace rpcscope
