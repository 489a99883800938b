#include "timelinelayout.h"

#include "clientoutcome.h"
#include "timelinestyle.h"

#include <QStringList>
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace rpcscope {

namespace {
QString outcomeName(const Call &call)
{
    const Attempt *a = call.outcomeAttempt();
    if (!a) return QStringLiteral("inflight");
    return a->status ? QString::fromLatin1(grpcStatusName(*a->status)) : QStringLiteral("no status");
}

std::optional<CallCategory> outcomeOf(QString name)
{
    name.replace(QLatin1Char('_'), QLatin1Char('-'));
    for (int c = 0; c < kCallCategories; ++c) {
        QString key = QString::fromLatin1(categoryKey(CallCategory(c)));
        key.replace(QLatin1Char('_'), QLatin1Char('-'));
        if (name.compare(key, Qt::CaseInsensitive) == 0) return CallCategory(c);
    }
    return std::nullopt;
}

// "10ms..20ms", ">=1s", ">1s", "<50us", "<=2ms" or "1s" (at least): [lo, hi) in ns.
std::optional<std::pair<std::int64_t, std::int64_t>> parseRange(const QString &text)
{
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
    if (const int dots = int(text.indexOf(QLatin1String(".."))); dots >= 0) {
        const auto lo = LaneFilter::parseDuration(text.left(dots));
        const auto hi = LaneFilter::parseDuration(text.mid(dots + 2));
        if (!lo || !hi || *hi <= *lo) return std::nullopt;
        return std::pair{*lo, *hi};
    }
    struct Op
    {
        const char *op;
        bool lower;       // a lower bound, else an upper one
        std::int64_t add; // >1s is >=1s+1ns; <=2ms is <2ms+1ns
    };
    for (const Op &o : {Op{">=", true, 0}, Op{"<=", false, 1}, Op{">", true, 1}, Op{"<", false, 0}}) {
        if (!text.startsWith(QLatin1String(o.op))) continue;
        const auto v = LaneFilter::parseDuration(text.mid(int(std::strlen(o.op))));
        if (!v) return std::nullopt;
        return o.lower ? std::pair{*v + o.add, kNone} : std::pair{std::int64_t(0), *v + o.add};
    }
    const auto v = LaneFilter::parseDuration(text);
    if (!v) return std::nullopt;
    return std::pair{*v, kNone};
}

bool inRange(std::int64_t v, const std::pair<std::int64_t, std::int64_t> &r)
{
    return v >= r.first && v < r.second;
}
} // namespace

LaneFilter LaneFilter::parse(const QString &line)
{
    LaneFilter f;
    QStringList words;
    auto term = [](const QString &w, QLatin1String name) { return w.startsWith(name, Qt::CaseInsensitive); };
    auto exact = [](QString v, bool *isExact) {
        *isExact = v.startsWith(QLatin1Char('='));
        return *isExact ? v.mid(1) : v;
    };
    for (const QString &w : line.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (term(w, QLatin1String("method:"))) {
            f.method = exact(w.mid(7), &f.methodExact);
        } else if (term(w, QLatin1String("status:"))) {
            f.status = w.mid(7);
        } else if (term(w, QLatin1String("hop:"))) {
            f.hop = exact(w.mid(4), &f.hopExact);
        } else if (term(w, QLatin1String("outcome:"))) {
            const QString name = w.mid(8);
            f.outcome = outcomeOf(name);
            if (!f.outcome && f.problem.isEmpty())
                f.problem = QStringLiteral("unknown outcome '%1': use ok-first-try, ok-after-retry, "
                                           "failed-after-retries, failed-no-retry, failed-fast, "
                                           "deadline-exceeded or in-flight")
                                .arg(name);
        } else if (term(w, QLatin1String("latency:")) || term(w, QLatin1String("attempt-latency:"))) {
            const bool attempt = term(w, QLatin1String("attempt-latency:"));
            const QString range = w.mid(attempt ? 16 : 8);
            const auto r = parseRange(range);
            (attempt ? f.attemptLatency : f.latency) = r;
            if (!r && f.problem.isEmpty())
                f.problem = QStringLiteral("unknown latency '%1': use 10ms..20ms, >=1s, <50us (units ns, "
                                           "us, ms, s, m)")
                                .arg(range);
        } else {
            words << w;
        }
    }
    f.text = words.join(QLatin1Char(' '));
    if (!f.status.isEmpty() && !knownStatus(f.status))
        f.problem =
            QStringLiteral("unknown status '%1': use a gRPC code name, failed, ok or inflight").arg(f.status);
    return f;
}

std::optional<std::int64_t> LaneFilter::parseDuration(const QString &text)
{
    static const std::pair<const char *, double> units[] = {
        {"ns", 1}, {"us", 1e3}, {"\u00b5s", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}};
    const QString t = text.trimmed();
    int split = 0;
    while (split < t.size() && (t[split].isDigit() || t[split] == QLatin1Char('.')))
        ++split;
    if (split == 0) return std::nullopt;
    bool ok = false;
    const double v = t.left(split).toDouble(&ok);
    if (!ok) return std::nullopt;
    const QString unit = t.mid(split);
    for (const auto &[name, scale] : units)
        if (unit.compare(QString::fromUtf8(name), Qt::CaseInsensitive) == 0 && v * scale < 9.2e18)
            return std::int64_t(v * scale + 0.5);
    return std::nullopt;
}

QString LaneFilter::durationTerm(std::int64_t ns)
{
    static const std::pair<std::int64_t, const char *> units[] = {
        {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}};
    for (const auto &[scale, name] : units)
        if (ns != 0 && ns % scale == 0) return QString::number(ns / scale) + QLatin1String(name);
    return QString::number(ns) + QLatin1String("ns");
}

QString LaneFilter::latencyTerm(std::int64_t lo, std::int64_t hi, bool attempt)
{
    const QString name = attempt ? QStringLiteral("attempt-latency:") : QStringLiteral("latency:");
    if (hi == std::numeric_limits<std::int64_t>::max()) return name + QLatin1String(">=") + durationTerm(lo);
    if (lo <= 0) return name + QLatin1Char('<') + durationTerm(hi);
    return name + durationTerm(lo) + QLatin1String("..") + durationTerm(hi);
}

bool LaneFilter::knownStatus(const QString &name)
{
    // The outcome is matched by substring ("UNAVAIL" is fine), so a name is known when it is part of one.
    static const QStringList words = [] {
        QStringList w{QStringLiteral("failed"),     QStringLiteral("ok"),
                      QStringLiteral("inflight"),   QStringLiteral("no status"),
                      QStringLiteral("RST_STREAM"), QStringLiteral("refused by GOAWAY")};
        for (int code = 0; code <= 16; ++code)
            w << QString::fromLatin1(grpcStatusName(code));
        return w;
    }();
    return std::any_of(words.begin(), words.end(),
                       [&](const QString &w) { return w.contains(name, Qt::CaseInsensitive); });
}

bool LaneFilter::matches(const Call &call, const TimelineStore *store) const
{
    auto differs = [](const std::string &have, const QString &want, bool isExact) {
        const QString h = QString::fromStdString(have);
        return isExact ? h != want : !h.contains(want, Qt::CaseInsensitive);
    };
    if ((methodExact || !method.isEmpty()) && differs(call.method, method, methodExact)) return false;
    if ((hopExact || !hop.isEmpty()) && differs(call.hop, hop, hopExact)) return false;
    if (outcome || latency || attemptLatency) {
        if (!store) return false;
        if (outcome && CallStats::categoryOf(call, *store) != *outcome) return false;
        if (latency) {
            const auto ns = CallStats::callLatencyNs(call, *store);
            if (!ns || !inRange(*ns, *latency)) return false;
        }
        if (attemptLatency &&
            std::none_of(call.attempts.begin(), call.attempts.end(), [this](const Attempt &a) {
                return a.endNs && inRange(std::max<std::int64_t>(0, *a.endNs - a.startNs), *attemptLatency);
            }))
            return false;
    }
    if (status.isEmpty() && text.isEmpty()) return true;
    QString outcome = outcomeName(call);
    std::optional<int> clientStatus;
    if (store) {
        const ClientOutcome client = clientOutcome(call, *store);
        if (client.implied() && client.status) {
            clientStatus = client.status;
            outcome += QLatin1Char(' ') + QString::fromStdString(client.label());
        }
    }
    if (!status.isEmpty()) {
        const Attempt *a = call.outcomeAttempt();
        const int got = clientStatus ? *clientStatus : (a ? a->status.value_or(-1) : -1);
        if (status.compare(QLatin1String("failed"), Qt::CaseInsensitive) == 0) {
            if (!a || got == 0) return false;
        } else if (status.compare(QLatin1String("ok"), Qt::CaseInsensitive) == 0) {
            if (!a || got != 0) return false;
        } else if (!outcome.contains(status, Qt::CaseInsensitive)) {
            return false;
        }
    }
    if (!text.isEmpty()) {
        const Attempt *a = call.outcomeAttempt();
        const bool hit = QString::fromStdString(call.key).contains(text, Qt::CaseInsensitive) ||
                         QString::fromStdString(call.method).contains(text, Qt::CaseInsensitive) ||
                         outcome.contains(text, Qt::CaseInsensitive) ||
                         (a && a->statusMessage &&
                          QString::fromStdString(*a->statusMessage).contains(text, Qt::CaseInsensitive));
        if (!hit) return false;
    }
    return true;
}

LaneMetrics LaneMetrics::scaled(double s, LaneDensity density, int labelWidth)
{
    LaneMetrics m;
    m.scale = s;
    m.labelWidth = m.px(labelWidth > 0 ? labelWidth : 230);
    m.rulerHeight = m.px(30);
    m.titleHeight = m.px(30);
    m.callHeader = m.px(24);
    m.attemptHeight = m.px(34);
    m.callSpacing = m.px(10);
    m.bandHeight = m.px(28);
    m.overviewHeight = m.px(52);
    m.groupHeader = m.px(26);
    m.connectionHeight = m.px(34);
    m.barHeight = 15 * s;
    m.compact = density == LaneDensity::Compact;
    // A call's row holds its 13 px bold name with 20% to spare (20 px at scale 1): in workshop mode that
    // keeps ten calls and more of the circuit breaker on a 1920x1080 screen.
    m.rowHeight = s > 1 ? int(13 * s * 1.2 + 0.5) : 20;
    m.rowBar = 12 * s;
    m.aggregateRow = m.px(32);
    if (m.compact) {
        // A row a call, 2 px apart: 25 calls and more in the ~600 px a 1600x1000 window leaves the lanes. An
        // expanded call keeps room for its gap labels above each bar.
        m.callHeader = m.px(22);
        m.attemptHeight = m.px(28);
        m.callSpacing = m.px(2);
        m.groupHeader = m.px(24);
        m.barHeight = 13 * s;
    }
    return m;
}

bool TimelineLayout::fitsOneRow(const TimelineStore &store, size_t call) const
{
    if (!m_compact) return false;
    const Call &c = store.calls()[call];
    if (c.attempts.empty() || m_expanded.count(c.key) || m_marked.count(c.key)) return false;
    // Attempts one after another share the row; overlapping ones (hedging) need a row each.
    for (size_t k = 1; k < c.attempts.size(); ++k) {
        const auto &prev = c.attempts[k - 1];
        if (!prev.endNs || *prev.endNs > c.attempts[k].startNs) return false;
    }
    return true;
}

void TimelineLayout::addCall(const TimelineStore &store, size_t call, const LaneMetrics &m)
{
    const bool one = fitsOneRow(store, call);
    const double h = m.callLaneHeight(one, laneRows(store.calls()[call]));
    m_blockOfCall[call] = std::uint32_t(m_blocks.size());
    m_blocks.push_back({LaneBlock::CallLane, std::uint32_t(call), m_y, h, one});
    m_y += h + m_spacing;
    ++m_callLanes;
}

bool TimelineLayout::noteLabEvents(const TimelineStore &store, bool *suppressedAdded)
{
    bool added = false;
    bool suppressed = false;
    const auto &events = store.labEvents();
    // By position among every lab event recorded (TimelineStore::labEventsCut), so a retention cut of the
    // oldest costs nothing here, and a rebuild of the lanes (after every cut) only looks at the events new
    // since the last look: a walk of all of them, a million and more in a burst, was 30-70 ms of the GUI
    // thread's CPU per cut. Everything again only when the store cleared or moved them.
    const std::uint64_t cut = store.labEventsCut();
    if (store.labEventsMoved() != m_labMoved) {
        m_labMoved = store.labEventsMoved();
        m_labSeen = 0;
        m_marked.clear();
        m_suppressed.clear();
    }
    for (size_t i = m_labSeen > cut ? size_t(m_labSeen - cut) : 0; i < events.size(); ++i) {
        const LabEventRecord &e = events[i];
        ++m_labLooked;
        if (e.callId.empty()) continue;
        const bool retrySuppressed = e.kind == "retry-suppressed";
        if (retrySuppressed) suppressed |= m_suppressed.insert(e.callId).second;
        if (retrySuppressed || markerLabel(e.kind)) added |= m_marked.insert(e.callId).second;
    }
    m_labSeen = cut + events.size();
    if (suppressedAdded) *suppressedAdded = suppressed;
    return added;
}

void TimelineLayout::build(const TimelineStore &store, LaneGrouping grouping, const LaneFilter &filter,
                           const LaneMetrics &m, size_t maxConnectionLanes)
{
    m_blocks.clear();
    m_groups.clear();
    m_callLanes = 0;
    m_y = 0;
    m_spacing = m.callSpacing;
    const auto &calls = store.calls();
    m_blockOfCall.assign(calls.size(), ~std::uint32_t(0));
    m_compact = m.compact;
    m_expanded = filter.expanded;
    noteLabEvents(store); // the calls with markers are the store's, whatever the grouping and filter
    const bool all = filter.isEmpty();
    auto failed = [](const Call &c) {
        const Attempt *a = c.outcomeAttempt();
        return a && a->status.value_or(-1) != 0;
    };
    // Lanes in the order the calls started. The store holds them as they came: another hop's decoder behind
    // (a busy machine) hands over calls that started before ones already there.
    std::vector<std::uint32_t> order;
    const bool inOrder = std::is_sorted(
        calls.begin(), calls.end(), [](const Call &a, const Call &b) { return a.startNs() < b.startNs(); });
    if (!inOrder) {
        order.resize(calls.size());
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(), [&calls](std::uint32_t a, std::uint32_t b) {
            return calls[a].startNs() < calls[b].startNs();
        });
    }
    auto callAt = [&](size_t k) { return inOrder ? k : size_t(order[k]); };

    if (grouping == LaneGrouping::Chain) {
        // Roots in start order, each followed by the calls made while serving it, depth first.
        std::vector<std::vector<std::uint32_t>> children(calls.size());
        std::vector<std::uint32_t> roots;
        for (size_t k = 0; k < calls.size(); ++k) {
            const size_t i = callAt(k);
            const auto parent = calls[i].parentCall;
            if (parent && *parent < calls.size() && *parent != i)
                children[*parent].push_back(std::uint32_t(i));
            else
                roots.push_back(std::uint32_t(i));
        }
        std::vector<std::uint32_t> stack(roots.rbegin(), roots.rend());
        size_t guard = 0;
        while (!stack.empty() && guard++ <= calls.size()) {
            const std::uint32_t c = stack.back();
            stack.pop_back();
            if (all || filter.matches(calls[c], &store)) addCall(store, c, m);
            if (!filter.collapsed.count(calls[c].key))
                stack.insert(stack.end(), children[c].rbegin(), children[c].rend());
        }
    } else if (grouping == LaneGrouping::None) {
        // A few connections get a lane each; more share one lane (grouping by connection separates them), so
        // the calls stay on the first screen.
        const size_t conns = maxConnectionLanes ? store.connections().size() : 0;
        const bool share = conns > maxConnectionLanes;
        for (size_t i = 0; i < (share ? 1 : conns); ++i) {
            const std::uint32_t index = share ? kAllConnections : std::uint32_t(i);
            m_blocks.push_back({LaneBlock::ConnectionLane, index, m_y, double(m.connectionHeight), false});
            m_y += m.connectionHeight + m_spacing;
        }
        for (size_t k = 0; k < calls.size(); ++k)
            if (const size_t i = callAt(k); all || filter.matches(calls[i], &store)) addCall(store, i, m);
    } else {
        // Groups in order of their first call, calls in start order within a group.
        std::vector<std::vector<std::uint32_t>> members;
        std::unordered_map<std::string, size_t> byMethod;
        std::unordered_map<std::uint32_t, size_t> byConnection;
        std::vector<std::uint32_t> groupConnection;
        for (size_t k = 0; k < calls.size(); ++k) {
            const size_t i = callAt(k);
            const Call &c = calls[i];
            if (!all && !filter.matches(c, &store)) continue;
            size_t g;
            if (grouping == LaneGrouping::Method) {
                auto [it, added] = byMethod.try_emplace(c.method, members.size());
                g = it->second;
                if (added) {
                    members.emplace_back();
                    m_groups.emplace_back().title = QString::fromStdString(c.method);
                }
            } else {
                const std::uint32_t conn = c.attempts.empty() ? 0 : c.attempts.front().connection;
                auto [it, added] = byConnection.try_emplace(conn, members.size());
                g = it->second;
                if (added) {
                    members.emplace_back();
                    m_groups.emplace_back().title = QStringLiteral("connection %1").arg(conn);
                    groupConnection.push_back(conn);
                }
            }
            members[g].push_back(std::uint32_t(i));
            Group &group = m_groups[g];
            group.startNs = group.calls ? std::min(group.startNs, c.startNs()) : c.startNs();
            group.endNs = std::max(group.endNs, c.endNs().value_or(store.latestNs()));
            ++group.calls;
            group.failed += failed(c);
            const Attempt *a = c.outcomeAttempt();
            ++group.outcomes[a ? statusGroup(*a) : 5];
            const QString name = outcomeName(c);
            auto it = std::find_if(group.statuses.begin(), group.statuses.end(),
                                   [&](const auto &st) { return st.first == name; });
            if (it == group.statuses.end())
                group.statuses.emplace_back(name, 1);
            else
                ++it->second;
        }
        for (Group &group : m_groups) {
            std::stable_sort(group.statuses.begin(), group.statuses.end(),
                             [](const auto &x, const auto &y) { return x.second > y.second; });
            group.folded = filter.foldedGroups.count(group.title) > 0;
        }
        // A folded group is one row of counts instead of its calls.
        auto addMembers = [&](size_t g) {
            if (m_groups[g].folded) {
                Group &group = m_groups[g];
                group.members = members[g];
                group.spans.reserve(members[g].size());
                for (std::uint32_t c : members[g]) {
                    const Attempt *a = calls[c].outcomeAttempt();
                    group.spans.push_back({calls[c].startNs(), calls[c].endNs().value_or(store.latestNs()),
                                           std::uint8_t(a ? statusGroup(*a) : 5)});
                }
                std::sort(group.spans.begin(), group.spans.end(),
                          [](const Group::Span &x, const Group::Span &y) { return x.start < y.start; });
                m_blocks.push_back(
                    {LaneBlock::GroupAggregate, std::uint32_t(g), m_y, double(m.aggregateRow), false});
                m_y += m.aggregateRow + m_spacing;
                return;
            }
            for (std::uint32_t call : members[g])
                addCall(store, call, m);
        };
        std::unordered_map<std::uint32_t, size_t> connectionIndex;
        for (size_t k = 0; k < store.connections().size(); ++k)
            connectionIndex.emplace(store.connections()[k].id, k);
        for (size_t g = 0; g < members.size(); ++g) {
            if (grouping == LaneGrouping::Connection) {
                // The connection's own lane heads its group: its SETTINGS, PINGs and stalls above its calls.
                const auto found = connectionIndex.find(groupConnection[g]);
                const size_t conn =
                    found == connectionIndex.end() ? store.connections().size() : found->second;
                if (conn < store.connections().size()) {
                    m_blocks.push_back({LaneBlock::ConnectionLane, std::uint32_t(conn), m_y,
                                        double(m.connectionHeight), false});
                    m_y += m.connectionHeight + m_spacing;
                    addMembers(g);
                    continue;
                }
            }
            // Folded, its row of counts is its header too.
            if (!m_groups[g].folded) {
                m_blocks.push_back(
                    {LaneBlock::GroupHeader, std::uint32_t(g), m_y, double(m.groupHeader), false});
                m_y += m.groupHeader + m_spacing / 2;
            }
            addMembers(g);
        }
    }
    m_height = m_y;
    m_incrementable = grouping == LaneGrouping::None && all;
    m_scale = m.scale;
    m_connections = store.connections().size();
}

