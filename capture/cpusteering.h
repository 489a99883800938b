#pragma once

#include <cstddef>
#include <cstdint>
#include <sched.h>

namespace rpcscope {

// Keeps a relay thread on the core its client's bytes come in on, while that client makes small sequential
// calls on one connection.
//
// A relayed unary call hands its bytes on four times (client, relay, server, relay, client) where a direct
// one does twice. When the relay thread runs on the client's core, the relay's two hand-offs on that side
// cost almost nothing: the client has just sent and is about to sleep until the answer comes. The kernel
// instead wakes the relay on whichever core is idle, and waking an idle core is slow: 25 to 40 us on a
// two-core virtual machine, paid twice per call. Measured with a plain grpc++ client on such a machine, the
// relay added +50 us a call when the kernel placed it and +0 to +8 us pinned to the client's core (the
// leanest relay there can be: +20 to +50 us, as placement fell).
//
// The client's core is the one its last read arrived on (SO_INCOMING_CPU: the core that took the packet, for
// loopback the sender's). The thread is pinned there after a few reads of one connection agree, and let go:
// - when a read comes in on another core (the client moved, or another client is busy: followed again once
//   reads agree);
// - when a direction moves bulk (a read of kBulkRead bytes or more: two cores then beat one), for at least
//   kBulkBackOffNs;
// - when the pinned core is contended: the relay waited there for its turn (its run-queue wait, from
//   /proc/thread-self/schedstat) longer than kContendedWaitNs a read on average, so something else keeps
//   that core busy; it stays unpinned for kBackOffNs, and the kernel balances as it would.
// Off with RPCSCOPE_RELAY_STEER=0, where the process may use only one core, or where the platform has no
// SO_INCOMING_CPU. Only the thread that calls start() is ever pinned; stop() gives it back its cores. Cores
// set from outside (taskset -a -p) stand: a pin takes a core only among those the thread has when it pins,
// and letting go keeps cores set while it was pinned.
class CpuSteering
{
public:
    // A read this large marks bulk traffic (the relay's splice threshold).
    static constexpr size_t kBulkRead = 32 * 1024;
    // Reads of one connection from one core before the thread follows it.
    static constexpr int kAgreeingReads = 3;
    // Pinned reads between looks at the thread's run-queue wait.
    static constexpr int kContentionEvery = 16;
    // A pinned read waiting longer than this for its core, on average: the core is contended.
    static constexpr std::int64_t kContendedWaitNs = 100'000;
    // Left unpinned this long after bulk traffic: a stream's small reads (its flow-control updates) between
    // bulk ones would otherwise pin and unpin the thread every few reads.
    static constexpr std::int64_t kBulkBackOffNs = 50'000'000;
    // Left unpinned this long after the pinned core was contended.
    static constexpr std::int64_t kBackOffNs = 1'000'000'000;

    // On the relay thread, before its loop. Reads the cores the thread may use and whether steering is on.
    void start();
    // After a read of `bytes` on `fd`: from the client side (`fromClient`) or the server side.
    void read(int fd, bool fromClient, size_t bytes);
    // Bytes move in bulk (spliced reads): the kernel places the thread again.
    void bulk();
    // On the relay thread, when its loop ends.
    void stop();
    // The average run-queue wait per pinned read past which the core counts as contended (tests).
    void setContendedWait(std::int64_t ns) { m_contendedWaitNs = ns; }

    bool enabled() const { return m_enabled; }
    // The core the thread is pinned to, or -1.
    int pinnedCpu() const { return m_pinned; }
    // How often it pinned, and let go because of bulk traffic, another core or contention.
    std::uint64_t pins() const { return m_pins; }
    std::uint64_t releases() const { return m_releases; }

    // Whether steering is allowed by the environment (RPCSCOPE_RELAY_STEER).
    static bool allowedByEnvironment();

private:
    void pin(int cpu);
    void release();
    bool contended();
    std::int64_t runQueueWaitNs() const;

    bool m_enabled = false;
    cpu_set_t m_allowed{};
    int m_pinned = -1;
    int m_lastFd = -1;
    int m_lastCpu = -1;
    int m_agree = 0;
    int m_sinceCheck = 0;
    std::int64_t m_contendedWaitNs = kContendedWaitNs;
    int m_schedstat = -1;      // this thread's /proc schedstat: its time waiting for a core
    std::int64_t m_waited = 0; // that time at the last look
    std::int64_t m_backOffUntil = 0;
    std::uint64_t m_pins = 0;
    std::uint64_t m_releases = 0;
};

} // namespace rpcscope
