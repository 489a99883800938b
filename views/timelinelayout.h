#pragma once

#include "callstats.h"
#include "timelinestore.h"

#include <QString>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace rpcscope {

// How call lanes are ordered and headed. Chain puts every call made while serving another right under it
// (depth first, in start order), and the painter indents it by its nesting depth.
enum class LaneGrouping : std::uint8_t
{
    None,
    Method,
    Connection,
    Chain
};

// How tall the call lanes are. Compact puts a call on one row (its attempts side by side, gaps between them)
// unless it is expanded or its attempts overlap; Comfortable gives every call a header and a row per
// attempt.
enum class LaneDensity : std::uint8_t
{
    Compact,
    Comfortable
};

// Which calls get a lane. Parsed from one line of text: "method:Echo status:UNAVAILABLE slow" keeps calls
// whose method contains "Echo", whose outcome is UNAVAILABLE, and that mention "slow" in their id, method,
// status or status message. Every part is case-insensitive; status:failed matches every non-OK outcome and
// status:inflight the calls that have not ended. The Statistics dock's terms (its clicks write them):
// - hop:NAME the calls whose hop contains NAME; method:=NAME and hop:=NAME match NAME exactly, and hop:= the
//   main proxy's calls (no hop label);
// - outcome:ok-first-try, ok-after-retry, failed-after-retries, failed-no-retry, failed-fast,
//   deadline-exceeded or in-flight: the call's CallCategory (callstats.h);
// - latency:10ms..20ms (from 10 ms, below 20 ms), latency:>=1s, latency:>1s, latency:<50us, latency:<=2ms,
//   latency:1s (at least 1 s): the call's latency (CallStats::callLatencyNs); attempt-latency: the same for
//   any one of its ended attempts. Units ns, us (or µs), ms, s, m.
struct LaneFilter
{
    QString method;
    QString status;
    QString text;
    QString hop;
    bool methodExact = false, hopExact = false;
    std::optional<CallCategory> outcome;
    // [first, second) in ns.
    std::optional<std::pair<std::int64_t, std::int64_t>> latency, attemptLatency;
    // Nested by chain: the calls (by key) whose nested calls are folded away (double-click a call's header).
    std::set<std::string> collapsed;
    // Why the line cannot match as meant (an unknown status: name), for the filter box; empty when fine.
    QString problem;
    // Compact lanes: the calls (by key) shown with a row per attempt anyway (click a call's header).
    std::set<std::string> expanded;
    // Grouped by method or connection: the groups (by title) folded into one row of counts.
    std::set<QString> foldedGroups;

    static LaneFilter parse(const QString &line);
    // Whether `name` is something status: can mean: a gRPC code name or a part of one, failed, ok, inflight
    // or a wire outcome's word (RST_STREAM, GOAWAY, "no status").
    static bool knownStatus(const QString &name);
    bool isEmpty() const
    {
        return method.isEmpty() && !methodExact && status.isEmpty() && text.isEmpty() && hop.isEmpty() &&
               !hopExact && !outcome && !latency && !attemptLatency;
    }
    // With the store, status: and the text also match what the client got where the wire only implies it
    // (keepalive-drop's UNAVAILABLE behind a RST_STREAM), and failed/ok follow it. outcome: and latency: need
    // the store: without it they match nothing.
    bool matches(const Call &call, const TimelineStore *store = nullptr) const;
    // The terms that write a row and a latency range back as filter text: "method:/a.B/C", "hop:=",
    // "latency:10ms..20ms" (the range [lo, hi); hi INT64_MAX for no upper end), with durations in the
    // largest unit that keeps them whole ("1500us", "2s").
    static QString durationTerm(std::int64_t ns);
    static QString latencyTerm(std::int64_t lo, std::int64_t hi, bool attempt = false);
    // "1.5ms" -> 1500000; nullopt when it is not a number with a unit.
    static std::optional<std::int64_t> parseDuration(const QString &text);
    bool operator==(const LaneFilter &) const = default;
};

