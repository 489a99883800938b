#pragma once

// Backoff ranges for calls whose retry policy the wire does not carry (captured traffic; the lab's own calls
// carry theirs, Call::expectedGapNs): from a service config the user gave, judged the way the call's client
// implementation retries (RetryJudge::envelopesNs). The Policy check fills it; the timeline shades and
// labels each gap against it as it does a lab call's. Keyed by the call's index in the store judged, with its
// key, so that an index that moved since (eviction) finds nothing rather than another call's ranges.

#include "timeline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rpcscope {

class GapEnvelopes
{
public:
    using Range = std::optional<std::pair<std::int64_t, std::int64_t>>;

    // The ranges of call `index` (key `key`), one per attempt: element k is the gap before attempt k. Fastest
    // in ascending order of index.
    void set(size_t index, std::string key, std::vector<Range> perAttempt);
    // As set(), and the latest time a range of `call` (at `index`) reaches counts for reachNs().
    void set(size_t index, const Call &call, std::vector<Range> perAttempt);
    // The latest time any range set reaches (the end of the attempt before its gap, plus the range's upper
    // end), 0 with none: a fit keeps it in view, as it keeps a lab call's own ranges.
    std::int64_t reachNs() const { return m_reachNs; }

    // The range for the gap before attempt k of `call`, the call at `index`: its own policy's when it carries
    // one, else the one `given` holds for it (null: none), else none. *fromGiven says whether it is given.
    static Range expected(const GapEnvelopes *given, size_t index, const Call &call, size_t k,
                          bool *fromGiven = nullptr);
    // Only this set's (nullopt where it has none).
    Range given(size_t index, const Call &call, size_t k) const;
    // Whether `gapNs` lies outside `range` by more than the Policy check tolerates (RetryJudge's early and
    // late slack, for a gap measured at the proxy).
    static bool outside(const std::pair<std::int64_t, std::int64_t> &range, std::int64_t gapNs);

private:
    struct Entry
    {
        size_t index = 0;
        std::string key;
        std::vector<Range> gaps;
    };
    // Only the calls with a gap (two attempts or more), by index: most calls have one attempt, and a check of
    // hundreds of thousands of them builds this every second.
    std::vector<Entry> m_calls;
    std::int64_t m_reachNs = 0;
};

} // namespace rpcscope