bool TimelineLayout::update(const TimelineStore &store, const StoreChanges &changes, const LaneMetrics &m)
{
    if (!m_incrementable || m.scale != m_scale || m.compact != m_compact ||
        store.connections().size() != m_connections || changes.firstNewCall != m_blockOfCall.size() ||
        store.calls().size() < m_blockOfCall.size())
        return false;
    // A marker now on a lane can take a call off its one row; a suppressed retry adds a row to its lane.
    bool suppressedAdded = false;
    if (noteLabEvents(store, &suppressedAdded) && (m_compact || suppressedAdded)) return false;
    // One pass from the first lane that grew, carrying the growth of every lane above.
    std::vector<std::pair<size_t, double>> grown; // (block, new height)
    for (size_t call : changes.callsWithNewAttempts) {
        const size_t b = blockOfCall(call);
        if (b >= m_blocks.size()) return false;
        m_blocks[b].oneRow = fitsOneRow(store, call);
        const double h = m.callLaneHeight(m_blocks[b].oneRow, laneRows(store.calls()[call]));
        if (h != m_blocks[b].h) grown.emplace_back(b, h);
    }
    std::sort(grown.begin(), grown.end());
    double shift = 0;
    size_t next = 0;
    for (size_t b = grown.empty() ? m_blocks.size() : grown.front().first; b < m_blocks.size(); ++b) {
        m_blocks[b].y += shift;
        if (next < grown.size() && grown[next].first == b) {
            shift += grown[next].second - m_blocks[b].h;
            m_blocks[b].h = grown[next].second;
            ++next;
        }
    }
    m_y += shift;
    m_spacing = m.callSpacing;
    // A call whose start moved earlier (an attempt placed before its first) may belong higher up.
    for (const StoreChanges::Placed &p : changes.attemptsPlacedBefore)
        if (p.at == 0 && p.call < changes.firstNewCall) {
            const size_t b = blockOfCall(p.call);
            if (b >= m_blocks.size()) return false;
            placeLaneUp(store, b);
        }
    m_blockOfCall.resize(store.calls().size(), ~std::uint32_t(0));
    for (size_t i = changes.firstNewCall; i < store.calls().size(); ++i) {
        addCall(store, i, m);
        placeLaneUp(store, m_blocks.size() - 1);
    }
    m_height = m_y;
    return true;
}

