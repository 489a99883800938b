// Wire times from the kernel's receive timestamps: a read made late still carries the time its bytes arrived,
// the relay uses that time for what it copies, and without timestamps it falls back to the read time.

#include "clock.h"
#include "events.h"
#include "kernelrxtime.h"
#include "relay.h"
#include "testnet.h"

#include <QtTest>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace std::chrono_literals;
using namespace testnet;

namespace {

// A connected loopback pair: {the accepted side, the connecting side}.
bool socketPair(int *server, int *client)
{
    const int l = listenLoopback();
    if (l < 0) return false;
    *client = connectLoopback(localPort(l));
    *server = *client >= 0 ? accept(l, nullptr, nullptr) : -1;
    close(l);
    return *server >= 0;
}

// The client preface and an empty SETTINGS frame.
std::string prefaceAndSettings()
{
    std::string s = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const char settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
    s.append(settings, sizeof settings);
    return s;
}

struct Events
{
    std::mutex mu;
    std::vector<WireEvent> all;
    Relay::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            for (WireEvent &e : b)
                all.push_back(std::move(e));
        };
    }
    std::vector<WireEvent> frames()
    {
        std::lock_guard lk(mu);
        std::vector<WireEvent> out;
        for (const WireEvent &e : all)
            if (e.kind == EventKind::Frame) out.push_back(e);
        return out;
    }
};

} // namespace

class TestKernelRxTime : public QObject
{
    Q_OBJECT

private slots:
    void aLateReadKeepsTheArrivalTime();
    void noStampFallsBackToTheReadTime();
    void relayTimesReadsFromTheKernel();
    void relayWithoutTimestampsTimesReadsWhenRead();
    void aRelayTimesReadsFromTheKernelByDefault();
};

void TestKernelRxTime::aLateReadKeepsTheArrivalTime()
{
    int server = -1, client = -1;
    QVERIFY(socketPair(&server, &client));
    QVERIFY2(KernelRxTime::enable(server), std::strerror(errno));
    // The kernel turns stamping on for the whole system a moment after the first socket asks (a deferred
    // switch), so the first bytes may come unstamped: the relay then uses the read time.
    std::int64_t kernelNs = 0;
    char buf[16];
    for (int i = 0; i < 100 && kernelNs == 0; ++i) {
        QVERIFY(sendAll(client, "w", 1));
        QCOMPARE(KernelRxTime::receive(server, buf, sizeof buf, &kernelNs), ssize_t(1));
        if (kernelNs == 0) std::this_thread::sleep_for(10ms);
    }
    QVERIFY2(kernelNs != 0, "the kernel gave no receive timestamp (SO_TIMESTAMPNS) on a loopback TCP socket");
    const std::int64_t sent = steadyNowNs();
    QVERIFY(sendAll(client, "hello", 5));
    std::this_thread::sleep_for(30ms); // the reader is late
    const ssize_t n = KernelRxTime::receive(server, buf, sizeof buf, &kernelNs);
    const std::int64_t readNs = steadyNowNs();
    QCOMPARE(n, ssize_t(5));
    QVERIFY2(kernelNs != 0, "the kernel gave no receive timestamp (SO_TIMESTAMPNS) on a loopback TCP socket");
    KernelRxTime clock;
    const std::int64_t t = clock.eventTime(kernelNs, readNs);
    QCOMPARE(clock.stamped(), std::uint64_t(1));
    QCOMPARE(clock.fallbacks(), std::uint64_t(0));
    // At the send (within the offset's error), and well before the late read.
    QVERIFY2(t >= sent - clock.offsetErrorNs() - 1000, qPrintable(QString::number(t - sent)));
    QVERIFY2(readNs - t >= 25'000'000, qPrintable(QString::number(readNs - t)));
    close(server);
    close(client);
}

