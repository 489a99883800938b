#include "timelinepainter.h"

#include <QDateTime>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QPainter>
#include <QPainterPath>
#include <QSvgGenerator>
#include <algorithm>
#include <limits>
#include <map>
#include <string_view>

namespace rpcscope {

namespace {
constexpr qint64 kGapSlackNs = 5'000'000;
// Frames are appended in arrival order; batches of different relays (a chain's hops) interleave, so the
// time index is only nearly sorted. Searching a margin either side of an attempt absorbs that.
constexpr qint64 kFrameSearchMarginNs = 50'000'000;
// An attempt whose bar spans a busy stream (a long server stream) stops collecting frames here: phases then
// come from the attempt's own timestamps.
constexpr size_t kMaxFramesScanned = 20'000;
// Below this many calls every lane fits a screen or two and the overview would only repeat them.
constexpr size_t kOverviewMinCalls = 50;
constexpr std::uint8_t kSettingsAck = 0x1;
constexpr double kMinLabelledGapPx = 8;
// Legend bits beyond the six status groups (0-5): what the picture contains and the legend explains.
enum LegendUse : int
{
    kUseTransparent = 6,
    kUsePhases,
    kUseGap,
    kUseExpected,
    kUseDeadline,
    kUseAttemptTimeout,
    kUseCommit,
    kUseMarker,
    kUseStall,
    kUseFastFail,
};

const QColor kOk(0x2e, 0x9d, 0x4a);
const QColor kUnavailable(0xe8, 0x80, 0x1a);
const QColor kDeadlineExceeded(0x8e, 0x44, 0xad);
const QColor kCancelled(0x8a, 0x8f, 0x96);
const QColor kOtherError(0xd0, 0x35, 0x2b);
const QColor kInFlight(0x3b, 0x7d, 0xd8);
const QColor kGroupColors[6] = {kOk, kUnavailable, kDeadlineExceeded, kOtherError, kCancelled, kInFlight};

// The overview's colour groups, in the order they are stacked (failures on top where the eye goes first).
std::uint8_t statusGroup(const Attempt &a)
{
    if (!a.ended()) return 5;
    if (!a.status) return 4;
    switch (*a.status) {
    case 0:
        return 0;
    case 1:
        return 4;
    case 4:
        return 2;
    case 14:
        return 1;
    default:
        return 3;
    }
}

QString statusText(const Attempt &a)
{
    return QString::fromStdString(a.outcomeLabel());
}

// Lab event kinds drawn as markers, with the word shown next to them.
struct MarkerKind
{
    const char *kind;
    const char *label;
};
constexpr MarkerKind kMarkerKinds[] = {
    {"bulkhead-rejected", "bulkhead rejected"},
    {"hedge-fired", "hedge fired"},
    {"hedge-cancelled", "hedge cancelled"},
    {"budget-check-failed", "budget check failed"},
    {"health", "health"},
    {"deduplicated", "deduplicated"},
    {"client-outcome", "client gets"}, // what the application got, when no frame says it (a deadline in a backoff)
    {"custom", "event"}, // reported through the ingestion endpoint; its detail starts with its label
};
const char *markerLabel(const std::string &kind)
{
    for (const MarkerKind &m : kMarkerKinds)
        if (kind == m.kind) return m.label;
    return nullptr;
}

// Sub-pixel merging: spans added in x order that touch or overlap the previous one of their colour group
// become one rect, so 100,000 items collapse into at most one rect per pixel column per colour.
class RunMerger
{
public:
    void add(int group, double x1, double x2, double top, double h)
    {
        auto &runs = m_runs[group];
        x2 = std::max(x2, x1 + 1); // every item gets at least 1 px
        if (!runs.empty() && runs.back().top() == top && runs.back().height() == h &&
            x1 <= runs.back().right() + 0.5) {
            runs.back().setRight(std::max(runs.back().right(), x2));
            return;
        }
        runs.emplace_back(x1, top, x2 - x1, h);
    }
    // One fill call per colour group.
    void fill(QPainter *p, const QColor *colors)
    {
        p->setPen(Qt::NoPen);
        for (auto &[group, runs] : m_runs) {
            p->setBrush(colors[group]);
            p->drawRects(runs.data(), int(runs.size()));
        }
        p->setBrush(Qt::NoBrush);
    }

private:
    std::map<int, std::vector<QRectF>> m_runs;
};

// A retry resends what is left of the call's budget, rounded by grpc-timeout's 8-digit encoding and late by
// the client's own scheduling: within 2% (at least 1 ms) it is the call's deadline, not a budget of its own.
qint64 attemptTimeoutSlack(qint64 timeoutNs)
{
    return std::max<qint64>(1'000'000, timeoutNs / 50);
}

// White diagonal stripes over a bar (a transparent retry). Drawn as lines rather than a pattern brush, which
// SVG readers cannot resolve.
void hatch(QPainter *p, const QRectF &r)
{
    p->save();
    p->setClipRect(r, Qt::IntersectClip);
    p->setPen(QPen(QColor(255, 255, 255, 200), 1.5));
    for (double x = r.left() - r.height(); x < r.right(); x += 5)
        p->drawLine(QPointF(x, r.bottom()), QPointF(x + r.height(), r.top()));
    p->restore();
}
} // namespace

QString formatDuration(qint64 ns)
{
    const qint64 a = std::abs(ns);
    if (a >= 10'000'000'000) return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 1);
    if (a >= 1'000'000'000) return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 3);
    if (a >= 10'000'000) return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 1);
    if (a >= 1'000'000) return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 2);
    if (a >= 1'000) return QStringLiteral("%1 µs").arg(double(ns) / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 ns").arg(ns);
}

QString formatTick(qint64 ns, qint64 stepNs)
{
    // The unit follows the step, and decimals only as many as the step needs: "20 ms", "2.5 ms", "1.2 s".
    // A unit is used once the step is at least a fifth of it: 200 ms steps read "1.2 s", 100 ms steps "300
    // ms".
    const qint64 unit = stepNs * 5 >= 1'000'000'000 ? 1'000'000'000
                        : stepNs * 5 >= 1'000'000   ? 1'000'000
                        : stepNs * 5 >= 1'000       ? 1'000
                                                    : 1;
    const char *name = unit == 1'000'000'000 ? "s" : unit == 1'000'000 ? "ms" : unit == 1'000 ? "µs" : "ns";
    int decimals = 0;
    for (qint64 s = stepNs; s % unit != 0 && decimals < 3; s *= 10)
        ++decimals;
    return QStringLiteral("%1 %2")
        .arg(double(ns) / double(unit), 0, 'f', decimals)
        .arg(QString::fromUtf8(name));
}

QColor TimelinePainter::statusColor(const Attempt &a)
{
    return kGroupColors[statusGroup(a)];
}

const TimelineTheme &TimelinePainter::theme() const
{
    return m_options.dark ? TimelineTheme::dark() : TimelineTheme::light();
}

QFont TimelinePainter::font(double px, bool bold) const
{
    QFont f = QGuiApplication::font();
    f.setPixelSize(std::max(6, int(px * m_metrics.scale + 0.5)));
    f.setBold(bold);
    return f;
}

void TimelinePainter::setOptions(const Options &o)
{
    const bool layoutChange = o.grouping != m_options.grouping || !(o.filter == m_options.filter) ||
                              o.workshop != m_options.workshop ||
                              o.connectionLanes != m_options.connectionLanes;
    m_options = o;
    m_metrics = LaneMetrics::scaled(o.workshop ? 1.6 : 1.0);
    if (layoutChange) m_layoutDirty = true;
    m_imageKey.reset();
}

void TimelinePainter::setRange(qint64 startNs, qint64 endNs)
{
    m_startNs = startNs;
    m_endNs = std::max(endNs, startNs + 1000);
}

void TimelinePainter::invalidate()
{
    m_pending.reset();
    m_cacheGeneration = ~std::uint64_t(0);
    m_layoutDirty = true;
    m_framesIndexed = m_pingsIndexed = m_stallsIndexed = 0;
    m_connIndex.clear();
    m_overviewKey.reset();
    m_imageKey.reset();
}

void TimelinePainter::noteChanges(std::uint64_t previousGeneration, const StoreChanges &changes)
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

void TimelinePainter::prepareEviction() const
{
    refreshLayout();
    m_evictFrom = m_store->generation();
}

void TimelinePainter::applyEviction(const std::vector<size_t> &evicted)
{
    const std::uint64_t from = std::exchange(m_evictFrom, ~std::uint64_t(0));
    size_t spans = 0;
    for (size_t i : evicted)
        spans += i < m_callSpanCount.size() ? m_callSpanCount[i] : 0;
    // Only from caches that were current just before, one eviction ago.
    if (evicted.empty() || from != m_cacheGeneration || from != m_layoutGeneration || m_layoutDirty ||
        m_store->generation() != from + 1 || m_callFirstSpan.size() != m_store->calls().size() + evicted.size() ||
        m_deadSpans + spans > m_spans.size()) {
        invalidate();
        return;
    }
    const EvictionShift remap(evicted);
    constexpr Span kDead{std::numeric_limits<qint64>::min(), std::numeric_limits<qint64>::min(), 0};

    for (size_t i : evicted) {
        for (std::uint32_t k = 0; k < m_callSpanCount[i]; ++k) m_spans[m_callFirstSpan[i] + k] = kDead;
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
    std::erase_if(m_openSpans, [&](const std::pair<std::uint32_t, std::uint32_t> &o) {
        return remap.gone(o.first);
    });
    for (auto &o : m_openSpans) o.first = std::uint32_t(remap(o.first));
    // The trace now starts at the oldest call kept (calls are in nearly start order) or lab event.
    m_dataLo = std::numeric_limits<qint64>::max();
    const auto &calls = m_store->calls();
    for (size_t i = 0; i < std::min<size_t>(calls.size(), 256); ++i) m_dataLo = std::min<qint64>(m_dataLo, calls[i].startNs());
    for (const LabEventRecord &e : m_store->labEvents()) {
        m_dataLo = std::min<qint64>(m_dataLo, e.tNs);
        m_dataHi = std::max<qint64>(m_dataHi, e.tNs);
    }
    m_labSeen = m_store->labEvents().size();
    if (2 * m_deadSpans > m_spans.size()) compactSpans();
    m_spansCurrent = m_store->generation();

    // Connection markers: the frames the store kept from its trimmed front are now first, the rest moved up.
    const auto &frames = m_store->frames();
    const auto trim = m_store->lastFrameTrim();
    if (m_framesIndexed == frames.size() + trim.scanned - trim.kept && trim.kept <= trim.scanned) {
        const std::uint32_t shift = std::uint32_t(trim.scanned - trim.kept);
        for (auto &[conn, index] : m_connIndex) {
            std::erase_if(index.marks, [&](std::uint32_t f) { return f < trim.scanned; });
            for (std::uint32_t &f : index.marks) f -= shift;
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
    m_imageKey.reset();
    m_overviewKey.reset();
}

void TimelinePainter::compactSpans() const
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
    for (std::uint32_t &first : m_callFirstSpan) first = first < newIndex.size() ? newIndex[first] : write;
    for (auto &[key, span] : m_extraSpans) span = newIndex[span];
    m_deadSpans = 0;
}

void TimelinePainter::absorbAttempt(size_t call, size_t k) const
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
    // In flight is the only state an attempt leaves; it is taken from the open list instead.
    m_callUse |= use & ~(1u << 5);
}

void TimelinePainter::absorbCall(size_t call) const
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

void TimelinePainter::refreshCaches() const
{
    if (m_cacheGeneration == m_store->generation()) return;
    const std::uint64_t previousGeneration = m_cacheGeneration;
    m_cacheGeneration = m_store->generation();

    // Lab events by what they mean to the picture, so paint() never scans every lab event for every lane.
    m_hasBreaker = false;
    m_bandMarkers.clear();
    m_labByCall.clear();
    // Call keys are only collected when some marker needs them: 100,000 strings hashed cost ~20 ms.
    std::unordered_map<std::string_view, bool> callKeys;
    auto hasLane = [&](const std::string &key) {
        if (callKeys.empty())
            for (const Call &c : m_store->calls())
                callKeys.emplace(c.key, true);
        return callKeys.count(key) > 0;
    };
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind == "breaker" || e.kind == "fast-fail") {
            m_hasBreaker = true;
        } else if (e.kind == "retry-suppressed" && !e.callId.empty()) {
            m_labByCall[e.callId].push_back(&e);
        } else if (markerLabel(e.kind)) {
            // A marker about a call with a lane goes on that lane; the rest (a bulkhead rejection never
            // reaches the wire) on the policy band.
            if (!e.callId.empty() && hasLane(e.callId))
                m_labByCall[e.callId].push_back(&e);
            else
                m_bandMarkers.push_back(&e);
        }
    }

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
    } else {
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
    for (; m_labSeen < m_store->labEvents().size(); ++m_labSeen) {
        m_dataLo = std::min<qint64>(m_dataLo, m_store->labEvents()[m_labSeen].tNs);
        m_dataHi = std::max<qint64>(m_dataHi, m_store->labEvents()[m_labSeen].tNs);
    }
    const bool anyFastFail = std::any_of(m_store->labEvents().begin(), m_store->labEvents().end(),
                                         [](const LabEventRecord &e) { return e.kind == "fast-fail"; });
    const bool anyMarker =
        std::any_of(m_store->labEvents().begin(), m_store->labEvents().end(),
                    [](const LabEventRecord &e) { return markerLabel(e.kind) != nullptr; });
    m_legendUse = m_callUse | (m_openSpans.empty() ? 0 : 1u << 5) | (anyMarker ? 1u << kUseMarker : 0) |
                  (anyFastFail ? 1u << kUseFastFail : 0) | (m_store->stalls().empty() ? 0 : 1u << kUseStall) |
                  (m_store->frames().empty() || calls.empty() ? 0 : 1u << kUsePhases);
    if (m_dataLo > m_dataHi) {
        const qint64 o = m_store->originNs();
        m_fullRange = {o, o + 1'000'000'000};
    } else {
        // Deadlines shortly after the last event are part of the story (a deadline chain's budgets); a 10 s
        // default deadline after a 150 ms scenario is not, and stays an arrow at the edge.
        const qint64 lo = m_dataLo;
        qint64 hi = m_dataHi;
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
    }
    m_firstFrameNs = frames.empty() ? 0 : frames.front().tNs;
    for (; m_framesIndexed < frames.size(); ++m_framesIndexed)
        if (isConnectionMark(frames[m_framesIndexed]))
            m_connIndex[frames[m_framesIndexed].connection].marks.push_back(std::uint32_t(m_framesIndexed));
    for (; m_pingsIndexed < m_store->pings().size(); ++m_pingsIndexed)
        m_connIndex[m_store->pings()[m_pingsIndexed].connection].pings.push_back(
            std::uint32_t(m_pingsIndexed));
    for (; m_stallsIndexed < m_store->stalls().size(); ++m_stallsIndexed)
        m_connIndex[m_store->stalls()[m_stallsIndexed].connection].stalls.push_back(
            std::uint32_t(m_stallsIndexed));
}

void TimelinePainter::refreshLayout() const
{
    refreshCaches();
    if (!m_layoutDirty && m_layoutGeneration == m_store->generation()) return;
    // After one batch, only the lanes it touched move (when the layout allows it); otherwise every lane.
    const bool updated = !m_layoutDirty && m_layoutChanges &&
                         m_layoutGeneration + 1 >= m_store->generation() &&
                         m_layout.update(*m_store, *m_layoutChanges, m_metrics);
    if (!updated)
        m_layout.build(*m_store, m_options.grouping, m_options.filter, m_metrics, m_options.connectionLanes);
    m_layoutGeneration = m_store->generation();
    m_layoutDirty = false;
}

const TimelineLayout &TimelinePainter::layout() const
{
    refreshLayout();
    return m_layout;
}

std::pair<qint64, qint64> TimelinePainter::fullRange() const
{
    refreshCaches();
    return m_fullRange;
}

bool TimelinePainter::hasPolicyBand() const
{
    refreshCaches();
    return m_hasBreaker || !m_bandMarkers.empty();
}

bool TimelinePainter::hasOverview() const
{
    return m_store->calls().size() >= kOverviewMinCalls;
}

int TimelinePainter::headerHeight() const
{
    return m_metrics.rulerHeight + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) +
           (hasPolicyBand() ? m_metrics.bandHeight : 0) + (hasOverview() ? m_metrics.overviewHeight : 0);
}

int TimelinePainter::contentHeight(double width) const
{
    int h = headerHeight() + int(layout().height());
    if (m_options.legend) h += legendHeight(width);
    return h;
}

TimeAxis TimelinePainter::axis(const QRectF &rect) const
{
    const double width = std::max(10.0, rect.width() - m_metrics.labelWidth - 16);
    return {m_startNs, double(m_endNs - m_startNs) / width, rect.left() + m_metrics.labelWidth};
}

double TimelinePainter::laneY(size_t call) const
{
    const size_t b = layout().blockOfCall(call);
    return b < m_layout.blocks().size() ? m_layout.blocks()[b].y : -1;
}

QRectF TimelinePainter::attemptRect(size_t call, size_t attempt, const QRectF &rect) const
{
    const double y = laneY(call);
    if (y < 0 || call >= m_store->calls().size() || attempt >= m_store->calls()[call].attempts.size())
        return {};
    const TimeAxis ax = axis(rect);
    const Attempt &a = m_store->calls()[call].attempts[attempt];
    const double top =
        lanesTop(rect) - m_scrollY + y + m_metrics.callHeader + double(attempt) * m_metrics.attemptHeight;
    const double barTop = top + m_metrics.attemptHeight * 0.44;
    const double x1 = ax.timeToX(a.startNs);
    const double x2 = std::max(ax.timeToX(a.endNs.value_or(m_store->latestNs())), x1 + 3);
    return QRectF(x1, barTop, x2 - x1, m_metrics.barHeight);
}

TimelinePainter::Hit TimelinePainter::hitTest(const QPointF &pos, const QRectF &rect) const
{
    Hit hit;
    const double top = lanesTop(rect);
    const double bottom = rect.bottom() - (m_options.legend ? legendHeight(rect.width()) : 0);
    const TimeAxis ax = axis(rect);
    // A lab event within a few pixels: policy band markers and fast failures, or a marker on a call's lane.
    auto nearest = [&](auto &&events) -> const LabEventRecord * {
        const LabEventRecord *best = nullptr;
        double bestDx = 5;
        for (const LabEventRecord *e : events)
            if (const double dx = std::abs(ax.timeToX(e->tNs) - pos.x()); dx <= bestDx) {
                best = e;
                bestDx = dx;
            }
        return best;
    };
    const double bandTop =
        rect.top() + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) + m_metrics.rulerHeight;
    if (hasPolicyBand() && pos.y() >= bandTop && pos.y() < bandTop + m_metrics.bandHeight &&
        pos.x() >= ax.left) {
        std::vector<const LabEventRecord *> events = m_bandMarkers;
        for (const LabEventRecord &e : m_store->labEvents())
            if (e.kind == "fast-fail" || e.kind == "breaker") events.push_back(&e);
        if (const LabEventRecord *e = nearest(events)) {
            hit.kind = Hit::LabEvent;
            hit.labEvent = e;
            hit.rect = QRectF(ax.timeToX(e->tNs) - 5, bandTop, 10, m_metrics.bandHeight);
        }
        return hit;
    }
    if (pos.y() < top || pos.y() > bottom || !rect.contains(pos)) return hit;
    const TimelineLayout &lay = layout();
    const double cy = pos.y() - top + m_scrollY;
    const size_t b = lay.blockAt(cy);
    if (b >= lay.blocks().size()) return hit;
    const LaneBlock &block = lay.blocks()[b];
    const double blockTop = top - m_scrollY + block.y;
    if (block.kind == LaneBlock::GroupHeader) {
        hit.kind = Hit::GroupHeader;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), block.h);
        return hit;
    }
    if (block.kind == LaneBlock::ConnectionLane) {
        hit.kind = Hit::Connection;
        hit.connection = block.index;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), block.h);
        return hit;
    }
    hit.call = block.index;
    const double inLane = cy - block.y;
    // Markers sit in the top strip of the first attempt row.
    if (inLane >= m_metrics.callHeader && inLane < m_metrics.callHeader + m_metrics.attemptHeight * 0.44) {
        if (auto it = m_labByCall.find(m_store->calls()[block.index].key); it != m_labByCall.end()) {
            std::vector<const LabEventRecord *> markers;
            for (const LabEventRecord *e : it->second)
                if (e->kind != "retry-suppressed") markers.push_back(e);
            if (const LabEventRecord *e = nearest(markers)) {
                hit.kind = Hit::LabEvent;
                hit.labEvent = e;
                hit.rect = QRectF(ax.timeToX(e->tNs) - 5, blockTop + m_metrics.callHeader, 10, 12);
                return hit;
            }
        }
    }
    if (inLane < m_metrics.callHeader) {
        hit.kind = Hit::CallHeader;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), m_metrics.callHeader);
        return hit;
    }
    const size_t k = size_t((inLane - m_metrics.callHeader) / m_metrics.attemptHeight);
    const Call &call = m_store->calls()[block.index];
    if (k >= call.attempts.size()) return hit;
    // A whole attempt row is the target when the pointer is over its label; on the time axis, the bar plus a
    // few pixels, so a 3 px bar is still easy to hit.
    const QRectF bar = attemptRect(block.index, k, rect);
    const bool overLabel = pos.x() < rect.left() + m_metrics.labelWidth;
    if (overLabel || (pos.x() >= bar.left() - 4 && pos.x() <= bar.right() + 4)) {
        hit.kind = Hit::Attempt;
        hit.attempt = k;
        hit.rect = bar;
    }
    return hit;
}

