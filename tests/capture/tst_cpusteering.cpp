// The relay thread follows its client's core while the client makes small sequential exchanges, and lets the
// kernel place it again for bulk traffic, for two clients on two cores, and when the environment turns it
// off. Clients here are plain sockets on threads pinned to one core each, so the core their bytes come in on
// is known.

#include "cpusteering.h"
#include "events.h"
#include "relay.h"
#include "testnet.h"
#include "threadcpus.h"

#include <QtTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <sched.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace std::chrono_literals;
using namespace testnet;

namespace {

using threadcpus::allowedCpus;
using threadcpus::onCore;

// The cores the relay thread (named rpcscope-relay) may run on; empty when there is no such thread.
std::vector<int> relayThreadCpus()
{
    const std::vector<std::vector<int>> all = threadcpus::namedThreadsCpus("rpcscope-relay");
    return all.size() == 1 ? all.front() : std::vector<int>{};
}

// A connected loopback pair, without a relay: bytes the test sends from `client` are read at `server`, and a
// steering object is told of them by hand.
struct LoopbackPair
{
    int listener = listenLoopback();
    int client = listener >= 0 ? connectLoopback(localPort(listener)) : -1;
    int server = client >= 0 ? accept(listener, nullptr, nullptr) : -1;
    LoopbackPair()
    {
        if (server >= 0) setIoTimeouts(server, 10);
    }
    LoopbackPair(const LoopbackPair &) = delete;
    LoopbackPair &operator=(const LoopbackPair &) = delete;
    ~LoopbackPair()
    {
        for (int fd : {client, server, listener})
            if (fd >= 0) close(fd);
    }
};

// `n` one-byte reads at `pair`'s server, each sent from core `cpu`, told to `s` as the relay's reads are.
bool readsFrom(int cpu, const LoopbackPair &pair, CpuSteering &s, int n)
{
    for (int i = 0; i < n; ++i) {
        if (!onCore(cpu, [&] { return send(pair.client, "x", 1, 0) == 1; })) return false;
        char y;
        if (recv(pair.server, &y, 1, 0) != 1) return false;
        s.read(pair.server, true, 1);
    }
    return true;
}

// A client connected through a relay to a server socket the test holds, exchanging bytes one way at a time.
struct Hop
{
    Relay relay;
    int target = -1, client = -1, server = -1;

    bool start(std::string *error)
    {
        target = listenLoopback();
        if (target < 0) return false;
        if (!relay.start(
                {"127.0.0.1", 0}, {"127.0.0.1", localPort(target)}, [](EventBatch &&) {}, error))
            return false;
        client = connectLoopback(relay.listenAddress().port);
        server = client >= 0 ? accept(target, nullptr, nullptr) : -1;
        if (server < 0) return false;
        setIoTimeouts(client, 10);
        setIoTimeouts(server, 10);
        return exchange(client, server,
                        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + std::string("\0\0\0\x04\0\0\0\0\0", 9));
    }
    ~Hop()
    {
        for (int fd : {client, server, target})
            if (fd >= 0) close(fd);
        relay.stop();
    }
    // `bytes` from `from`, read whole at `to`.
    static bool exchange(int from, int to, const std::string &bytes)
    {
        std::string got(bytes.size(), '\0');
        return sendAll(from, bytes.data(), bytes.size()) && recvAll(to, got.data(), got.size()) &&
               got == bytes;
    }
    // A small request and its answer, `times` over: a PING out, its ACK back.
    static bool calls(int client, int server, int times)
    {
        const std::string ping("\0\0\x08\x06\0\0\0\0\0pingpong", 17);
        const std::string ack("\0\0\x08\x06\x01\0\0\0\0pingpong", 17);
        for (int i = 0; i < times; ++i)
            if (!exchange(client, server, ping) || !exchange(server, client, ack)) return false;
        return true;
    }
};

} // namespace

