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

} // namespace rpcscope