void TimelinePainter::paint(QPainter *p, const QRectF &rect)
{
    refreshCaches();
    refreshLayout();
    const TimelineTheme &th = theme();
    m_gapLabels.clear();
    p->save();
    p->setRenderHint(QPainter::Antialiasing, false);
    p->fillRect(rect, th.background);
    const TimeAxis ax = axis(rect);

    // Lanes first, clipped below the fixed header, then the header on top.
    const double top = lanesTop(rect);
    const double bottom = rect.bottom() - (m_options.legend ? legendHeight(rect.width()) : 0);
    p->save();
    p->setClipRect(QRectF(rect.left(), top, rect.width(), bottom - top));
    const auto &blocks = m_layout.blocks();
    // Cull: binary-search the first lane in view, stop at the first one below it.
    for (size_t i = m_layout.firstVisible(m_scrollY); i < blocks.size(); ++i) {
        const LaneBlock &b = blocks[i];
        const double y = top - m_scrollY + b.y;
        if (y > bottom) break;
        switch (b.kind) {
        case LaneBlock::GroupHeader:
            paintGroupHeader(p, rect, ax, b.index, y);
            break;
        case LaneBlock::ConnectionLane:
            paintConnection(p, rect, ax, b.index, y);
            break;
        case LaneBlock::CallLane:
            paintCall(p, rect, ax, b.index, y);
            break;
        }
    }
    if (m_layout.callLanes() == 0) {
        p->setPen(th.muted);
        p->setFont(font(15));
        const double y = top - m_scrollY + m_layout.height();
        p->drawText(QRectF(rect.left(), y, rect.width(), 80), Qt::AlignCenter,
                    m_store->calls().empty() ? QStringLiteral("No gRPC calls captured yet")
                                             : QStringLiteral("No call matches the filter"));
    }
    p->restore();

    paintRuler(p, rect, ax);
    if (m_options.legend) paintLegend(p, QRectF(rect.left(), bottom, rect.width(), rect.bottom() - bottom));
    p->restore();
}

