#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rpcscope::bench {

// Nearest-rank percentile (p in [0, 100]) of unsorted samples; 0 for none.
template <typename T> T percentile(std::vector<T> v, double p)
{
    if (v.empty()) return T{};
    std::sort(v.begin(), v.end());
    size_t rank = size_t(p / 100.0 * double(v.size()) + 0.999999);
    rank = std::clamp<size_t>(rank, 1, v.size());
    return v[rank - 1];
}

template <typename T> T median(std::vector<T> v)
{
    return percentile(std::move(v), 50);
}

} // namespace rpcscope::bench
