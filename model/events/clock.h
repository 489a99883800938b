#pragma once

#include <chrono>
#include <cstdint>

namespace rpcscope {

// Every producer of one capture stamps events with this clock, so relay timestamps and the lab server's
// arrival log can be compared directly.
inline std::int64_t steadyNowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline std::int64_t wallNowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// The two clocks at one instant: a capture's origin, which places its events on the wall clock when files are
// merged. Read as two calls in a row, a thread preempted between them (milliseconds on a loaded machine)
// misplaces every event of its file by that much. So the wall clock is read before and after the steady one,
// again while those two reads are more than kTightNs apart (at most kTries times), and the pair takes the
// steady read with the midpoint of the closest wall reads.
struct ClockPair
{
    std::int64_t steadyNs = 0;
    std::int64_t wallNs = 0;
};

template <typename Steady, typename Wall> ClockPair clockPairFrom(Steady steady, Wall wall)
{
    constexpr std::int64_t kTightNs = 20'000;
    constexpr int kTries = 8;
    ClockPair best;
    std::int64_t bestSpread = -1;
    for (int i = 0; i < kTries; ++i) {
        const std::int64_t before = wall();
        const std::int64_t s = steady();
        const std::int64_t after = wall();
        const std::int64_t spread = after - before;
        if (spread < 0) continue; // the wall clock was set back in between: that pair says nothing
        if (bestSpread < 0 || spread < bestSpread) {
            best = {s, before + spread / 2};
            bestSpread = spread;
        }
        if (spread <= kTightNs) break;
    }
    if (bestSpread < 0) best = {steady(), wall()};
    return best;
}

inline ClockPair clockPairNow()
{
    return clockPairFrom(steadyNowNs, wallNowNs);
}

} // namespace rpcscope