void TimelinePainter::paintCached(QPainter *p, const QRectF &rect, qreal dpr)
{
    refreshCaches();
    const ImageKey key{m_store->generation(), m_startNs, m_endNs, m_scrollY, rect.size().toSize(), dpr};
    if (m_imageKey != key || m_layoutDirty) {
        const QSize px = (rect.size() * dpr).toSize();
        if (m_image.size() != px) m_image = QImage(px, QImage::Format_ARGB32_Premultiplied);
        m_image.setDevicePixelRatio(dpr);
        QPainter ip(&m_image);
        ip.setFont(p->font());
        paint(&ip, QRectF(QPointF(0, 0), rect.size()));
        m_imageKey = key;
    }
    p->drawImage(rect.topLeft(), m_image);
    paintOverlay(p, rect);
}

void TimelinePainter::paintOverlay(QPainter *p, const QRectF &rect)
{
    const TimelineTheme &th = theme();
    const double top = lanesTop(rect);
    const double bottom = rect.bottom() - (m_options.legend ? legendHeight(rect.width()) : 0);
    p->save();
    p->setClipRect(QRectF(rect.left(), top, rect.width(), bottom - top));
    auto rowRect = [&](size_t call, size_t attempt) {
        const double y = laneY(call);
        if (y < 0) return QRectF();
        return QRectF(rect.left(),
                      top - m_scrollY + y + m_metrics.callHeader + double(attempt) * m_metrics.attemptHeight,
                      rect.width(), m_metrics.attemptHeight);
    };
    if (m_hover && m_hover != m_selection) p->fillRect(rowRect(m_hover->first, m_hover->second), th.hover);
    if (m_selection) {
        const QRectF bar = attemptRect(m_selection->first, m_selection->second, rect);
        if (!bar.isEmpty()) {
            p->fillRect(rowRect(m_selection->first, m_selection->second), th.hover);
            p->setPen(QPen(th.selection, 2 * m_metrics.scale));
            p->drawRect(bar.adjusted(-2, -2, 2, 2));
        }
    }
    if (m_rubberBand) {
        const TimeAxis ax = axis(rect);
        const double x1 = std::max(ax.timeToX(std::min(m_rubberBand->first, m_rubberBand->second)), ax.left);
        const double x2 = ax.timeToX(std::max(m_rubberBand->first, m_rubberBand->second));
        p->setClipping(false);
        p->fillRect(QRectF(x1, rect.top(), x2 - x1, rect.height()), th.rubberBand);
        p->setPen(QPen(th.selection, 1));
        p->drawLine(QPointF(x1, rect.top()), QPointF(x1, rect.bottom()));
        p->drawLine(QPointF(x2, rect.top()), QPointF(x2, rect.bottom()));
        // The span's length in the ruler, on its own background so the tick labels do not show through.
        p->setFont(font(12, true));
        const QString text = QStringLiteral("zoom to %1")
                                 .arg(formatDuration(std::abs(m_rubberBand->second - m_rubberBand->first)));
        const QRectF box(x1 + 1, rect.top() + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) + 2,
                         QFontMetricsF(p->font()).horizontalAdvance(text) + 8, m_metrics.rulerHeight - 4);
        p->fillRect(box, th.selection);
        p->setPen(th.background);
        p->drawText(box, Qt::AlignCenter, text);
    }
    p->restore();
}