// Sizes in pixels at one scale (workshop mode scales everything up for a projector).
struct LaneMetrics
{
    double scale = 1.0;
    int labelWidth = 230;
    int rulerHeight = 30;
    int titleHeight = 30;
    int callHeader = 24;
    int attemptHeight = 34;
    int callSpacing = 10;
    int bandHeight = 28;
    int overviewHeight = 52;
    int groupHeader = 26;
    int connectionHeight = 34;
    double barHeight = 15;
    bool compact = false;
    int rowHeight = 20;    // a call on one row (compact)
    double rowBar = 12;    // its bar
    int aggregateRow = 22; // a folded group's row of counts

    // Workshop mode: scale 2.2, so the smallest lane text (11 px) is 24 px on a projector.
    static LaneMetrics scaled(double s, LaneDensity density = LaneDensity::Compact, int labelWidth = 0);
    int px(double v) const { return int(v * scale + 0.5); }
    // Where attempt k's row starts below its lane's top, and how tall it is.
    double attemptTop(bool oneRow, size_t k) const
    {
        return oneRow ? 0 : callHeader + double(k) * attemptHeight;
    }
    double attemptRowHeight(bool oneRow) const { return oneRow ? rowHeight : attemptHeight; }
    // The bar's top below its row's top, and its height.
    double barOffset(bool oneRow) const { return oneRow ? (rowHeight - rowBar) / 2 : attemptHeight * 0.44; }
    double barSize(bool oneRow) const { return oneRow ? rowBar : barHeight; }
    double callLaneHeight(bool oneRow, size_t attempts) const
    {
        return oneRow ? rowHeight : callHeader + double(attempts) * attemptHeight;
    }
};

// One vertical block of the content: a group header, a connection lane, or a call lane (header + attempts).
// LaneBlock::index of a connection lane that shows every connection at once.
constexpr std::uint32_t kAllConnections = ~std::uint32_t(0);
// Beyond this many connections, the ungrouped view shows them in one lane.
constexpr size_t kMaxSeparateConnections = 4;

struct LaneBlock
{
    enum Kind : std::uint8_t
    {
        GroupHeader,
        ConnectionLane,
        CallLane,
        GroupAggregate // a folded group: its counts and outcome mix on one row
    };
    Kind kind = CallLane;
    std::uint32_t index = 0; // call index, connection index in the store, or group index
    double y = 0;            // top, in content coordinates (0 = first block)
    double h = 0;            // without the spacing below it
    bool oneRow = false;     // a call lane on one row (compact)
};

// The vertical layout of every lane, rebuilt only when the store, the filter, the grouping or the sizes
// change. Blocks are sorted by y, so the painter and hit-testing binary-search the visible slice instead of
// walking 100,000 lanes.
class TimelineLayout
{
public:
    struct Group
    {
        QString title;
        size_t calls = 0;
        size_t failed = 0;
        // Calls by outcome: the status colour groups (timelinestyle.h statusGroup) of each outcome attempt.
        std::array<size_t, 6> outcomes{};
        // Outcomes by status name, most frequent first once built ("OK", "UNAVAILABLE", ...).
        std::vector<std::pair<QString, size_t>> statuses;
        std::int64_t startNs = 0, endNs = 0; // the span of its calls
        bool folded = false;
        std::vector<std::uint32_t> members; // its calls, kept while it is folded
        // While folded: each call's span and outcome group, by start, so its row reads 24 bytes a call
        // instead of the calls themselves (~80 ms for 100,000 calls, mostly cache misses).
        struct Span
        {
            std::int64_t start = 0, end = 0;
            std::uint8_t outcome = 0;
        };
        std::vector<Span> spans;
    };