void TestKernelRxTime::noStampFallsBackToTheReadTime()
{
    KernelRxTime clock;
    const std::int64_t now = steadyNowNs();
    QCOMPARE(clock.eventTime(0, now), now);
    // A stamp later than its read, or far older, cannot be right (a wall-clock step): the read time.
    const std::int64_t read = steadyNowNs();
    QCOMPARE(clock.eventTime(wallNowNs() + 60'000'000'000, read), read);
    const std::int64_t read2 = steadyNowNs();
    QCOMPARE(clock.eventTime(wallNowNs() - 3600'000'000'000, read2), read2);
    QCOMPARE(clock.stamped(), std::uint64_t(0));
    QCOMPARE(clock.fallbacks(), std::uint64_t(3));
    // A socket that never asked for timestamps gets none.
    int server = -1, client = -1;
    QVERIFY(socketPair(&server, &client));
    QVERIFY(sendAll(client, "x", 1));
    char c;
    std::int64_t kernelNs = -1;
    QCOMPARE(KernelRxTime::receive(server, &c, 1, &kernelNs), ssize_t(1));
    QCOMPARE(kernelNs, std::int64_t(0));
    close(server);
    close(client);
}

// kernelTimes: what to set; none, the relay's default.
static void relayOnce(std::optional<bool> kernelTimes, std::uint64_t *stamped, std::uint64_t *readTimed,
                      std::vector<WireEvent> *frames, std::int64_t *sentAt, std::int64_t *arrivedAt)
{
    const int target = listenLoopback();
    QVERIFY(target >= 0);
    Events events;
    Relay relay;
    if (kernelTimes) relay.setKernelTimestamps(*kernelTimes);
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(target)}, events.sink(), &error),
             error.c_str());
    const int client = connectLoopback(relay.listenAddress().port);
    QVERIFY(client >= 0);
    setIoTimeouts(client, 10);
    const int server = accept(target, nullptr, nullptr);
    QVERIFY(server >= 0);
    setIoTimeouts(server, 10);
    // The preface and SETTINGS, then PINGs one at a time until a read was stamped by the kernel (it turns
    // stamping on a moment after the first socket of the system asks, so the first reads may not be); the
    // last PING's send and arrival bound its frame's time.
    auto exchange = [&](const std::string &bytes) {
        *sentAt = steadyNowNs();
        if (!sendAll(client, bytes.data(), bytes.size())) return false;
        std::string got(bytes.size(), '\0');
        if (!recvAll(server, got.data(), got.size())) return false;
        *arrivedAt = steadyNowNs();
        return got == bytes;
    };
    QVERIFY(exchange(prefaceAndSettings()));
    const std::string ping("\0\0\x08\x06\0\0\0\0\0pingpong", 17);
    for (int i = 0; i < 3 || (kernelTimes.value_or(true) && relay.kernelStampedReads() == 0 && i < 100);
         ++i) {
        QVERIFY(exchange(ping));
        if (i >= 2 && relay.kernelStampedReads() == 0) std::this_thread::sleep_for(10ms);
    }
    close(client);
    close(server);
    close(target);
    relay.stop();
    *stamped = relay.kernelStampedReads();
    *readTimed = relay.readTimedReads();
    *frames = events.frames();
    if (!frames->empty()) frames->erase(frames->begin(), frames->end() - 1); // the last PING's
}

void TestKernelRxTime::relayTimesReadsFromTheKernel()
{
    std::uint64_t stamped = 0, readTimed = 0;
    std::vector<WireEvent> frames;
    std::int64_t sent = 0, arrived = 0;
    relayOnce(true, &stamped, &readTimed, &frames, &sent, &arrived);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(stamped >= 1, "no read was timed by the kernel");
    QCOMPARE(frames.size(), size_t(1));
    QCOMPARE(frames[0].frameType, std::uint8_t(FramePing));
    QVERIFY2(frames[0].tNs >= sent - 1'000'000 && frames[0].tNs <= arrived,
             qPrintable(QString("frame at %1 ns after the send, %2 ns before it reached the server")
                            .arg(frames[0].tNs - sent)
                            .arg(arrived - frames[0].tNs)));
}

void TestKernelRxTime::relayWithoutTimestampsTimesReadsWhenRead()
{
    std::uint64_t stamped = 0, readTimed = 0;
    std::vector<WireEvent> frames;
    std::int64_t sent = 0, arrived = 0;
    relayOnce(false, &stamped, &readTimed, &frames, &sent, &arrived);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(stamped, std::uint64_t(0));
    QVERIFY(readTimed >= 1);
    QCOMPARE(frames.size(), size_t(1));
    QVERIFY(frames[0].tNs >= sent && frames[0].tNs <= arrived);
}

// Every place that runs a relay (CLI capture, GUI, lab, CONNECT tunnels) constructs it without choosing.
void TestKernelRxTime::aRelayTimesReadsFromTheKernelByDefault()
{
    std::uint64_t stamped = 0, readTimed = 0;
    std::vector<WireEvent> frames;
    std::int64_t sent = 0, arrived = 0;
    relayOnce(std::nullopt, &stamped, &readTimed, &frames, &sent, &arrived);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(stamped >= 1, "a relay left at its default timed no read by the kernel");
}

QTEST_GUILESS_MAIN(TestKernelRxTime)
#include "tst_kernelrxtime.moc"