void TimelineLayout::placeLaneUp(const TimelineStore &store, size_t from)
{
    const auto &calls = store.calls();
    const std::int64_t start = calls[m_blocks[from].index].startNs();
    size_t pos = from;
    while (pos > 0 && from - pos < kReorderLanes && m_blocks[pos - 1].kind == LaneBlock::CallLane &&
           calls[m_blocks[pos - 1].index].startNs() > start)
        --pos;
    if (pos == from) return;
    // The lanes between keep their heights and move down by this one's: only [pos, from] change.
    double y = m_blocks[pos].y;
    std::rotate(m_blocks.begin() + std::ptrdiff_t(pos), m_blocks.begin() + std::ptrdiff_t(from),
                m_blocks.begin() + std::ptrdiff_t(from + 1));
    for (size_t b = pos; b <= from; ++b) {
        m_blocks[b].y = y;
        y += m_blocks[b].h + m_spacing;
        m_blockOfCall[m_blocks[b].index] = std::uint32_t(b);
    }
}

bool TimelineLayout::removeCalls(const TimelineStore &store, const EvictionShift &shift, size_t evicted,
                                 const LaneMetrics &m)
{
    if (!evicted) return true;
    if (!m_incrementable || m.scale != m_scale || m.compact != m_compact ||
        store.connections().size() != m_connections || store.calls().size() + evicted != m_blockOfCall.size())
        return false;
    size_t write = 0;
    m_y = 0;
    for (size_t b = 0; b < m_blocks.size(); ++b) {
        LaneBlock block = m_blocks[b];
        if (block.kind == LaneBlock::CallLane) {
            if (shift.gone(block.index)) {
                --m_callLanes;
                continue;
            }
            block.index = std::uint32_t(shift(block.index));
        }
        block.y = m_y;
        m_y += block.h + m_spacing;
        m_blocks[write++] = block;
    }
    m_blocks.resize(write);
    m_height = m_y;
    m_blockOfCall.assign(store.calls().size(), ~std::uint32_t(0));
    for (size_t b = 0; b < m_blocks.size(); ++b)
        if (m_blocks[b].kind == LaneBlock::CallLane && m_blocks[b].index < m_blockOfCall.size())
            m_blockOfCall[m_blocks[b].index] = std::uint32_t(b);
    return true;
}

size_t TimelineLayout::firstVisible(double y) const
{
    return size_t(std::partition_point(m_blocks.begin(), m_blocks.end(),
                                       [y](const LaneBlock &b) { return b.y + b.h < y; }) -
                  m_blocks.begin());
}

size_t TimelineLayout::blockAt(double y) const
{
    const size_t i = firstVisible(y);
    if (i < m_blocks.size() && m_blocks[i].y <= y && y <= m_blocks[i].y + m_blocks[i].h) return i;
    return m_blocks.size();
}

size_t TimelineLayout::blockOfCall(size_t call) const
{
    if (call >= m_blockOfCall.size() || m_blockOfCall[call] == ~std::uint32_t(0)) return m_blocks.size();
    return m_blockOfCall[call];
}

} // namespace rpcscope