    // maxConnectionLanes: how many connections (one lane per call) may get a lane each; more share one lane,
    // and 0 shows none.
    void build(const TimelineStore &store, LaneGrouping grouping, const LaneFilter &filter,
               const LaneMetrics &m, size_t maxConnectionLanes);
    // Follows one applied batch without rebuilding: new calls get lanes at the end, calls that gained
    // attempts grow and push the lanes below them down. Only for one lane per call without a filter (a filter
    // or a group can move any lane); returns false when a build() is needed instead.
    bool update(const TimelineStore &store, const StoreChanges &changes, const LaneMetrics &m);
    // Follows retention evicting `evicted` calls (`store` is after it): their lanes go, the others move up as
    // `shift` says. Same conditions as update().
    bool removeCalls(const TimelineStore &store, const EvictionShift &shift, size_t evicted,
                     const LaneMetrics &m);
    const std::vector<LaneBlock> &blocks() const { return m_blocks; }
    const std::vector<Group> &groups() const { return m_groups; }
    double height() const { return m_height; }
    size_t callLanes() const { return m_callLanes; }
    // Lab events looked at for lane markers so far, every build included: a burst under retention, whose
    // cuts rebuild the lanes, looks at each one once.
    std::uint64_t labEventsLooked() const { return m_labLooked; }
    // The first block whose bottom is at or below y (content coordinates); blocks().size() when none.
    size_t firstVisible(double y) const;
    // The block containing y, or blocks().size().
    size_t blockAt(double y) const;
    // Where call `call` has its lane, or blocks().size() when it is filtered out.
    size_t blockOfCall(size_t call) const;
    // Whether call `call` is on one row (compact), by its lane.
    bool oneRow(size_t call) const
    {
        const size_t b = blockOfCall(call);
        return b < m_blocks.size() && m_blocks[b].oneRow;
    }
    // A call's rows below its header: its attempts, and one more for a retry the client chose not to make
    // (a lab event "retry-suppressed"), where the next attempt would have been.
    size_t laneRows(const Call &call) const
    {
        return call.attempts.size() + (hasSuppressedRow(call) ? 1 : 0);
    }
    bool hasSuppressedRow(const Call &call) const
    {
        return !m_suppressed.empty() && m_suppressed.count(call.key);
    }
    // The top of the block showing `call`, or -1 when it is hidden.
    double laneY(size_t call) const
    {
        const size_t b = blockOfCall(call);
        return b < m_blocks.size() ? m_blocks[b].y : -1;
    }

private:
    void addCall(const TimelineStore &store, size_t call, const LaneMetrics &m);
    // Block `from` (a call lane) goes up past at most kReorderLanes lanes while they started after it: a lane
    // update() just added, or one whose call's start moved earlier.
    void placeLaneUp(const TimelineStore &store, size_t from);
    static constexpr size_t kReorderLanes = 512;
    bool fitsOneRow(const TimelineStore &store, size_t call) const;
    // Takes in lab events not seen yet; true when one puts a marker on a call's lane for the first time.
    // `suppressedAdded`, when given, says whether a call got its row of a suppressed retry.
    bool noteLabEvents(const TimelineStore &store, bool *suppressedAdded = nullptr);

    std::vector<LaneBlock> m_blocks;
    std::vector<Group> m_groups;
    std::vector<std::uint32_t> m_blockOfCall; // per store call; ~0u when hidden
    double m_height = 0;
    size_t m_callLanes = 0;
    double m_y = 0;
    double m_spacing = 0;
    bool m_incrementable = false;
    double m_scale = 0;
    size_t m_connections = 0;
    bool m_compact = false;
    std::set<std::string> m_expanded;             // the filter's, for update()
    std::unordered_set<std::string> m_marked;     // calls with markers on their lane: never one row
    std::unordered_set<std::string> m_suppressed; // calls with a suppressed retry: a row more
    std::uint64_t m_labSeen = 0;                  // a position among every lab event recorded
    std::uint64_t m_labMoved = ~std::uint64_t(0);
    std::uint64_t m_labLooked = 0;
};

} // namespace rpcscope
