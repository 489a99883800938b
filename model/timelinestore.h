#pragma once

#include "timeline.h"

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace rpcscope {

// What one applied batch changed; the item model turns this into row insertions and dataChanged.
struct StoreChanges
{
    size_t firstNewCall = 0;                  // calls at or after this index are new
    std::vector<size_t> callsWithNewAttempts; // existing calls that gained attempts (sorted, unique)
    std::vector<size_t> changedCalls;         // existing calls whose data changed (sorted, unique)
    bool connectionsChanged = false;
    // An attempt placed before attempts the call already had, in the order placed: it started before them
    // but came later (another hop's decoder behind). Those attempts moved up by one.
    struct Placed
    {
        size_t call = 0;
        size_t at = 0;  // its position
        size_t had = 0; // the call's attempts just before (the others of the batch were appended)
    };
    std::vector<Placed> attemptsPlacedBefore;
};

// Where calls move when retention evicts some: `evicted` holds store indices before the eviction, ascending;
// every call that stays moves up by the number evicted before it (so the order of the rest never changes).
class EvictionShift
{
public:
    explicit EvictionShift(const std::vector<size_t> &evicted)
        : m_removed(evicted.size()), m_goneBefore(evicted.empty() ? 1 : evicted.back() + 2, 0)
    {
        for (size_t i : evicted)
            m_goneBefore[i + 1] = 1;
        for (size_t i = 1; i < m_goneBefore.size(); ++i)
            m_goneBefore[i] += m_goneBefore[i - 1];
    }
    // The calls up to the last evicted one: the only ones whose move differs.
    size_t region() const { return m_goneBefore.size() - 1; }
    bool gone(size_t i) const { return i < region() && m_goneBefore[i + 1] != m_goneBefore[i]; }
    // The call's index after the eviction; SIZE_MAX for an evicted one.
    size_t operator()(size_t i) const
    {
        if (i >= region()) return i - m_removed;
        return gone(i) ? SIZE_MAX : i - m_goneBefore[i];
    }

private:
    size_t m_removed;
    std::vector<std::uint32_t> m_goneBefore; // evicted calls before index i, for i up to region()
};

// How much a live session keeps (retention). Zero means no limit of that kind.
struct RetentionPolicy
{
    size_t maxBytes = 0;       // the store's approximate memory (approxBytes())
    std::int64_t maxAgeNs = 0; // calls that started longer ago than this before the latest event
    size_t maxCalls = 0;
    // Over a limit, evict down to this fraction of it: a smaller step evicts more often, in smaller chunks.
    double evictTo = 0.9;
    // Of maxBytes, what no eviction frees (approxBytes(&floor)): evictTo applies to the rest.
    size_t floorBytes = 0;
};

// Plain data and call assembly. No Qt, no locks: it lives on one thread (see DESIGN.md, Threads).
class TimelineStore
{
public:
    void apply(EventSpan batch, StoreChanges *changes = nullptr);
    void apply(const EventBatch &batch, StoreChanges *changes = nullptr) { apply(EventSpan(batch), changes); }
    void clear();

    // Deques, so retention drops the oldest without moving every call and frame that stays.
    const std::deque<Call> &calls() const { return m_calls; }
    const std::vector<Connection> &connections() const { return m_connections; }
    const std::deque<FrameRecord> &frames() const { return m_frames; }
    const std::vector<FlowStall> &stalls() const { return m_stalls; }
    const std::vector<PingRecord> &pings() const { return m_pings; }
    // A deque: records stay where they are while new ones come and the oldest go, so a view may keep
    // pointers to them and follow a cut by dropping its own front (labEventsCut()).
    const std::deque<LabEventRecord> &labEvents() const { return m_labEvents; }
    // Lab events dropped from the front of labEvents() so far: labEvents()[i] is the (labEventsCut() + i)-th
    // ever recorded, as long as labEventsMoved() is unchanged. It changes when a cut kept some of the oldest
    // (a pinned call's) and moved them, or the store was cleared: a view indexing lab events starts again.
    size_t labEventsCut() const { return m_labEventsCut; }
    // What the kept lab events hold on the heap beyond their records (their strings), in O(1).
    size_t keptLabEventHeapBytes() const { return m_labEventBytes; }
    std::uint64_t labEventsMoved() const { return m_labEventsMoved; }
    // For tests: records retention's passes visited (approxBytes, planAgeCut, evict) since the last reset,
    // so a test can tell a pass that touches what it cuts from one that walks everything kept.
    size_t retentionWork() const { return m_retentionWork; }
    void resetRetentionWork() const { m_retentionWork = 0; }
    // The connection with this id, if seen.
    const Connection *findConnection(std::uint32_t id) const;
    // The call with this call id, if any.
    std::optional<size_t> callIndex(const std::string &callId) const;
    // A lab event's attempt: the 0-based attempt of `call` in flight (or last started) at `tNs`.
    std::optional<size_t> attemptAt(size_t call, std::int64_t tNs) const;
    // The index of the call with this serial (Call::serial), if it is still kept.
    std::optional<size_t> indexOfSerial(std::uint64_t serial) const;
    // How many calls up the parentCall links go from `call` (0: a root, or not in a trace).
    int nestingDepth(size_t call) const;

    // The capture's origins: the steady ns that JSON and the ruler count from, and the wall clock at that
    // moment. Set by whoever starts the capture; otherwise the first event's time.
    void setOrigin(std::int64_t steadyNs, std::int64_t wallNs);
    std::int64_t originNs() const { return m_originNs; }
    std::int64_t originWallNs() const { return m_originWallNs; }
    bool hasOrigin() const { return m_hasOrigin; }

    // Latest event time seen; open attempts are drawn up to here.
    std::int64_t latestNs() const { return m_latestNs; }
    // Increments on every change, so views can key caches on it.
    std::uint64_t generation() const { return m_generation; }
    // The generation clear() last left (0 before any): what was drawn of the store before it is gone.
    std::uint64_t clearedAt() const { return m_clearedAt; }
    // The serials of the calls apply() added or changed after `generation` (those whose Call::revision is
    // above it), in the order of the applies, a serial once per apply: what a consumer that keeps something
    // per call (LivePolicyCheck) looks at again, instead of every call's revision. The log keeps the latest
    // applies, up to twice as many serials as the store holds calls (and kChangeLogMax); false when it no
    // longer reaches back to `generation` (or the store was cleared since), and the consumer reads every
    // call instead.
    bool changedSince(std::uint64_t generation, std::vector<std::uint64_t> *serials) const;
    static constexpr size_t kChangeLogMax = size_t(1) << 18;
    void setChangeLogMax(size_t serials) { m_changeLogMax = serials; } // for tests: a smaller bound
    // How many calls meet [fromNs, toNs]: from their first attempt's start to their last attempt's end, or to
    // latestNs() while in flight (the status bar's "in view"). A walk of 16 bytes a call that apply() keeps
    // beside the calls, not of the calls: 300,000 of those cost the GUI thread 8 ms.
    size_t callsOverlapping(std::int64_t fromNs, std::int64_t toNs) const;

    // Retention. enforce() evicts the oldest calls whole - never one still in flight, never a pinned one -
    // until the policy holds again (down to 90% of a limit, so it works in chunks), together with the frames,
    // pings, stalls and lab events older than every call that stays. Returns the evicted calls' former
    // indices, in order. O(calls): run it now and then (TimelineModel does, at most once a second). `gone`,
    // when given, receives what the evicted calls left behind elsewhere (the event log trims with it).
    struct Evicted
    {
        std::vector<std::uint64_t> streams;      // (connection << 32 | stream) of every evicted attempt
        std::vector<std::string> keys;           // evicted call keys
        std::int64_t keepFromNs = 0;             // frames, pings, stalls and lab events before this went too
        std::int64_t framesBeforeNs = INT64_MIN; // the age cut: frames of any stream before this went too
        std::int64_t untilNs =
            INT64_MIN;           // the evicted calls' latest event (the latest event for one in flight)
        bool pinnedKept = false; // some pinned call stayed (its old events must too)
    };
    std::vector<size_t> enforce(const RetentionPolicy &policy, Evicted *gone = nullptr);
    // enforce() in two steps, so an item model can announce the change between them.
    // `knownBytes`: approxBytes() when the caller just computed it (it is O(calls)). Ended calls go first;
    // when they are not enough, in-flight ones too (oldest first, never a pinned one): a flood of streams
    // that never end must not outgrow the budget.
    std::vector<size_t> planEviction(const RetentionPolicy &policy, size_t knownBytes = 0) const;
    // What evicting `calls` leaves over the byte limit is taken from the oldest frames, pings, stalls and lab
    // events of any connection: the time before which they go (INT64_MIN: none need to). Frames that end a
    // call (RST_STREAM, GOAWAY) and a pinned call's stay.
    std::int64_t planAgeCut(const RetentionPolicy &policy, const std::vector<size_t> &calls,
                            size_t knownBytes = 0) const;
    void evict(const std::vector<size_t> &calls, Evicted *gone = nullptr, std::int64_t ageCutNs = INT64_MIN);
    // The store's memory: its records, their strings and the containers' own overheads, as the allocator
    // counts them (the calls' strings from a sample, so it stays cheap).
    // `floor`, when given, gets the part of it that no eviction frees: the connections, and the indices
    // bounded by themselves (recently ended streams of the calls kept, pending fault injections, watches). A
    // byte limit below that leaves the calls nothing; retention budgets the calls beside it (TimelineModel).
    size_t approxBytes(size_t *floor = nullptr) const;
    // What retention dropped besides whole calls, and how much: the note the CLI prints and the window shows.
    struct RetentionLoss
    {
        size_t frames = 0, pings = 0, stalls = 0, labEvents = 0;
        size_t inFlightCalls = 0;          // evicted while still open
        size_t bytes = 0;                  // freed by all of these
        std::int64_t beforeNs = INT64_MIN; // the latest age cut
    };
    const RetentionLoss &retentionLoss() const { return m_loss; }
    // Bytes freed elsewhere by the same cut (the event log's copies of those records), for the note.
    void addRetentionLossBytes(size_t bytes) { m_loss.bytes += bytes; }
    // "retention dropped 1.2 M frames, 3 pings (96 MB) older than 12.3 s; 40 calls still in flight"; empty
    // when it dropped none of these.
    std::string retentionNote() const;
    void setPinned(size_t call, bool pinned);
    // The end of the latest call evicted so far (0 when none was): the timeline marks it.
    std::int64_t retentionCutNs() const { return m_retentionCutNs; }
    size_t evictedCalls() const { return m_evictedCalls; }
    // What the last evict() did to frames(): of the first `scanned` frames, `kept` stayed and are now the
    // first ones; every later frame moved up by scanned - kept. A view indexing frames follows with it.
    struct FrameTrim
    {
        size_t scanned = 0;
        size_t kept = 0;
    };
    const FrameTrim &lastFrameTrim() const { return m_lastFrameTrim; }

    void setRecordFrames(bool on) { m_recordFrames = on; }
    bool recordFrames() const { return m_recordFrames; }

private:
    struct AttemptRef
    {
        size_t call;
        size_t attempt;
    };
    static std::uint64_t streamKey(std::uint32_t conn, std::uint32_t stream)
    {
        return (std::uint64_t(conn) << 32) | stream;
    }
    void onRequestHeaders(const WireEvent &e, StoreChanges &ch);
    void onResponseHeaders(const WireEvent &e, StoreChanges &ch);
    void recordPing(const WireEvent &e);
    // A call's client outcome (clientoutcome.h) can change without an event of its own: when its
    // connection closes after the client reset its stream, or when the capture's clock passes its deadline
    // in a backoff. These lists name such calls by serial, so the item model hears of the change.
    void watchClientOutcome(const AttemptRef &ref);
    void placeInTrace(std::vector<size_t> &members, size_t callIndex);
    void retraceStart(size_t callIndex);
    void markWatchedClose(std::uint32_t connection, StoreChanges &ch);
    void markWatchedDeadlines(StoreChanges &ch);
    std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> m_watchClose; // connection -> serials
    std::multimap<std::int64_t, std::uint64_t> m_watchDeadline;                 // deadline -> serial
    void endAttempt(const AttemptRef &ref, std::int64_t t, StoreChanges &ch);
    // A FaultInjection notice marks the attempt on its stream, open or lately ended (the injected response
    // and the relay's note can arrive in either order); one that comes before the request HEADERS waits for
    // them.
    // The rule of a connection closed by a connection fault rule, from its close reason; rule 0 otherwise.
    static FaultInjection connectionFault(const std::string &reason);
    void onFaultInjection(const WireEvent &e, const FaultInjection &f, StoreChanges &ch);
    // A connection rule's note ("fault: blackhole (rule 2)"): a blackhole marks the attempts open on its
    // connection and every attempt started on it later, none of which gets an answer.
    void onConnectionFaultNote(const WireEvent &e, StoreChanges &ch);
    std::unordered_map<std::uint32_t, FaultInjection> m_blackholed; // connection -> its rule
    static constexpr size_t kMaxRecentEnded = 1024, kMaxPendingInjections = 256;
    std::unordered_map<std::uint64_t, std::uint64_t> m_recentEnded; // (conn, stream) -> call serial
    std::deque<std::uint64_t> m_recentEndedOrder;                   // oldest first
    std::unordered_map<std::uint64_t, FaultInjection> m_pendingInjections;
    void linkTrace(size_t call, StoreChanges &ch);
    // The key of the call a W3C traceparent points at: the one that carried exactly it, else (unless
    // exactOnly) the latest call of that trace started by tNs; empty when none.
    std::string callForTraceparent(const std::string &traceparent, std::int64_t tNs, bool exactOnly) const;
    void resolveLabEvents();
    std::vector<size_t> m_unresolvedLabEvents; // lab events with a traceparent whose call is not known yet
    void linkCall(const std::vector<size_t> &members, size_t pos, StoreChanges &ch);
    size_t findInferredCall(const std::string &method, const std::string &peer, int previous,
                            std::int64_t t) const;
    Connection *connection(std::uint32_t id);
    void markChanged(StoreChanges &ch, size_t call);

    std::deque<Call> m_calls;
    struct CallSpan
    {
        std::int64_t start = 0;
        std::int64_t end = 0; // kOpenEnd while in flight
    };
    static constexpr std::int64_t kOpenEnd = std::numeric_limits<std::int64_t>::max();
    std::deque<CallSpan> m_callSpans; // beside m_calls, one each (callsOverlapping)
    std::vector<Connection> m_connections;
    std::unordered_map<std::uint32_t, size_t> m_connectionIndex;
    std::deque<FrameRecord> m_frames;
    std::vector<FlowStall> m_stalls;
    std::map<std::tuple<std::uint32_t, Direction, std::uint32_t>, size_t> m_openStalls;
    std::vector<PingRecord> m_pings;
    std::deque<LabEventRecord> m_labEvents;
    size_t m_labEventBytes = 0; // labEventBytes() of every lab event kept, beyond the records themselves
    size_t m_labEventsCut = 0;
    std::uint64_t m_labEventsMoved = 0;
    mutable size_t m_retentionWork = 0;
    std::unordered_map<std::uint64_t, AttemptRef> m_openStreams; // (conn, stream) -> attempt, while open
    // These two hold call ids, not indices: id = index + m_callBase. Evicting the oldest calls raises the
    // base instead of renumbering every entry (only calls kept from among the evicted ones get new ids).
    std::unordered_map<std::string, size_t> m_callsByKey;
    std::unordered_map<std::string, std::vector<size_t>> m_traces; // trace id -> its calls, sorted by start
    size_t m_callBase = 0;
    Call &callById(size_t id) { return m_calls[id - m_callBase]; }
    const Call &callById(size_t id) const { return m_calls[id - m_callBase]; }
    FrameTrim m_lastFrameTrim;
    size_t m_pinnedCalls = 0;
    size_t m_tracedCalls = 0; // members of m_traces
    std::uint64_t m_nextSerial = 1;
    std::int64_t m_originNs = 0;
    std::int64_t m_originWallNs = 0;
    bool m_hasOrigin = false;
    std::int64_t m_latestNs = 0;
    std::uint64_t m_generation = 0;
    std::uint64_t m_clearedAt = 0;
    // changedSince(): the serials each apply() changed, and per apply (its generation, the end of its serials
    // in m_changeLog); the log holds every change after m_changeLogFrom.
    std::vector<std::uint64_t> m_changeLog;
    std::vector<std::pair<std::uint64_t, size_t>> m_changeMarks;
    std::uint64_t m_changeLogFrom = 0;
    size_t m_changeLogMax = kChangeLogMax;
    void logChanges(const StoreChanges &ch);
    bool m_recordFrames = true;
    static size_t callBytes(const Call &c);
    size_t floorBytes() const; // approxBytes(&floor)
    // What a lab event's strings take from the allocator beyond the record itself.
    static size_t labEventHeapBytes(const LabEventRecord &e);
    std::int64_t m_retentionCutNs = 0;
    size_t m_attemptCount = 0; // in m_calls, kept up to date so approxBytes() need not walk every call
    size_t m_evictedCalls = 0;
    RetentionLoss m_loss;
    void cutByAge(std::int64_t cutNs, const std::vector<std::uint64_t> &pinnedStreams,
                  const std::unordered_set<std::string> &pinnedKeys);
};

} // namespace rpcscope
