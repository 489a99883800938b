#pragma once

#include <QtGlobal>
#include <cmath>

namespace rpcscope {

// Pure time <-> pixel mapping. Times are qint64 ns; doubles appear only for pixels (DESIGN.md, Time).
struct TimeAxis
{
    qint64 startNs = 0;   // time at x = left
    double nsPerPx = 1e6; // > 0
    double left = 0;      // x of startNs

    double timeToX(qint64 t) const { return left + double(t - startNs) / nsPerPx; }
    qint64 xToTime(double x) const { return startNs + qint64(std::llround((x - left) * nsPerPx)); }

    // A "nice" tick step (1, 2 or 5 times a power of ten ns) close to targetPx pixels apart.
    qint64 tickStepNs(double targetPx) const
    {
        const double raw = std::max(1.0, nsPerPx * targetPx);
        double p = std::pow(10.0, std::floor(std::log10(raw)));
        for (double m : {1.0, 2.0, 5.0, 10.0})
            if (m * p >= raw) return qint64(m * p);
        return qint64(10 * p);
    }
};

} // namespace rpcscope
