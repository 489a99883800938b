#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace rpcscope::bench {

// One line of a benchmark's table: a measurement, the same run's baseline, their ratio and the goal.
struct Row
{
    std::string what;
    std::string value;
    std::string baseline;
    std::string ratio;
    std::string goal;
    std::string verdict;
};

inline void printTable(const std::vector<Row> &rows)
{
    const Row header{"measurement", "value", "baseline (same run)", "ratio", "goal", "met?"};
    size_t w[5] = {};
    auto widen = [&](const Row &r) {
        w[0] = std::max(w[0], r.what.size());
        w[1] = std::max(w[1], r.value.size());
        w[2] = std::max(w[2], r.baseline.size());
        w[3] = std::max(w[3], r.ratio.size());
        w[4] = std::max(w[4], r.goal.size());
    };
    widen(header);
    for (const Row &r : rows)
        widen(r);
    auto line = [&](const Row &r) {
        std::printf("%-*s | %*s | %-*s | %*s | %-*s | %s\n", int(w[0]), r.what.c_str(), int(w[1]),
                    r.value.c_str(), int(w[2]), r.baseline.c_str(), int(w[3]), r.ratio.c_str(), int(w[4]),
                    r.goal.c_str(), r.verdict.c_str());
    };
    line(header);
    std::printf("%s\n", std::string(w[0] + w[1] + w[2] + w[3] + w[4] + 24, '-').c_str());
    for (const Row &r : rows)
        line(r);
}

} // namespace rpcscope::bench
