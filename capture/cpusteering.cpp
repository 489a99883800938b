#include "cpusteering.h"

#include "clock.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

bool CpuSteering::allowedByEnvironment()
{
    const char *env = std::getenv("RPCSCOPE_RELAY_STEER");
    return !(env && std::strcmp(env, "0") == 0);
}

void CpuSteering::start()
{
    m_enabled = false;
    m_pinned = m_lastFd = m_lastCpu = -1;
    m_agree = 0;
#ifdef SO_INCOMING_CPU
    if (!allowedByEnvironment()) return;
    CPU_ZERO(&m_allowed);
    if (sched_getaffinity(0, sizeof m_allowed, &m_allowed) != 0) return;
    m_enabled = CPU_COUNT(&m_allowed) >= 2;
#endif
}

void CpuSteering::stop()
{
    release();
    m_enabled = false;
    if (m_schedstat >= 0) close(m_schedstat);
    m_schedstat = -1;
}

void CpuSteering::read(int fd, bool fromClient, size_t bytes)
{
    if (!m_enabled) return;
    if (bytes >= kBulkRead) {
        bulk();
        return;
    }
    if (!fromClient) return;
#ifdef SO_INCOMING_CPU
    int cpu = -1;
    socklen_t len = sizeof cpu;
    // A core outside the thread's own is counted too: pin() declines it (its cores may change meanwhile).
    if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) != 0 || cpu < 0 || cpu >= CPU_SETSIZE) return;
    if (fd == m_lastFd && cpu == m_lastCpu) {
        ++m_agree;
    } else {
        m_lastFd = fd;
        m_lastCpu = cpu;
        m_agree = 1;
    }
    if (m_pinned >= 0) {
        if (cpu != m_pinned) { // the client moved, or another one is busy elsewhere
            release();
            return;
        }
        if (++m_sinceCheck >= kContentionEvery && contended()) {
            release();
            m_backOffUntil = steadyNowNs() + kBackOffNs;
        }
        return;
    }
    if (m_agree >= kAgreeingReads && steadyNowNs() >= m_backOffUntil) pin(cpu);
#else
    (void)fd;
#endif
}

void CpuSteering::bulk()
{
    if (!m_enabled) return;
    m_agree = 0;
    m_lastFd = -1;
    m_backOffUntil = std::max(m_backOffUntil, steadyNowNs() + kBulkBackOffNs);
    release();
}

void CpuSteering::pin(int cpu)
{
    // The cores the thread has now are the ones to come back to: someone may have changed them since start()
    // (taskset -a -p), and that choice stands. Within one core, or off it, there is nothing to follow.
    cpu_set_t now;
    CPU_ZERO(&now);
    if (sched_getaffinity(0, sizeof now, &now) != 0) return;
    m_allowed = now;
    if (CPU_COUNT(&now) < 2 || !CPU_ISSET(cpu, &now)) {
        m_backOffUntil = steadyNowNs() + kBackOffNs; // looked at again after a back-off, not every read
        return;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        m_enabled = false; // refused (a sandbox): the kernel keeps placing the thread
        return;
    }
    m_pinned = cpu;
    ++m_pins;
    m_sinceCheck = 0;
    // Opened on the first pin, on this thread (thread-self): a thread that never pins (a streaming TLS
    // connection's) holds no descriptor for it.
    if (m_schedstat < 0) m_schedstat = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    m_waited = runQueueWaitNs();
}

void CpuSteering::release()
{
    if (m_pinned < 0) return;
    // Cores changed from outside while pinned (the pin is gone) stay as they were set; otherwise the thread
    // gets back what it had before the pin.
    cpu_set_t now, one;
    CPU_ZERO(&now);
    CPU_ZERO(&one);
    CPU_SET(m_pinned, &one);
    if (sched_getaffinity(0, sizeof now, &now) == 0 && !CPU_EQUAL(&now, &one))
        m_allowed = now;
    else
        sched_setaffinity(0, sizeof m_allowed, &m_allowed);
    m_pinned = -1;
    ++m_releases;
}

bool CpuSteering::contended()
{
    m_sinceCheck = 0;
    const std::int64_t waited = runQueueWaitNs();
    if (waited < 0) return false;
    const std::int64_t before = m_waited;
    m_waited = waited;
    // Waiting for the core this long per read: something else wants it as much (a waking client is about to
    // sleep, so the relay waits for it only a few microseconds).
    return waited - before > m_contendedWaitNs * kContentionEvery;
}

std::int64_t CpuSteering::runQueueWaitNs() const
{
    if (m_schedstat < 0) return -1;
    char buf[128];
    const ssize_t n = pread(m_schedstat, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    // "run-time wait-time timeslices", in ns.
    char *end = nullptr;
    std::strtoll(buf, &end, 10);
    if (!end || end == buf) return -1;
    return std::strtoll(end, nullptr, 10);
}

} // namespace rpcscope