QString TimelinePainter::tickLabel(qint64 t, qint64 step) const
{
    if (m_options.wallClock && m_store->originWallNs() != 0) {
        const qint64 wallNs = m_store->originWallNs() + (t - m_store->originNs());
        const QDateTime dt = QDateTime::fromMSecsSinceEpoch(wallNs / 1'000'000, Qt::UTC);
        if (step >= 1'000'000'000) return dt.toString(QStringLiteral("HH:mm:ss"));
        if (step >= 1'000'000) return dt.toString(QStringLiteral("HH:mm:ss.zzz"));
        return dt.toString(QStringLiteral("ss.zzz")) +
               QStringLiteral("%1").arg((wallNs / 1000) % 1000, 3, 10, QLatin1Char('0'));
    }
    return formatTick(t - m_store->originNs(), step);
}

void TimelinePainter::paintRuler(QPainter *p, const QRectF &rect, const TimeAxis &ax)
{
    const TimelineTheme &th = theme();
    const LaneMetrics &m = m_metrics;
    double top = rect.top();
    if (!m_options.title.isEmpty()) {
        p->fillRect(QRectF(rect.left(), top, rect.width(), m.titleHeight), th.background);
        p->setPen(th.text);
        p->setFont(font(16, true));
        p->drawText(QRectF(rect.left() + 10, top, rect.width() - 20, m.titleHeight),
                    Qt::AlignVCenter | Qt::AlignLeft, m_options.title);
        p->setFont(font(12));
        p->setPen(th.muted);
        QString range = QStringLiteral("%1 – %2 from capture start")
                            .arg(formatDuration(m_startNs - m_store->originNs()),
                                 formatDuration(m_endNs - m_store->originNs()));
        if (m_store->originWallNs() != 0)
            range +=
                QStringLiteral(" (%1 UTC)")
                    .arg(QDateTime::fromMSecsSinceEpoch(
                             (m_store->originWallNs() + m_startNs - m_store->originNs()) / 1'000'000, Qt::UTC)
                             .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz")));
        p->drawText(QRectF(rect.left() + 10, top, rect.width() - 20, m.titleHeight),
                    Qt::AlignVCenter | Qt::AlignRight, range);
        top += m.titleHeight;
    }
    const QRectF ruler(rect.left(), top, rect.width(), m.rulerHeight);
    p->fillRect(ruler, th.headerBand);
    p->setPen(th.grid.darker(115));
    p->drawLine(QPointF(ruler.left(), ruler.bottom()), QPointF(ruler.right(), ruler.bottom()));
    p->setFont(font(12));

    const bool wall = m_options.wallClock && m_store->originWallNs() != 0;
    const qint64 step = ax.tickStepNs(wall ? 150 * m.scale : 110 * m.scale);
    const qint64 origin = m_store->originNs();
    // Ticks are multiples of the step counted from the capture origin, so labels are round numbers.
    qint64 rel = ((m_startNs - origin) / step) * step;
    if (origin + rel < m_startNs) rel += step;
    const double right = rect.right();
    for (qint64 t = origin + rel; ax.timeToX(t) <= right; t += step) {
        const double x = ax.timeToX(t);
        if (x < ax.left) continue;
        p->setPen(th.grid.darker(130));
        p->drawLine(QPointF(x, ruler.bottom() - 8), QPointF(x, ruler.bottom()));
        p->setPen(th.text);
        p->drawText(QRectF(x + 3, ruler.top(), 160 * m.scale, ruler.height() - 6),
                    Qt::AlignLeft | Qt::AlignBottom, tickLabel(t, step));
    }
    // Where retention cut: everything before it was evicted (pinned calls excepted).
    if (m_store->evictedCalls() > 0) {
        const double x = ax.timeToX(m_store->retentionCutNs());
        if (x >= ax.left) {
            p->fillRect(QRectF(ax.left, ruler.top(), std::min(x, right) - ax.left, ruler.height() - 1),
                        QColor(128, 128, 128, 70));
            p->setPen(QPen(th.deadline, 2 * m.scale));
            if (x <= right)
                p->drawLine(QPointF(x, ruler.top()), QPointF(x, ruler.bottom()));
        }
        const QString cut = QStringLiteral("◀ retention: %1 older calls evicted").arg(m_store->evictedCalls());
        p->setPen(th.deadline);
        p->setFont(font(11, true));
        const double at = std::clamp(x + 4, ax.left + 4, right - 320 * m.scale);
        p->drawText(QRectF(at, ruler.top(), 320 * m.scale, ruler.height() / 2), Qt::AlignLeft | Qt::AlignVCenter,
                    cut);
        p->setFont(font(12));
    }
    p->fillRect(QRectF(ruler.left(), ruler.top(), m.labelWidth, ruler.height() - 1), th.headerBand);
    p->setPen(th.muted);
    p->drawText(QRectF(ruler.left() + 10, ruler.top(), m.labelWidth - 20, ruler.height()),
                Qt::AlignVCenter | Qt::AlignLeft,
                wall ? QStringLiteral("wall clock (UTC)") : QStringLiteral("time since capture start"));
    double y = ruler.bottom() + 1;
    if (hasPolicyBand()) {
        paintPolicyBand(p, QRectF(rect.left(), y, rect.width(), m.bandHeight - 2), ax);
        y += m.bandHeight;
    }
    if (hasOverview()) paintOverview(p, QRectF(rect.left(), y, rect.width(), m.overviewHeight - 1), ax);
}

// The breaker's state over time as coloured spans, transitions labelled, a red tick for every call that
// failed fast (those never reach the wire, so they have no lane), and policy markers of calls without a lane.
void TimelinePainter::paintPolicyBand(QPainter *p, const QRectF &band, const TimeAxis &ax)
{
    const TimelineTheme &th = theme();
    p->fillRect(band, th.background);
    p->setFont(font(12, true));
    p->setPen(th.text);
    p->drawText(QRectF(band.left() + 10, band.top(), m_metrics.labelWidth - 14, band.height()),
                Qt::AlignVCenter | Qt::AlignLeft,
                m_hasBreaker ? QStringLiteral("circuit breaker") : QStringLiteral("client policies"));
    auto color = [&](const std::string &state) {
        if (state == "open") return th.breakerOpen;
        if (state == "half-open") return th.breakerHalfOpen;
        return th.breakerClosed;
    };
    std::string state;
    qint64 from = m_startNs;
    const double right = band.right();
    p->setFont(font(11));
    auto span = [&](qint64 to, const std::string &s) {
        const double x1 = std::max(ax.timeToX(from), ax.left);
        // A half-open state lasts one probe call: give it 3 px so it can be seen at all.
        const double x2 = std::min(std::max(ax.timeToX(to), x1 + 3), right);
        if (x2 <= x1) return;
        p->fillRect(QRectF(x1, band.top() + 3, x2 - x1, band.height() - 6), color(s));
        const QString label = QString::fromStdString(s);
        if (QFontMetricsF(p->font()).horizontalAdvance(label) + 8 < x2 - x1) {
            p->setPen(th.text);
            p->drawText(QRectF(x1 + 4, band.top(), x2 - x1 - 8, band.height()),
                        Qt::AlignVCenter | Qt::AlignLeft, label);
        }
    };
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind != "breaker") continue;
        const auto arrow = e.detail.find(" -> ");
        if (arrow == std::string::npos) continue;
        if (state.empty()) state = e.detail.substr(0, arrow);
        span(e.tNs, state);
        // The state is one word: a reported transition carries its source after it ("closed -> open [front]").
        state = e.detail.substr(arrow + 4);
        state = state.substr(0, state.find(' '));
        from = e.tNs;
    }
    if (!state.empty()) span(std::max<qint64>(m_store->latestNs(), m_endNs), state);
    p->setPen(QPen(th.deadline, 2 * m_metrics.scale));
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind != "fast-fail") continue;
        const double x = ax.timeToX(e.tNs);
        if (x >= ax.left && x <= right)
            p->drawLine(QPointF(x, band.bottom() - 9 * m_metrics.scale), QPointF(x, band.bottom() - 1));
    }
    // Markers of calls without a lane: a diamond each, labelled where the label fits.
    double lastTextRight = -1e9;
    for (const LabEventRecord *e : m_bandMarkers) {
        const double x = ax.timeToX(e->tNs);
        if (x < ax.left || x > right) continue;
        const double r = 4 * m_metrics.scale;
        const double cy = band.center().y();
        p->setPen(Qt::NoPen);
        p->setBrush(th.labMarker);
        p->setRenderHint(QPainter::Antialiasing, true);
        p->drawPolygon(
            QPolygonF({QPointF(x, cy - r), QPointF(x + r, cy), QPointF(x, cy + r), QPointF(x - r, cy)}));
        p->setRenderHint(QPainter::Antialiasing, false);
        p->setBrush(Qt::NoBrush);
        // A custom event (ingestion endpoint) says what it is itself: "label: detail".
        const QString text = e->kind == "custom" && !e->detail.empty() ? QString::fromStdString(e->detail)
                                                                        : QString::fromLatin1(markerLabel(e->kind));
        const double tw = QFontMetricsF(p->font()).horizontalAdvance(text);
        if (x + r + 2 > lastTextRight && x + r + 2 + tw < right) {
            p->setPen(th.labMarker);
            p->drawText(QRectF(x + r + 2, band.top(), tw + 2, band.height()),
                        Qt::AlignVCenter | Qt::AlignLeft, text);
            lastTextRight = x + r + 2 + tw + 6;
        }
    }
}

// Every attempt of the trace as attempts in flight per pixel column, stacked by status: the shape of a
// 100,000-call capture at one glance, where the lanes show only the calls in view.
void TimelinePainter::paintOverview(QPainter *p, const QRectF &band, const TimeAxis &ax)
{
    const TimelineTheme &th = theme();
    p->fillRect(band, th.background);
    const int width = std::max(1, int(band.right() - ax.left));
    const OverviewKey key{m_store->generation(), m_startNs, m_endNs, width};
    if (m_overviewKey != key) {
        // Difference arrays per colour group: +1 where an attempt starts, -1 after it ends, then a prefix
        // sum.
        std::vector<std::array<int, 6>> diff(size_t(width) + 1, std::array<int, 6>{});
        for (const Span &s : m_spans) {
            if (s.end < m_startNs || s.start > m_endNs) continue;
            const int c1 = std::clamp(int((double(s.start - m_startNs)) / ax.nsPerPx), 0, width - 1);
            const int c2 = std::clamp(int((double(s.end - m_startNs)) / ax.nsPerPx), c1, width - 1);
            ++diff[size_t(c1)][s.group];
            --diff[size_t(c2) + 1][s.group];
        }
        m_overviewCounts.assign(size_t(width), std::array<int, 6>{});
        std::array<int, 6> run{};
        for (int x = 0; x < width; ++x) {
            for (int g = 0; g < 6; ++g)
                run[size_t(g)] += diff[size_t(x)][size_t(g)];
            m_overviewCounts[size_t(x)] = run;
        }
        m_overviewKey = key;
    }
    int peak = 1;
    for (const auto &c : m_overviewCounts) {
        int sum = 0;
        for (int v : c)
            sum += v;
        peak = std::max(peak, sum);
    }
    const double h = band.height() - 4;
    const double base = band.bottom() - 1;
    RunMerger runs;
    // Failures stacked lowest, on the baseline, so a burst of errors shows even under heavy OK traffic.
    static constexpr int kStackOrder[6] = {3, 2, 1, 4, 5, 0};
    for (int x = 0; x < int(m_overviewCounts.size()); ++x) {
        double y = base;
        for (int g : kStackOrder) {
            const int n = m_overviewCounts[size_t(x)][size_t(g)];
            if (n == 0) continue;
            // At least 1 px for any non-zero count: a single failure among thousands must not vanish.
            const double seg = std::max(1.0, std::round(h * n / peak));
            runs.add(g, ax.left + x, ax.left + x + 1, y - seg, seg);
            y -= seg;
        }
    }
    runs.fill(p, kGroupColors);
    p->setPen(th.grid.darker(115));
    p->drawLine(QPointF(band.left(), band.bottom()), QPointF(band.right(), band.bottom()));
    p->setFont(font(12, true));
    p->setPen(th.text);
    p->drawText(QRectF(band.left() + 10, band.top(), m_metrics.labelWidth - 14, band.height() / 2),
                Qt::AlignBottom | Qt::AlignLeft, QStringLiteral("all %1 calls").arg(m_store->calls().size()));
    p->setFont(font(11));
    p->setPen(th.muted);
    p->drawText(QRectF(band.left() + 10, band.top() + band.height() / 2, m_metrics.labelWidth - 14,
                       band.height() / 2),
                Qt::AlignTop | Qt::AlignLeft, QStringLiteral("attempts in flight (peak %1)").arg(peak));
}

