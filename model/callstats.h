#pragma once

// Statistics over many calls (issue 20): per method and per hop, the calls and attempts, how the calls ended
// (from the client's side, clientoutcome.h), latency percentiles (to 0.4 %), a logarithmic latency histogram,
// the attempts-per-call distribution and the backoff gaps against their expected range. Kept incrementally:
// TimelineModel updates it with every applied batch (O(calls that changed)), and reading a percentile costs
// the same however many calls were counted. Calls that retention evicts stay counted.

#include "timeline.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace rpcscope {

class TimelineStore;
struct StoreChanges;

// Logarithmic latency buckets in a 1-2-5 series, so that their edges read as round numbers: bucket 0 holds
// [0, 10 µs), bucket i holds [edge(i-1), edge(i)), the last one everything from 200 s on.
struct LatencyBuckets
{
    static constexpr int kEdges = 23; // 10 µs, 20 µs, 50 µs, 100 µs, ... 100 s, 200 s
    static constexpr int kCount = kEdges + 1;
    static std::int64_t edgeNs(int i); // upper edge of bucket i (exclusive); i < kEdges
    static int bucketOf(std::int64_t ns);
    // Bucket i's range [lo, hi) in ns; hi is INT64_MAX for the last one.
    static std::pair<std::int64_t, std::int64_t> rangeNs(int i);
};

// Latencies counted in fine log-linear bins (256 per doubling, each under 0.4 % wide), with the sum of the
// values in each: a percentile is the mean of the values in the bin its rank falls in, so it is exact when
// that bin holds one distinct value and within 0.4 % otherwise, and add(), remove() and every read cost the
// same however many values were counted. Also the LatencyBuckets counts, exactly.
class LatencyRecorder
{
public:
    void add(std::int64_t ns);
    // Removes one value added before (a call that was counted as ended started another attempt). A value
    // never added takes nothing out.
    void remove(std::int64_t ns);
    std::uint64_t count() const
    {
        fold();
        return m_count;
    }
    // Nearest rank: the value of rank ceil(q * count) (q in (0, 1]), as above; nullopt when empty.
    // percentile(1.0) is the maximum.
    std::optional<std::int64_t> percentile(double q) const;
    std::optional<std::int64_t> max() const { return percentile(1.0); }
    const std::array<std::uint64_t, LatencyBuckets::kCount> &buckets() const
    {
        fold();
        return m_buckets;
    }
    void clear();
    // Its bins and pending values, as the allocator counts them.
    size_t memoryBytes() const;

    static constexpr int kSubBits = 8;
    static constexpr int kBlockBins = 16;
    static constexpr std::int64_t kMaxValueNs = std::int64_t(1) << 50; // about 13 days; longer counts as this

private:
    struct Bin
    {
        std::uint64_t count = 0;
        std::int64_t offsetSum = 0; // sum of (value - the bin's lower edge): exact, and far from overflow
    };
    struct Octave
    {
        std::uint64_t count = 0;
        // 1 << kSubBits bins in blocks of kBlockBins, each allocated on first use: a row that saw a few
        // dozen calls spread over many octaves held 4 KiB an octave for them, which retention cannot evict.
        std::vector<std::vector<Bin>> blocks;
    };
    static void locate(std::int64_t ns, int *octave, int *bin, std::int64_t *lower);
    void change(std::int64_t ns, int sign);
    // Values arrive one by one between a batch's other work, which pushes the bins out of the cache: they
    // wait here and go into the bins together, when a read needs them or enough have gathered.
    static constexpr size_t kPendingLimit = 4096;
    void fold() const;
    mutable std::vector<std::int64_t> m_pendingAdd, m_pendingRemove;
    mutable std::uint64_t m_count = 0;
    mutable std::array<std::uint64_t, LatencyBuckets::kCount> m_buckets{};
    mutable std::vector<Octave> m_octaves; // octave 0: values below 1 << kSubBits, one bin per ns
};

// How a call ended, as the client saw it. Every call is in exactly one category.
enum class CallCategory : std::uint8_t
{
    OkFirstTry,         // OK with a single attempt
    OkAfterRetry,       // OK after more than one attempt (transparent retries included)
    FailedAfterRetries, // failed after more than one attempt
    FailedNoRetry,      // failed on its only attempt (a code the policy does not retry, or no policy)
    FailedFast,         // failed without a request on the wire: a breaker's "fast-fail", a full bulkhead's
                        // "bulkhead-rejected"
    DeadlineExceeded,   // the client got DEADLINE_EXCEEDED, whatever the attempts
    InFlight,           // not ended yet (or between attempts: it moves once the next attempt is seen)
};
constexpr int kCallCategories = 7;
// "OK first try", "OK after retry", "failed after retries", "failed, no retry", "failed fast",
// "deadline exceeded", "in flight".
const char *categoryLabel(CallCategory c);
// The same as JSON keys: "ok_first_try", "ok_after_retry", "failed_after_retries", "failed_no_retry",
// "failed_fast", "deadline_exceeded", "in_flight".
const char *categoryKey(CallCategory c);

// Backoff gaps (between a call's attempts) against the range the client's policy allows
// (Call::expectedGapNs).
struct GapCounts
{
    std::uint64_t within = 0;
    std::uint64_t early = 0;       // shorter than the range allows
    std::uint64_t late = 0;        // longer
    std::uint64_t noPolicy = 0;    // the call did not say its policy: no range to measure against
    std::uint64_t transparent = 0; // a transparent retry: no backoff expected
    std::uint64_t total() const { return within + early + late + noPolicy + transparent; }
};

// One row of the table: all calls (hop and method empty), the calls of one method, or of one hop.
struct StatsRow
{
    enum class Kind : std::uint8_t
    {
        Total,
        Method,
        Hop
    };
    Kind kind = Kind::Total;
    std::string key; // the method (:path) or hop label; empty for Total (and for the main proxy's hop)

