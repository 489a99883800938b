#include "kernelrxtime.h"

#include <cstring>
#include <ctime>
#include <sys/socket.h>

namespace rpcscope {

namespace {
// Three samples take well under a microsecond; 100 a second cost nothing a relay would notice.
constexpr std::int64_t kResampleNs = 10'000'000;
// A stamp this much older than its read is not believed (a wall-clock step between two samples): no relay
// thread waits that long for a core.
constexpr std::int64_t kMaxAgeNs = 2'000'000'000;

std::int64_t clockNs(clockid_t id)
{
    timespec ts{};
    clock_gettime(id, &ts);
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
} // namespace

bool KernelRxTime::enable(int fd)
{
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0;
}

ssize_t KernelRxTime::receive(int fd, void *buf, size_t len, std::int64_t *kernelRealNs)
{
    iovec iov{buf, len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec)) + 64];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    *kernelRealNs = 0;
    const ssize_t n = recvmsg(fd, &msg, 0);
    if (n <= 0) return n;
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
            c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *kernelRealNs = std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        }
    return n;
}

void KernelRxTime::sampleOffset(std::int64_t now)
{
    std::int64_t best = -1;
    for (int i = 0; i < 3; ++i) {
        const std::int64_t s1 = clockNs(CLOCK_MONOTONIC);
        const std::int64_t r = clockNs(CLOCK_REALTIME);
        const std::int64_t s2 = clockNs(CLOCK_MONOTONIC);
        if (best < 0 || s2 - s1 < best) {
            best = s2 - s1;
            m_offset = r - s1 - (s2 - s1) / 2;
        }
    }
    m_offsetError = best / 2 + 1;
    m_sampledAt = now;
}

std::int64_t KernelRxTime::eventTime(std::int64_t kernelRealNs, std::int64_t readNs)
{
    if (kernelRealNs == 0) {
        ++m_fallbacks;
        return readNs;
    }
    if (m_sampledAt == 0 || readNs - m_sampledAt >= kResampleNs) sampleOffset(readNs);
    std::int64_t t = kernelRealNs - m_offset;
    // Later than the read, beyond the offset's own error, or far too early: the wall clock stepped since the
    // last sample. Sample again and look once more.
    if (t > readNs + m_offsetError || t < readNs - kMaxAgeNs) {
        sampleOffset(readNs);
        t = kernelRealNs - m_offset;
        if (t > readNs + m_offsetError || t < readNs - kMaxAgeNs) {
            ++m_fallbacks;
            return readNs;
        }
    }
    ++m_stamped;
    return t < readNs ? t : readNs;
}

} // namespace rpcscope