void TimelinePainter::paintGrid(QPainter *p, const QRectF &rect, const TimeAxis &ax, double top,
                                double bottom)
{
    // Vertical grid lines through the lane, aligned with the ruler ticks.
    const qint64 step = ax.tickStepNs(110 * m_metrics.scale);
    const qint64 origin = m_store->originNs();
    const qint64 rel = ((m_startNs - origin) / step) * step;
    p->setPen(theme().grid);
    for (qint64 t = origin + rel; ax.timeToX(t) <= rect.right(); t += step)
        if (ax.timeToX(t) >= ax.left)
            p->drawLine(QPointF(ax.timeToX(t), top), QPointF(ax.timeToX(t), bottom));
}

void TimelinePainter::paintGroupHeader(QPainter *p, const QRectF &rect, const TimeAxis &, size_t group,
                                       double top)
{
    const TimelineTheme &th = theme();
    const TimelineLayout::Group &g = m_layout.groups()[group];
    const QRectF r(rect.left(), top, rect.width(), m_metrics.groupHeader);
    p->fillRect(r, th.headerBand.darker(th.background.lightness() > 128 ? 108 : 80));
    p->setPen(th.text);
    p->setFont(font(14, true));
    p->drawText(r.adjusted(10, 0, -10, 0), Qt::AlignVCenter | Qt::AlignLeft,
                QStringLiteral("%1   ·  %2 call%3 · %4 failed")
                    .arg(g.title)
                    .arg(g.calls)
                    .arg(g.calls == 1 ? "" : "s")
                    .arg(g.failed));
}

void TimelinePainter::paintConnection(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t connIndex,
                                      double top)
{
    const TimelineTheme &th = theme();
    const LaneMetrics &m = m_metrics;
    const bool all = connIndex == kAllConnections;
    const auto &conns = m_store->connections();
    const double h = m.connectionHeight;
    const double right = rect.right();
    const double mid = top + h / 2;
    p->fillRect(QRectF(rect.left(), top, rect.width(), h), th.headerBand);
    paintGrid(p, rect, ax, top, top + h);

    // Label: which connection, its peers, and what it knows about itself.
    p->setPen(th.text);
    p->setFont(font(12, true));
    QString title, sub;
    bool subWarns = false; // the subtitle says something went wrong on the wire
    if (all) {
        title = QStringLiteral("%1 connections").arg(conns.size());
        sub = QStringLiteral("group by connection for one lane each");
    } else {
        const Connection &conn = conns[connIndex];
        title = QStringLiteral("connection %1").arg(conn.id);
        if (!conn.label.empty()) title += QStringLiteral(" · %1").arg(QString::fromStdString(conn.label));
        sub =
            QString::fromStdString(conn.client) + QStringLiteral(" → ") + QString::fromStdString(conn.server);
        if (!conn.decodeError.empty())
            sub = QStringLiteral("undecodable: ") + QString::fromStdString(conn.decodeError);
        else if (const std::string *broken = conn.protocolError()) {
            // kProtocolErrorPrefix + "client: WINDOW_UPDATE of 0 ... (PROTOCOL_ERROR)" -> "client broke HTTP/2: ..."
            const QString rest = QString::fromStdString(broken->substr(sizeof kProtocolErrorPrefix - 1));
            const qsizetype colon = rest.indexOf(QLatin1String(": "));
            sub = rest.left(colon) + QStringLiteral(" broke HTTP/2: ") + rest.mid(colon + 2);
            subWarns = true;
        }
    }
    p->drawText(QRectF(rect.left() + 10, top + 1, m.labelWidth - 14, h / 2), Qt::AlignVCenter | Qt::AlignLeft,
                title);
    p->setFont(font(11));
    p->setPen(subWarns ? th.rst : th.muted);
    p->drawText(QRectF(rect.left() + 10, top + h / 2, m.labelWidth - 14, h / 2 - 1),
                Qt::AlignVCenter | Qt::AlignLeft,
                QFontMetricsF(p->font()).elidedText(sub, subWarns ? Qt::ElideRight : Qt::ElideMiddle,
                                                    m.labelWidth - 14));

    // Lifetimes as a thin line (merged: one rect per run of open time).
    const int width = std::max(1, int(right - ax.left) + 1);
    RunMerger runs;
    enum Group
    {
        Life,
        StallC2S,
        StallS2C,
        Settings,
        Ping,
        Rst,
        Goaway,
        GroupCount
    };
    const QColor colors[GroupCount] = {th.connLine, th.stall, th.stall, th.settings,
                                       th.ping,     th.rst,   th.goaway};
    std::vector<const ConnIndex *> lanes;
    for (size_t c = all ? 0 : connIndex; c < (all ? conns.size() : connIndex + 1); ++c) {
        const Connection &conn = conns[c];
        const double o1 = std::max(ax.timeToX(conn.openedNs), ax.left);
        const double o2 = std::min(
            ax.timeToX(conn.closedNs.value_or(std::max<qint64>(m_store->latestNs(), m_endNs))), right);
        if (o2 > o1) runs.add(Life, std::floor(o1), std::ceil(o2), std::floor(mid), 1);
        if (auto it = m_connIndex.find(conn.id); it != m_connIndex.end()) lanes.push_back(&it->second);
    }

    // One mark per pixel column and kind, whatever the number of frames: `seen` dedupes across connections.
    std::vector<std::uint8_t> seen(size_t(width), 0);
    auto column = [&](double x) { return std::clamp(int(x - ax.left), 0, width - 1); };
    auto once = [&](double x, int bit) {
        std::uint8_t &s = seen[size_t(column(x))];
        if (s & (1u << bit)) return false;
        s |= std::uint8_t(1u << bit);
        return true;
    };
    struct Label
    {
        double x;
        QString text;
        int group;
        bool upper;
    };
    std::vector<Label> labels;
    // Words are only worth placing while they can be read: beyond this many marks in view they would overlap.
    constexpr size_t kMaxLabelCandidates = 400;
    auto firstAt = [&](const std::vector<std::uint32_t> &v, auto timeOf) {
        return std::partition_point(v.begin(), v.end(), [&](std::uint32_t i) {
            return timeOf(i) < m_startNs - kFrameSearchMarginNs;
        });
    };
    const auto &frames = m_store->frames();
    const double tickW = std::max(1.0, m.scale);
    for (const ConnIndex *ci : lanes) {
        // Stalls: the stalled sender's half (client above the line, server below), at least 1 px.
        for (std::uint32_t si : ci->stalls) {
            const FlowStall &st = m_store->stalls()[si];
            const double x1 = std::max(ax.timeToX(st.startNs), ax.left);
            const double x2 = std::min(ax.timeToX(st.endNs.value_or(m_store->latestNs())), right);
            if (x2 < ax.left || x1 > right) continue;
            const bool c2s = st.dir == Direction::ClientToServer;
            runs.add(c2s ? StallC2S : StallS2C, std::floor(x1), std::ceil(x2), c2s ? top + 3 : mid + 1,
                     h / 2 - 4);
            if (x2 - x1 > 60 * m.scale)
                labels.push_back({x1,
                                  QStringLiteral("flow-control stall (%1)").arg(c2s ? "client" : "server"),
                                  c2s ? StallC2S : StallS2C, c2s});
        }
        // Frame marks: binary search the visible slice of this connection's marker frames (nearly
        // time-ordered).
        for (auto f = firstAt(ci->marks, [&](std::uint32_t i) { return frames[i].tNs; });
             f != ci->marks.end(); ++f) {
            const FrameRecord &fr = frames[*f];
            if (fr.tNs > m_endNs + kFrameSearchMarginNs) break;
            const double x = std::floor(ax.timeToX(fr.tNs));
            if (x < ax.left || x > right) continue;
            if (fr.type == FrameSettings) {
                const bool c2s = fr.dir == Direction::ClientToServer;
                if (!once(x, c2s ? 0 : 1)) continue;
                runs.add(Settings, x, x + tickW, c2s ? top + 4 : mid, h / 2 - 4);
                labels.push_back({x, QStringLiteral("SETTINGS"), Settings, c2s});
            } else if (fr.type == FrameRstStream) {
                if (!once(x, 2)) continue;
                runs.add(Rst, x, x + 2 * tickW, top + 3, h - 6);
                labels.push_back(
                    {x,
                     QStringLiteral("RST_STREAM %1 (stream %2)")
                         .arg(QString::fromStdString(h2ErrorName(fr.value)))
                         .arg(fr.stream),
                     Rst, true});
            } else {
                if (!once(x, 3)) continue;
                runs.add(Goaway, x, x + 3 * tickW, top + 1, h - 2);
                labels.push_back({x, QStringLiteral("GOAWAY"), Goaway, false});
            }
        }
        // PINGs: a span from the PING to its ACK (the RTT) and a tick at the ACK, labelled with the RTT.
        const double py = top + h - 6 * m.scale;
        for (auto pi = firstAt(ci->pings, [&](std::uint32_t i) { return m_store->pings()[i].tNs; });
             pi != ci->pings.end(); ++pi) {
            const PingRecord &pr = m_store->pings()[*pi];
            if (pr.tNs > m_endNs + kFrameSearchMarginNs) break;
            const double x2 = std::floor(ax.timeToX(pr.tNs));
            const double x1 = std::max(std::floor(ax.timeToX(pr.tNs - pr.rttNs)), ax.left);
            if (x2 < ax.left || x1 > right || !once(x2, 4)) continue;
            runs.add(Ping, x1, std::max(x2, x1 + 1), py - tickW, 2 * tickW);
            runs.add(Ping, x2, x2 + tickW, py - 4 * m.scale, 4 * m.scale + 2);
            labels.push_back({x2, QStringLiteral("PING %1").arg(formatDuration(pr.rttNs)), Ping, false});
        }
    }
    runs.fill(p, colors);

    // Words where they fit, left to right; none once there are too many marks to read them.
    if (labels.size() > kMaxLabelCandidates)
        std::erase_if(labels, [](const Label &l) { return l.group != Goaway; });
    // GOAWAY first (it always gets its word), then left to right; a word never covers another in its row.
    std::stable_sort(labels.begin(), labels.end(), [](const Label &a, const Label &b) {
        return (a.group == Goaway) != (b.group == Goaway) ? a.group == Goaway : a.x < b.x;
    });
    p->setFont(font(10, true));
    const QFontMetricsF fm(p->font());
    std::vector<std::pair<double, double>> placed[2];
    for (const Label &l : labels) {
        auto &row = placed[l.upper ? 0 : 1];
        const double tw = fm.horizontalAdvance(l.text);
        double x = l.x + 3;
        if (x + tw > right) {
            // At the right edge a GOAWAY still gets its word, on the left of its mark.
            if (l.group != Goaway || l.x - 4 - tw < ax.left) continue;
            x = l.x - 4 - tw;
        }
        const bool covers = std::any_of(row.begin(), row.end(), [&](const std::pair<double, double> &r) {
            return x < r.second + 6 && x + tw + 6 > r.first;
        });
        if (covers) continue;
        const QRectF box(x, l.upper ? top : mid, tw + 2, h / 2);
        // A word sits on the lane's background, so a neighbouring tick never shows through its letters.
        if (l.group != StallC2S && l.group != StallS2C) p->fillRect(box.adjusted(0, 2, 0, -2), th.headerBand);
        p->setPen(l.group == StallC2S || l.group == StallS2C ? th.text : colors[l.group]);
        p->drawText(box, Qt::AlignVCenter | Qt::AlignLeft, l.text);
        row.emplace_back(x, x + tw);
    }
}

