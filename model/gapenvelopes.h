#pragma once

// Backoff ranges for calls whose retry policy the wire does not carry (captured traffic; the lab's own calls
// carry theirs, Call::expectedGapNs): from a service config the user gave, judged the way the call's client
// implementation retries (RetryJudge::envelopesNs). The Policy check keeps it up to date; the timeline shades
// and labels each gap against it as it does a lab call's. Keyed by the call's serial, which no eviction
// changes.

#include "timeline.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rpcscope {

class GapEnvelopes
{
public:
    using Range = std::optional<std::pair<std::int64_t, std::int64_t>>;

    // The ranges of `call`, one per attempt: element k is the gap before attempt k (fewer than two: none
    // kept). Fastest for the newest call.
    void set(const Call &call, std::vector<Range> perAttempt);
    // Forgets the calls of these serials (ascending): evicted.
    void erase(const std::vector<std::uint64_t> &serials);
    void clear();
    size_t size() const { return m_calls.size(); }
    // The latest time any range kept reaches (the end of the attempt before its gap, plus the range's upper
    // end), 0 with none: a fit keeps it in view, as it keeps a lab call's own ranges.
    std::int64_t reachNs() const;

    // The range for the gap before attempt k of `call`: its own policy's when it carries one, else the one
    // `given` holds for it (null: none), else none. *fromGiven says whether it is given.
    static Range expected(const GapEnvelopes *given, const Call &call, size_t k, bool *fromGiven = nullptr);
    // Only this set's (nullopt where it has none).
    Range given(const Call &call, size_t k) const;
    // Whether `gapNs` lies outside `range` by more than the Policy check tolerates (RetryJudge's early and
    // late slack, for a gap measured at the proxy).
    static bool outside(const std::pair<std::int64_t, std::int64_t> &range, std::int64_t gapNs);

private:
    struct Entry
    {
        std::uint64_t serial = 0;
        std::int64_t reachNs = 0;
        std::vector<Range> gaps;
    };
    // Only the calls with a gap (two attempts or more), by serial: most calls have one attempt.
    std::vector<Entry> m_calls;
    mutable std::int64_t m_reachNs = 0;
    mutable bool m_reachStale = false; // an entry that reached m_reachNs went: find the latest again
};

} // namespace rpcscope