    std::uint64_t calls = 0;    // every category, failed fast included
    std::uint64_t attempts = 0; // attempts on the wire, transparent retries included
    std::uint64_t transparentRetries = 0;
    std::array<std::uint64_t, kCallCategories> outcomes{};
    LatencyRecorder callLatency;    // ended calls: first attempt's start to the client's outcome
    LatencyRecorder attemptLatency; // ended attempts: start to end
    // attemptsPerCall[n]: calls (on the wire, in flight included) with n attempts; [0] stays 0.
    std::vector<std::uint64_t> attemptsPerCall;
    GapCounts gaps;

    std::uint64_t count(CallCategory c) const { return outcomes[size_t(c)]; }
    // Attempts per call on the wire: the load the retries added (1.0 = none).
    double amplification() const;
};

// The statistics of one timeline.
class CallStats
{
public:
    // Everything again from the store's calls (and its fast-fail lab events).
    void rebuild(const TimelineStore &store);
    // Follows one applied batch: the new calls and the calls that changed.
    void update(const TimelineStore &store, const StoreChanges &changes);
    // Retention: before the store evicts these calls (store indices), so that what follows each call goes;
    // their counts stay. Then afterEviction() once the store has evicted them.
    void forget(const TimelineStore &store, const std::vector<size_t> &calls);
    void afterEviction(const TimelineStore &store);
    // What the statistics hold, as the allocator counts it: a record per call kept, and the rows' bins.
    // O(rows). A session's budget counts the records only (TimelineModel::memoryBytes says why).
    size_t memoryBytes() const { return callRecordBytes() + rowBytes(); }
    // The records of the calls the store keeps: they go with their calls when retention evicts them, so the
    // budget treats them as the store's. O(1).
    size_t callRecordBytes() const;
    // The rows and their latency bins: evicted calls stay counted, so retention cannot make these smaller.
    // They grow with the methods and hops seen (at most maxKeyedRows() of each, below), and a row's bins with
    // the latencies it saw (blocks of 16 bins, 256 bytes each). Values waiting to be binned are binned first,
    // so that what a view's first read allocates is counted before it happens. O(rows).
    size_t rowBytes() const;
    // Clears the counts; the row limit stays.
    void clear();

    // A peer that names a new :path (or an ingested hop label) on every call would otherwise grow a row per
    // call for as long as the session lasts, which no eviction frees. So there are at most this many method
    // rows and as many hop rows (the rows keyed "" aside: calls never sent, the main proxy's hop); the calls
    // of any method (hop) seen after that count in one row keyed kOtherMethods (kOtherHops). Rows already
    // there stay when the limit is lowered.
    static constexpr size_t kDefaultMaxKeyedRows = 1000;
    static constexpr const char *kOtherMethods = "(other methods)";
    static constexpr const char *kOtherHops = "(other hops)";
    void setMaxKeyedRows(size_t rows) { m_maxKeyedRows = std::max<size_t>(1, rows); }
    size_t maxKeyedRows() const { return m_maxKeyedRows; }
    // Calls counted in the kOtherMethods (kOtherHops) row because their method (hop) came past the limit.
    std::uint64_t foldedMethodCalls() const { return m_foldedMethodCalls; }
    std::uint64_t foldedHopCalls() const { return m_foldedHopCalls; }

    const StatsRow &total() const { return m_total; }
    // By key. A call counts in one method row and one hop row.
    const std::map<std::string, StatsRow> &methods() const { return m_methods; }
    const std::map<std::string, StatsRow> &hops() const { return m_hops; }
    const StatsRow *find(StatsRow::Kind kind, const std::string &key) const;
    // Increments whenever any count changes.
    std::uint64_t generation() const { return m_generation; }

    // What a call contributes, as the rows count it.
    static CallCategory categoryOf(const Call &call, const TimelineStore &store);
    // Ended calls only: first attempt's start to when the client got its outcome.
    static std::optional<std::int64_t> callLatencyNs(const Call &call, const TimelineStore &store);
    // The row a call belongs to: Total matches every call.
    static bool rowMatches(StatsRow::Kind kind, const std::string &key, const Call &call);

private:
    struct Contribution
    {
        StatsRow *method = nullptr, *hop = nullptr; // map nodes stay put
        CallCategory category = CallCategory::InFlight;
        std::uint32_t attempts = 0;
        std::uint32_t transparent = 0;
        std::optional<std::int64_t> latencyNs;
        std::uint64_t attemptsCounted = 0; // bit k: attempt k's latency was added
        GapCounts gaps;
        bool gone = false; // evicted from the store
    };
    void account(const TimelineStore &store, const Call &call);
    void apply(const Contribution &c, int sign);
    // The row of `key`, or past the limit the kind's other row (*folded set then).
    StatsRow &row(std::map<std::string, StatsRow> &rows, StatsRow::Kind kind, const std::string &key,
                  bool *folded = nullptr);
    void countFastFails(const TimelineStore &store);

    StatsRow m_total;
    std::map<std::string, StatsRow> m_methods, m_hops;
    std::deque<Contribution> m_byCall; // by Call::serial - m_firstSerial: what each call added
    std::uint64_t m_firstSerial = 0;
    std::unordered_map<std::uint64_t, Contribution> m_stragglers; // kept calls older than the deque's front
    Contribution *slot(std::uint64_t serial);
    size_t m_labEventsSeen = 0;
    std::uint64_t m_generation = 0;
    size_t m_maxKeyedRows = kDefaultMaxKeyedRows;
    std::uint64_t m_foldedMethodCalls = 0, m_foldedHopCalls = 0;
};

} // namespace rpcscope