class TestCpuSteering : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        unsetenv("RPCSCOPE_RELAY_STEER");
        const std::vector<int> cpus = allowedCpus();
        if (cpus.size() < 2) QSKIP("steering needs two cores");
        const bool reported = threadcpus::loopbackReportsSendersCore({cpus.front(), cpus.back()});
        if (!reported) QSKIP("this kernel does not report a loopback sender's core (SO_INCOMING_CPU)");
    }

    void followsTheClientsCore()
    {
        const std::vector<int> cpus = allowedCpus();
        Hop hop;
        std::string error;
        QVERIFY2(hop.start(&error), error.c_str());
        QCOMPARE(relayThreadCpus(), cpus); // not pinned before any call
        const int a = cpus.front(), b = cpus.back();
        QVERIFY(onCore(a, [&] { return Hop::calls(hop.client, hop.server, 10); }));
        QCOMPARE(relayThreadCpus(), std::vector<int>{a});
        // The client moves: the relay follows it.
        QVERIFY(onCore(b, [&] { return Hop::calls(hop.client, hop.server, 10); }));
        QCOMPARE(relayThreadCpus(), std::vector<int>{b});
    }

    void bulkTrafficIsPlacedByTheKernel()
    {
        const std::vector<int> cpus = allowedCpus();
        Hop hop;
        std::string error;
        QVERIFY2(hop.start(&error), error.c_str());
        QVERIFY(onCore(cpus.front(), [&] { return Hop::calls(hop.client, hop.server, 10); }));
        QCOMPARE(relayThreadCpus(), std::vector<int>{cpus.front()});
        // A megabyte of DATA on stream 1 (frames of 16 KiB): the relay reads it in large pieces.
        std::string bulk;
        for (int i = 0; i < 64; ++i) {
            const char header[9] = {0, 0x40, 0, 0, 0, 0, 0, 0, 1};
            bulk.append(header, sizeof header);
            bulk.append(16384, 'x');
        }
        QVERIFY(onCore(cpus.front(), [&] { return Hop::exchange(hop.client, hop.server, bulk); }));
        QCOMPARE(relayThreadCpus(), cpus);
    }

    void twoClientsOnTwoCoresLeaveItToTheKernel()
    {
        const std::vector<int> cpus = allowedCpus();
        Hop first;
        std::string error;
        QVERIFY2(first.start(&error), error.c_str());
        // A second connection through the same relay.
        const int client2 = connectLoopback(first.relay.listenAddress().port);
        QVERIFY(client2 >= 0);
        const int server2 = accept(first.target, nullptr, nullptr);
        QVERIFY(server2 >= 0);
        setIoTimeouts(client2, 10);
        setIoTimeouts(server2, 10);
        bool ok = true;
        // Turn about: one call from each client, each on its own core.
        for (int i = 0; i < 10 && ok; ++i) {
            ok = onCore(cpus.front(), [&] { return Hop::calls(first.client, first.server, 1); }) &&
                 onCore(cpus.back(), [&] { return Hop::calls(client2, server2, 1); });
        }
        close(client2);
        close(server2);
        QVERIFY(ok);
        QCOMPARE(relayThreadCpus(), cpus);
    }

    void aContendedCoreIsLeft()
    {
        // A steering object on a thread of its own, told that any wait for its core is contention, with a
        // spinning thread on the client's core: it lets go after kContentionEvery pinned reads and stays off
        // that core for kBackOffNs, though the client goes on from there.
        const std::vector<int> cpus = allowedCpus();
        const int a = cpus.front();
        const LoopbackPair pair;
        QVERIFY(pair.client >= 0 && pair.server >= 0);
        std::atomic<bool> spin{true};
        std::thread spinner([&] {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(a, &one);
            sched_setaffinity(0, sizeof one, &one);
            while (spin.load(std::memory_order_relaxed)) {
            }
        });
        int pinnedFirst = -2, pinnedAfter = -2, pinnedLater = -2;
        std::uint64_t releases = 0;
        std::thread relayThread([&] {
            CpuSteering s;
            s.start();
            s.setContendedWait(1);
            auto reads = [&](int n) { return readsFrom(a, pair, s, n); };
            if (!s.enabled() || !reads(CpuSteering::kAgreeingReads)) return;
            pinnedFirst = s.pinnedCpu();
            if (!reads(CpuSteering::kContentionEvery)) return;
            pinnedAfter = s.pinnedCpu();
            releases = s.releases();
            if (!reads(2 * CpuSteering::kAgreeingReads)) return;
            pinnedLater = s.pinnedCpu();
            s.stop();
        });
        relayThread.join();
        spin = false;
        spinner.join();
        QCOMPARE(pinnedFirst, a);
        QCOMPARE(pinnedAfter, -1);
        QCOMPARE(releases, std::uint64_t(1));
        QCOMPARE(pinnedLater, -1);
    }

    void theEnvironmentTurnsItOff()
    {
        setenv("RPCSCOPE_RELAY_STEER", "0", 1);
        QVERIFY(!CpuSteering::allowedByEnvironment());
        const std::vector<int> cpus = allowedCpus();
        Hop hop;
        std::string error;
        QVERIFY2(hop.start(&error), error.c_str());
        QVERIFY(onCore(cpus.front(), [&] { return Hop::calls(hop.client, hop.server, 10); }));
        QCOMPARE(relayThreadCpus(), cpus);
        unsetenv("RPCSCOPE_RELAY_STEER");
    }

    void stopGivesTheThreadItsCoresBack()
    {
        // The steering object on a thread of its own (the relay's, in a relay): pinned after agreeing reads
        // from a client on one core, then every core again after stop().
        const std::vector<int> cpus = allowedCpus();
        const LoopbackPair pair;
        QVERIFY(pair.client >= 0 && pair.server >= 0);
        int pinnedTo = -2, pins = -1, after = -1;
        std::vector<int> freed;
        std::thread relayThread([&] {
            CpuSteering s;
            s.start();
            if (!s.enabled() || !readsFrom(cpus.back(), pair, s, CpuSteering::kAgreeingReads)) return;
            pinnedTo = s.pinnedCpu();
            pins = int(s.pins());
            s.stop();
            after = s.pinnedCpu();
            cpu_set_t now;
            CPU_ZERO(&now);
            sched_getaffinity(0, sizeof now, &now);
            for (int i = 0; i < CPU_SETSIZE; ++i)
                if (CPU_ISSET(i, &now)) freed.push_back(i);
        });
        relayThread.join();
        QCOMPARE(pinnedTo, cpus.back());
        QCOMPARE(pins, 1);
        QCOMPARE(after, -1);
        QCOMPARE(freed, cpus);
    }

    void coresSetFromOutsideStand()
    {
        // The thread's cores changed while it is pinned, as `taskset -a -p` changes them: letting go keeps
        // that choice, and the thread is not pinned outside it. Given every core back, it follows again, and
        // stop() leaves it every core.
        const std::vector<int> cpus = allowedCpus();
        const int a = cpus.front(), b = cpus.back();
        const LoopbackPair pair;
        QVERIFY(pair.client >= 0 && pair.server >= 0);
        int pinnedFirst = -2, pinnedOutside = -2, pinnedAgain = -2;
        std::vector<int> afterRelease, whileOutside, afterStop;
        std::thread relayThread([&] {
            CpuSteering s;
            s.start();
            if (!s.enabled()) return;
            auto reads = [&](int n) { return readsFrom(b, pair, s, n); };
            auto setCores = [](const std::vector<int> &cores) {
                cpu_set_t set;
                CPU_ZERO(&set);
                for (int c : cores)
                    CPU_SET(c, &set);
                return sched_setaffinity(0, sizeof set, &set) == 0;
            };
            if (!reads(CpuSteering::kAgreeingReads)) return;
            pinnedFirst = s.pinnedCpu();
            if (!setCores({a})) return;
            s.bulk(); // lets go
            afterRelease = allowedCpus();
            // Calls from core b past the bulk back-off: they agree, and b is not the thread's to take.
            const auto backOffOver =
                std::chrono::steady_clock::now() + 2 * std::chrono::nanoseconds(CpuSteering::kBulkBackOffNs);
            pinnedOutside = -1;
            while (std::chrono::steady_clock::now() < backOffOver) {
                if (!reads(1)) return;
                pinnedOutside = std::max(pinnedOutside, s.pinnedCpu());
                std::this_thread::sleep_for(1ms);
            }
            whileOutside = allowedCpus();
            if (!setCores(cpus)) return;
            // Past the bulk back-off, the client's calls are followed again.
            const auto until = std::chrono::steady_clock::now() + 5s;
            while (s.pinnedCpu() < 0 && std::chrono::steady_clock::now() < until) {
                if (!reads(1)) return;
                std::this_thread::sleep_for(1ms); // a call now and then, as a client between its calls
            }
            pinnedAgain = s.pinnedCpu();
            s.stop();
            afterStop = allowedCpus();
        });
        relayThread.join();
        QCOMPARE(pinnedFirst, b);
        QCOMPARE(afterRelease, std::vector<int>{a});
        QCOMPARE(pinnedOutside, -1);
        QCOMPARE(whileOutside, std::vector<int>{a});
        QCOMPARE(pinnedAgain, b);
        QCOMPARE(afterStop, cpus);
    }
};

QTEST_GUILESS_MAIN(TestCpuSteering)
#include "tst_cpusteering.moc"
