#pragma once

#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace rpcscope {

// RPCSCOPE_STALLS=MS: every probed step of the GUI thread's work (an append, a retention cut, a paint, a
// trim) that takes MS or longer says so on stderr, to tell which one holds up the event loop under a burst.
// Unset, a probe costs one branch.
class StallProbe
{
public:
    explicit StallProbe(const char *what) : m_what(what)
    {
        if (threshold() < 0) return;
        m_timer.start();
        m_cpuNs = threadCpuNs();
    }
    ~StallProbe()
    {
        if (!m_timer.isValid()) return;
        if (const qint64 ms = m_timer.elapsed(); ms >= threshold())
            std::fprintf(stderr, "rpcscope: stall: %s took %lld ms (%lld ms on the CPU)\n", m_what,
                         static_cast<long long>(ms),
                         static_cast<long long>((threadCpuNs() - m_cpuNs) / 1000000));
    }
    // The calling thread's CPU time: on a loaded machine the wall time says little about the work.
    static long long threadCpuNs()
    {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<long long>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    }
    StallProbe(const StallProbe &) = delete;
    StallProbe &operator=(const StallProbe &) = delete;

    // The threshold in ms, or -1 when probing is off.
    static int threshold()
    {
        static const int ms = [] {
            const char *v = std::getenv("RPCSCOPE_STALLS");
            return v && *v ? std::max(0, std::atoi(v)) : -1;
        }();
        return ms;
    }

private:
    const char *m_what;
    QElapsedTimer m_timer;
    long long m_cpuNs = 0;
};

} // namespace rpcscope