void TimelinePainter::paintPhases(QPainter *p, const Attempt &a, const QRectF &bar, const TimeAxis &ax)
{
    const TimelineTheme &th = theme();
    const auto &frames = m_store->frames();
    const qint64 end = a.endNs.value_or(m_store->latestNs());
    std::optional<qint64> reqEnd, respStart, respEnd, trailers;
    std::vector<std::pair<qint64, Direction>> ticks;
    auto it = std::partition_point(frames.begin(), frames.end(), [&](const FrameRecord &f) {
        return f.tNs < a.startNs - kFrameSearchMarginNs;
    });
    size_t scanned = 0;
    for (; it != frames.end() && it->tNs <= end + kFrameSearchMarginNs && scanned < kMaxFramesScanned;
         ++it, ++scanned) {
        if (it->connection != a.connection || it->stream != a.stream) continue;
        ticks.emplace_back(it->tNs, it->dir);
        if (it->dir == Direction::ClientToServer) {
            reqEnd = it->tNs;
        } else {
            if (!respStart) respStart = it->tNs;
            respEnd = it->tNs;
            if (it->type == FrameHeaders && (it->flags & FlagEndStream)) trailers = it->tNs;
        }
    }
    if (!respStart && a.responseHeadersNs) respStart = a.responseHeadersNs;
    // The strip along the bottom of the bar: request sent, server working, response, trailers.
    const double sh = std::max(3.0, bar.height() * 0.3);
    const double sy = bar.bottom() - sh;
    auto seg = [&](qint64 t1, qint64 t2, const QColor &c) {
        const double x1 = std::max(ax.timeToX(t1), bar.left());
        const double x2 = std::min(std::max(ax.timeToX(t2), x1 + 1), bar.right());
        if (x2 > x1) p->fillRect(QRectF(x1, sy, x2 - x1, sh), c);
    };
    const qint64 reqDone = reqEnd.value_or(a.startNs);
    seg(a.startNs, reqDone, th.phaseRequest);
    seg(reqDone, respStart.value_or(end), th.phaseWait);
    if (respStart) seg(*respStart, trailers.value_or(respEnd.value_or(end)), th.phaseResponse);
    if (trailers) seg(*trailers, end, th.phaseTrailers);
    // Ticks for the frames themselves once there is room for them: requests above the bar, responses below.
    if (!ticks.empty() && bar.width() / double(ticks.size()) >= 3) {
        int last[2] = {-1, -1};
        p->setPen(QPen(th.frameTick, 1));
        for (const auto &[t, dir] : ticks) {
            const int x = int(ax.timeToX(t));
            const int d = dir == Direction::ClientToServer ? 0 : 1;
            if (x == last[d] || x < bar.left() - 1 || x > bar.right() + 1) continue;
            last[d] = x;
            if (d == 0)
                p->drawLine(QPointF(x, bar.top() - 4 * m_metrics.scale), QPointF(x, bar.top() - 1));
            else
                p->drawLine(QPointF(x, bar.bottom() + 1), QPointF(x, bar.bottom() + 4 * m_metrics.scale));
        }
    }
}

