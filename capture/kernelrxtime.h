#pragma once

#include <cstdint>
#include <sys/types.h>

namespace rpcscope {

// Wire times from the kernel: a socket asked for receive timestamps (SO_TIMESTAMPNS) gets, with each
// recvmsg(), the time its kernel took in the last bytes read, which on loopback is when the sender's write
// reached the stack. That time stays honest when the relay thread is late to read (a loaded machine), where
// the read time would lag by however long the thread waited for a core.
//
// The kernel stamps in CLOCK_REALTIME; a capture's events are on the steady clock (steadyNowNs(),
// CLOCK_MONOTONIC). The two are converted by an offset sampled between two steady-clock readings around one
// realtime reading, the narrowest of a few tries, and sampled again every 10 ms: its error is half that
// window (well under a microsecond unless the thread is preempted in it, which the narrowest try avoids)
// plus any step of the wall clock within those 10 ms (NTP slews both clocks alike, but some virtual machines
// step the wall clock by 0.5 ms at a time). A step forward makes a stamp later than its read, and the offset
// is sampled again at once; a stamp still wrong after that, or far too early, gives way to the read time.
//
// A socket's receive queue keeps one time per buffer, and TCP merges a segment into the unread one before it:
// two writes that both wait for a late reader come back with the first one's time.
//
// One object per relay thread; not thread-safe.
class KernelRxTime
{
public:
    // Asks the kernel to stamp what arrives on `fd`; false where the platform does not.
    static bool enable(int fd);
    // recv() that also gives the kernel's receive time of the bytes read (realtime ns), 0 when none came.
    static ssize_t receive(int fd, void *buf, size_t len, std::int64_t *kernelRealNs);

    // The event time of a read made at `readNs` (steady) whose kernel stamp was `kernelRealNs` (0: none):
    // the stamp on the steady clock, or the read time when there is none or it cannot be right.
    std::int64_t eventTime(std::int64_t kernelRealNs, std::int64_t readNs);
    // The same, also saying whether the time is the kernel's (else the read's).
    std::int64_t eventTime(std::int64_t kernelRealNs, std::int64_t readNs, bool *fromKernel)
    {
        const std::uint64_t before = m_stamped;
        const std::int64_t t = eventTime(kernelRealNs, readNs);
        *fromKernel = m_stamped != before;
        return t;
    }

    // Reads whose time came from the kernel, and reads that fell back to the read time.
    std::uint64_t stamped() const { return m_stamped; }
    std::uint64_t fallbacks() const { return m_fallbacks; }
    // Half the window of the offset's last sample, ns: its error bound short of a clock step.
    std::int64_t offsetErrorNs() const { return m_offsetError; }

private:
    void sampleOffset(std::int64_t now);

    std::int64_t m_offset = 0; // realtime - steady
    std::int64_t m_offsetError = 0;
    std::int64_t m_sampledAt = 0; // steady; 0: never
    std::uint64_t m_stamped = 0;
    std::uint64_t m_fallbacks = 0;
};

} // namespace rpcscope