void TimelinePainter::paintCall(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t index, double top)
{
    const TimelineTheme &th = theme();
    const LaneMetrics &m = m_metrics;
    const Call &call = m_store->calls()[index];
    const double laneBottom = top + m.callHeader + double(call.attempts.size()) * m.attemptHeight;
    const double right = rect.right();
    paintGrid(p, rect, ax, top + m.callHeader, laneBottom);

    // Lane header: call id, method, outcome and attempt count.
    const QRectF header(rect.left(), top, rect.width(), m.callHeader);
    p->fillRect(header, th.headerBand);
    const Attempt *outcome = call.outcomeAttempt();
    const QString outcomeText = outcome ? statusText(*outcome) : QStringLiteral("in flight");
    // A call made while serving another is indented under it, with a hook to show the nesting.
    const int depth = std::min(m_store->nestingDepth(index), 6);
    const double indent = depth * 14 * m.scale;
    if (depth > 0) {
        p->setPen(QPen(th.text, 1));
        const double x = header.left() + 4 + indent - 8 * m.scale;
        p->drawLine(QPointF(x, top + 2), QPointF(x, top + m.callHeader / 2));
        p->drawLine(QPointF(x, top + m.callHeader / 2), QPointF(x + 6 * m.scale, top + m.callHeader / 2));
    }
    p->setPen(th.text);
    p->setFont(font(13, true));
    QString name = QString::fromStdString(call.key);
    if (call.pinned)
        name = QStringLiteral("★ ") + name;
    p->drawText(QRectF(header.left() + 10 + indent, top, m.labelWidth - 14 - indent, m.callHeader),
                Qt::AlignVCenter | Qt::AlignLeft,
                QFontMetricsF(p->font()).elidedText(name, Qt::ElideMiddle, m.labelWidth - 14 - indent));
    QString summary = QStringLiteral("%1   →  %2 · %3 attempt%4")
                          .arg(QString::fromStdString(call.method), outcomeText)
                          .arg(call.attempts.size())
                          .arg(call.attempts.size() == 1 ? "" : "s");
    if (outcome && call.endNs())
        summary += QStringLiteral(" · %1").arg(formatDuration(*call.endNs() - call.startNs()));
    if (call.inferred) summary += QStringLiteral(" · grouped by inference");
    // In a chain: which hop carried it and the budget it was given, against what its caller had left.
    QString chain;
    if (!call.hop.empty())
        chain = QStringLiteral("hop %1").arg(QString::fromStdString(call.hop));
    if (call.parentCall || call.budgetNs()) {
        if (const auto budget = call.budgetNs())
            chain += (chain.isEmpty() ? QString() : QStringLiteral(" · ")) +
                     QStringLiteral("budget %1").arg(formatDuration(*budget));
        else if (call.parentCall)
            chain += (chain.isEmpty() ? QString() : QStringLiteral(" · ")) + QStringLiteral("no deadline");
        if (call.parentBudgetNs)
            chain += QStringLiteral(" (caller had %1 left)").arg(formatDuration(*call.parentBudgetNs));
    }
    QString warning;
    if (call.deadlineReset)
        warning = QStringLiteral("⚠ deadline reset: the budget grew");
    else if (call.deadlineDropped)
        warning = QStringLiteral("⚠ deadline dropped by this hop");
    if (!chain.isEmpty() && (call.parentCall || !call.hop.empty()))
        summary += QStringLiteral(" · ") + chain;
    if (m_options.grouping == LaneGrouping::Chain && m_options.filter.collapsed.count(call.key))
        summary += QStringLiteral(" · ▸ nested calls folded (double-click)");
    p->setFont(font(13));
    p->drawText(QRectF(ax.left, top, right - ax.left - 8, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft,
                summary);
    double summaryRight = ax.left + QFontMetricsF(p->font()).horizontalAdvance(summary) + 8;
    if (!warning.isEmpty()) {
        p->setFont(font(13, true));
        p->setPen(th.deadline);
        p->drawText(QRectF(summaryRight + 6, top, std::max(0.0, right - summaryRight - 14), m.callHeader),
                    Qt::AlignVCenter | Qt::AlignLeft, warning);
        summaryRight += 6 + QFontMetricsF(p->font()).horizontalAdvance(warning) + 8;
        p->setPen(th.text);
    }

    const QFont small = font(12);
    const QFont barFont = font(11, true);
    const QFontMetricsF smallFm(small), barFm(barFont);
    const std::optional<std::int64_t> deadline = call.deadlineNs();
    p->setFont(small);
    p->setPen(th.text);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double barTop = top + m.callHeader + double(k) * m.attemptHeight + m.attemptHeight * 0.44;
        QString label = QStringLiteral("attempt %1").arg(k + 1);
        if (call.transparentRetry(k))
            label += QStringLiteral("  ·  transparent");
        else if (a.previousAttempts)
            label += QStringLiteral("  ·  prev %1").arg(*a.previousAttempts);
        p->drawText(
            QRectF(rect.left() + 22 * m.scale, barTop - 3, m.labelWidth - 26 * m.scale, m.barHeight + 6),
            Qt::AlignVCenter | Qt::AlignLeft, label);
    }
    // Everything placed in time stays right of the label column.
    p->save();
    p->setClipRect(QRectF(ax.left, top, right - ax.left, laneBottom - top), Qt::IntersectClip);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double rowTop = top + m.callHeader + double(k) * m.attemptHeight;
        const double barTop = rowTop + m.attemptHeight * 0.44;
        const double barH = m.barHeight;
        const bool transparent = call.transparentRetry(k);
        // The range the client's policy allows for the gap before this attempt, under everything else.
        std::optional<std::pair<std::int64_t, std::int64_t>> expected;
        if (k > 0 && call.attempts[k - 1].endNs && !transparent) {
            expected = call.expectedGapNs(k - 1);
            if (expected) {
                const qint64 gapStart = *call.attempts[k - 1].endNs;
                const double e1 = ax.timeToX(gapStart + expected->first);
                const double e2 = std::max(ax.timeToX(gapStart + expected->second), e1 + 3);
                p->fillRect(QRectF(e1, barTop - 2, e2 - e1, barH + 4), th.expectedRange);
            }
        }

        // The bar: every item gets at least 3 px so a sub-millisecond attempt stays visible and clickable
        // when the view spans seconds.
        const qint64 end = a.endNs.value_or(m_store->latestNs());
        double x1 = ax.timeToX(a.startNs);
        double x2 = std::max(ax.timeToX(end), x1 + 3);
        x1 = std::max(x1, ax.left);
        if (x2 > ax.left && x1 < right) {
            const QColor c = statusColor(a);
            const QRectF bar(x1, barTop, std::min(x2, right) - x1, barH);
            p->fillRect(bar, c);
            if (transparent) hatch(p, bar);
            if (bar.width() >= 12 && !m_store->frames().empty())
                paintPhases(p, a, bar, ax);
            else if (bar.width() >= 12 && a.responseHeadersNs) {
                const double hx = ax.timeToX(*a.responseHeadersNs);
                p->fillRect(
                    QRectF(hx, bar.bottom() - barH * 0.3, std::max(1.0, bar.right() - hx), barH * 0.3),
                    th.phaseResponse);
            }
            QString text = statusText(a);
            if (transparent) text = QStringLiteral("transparent retry · ") + text;
            p->setFont(barFont);
            const double tw = barFm.horizontalAdvance(text);
            const QRectF textBar(bar.left(), bar.top(), bar.width(), barH * 0.7);
            if (tw + 8 <= bar.width()) {
                p->setPen(Qt::white);
                p->drawText(textBar.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
            } else if (x2 + 6 + tw < right) {
                p->setPen(th.background.lightness() > 128 ? c.darker(130) : c.lighter(130));
                p->drawText(QRectF(x2 + 5, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft, text);
            } else if (x1 - 6 - tw > ax.left) {
                p->setPen(th.background.lightness() > 128 ? c.darker(130) : c.lighter(130));
                p->drawText(QRectF(x1 - 6 - tw, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft,
                            text);
            }
        }

        // This attempt's own grpc-timeout, where it differs from the call's deadline (a retry resending the
        // remaining budget ends exactly on it): a thin line with a small flag.
        if (a.timeoutNs) {
            const qint64 t = a.startNs + *a.timeoutNs;
            const double tx = ax.timeToX(t);
            const bool onDeadline =
                deadline && (std::abs(ax.timeToX(*deadline) - tx) < 2 ||
                             std::abs(t - *deadline) <= attemptTimeoutSlack(*a.timeoutNs));
            if (!onDeadline && tx >= ax.left && tx <= right) {
                p->setPen(QPen(th.deadline, 1));
                p->drawLine(QPointF(tx, barTop - 5), QPointF(tx, barTop + barH + 3));
                p->fillRect(QRectF(tx, barTop - 5, 6 * m.scale, 4 * m.scale), th.deadline);
            }
        }

        // Backoff gap: from the end of the previous attempt to the start of this one, over the range the
        // client's policy allows (shaded) when the call told us its policy.
        if (k > 0 && call.attempts[k - 1].endNs) {
            const qint64 gapStart = *call.attempts[k - 1].endNs;
            const qint64 gap = a.startNs - gapStart;
            const double g1 = ax.timeToX(gapStart);
            const double g2 = ax.timeToX(a.startNs);
            const double cy = barTop + barH / 2;
            // A gap counts as outside when it misses the range by more than 5 ms: the wire adds the client's
            // reaction time, and C-core's timer wakes up to a few ms late.
            const bool outside =
                expected && (gap < expected->first - kGapSlackNs || gap > expected->second + kGapSlackNs);
            // A gap narrower than a few pixels gets its bracket but no words: zoomed out over thousands of
            // calls the labels would only cover each other.
            if (g2 >= ax.left && g1 <= right && g2 - g1 < kMinLabelledGapPx) {
                p->setPen(QPen(th.gap, 1));
                p->drawLine(QPointF(g1, cy), QPointF(std::max(g2, g1 + 1), cy));
            } else if (g2 >= ax.left && g1 <= right) {
                const QColor gapColor = outside ? th.deadline : th.gap;
                p->setPen(QPen(gapColor, m.scale > 1 ? 2 : 1));
                const double h5 = 5 * m.scale;
                p->drawLine(QPointF(g1, cy), QPointF(g2, cy));
                p->drawLine(QPointF(g1, cy - h5), QPointF(g1, cy + h5));
                p->drawLine(QPointF(g2, cy - h5), QPointF(g2, cy + h5));
                QString gapText = QStringLiteral("backoff %1").arg(formatDuration(gap));
                if (transparent)
                    gapText = QStringLiteral("transparent retry after %1").arg(formatDuration(gap));
                else if (call.attempts[k - 1].pushbackMs && *call.attempts[k - 1].pushbackMs >= 0)
                    gapText = QStringLiteral("pushback %1 ms → waited %2")
                                  .arg(*call.attempts[k - 1].pushbackMs)
                                  .arg(formatDuration(gap));
                else if (expected && expected->first == expected->second)
                    gapText += QStringLiteral(" (expected %1)").arg(formatDuration(expected->first));
                else if (expected)
                    gapText += QStringLiteral(" (expected %1–%2)")
                                   .arg(formatDuration(expected->first), formatDuration(expected->second));
                if (outside) gapText += QStringLiteral(" — outside");
                p->setFont(small);
                const double tw = smallFm.horizontalAdvance(gapText);
                QRectF labelRect((g1 + g2) / 2 - tw / 2 - 3, rowTop + 1, tw + 6, smallFm.height());
                if (labelRect.left() < ax.left) labelRect.moveLeft(ax.left);
                p->setPen(gapColor);
                p->drawText(labelRect, Qt::AlignCenter, gapText);
                m_gapLabels.push_back({labelRect, gap, index, k});
            }
        }

        // Annotations on the attempt: a failure after response headers shows where it committed (a success
        // always has headers, so it is not marked), and a pushback that stops retrying.
        if (a.responseHeadersNs && !a.trailersOnly && a.status.value_or(0) != 0) {
            const double cx = ax.timeToX(*a.responseHeadersNs);
            if (cx >= ax.left && cx <= right) {
                p->setPen(QPen(th.commit, 2 * m.scale));
                p->drawLine(QPointF(cx, barTop - 4), QPointF(cx, barTop + barH + 4));
                p->setFont(small);
                p->setPen(th.commit);
                p->drawText(QRectF(cx + 4, rowTop + 1, 260 * m.scale, smallFm.height()),
                            Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("committed: response headers"));
            }
        }
        if (a.pushbackMs && *a.pushbackMs < 0 && a.endNs) {
            const double cx = ax.timeToX(*a.endNs);
            p->setFont(small);
            p->setPen(th.deadline);
            p->drawText(QRectF(cx + 4, rowTop + 1, 300 * m.scale, smallFm.height()),
                        Qt::AlignLeft | Qt::AlignVCenter,
                        QStringLiteral("pushback %1: do not retry").arg(*a.pushbackMs));
        }
    }

    p->restore();

    // Lab events tied to this call: a retry the client chose not to make goes in the lane header, left of the
    // deadline label, so it never covers a gap label; policy markers (hedges, budget checks...) at their
    // time.
    if (auto it = m_labByCall.find(call.key); it != m_labByCall.end()) {
        p->setFont(small);
        double lastTextRight = -1e9;
        for (const LabEventRecord *e : it->second) {
            if (e->kind == "retry-suppressed") {
                const QString text =
                    QStringLiteral("✕ retry suppressed: %1").arg(QString::fromStdString(e->detail));
                const double tw = smallFm.horizontalAdvance(text);
                p->setPen(th.deadline);
                p->drawText(QRectF(right - 270 * m.scale - tw, top, tw + 2, m.callHeader),
                            Qt::AlignLeft | Qt::AlignVCenter, text);
                continue;
            }
            const double x = ax.timeToX(e->tNs);
            if (x < ax.left || x > right) continue;
            // In the first attempt row's top strip, where only gap labels of later rows never go.
            const double r = 4 * m.scale;
            const double cy = top + m.callHeader + r + 2;
            p->setPen(QPen(th.labMarker, 1, Qt::DotLine));
            p->drawLine(QPointF(x, top + m.callHeader), QPointF(x, laneBottom));
            p->setPen(Qt::NoPen);
            p->setBrush(th.labMarker);
            p->setRenderHint(QPainter::Antialiasing, true);
            p->drawPolygon(
                QPolygonF({QPointF(x, cy - r), QPointF(x + r, cy), QPointF(x, cy + r), QPointF(x - r, cy)}));
            p->setRenderHint(QPainter::Antialiasing, false);
            p->setBrush(Qt::NoBrush);
            QString text = QString::fromLatin1(markerLabel(e->kind));
            if (e->kind == "custom" && !e->detail.empty())
                text = QString::fromStdString(e->detail);
            else if (!e->detail.empty())
                text += QStringLiteral(": ") + QString::fromStdString(e->detail);
            const double tw = smallFm.horizontalAdvance(text);
            // Right of the marker, or left of it near the right edge (the last marker of a trace fitted to the
            // view sits there), wherever it clears the label before it.
            const double textLeft = x + r + 3 + tw < right ? x + r + 3 : x - r - 3 - tw;
            if (textLeft > lastTextRight && textLeft >= ax.left) {
                p->setPen(th.labMarker);
                p->drawText(QRectF(textLeft, cy - smallFm.height() / 2, tw + 2, smallFm.height()),
                            Qt::AlignVCenter | Qt::AlignLeft, text);
                lastTextRight = std::max(lastTextRight, textLeft + tw + 6);
            }
        }
    }

    // Deadline: a dashed line where the call's budget runs out, or an arrow at the edge when it is off-range.
    if (deadline) {
        const double dx = ax.timeToX(*deadline);
        p->setFont(small);
        const QString text = QStringLiteral("deadline +%1").arg(formatDuration(*deadline - call.startNs()));
        if (dx >= ax.left && dx <= right) {
            p->setPen(QPen(th.deadline, 2 * m.scale, Qt::DashLine));
            // Through the header too, unless it would strike through the lane's summary.
            p->drawLine(QPointF(dx, dx < summaryRight ? top + m.callHeader : top), QPointF(dx, laneBottom));
            // The label goes left of the line, or right of it, wherever it does not cover the lane's summary.
            p->setPen(th.deadline);
            const double tw = smallFm.horizontalAdvance(text) + 2;
            if (dx - 4 - tw >= summaryRight)
                p->drawText(QRectF(dx - 4 - tw, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignRight,
                            text);
            else if (dx + 4 >= summaryRight && dx + 4 + tw <= right)
                p->drawText(QRectF(dx + 4, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft, text);
        } else if (dx > right) {
            // Beyond the view: an arrow at the edge, with as much of the label as fits after the summary.
            p->setPen(th.deadline);
            for (const QString &t :
                 {text + QStringLiteral("  ▶"), QStringLiteral("deadline ▶"), QStringLiteral("▶")}) {
                const double tw = smallFm.horizontalAdvance(t) + 2;
                if (right - 8 - tw >= summaryRight || t.size() == 1) {
                    p->drawText(QRectF(right - 8 - tw, top, tw, m.callHeader),
                                Qt::AlignVCenter | Qt::AlignRight, t);
                    break;
                }
            }
        }
    }
}

namespace {
enum class LegendSymbol
{
    Box,
    Hatched,
    Wait,
    Gap,
    Deadline,
    AttemptTimeout,
    Commit,
    Marker,
    FastFail
};
struct LegendEntry
{
    const char *name;
    LegendSymbol symbol;
    int color; // LegendColor
    int use;   // the kUse bit that shows it
};
enum LegendColor
{
    LOk,
    LUnavailable,
    LDeadlineExceeded,
    LOther,
    LCancelled,
    LInFlight,
    LRequest,
    LResponse,
    LRange,
    LStall
};
constexpr LegendEntry kLegend[] = {
    {"OK", LegendSymbol::Box, LOk, 0},
    {"UNAVAILABLE", LegendSymbol::Box, LUnavailable, 1},
    {"DEADLINE_EXCEEDED", LegendSymbol::Box, LDeadlineExceeded, 2},
    {"other error", LegendSymbol::Box, LOther, 3},
    {"cancelled / no status", LegendSymbol::Box, LCancelled, 4},
    {"in flight", LegendSymbol::Box, LInFlight, 5},
    {"transparent retry", LegendSymbol::Hatched, LUnavailable, kUseTransparent},
    {"request sent", LegendSymbol::Box, LRequest, kUsePhases},
    {"server working", LegendSymbol::Wait, LOk, kUsePhases},
    {"response", LegendSymbol::Box, LResponse, kUsePhases},
    {"backoff gap", LegendSymbol::Gap, 0, kUseGap},
    {"expected backoff (policy)", LegendSymbol::Box, LRange, kUseExpected},
    {"call deadline", LegendSymbol::Deadline, 0, kUseDeadline},
    {"attempt's own grpc-timeout", LegendSymbol::AttemptTimeout, 0, kUseAttemptTimeout},
    {"committed", LegendSymbol::Commit, 0, kUseCommit},
    {"policy event", LegendSymbol::Marker, 0, kUseMarker},
    {"flow-control stall", LegendSymbol::Box, LStall, kUseStall},
    {"failed fast (breaker open, never sent)", LegendSymbol::FastFail, 0, kUseFastFail},
};
} // namespace

bool TimelinePainter::legendShows(int use) const
{
    // Only what the picture uses; an empty store still explains the status colours.
    return m_legendUse == 0 ? use < 6 : (m_legendUse >> use) & 1u;
}

// The legend flows into as many rows as the width needs; each entry is a symbol and its name.
std::vector<QPointF> TimelinePainter::legendLayout(double width, int *rows) const
{
    const double s = m_metrics.scale;
    const QFontMetricsF fm(font(12));
    std::vector<QPointF> at;
    double x = 10;
    int row = 0;
    for (const LegendEntry &e : kLegend) {
        if (!legendShows(e.use)) {
            at.emplace_back(-1, -1);
            continue;
        }
        const double w = 28 * s + fm.horizontalAdvance(QString::fromUtf8(e.name));
        if (x + w > width - 10 && x > 10) {
            x = 10;
            ++row;
        }
        at.emplace_back(x, row);
        x += w + 20 * s;
    }
    if (rows) *rows = row + 1;
    return at;
}

int TimelinePainter::legendHeight(double width) const
{
    // Measured text, so cached: hit-testing asks on every mouse move.
    refreshCaches();
    if (m_legendHeightFor != std::tuple{width, m_metrics.scale, m_legendUse}) {
        int rows = 1;
        legendLayout(width, &rows);
        m_legendHeight = int(rows * 26 * m_metrics.scale + 6 * m_metrics.scale);
        m_legendHeightFor = {width, m_metrics.scale, m_legendUse};
    }
    return m_legendHeight;
}

void TimelinePainter::paintLegend(QPainter *p, const QRectF &rect)
{
    const TimelineTheme &th = theme();
    const double s = m_metrics.scale;
    p->fillRect(rect, th.background);
    p->setFont(font(12));
    const QFontMetricsF fm(p->font());
    const QColor colors[] = {kOk,       kUnavailable,    kDeadlineExceeded, kOtherError,      kCancelled,
                             kInFlight, th.phaseRequest, th.phaseResponse,  th.expectedRange, th.stall};
    const std::vector<QPointF> at = legendLayout(rect.width(), nullptr);
    for (size_t i = 0; i < std::size(kLegend); ++i) {
        const LegendEntry &e = kLegend[i];
        if (at[i].y() < 0) continue;
        const double x0 = rect.left() + at[i].x();
        const double y = rect.top() + 3 * s + (at[i].y() + 0.5) * 26 * s;
        const QRectF box(x0, y - 6 * s, 22 * s, 12 * s);
        const double mx = x0 + 11 * s;
        switch (e.symbol) {
        case LegendSymbol::Box:
            p->fillRect(box, colors[e.color]);
            break;
        case LegendSymbol::Hatched:
            p->fillRect(box, colors[e.color]);
            hatch(p, box);
            break;
        case LegendSymbol::Wait:
            p->fillRect(box, colors[e.color]);
            p->fillRect(box, th.phaseWait);
            break;
        case LegendSymbol::Gap:
            p->setPen(QPen(th.gap, s > 1 ? 2 : 1));
            p->drawLine(QPointF(x0, y), QPointF(x0 + 22 * s, y));
            p->drawLine(QPointF(x0, y - 5 * s), QPointF(x0, y + 5 * s));
            p->drawLine(QPointF(x0 + 22 * s, y - 5 * s), QPointF(x0 + 22 * s, y + 5 * s));
            break;
        case LegendSymbol::Deadline:
            p->setPen(QPen(th.deadline, 2 * s, Qt::DashLine));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            break;
        case LegendSymbol::AttemptTimeout:
            p->setPen(QPen(th.deadline, 1));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            p->fillRect(QRectF(mx, y - 8 * s, 6 * s, 4 * s), th.deadline);
            break;
        case LegendSymbol::FastFail:
            p->setPen(QPen(th.deadline, 2 * s));
            p->drawLine(QPointF(mx, y - 5 * s), QPointF(mx, y + 5 * s));
            break;
        case LegendSymbol::Commit:
            p->setPen(QPen(th.commit, 2 * s));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            break;
        case LegendSymbol::Marker: {
            const double r = 5 * s;
            p->setPen(Qt::NoPen);
            p->setBrush(th.labMarker);
            p->drawPolygon(
                QPolygonF({QPointF(mx, y - r), QPointF(mx + r, y), QPointF(mx, y + r), QPointF(mx - r, y)}));
            p->setBrush(Qt::NoBrush);
            break;
        }
        }
        const QString name = QString::fromUtf8(e.name);
        p->setPen(th.text);
        p->drawText(QRectF(x0 + 28 * s, y - fm.height() / 2, fm.horizontalAdvance(name) + 4, fm.height()),
                    Qt::AlignVCenter | Qt::AlignLeft, name);
    }
}

namespace {
TimelinePainter preparedPainter(const TimelineStore &store, const TimelinePainter::Options &options,
                                std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter(&store);
    TimelinePainter::Options o = options;
    // An exported picture explains itself: a title with the time range, and the legend.
    o.legend = true;
    if (o.title.isEmpty()) o.title = QStringLiteral("rpcscope timeline");
    painter.setOptions(o);
    const auto [lo, hi] = range.value_or(painter.fullRange());
    painter.setRange(lo, hi);
    return painter;
}
} // namespace

QImage TimelinePainter::renderImage(const TimelineStore &store, int width, const Options &options,
                                    qreal scale, std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter = preparedPainter(store, options, range);
    const int height = painter.contentHeight(width) + 8;
    QImage image(QSize(int(width * scale), int(height * scale)), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(painter.theme().background);
    QPainter p(&image);
    painter.paint(&p, QRectF(0, 0, width, height));
    return image;
}

bool TimelinePainter::renderSvg(const TimelineStore &store, int width, const Options &options,
                                const QString &fileName, std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter = preparedPainter(store, options, range);
    const int height = painter.contentHeight(width) + 8;
    QSvgGenerator svg;
    svg.setFileName(fileName);
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle(options.title);
    svg.setDescription(QStringLiteral("rpcscope timeline"));
    QPainter p;
    if (!p.begin(&svg)) return false;
    painter.paint(&p, QRectF(0, 0, width, height));
    return p.end();
}

} // namespace rpcscope
