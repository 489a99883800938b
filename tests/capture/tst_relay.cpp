// The capture relay: it must forward every byte unchanged in both directions, whatever it manages to decode,
// pass half-closes on, and report its failures (listen, target) as text a user can act on.

#include "events.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "testnet.h"
#include "threadpriority.h"

#include <QCryptographicHash>
#include <QtTest>
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <linux/sockios.h>
#include <map>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <random>
#include <sched.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace std::chrono_literals;
using namespace testnet;

namespace {

// Sends `data` in writes of random size (1..maxChunk) drawn from `seed`.
bool sendInRandomChunks(int fd, const std::string &data, std::uint64_t seed, size_t maxChunk)
{
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> size(1, maxChunk);
    size_t off = 0;
    while (off < data.size()) {
        const size_t n = std::min(size(rng), data.size() - off);
        if (!sendAll(fd, data.data() + off, n)) return false;
        off += n;
    }
    return true;
}

struct ReadResult
{
    QByteArray sha256;
    size_t bytes = 0;
    bool eof = false;  // ended with a clean EOF (recv returned 0)
    std::string error; // otherwise why it ended
};

// Reads until EOF (or an error), hashing what arrived.
ReadResult readToEnd(int fd)
{
    QCryptographicHash hash(QCryptographicHash::Sha256);
    ReadResult r;
    std::vector<char> buf(100'003); // an odd size so reads do not line up with anyone's writes
    for (;;) {
        const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
        if (n > 0) {
            hash.addData(QByteArrayView(buf.data(), n));
            r.bytes += size_t(n);
        } else if (n == 0) {
            r.eof = true;
            break;
        } else if (errno != EINTR) {
            r.error = std::strerror(errno);
            break;
        }
    }
    r.sha256 = hash.result();
    return r;
}

std::string randomBytes(size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i += 8) {
        const std::uint64_t v = rng();
        std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
    }
    return s;
}

QByteArray sha256(const std::string &s)
{
    return QCryptographicHash::hash(QByteArrayView(s.data(), qsizetype(s.size())),
                                    QCryptographicHash::Sha256);
}

// Polls `cond` until it holds or `timeout` passes; the sleep is only the polling interval. (Unlike QTRY_*,
// a failure costs the timeout once, not three times.)
bool waitUntil(const std::function<bool()> &cond, std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!cond()) {
        if (std::chrono::steady_clock::now() >= deadline) return cond();
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

const char *kindName(EventKind k)
{
    switch (k) {
    case EventKind::ConnectionOpened:
        return "ConnectionOpened";
    case EventKind::ConnectionClosed:
        return "ConnectionClosed";
    case EventKind::Frame:
        return "Frame";
    case EventKind::Headers:
        return "Headers";
    case EventKind::Message:
        return "Message";
    case EventKind::DecodeError:
        return "DecodeError";
    case EventKind::Notice:
        return "Notice";
    case EventKind::FlowStallBegin:
        return "FlowStallBegin";
    case EventKind::FlowStallEnd:
        return "FlowStallEnd";
    case EventKind::LabEvent:
        return "LabEvent";
    }
    return "?";
}

// ---- the relay's sink: called on the decoder thread ----------------------------------------------------

class EventLog
{
public:
    Relay::Sink sink()
    {
        return [this](EventBatch &&batch) {
            std::lock_guard lk(m_mu);
            for (WireEvent &e : batch)
                m_events.push_back(std::move(e));
        };
    }

    std::vector<WireEvent> all() const
    {
        std::lock_guard lk(m_mu);
        return m_events;
    }

    // The relay names the accepted socket's peer in ConnectionOpened.peers(); our client knows its own port.
    std::optional<std::uint32_t> connectionFromPeer(const std::string &peer) const
    {
        std::lock_guard lk(m_mu);
        for (const WireEvent &e : m_events)
            if (e.kind == EventKind::ConnectionOpened && e.peers()->client == peer) return e.connection;
        return std::nullopt;
    }

    std::vector<WireEvent> forConnection(std::uint32_t id) const
    {
        std::lock_guard lk(m_mu);
        std::vector<WireEvent> out;
        for (const WireEvent &e : m_events)
            if (e.connection == id) out.push_back(e);
        return out;
    }

    int count(std::uint32_t id, EventKind kind) const
    {
        std::lock_guard lk(m_mu);
        int n = 0;
        for (const WireEvent &e : m_events)
            n += e.connection == id && e.kind == kind;
        return n;
    }

    static QByteArray describe(const std::vector<WireEvent> &events)
    {
        QByteArray out;
        int frames = 0;
        for (const WireEvent &e : events) {
            if (e.kind == EventKind::Frame || e.kind == EventKind::Message) {
                ++frames;
                continue;
            }
            out += QByteArray(kindName(e.kind)) + "(conn " + QByteArray::number(e.connection) + ", '" +
                   QByteArray::fromStdString(e.reason) + "') ";
        }
        return out + "+ " + QByteArray::number(frames) + " frame/message events";
    }

private:
    mutable std::mutex m_mu;
    std::vector<WireEvent> m_events;
};

// ---- test-local peers ----------------------------------------------------------------------------------

// Listens on loopback and hands the first connection it accepts to `serve`, on a thread of its own (-1 when
// none came before its owner went away). Declared last in its owner, so that thread ends before the owner's
// other members are destroyed.
class OneConnection
{
public:
    ~OneConnection()
    {
        m_stop = true;
        if (m_thread.joinable()) m_thread.join();
        if (m_listen >= 0) close(m_listen);
    }
    bool start(std::function<void(int fd)> serve)
    {
        m_listen = listenLoopback();
        if (m_listen < 0) return false;
        m_thread = std::thread([this, serve = std::move(serve)] {
            int fd = -1;
            while (!m_stop && fd < 0) {
                pollfd p{m_listen, POLLIN, 0};
                if (poll(&p, 1, 100) == 1) fd = accept(m_listen, nullptr, nullptr);
            }
            serve(fd);
        });
        return true;
    }
    std::uint16_t port() const { return localPort(m_listen); }
    bool stopping() const { return m_stop; }

private:
    int m_listen = -1;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
};

// Accepts one connection; reads (and hashes) until EOF while concurrently sending its own bytes; closes
// only once it has seen EOF and sent everything.
class SinkSourceServer
{
public:
    SinkSourceServer(std::string toSend, std::uint64_t chunkSeed)
        : m_toSend(std::move(toSend)), m_chunkSeed(chunkSeed)
    {
    }
    bool start()
    {
        return m_server.start([this](int fd) { run(fd); });
    }
    std::uint16_t port() const { return m_server.port(); }

    bool finished() const { return m_finished; }
    ReadResult received() const
    {
        std::lock_guard lk(m_mu);
        return m_received;
    }
    bool sentAll() const { return m_sentAll; }
    std::string acceptError() const
    {
        std::lock_guard lk(m_mu);
        return m_acceptError;
    }

private:
    void run(int fd)
    {
        if (fd < 0) {
            std::lock_guard lk(m_mu);
            m_acceptError = "no connection accepted";
            m_finished = true;
            return;
        }
        setIoTimeouts(fd, 15);
        std::thread writer([&] { m_sentAll = sendInRandomChunks(fd, m_toSend, m_chunkSeed, 200'000); });
        ReadResult r = readToEnd(fd);
        writer.join();
        close(fd);
        {
            std::lock_guard lk(m_mu);
            m_received = std::move(r);
        }
        m_finished = true;
    }

    const std::string m_toSend;
    const std::uint64_t m_chunkSeed;
    std::atomic<bool> m_finished{false};
    std::atomic<bool> m_sentAll{false};
    mutable std::mutex m_mu;
    ReadResult m_received;
    std::string m_acceptError;
    OneConnection m_server; // last: its thread ends first
};

// Accepts one connection and keeps every byte it receives until EOF. With a pause it is a slow reader (after
// its first fastBytes): small reads with a rest between them, so the relay's writes towards it block and its
// bytes wait in the relay.
class CollectingServer
{
public:
    explicit CollectingServer(size_t readSize = 1 << 20, std::chrono::microseconds pause = {},
                              size_t fastBytes = 0)
        : m_readSize(readSize), m_pause(pause), m_fastBytes(fastBytes)
    {
    }
    bool start()
    {
        return m_server.start([this](int fd) { run(fd); });
    }
    std::uint16_t port() const { return m_server.port(); }
    size_t size() const
    {
        std::lock_guard lk(m_mu);
        return m_data.size();
    }
    std::string data() const
    {
        std::lock_guard lk(m_mu);
        return m_data;
    }
    bool eof() const { return m_eof; }

private:
    void run(int fd)
    {
        if (fd < 0) return;
        std::vector<char> buf(m_readSize);
        while (!m_server.stopping()) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 100) != 1) continue;
            const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
            if (n <= 0) {
                m_eof = n == 0;
                break;
            }
            {
                std::lock_guard lk(m_mu);
                m_data.append(buf.data(), size_t(n));
            }
            if (m_pause.count() && size() >= m_fastBytes)
                std::this_thread::sleep_for(m_pause); // pacing the reader, not waiting for a result
        }
        close(fd);
    }

    const size_t m_readSize;
    const std::chrono::microseconds m_pause;
    const size_t m_fastBytes;
    std::atomic<bool> m_eof{false};
    mutable std::mutex m_mu;
    std::string m_data;
    OneConnection m_server; // last: its thread ends first
};

std::string loopback(std::uint16_t port)
{
    return "127.0.0.1:" + std::to_string(port);
}

// Starts `relay` in front of 127.0.0.1:target, recording into `log`, and connects a client to it with I/O
// timeouts of `timeoutSeconds`. Returns the client's socket, or -1 (the reason logged).
int relayAndConnect(Relay &relay, EventLog &log, std::uint16_t target, int timeoutSeconds)
{
    std::string error;
    if (!relay.start({"127.0.0.1", 0}, {"127.0.0.1", target}, log.sink(), &error)) {
        qWarning("relay: %s", error.c_str());
        return -1;
    }
    const int fd = connectLoopback(relay.listenAddress().port);
    if (fd < 0) {
        qWarning("connect: %s", std::strerror(errno));
        return -1;
    }
    setIoTimeouts(fd, timeoutSeconds);
    return fd;
}

// How one round of resetRounds() ended for the reading side.
struct ResetRound
{
    size_t bytes = 0;
    std::string end; // "ECONNRESET", "EOF", another errno's name or "timeout"
};

// Reads fd until it ends or `timeout` passes without anything arriving (poll, no sleeps).
ResetRound readUntilEnd(int fd, std::chrono::milliseconds timeout)
{
    ResetRound r;
    char buf[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, int(timeout.count())) != 1) {
            r.end = "timeout";
            return r;
        }
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            r.bytes += size_t(n);
        } else if (n == 0) {
            r.end = "EOF";
            return r;
        } else if (errno != EINTR) {
            r.end = errno == ECONNRESET ? "ECONNRESET" : std::strerror(errno);
            return r;
        }
    }
}

// Runs `rounds` connections through a relay in which one side (the server when serverResets, else the
// client) resets, each in one of four ways by turn, and checks that the other side reads everything the
// relay had taken from the resetting side before it and then ECONNRESET, never a clean EOF. Returns the
// failed rounds and describes the first few in *failures.
int resetRounds(bool serverResets, int rounds, std::string *failures, std::map<std::string, int> *ends)
{
    const int listener = listenLoopback();
    if (listener < 0) {
        *failures = "no listener";
        return rounds;
    }
    EventLog log;
    Relay relay;
    std::string error;
    if (!relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(listener)}, log.sink(), &error)) {
        close(listener);
        *failures = error;
        return rounds;
    }
    const linger abort{1, 0};
    const std::string big = randomBytes(1 << 20, 7);
    int failed = 0;
    for (int i = 0; i < rounds; ++i) {
        const int client = connectLoopback(relay.listenAddress().port);
        pollfd lp{listener, POLLIN, 0};
        const int server = client >= 0 && poll(&lp, 1, 5000) == 1 ? accept(listener, nullptr, nullptr) : -1;
        const int resetter = serverResets ? server : client;
        const int reader = serverResets ? client : server;
        std::string problem;
        size_t sent = 0;
        if (client < 0 || server < 0) {
            problem = "could not connect through the relay";
        } else {
            switch (i % 4) {
            case 0: { // the reader has taken what came before the reset
                sendAll(resetter, "hi", 2);
                char got[2];
                pollfd p{reader, POLLIN, 0};
                if (poll(&p, 1, 5000) != 1 || recv(reader, got, 2, MSG_WAITALL) != 2)
                    problem = "the bytes before the reset did not arrive";
                break;
            }
            case 1: // a little data, then the reset at once
                sent = 2;
                sendAll(resetter, "ho", 2);
                break;
            case 2: // more than the reader's socket holds, then the reset as soon as the relay has it all
                    // (what the resetter's kernel has not sent yet is discarded with its socket)
                sent = big.size();
                sendAll(resetter, big.data(), big.size());
                if (!waitUntil(
                        [&] {
                            int unacked = 0;
                            return ioctl(resetter, SIOCOUTQ, &unacked) == 0 && unacked == 0;
                        },
                        5s))
                    problem = "the relay did not take what the resetter sent";
                break;
            case 3: { // a close with unread data, which TCP turns into a reset
                sendAll(reader, "unread", 6);
                pollfd p{resetter, POLLIN, 0};
                if (poll(&p, 1, 5000) != 1) problem = "the resetter never got the bytes it leaves unread";
                break;
            }
            }
            if (i % 4 != 3) setsockopt(resetter, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
            close(resetter);
            const ResetRound r = readUntilEnd(reader, 5000ms);
            ++(*ends)[r.end];
            const size_t expected = i % 4 == 0 ? 0 : sent; // round 0's bytes were read before
            if (problem.empty() && r.end != "ECONNRESET")
                problem = "ended with " + r.end + " instead of ECONNRESET";
            else if (problem.empty() && r.bytes != expected)
                problem = "got " + std::to_string(r.bytes) + " of the " + std::to_string(expected) +
                          " bytes sent before the reset";
        }
        if (!problem.empty()) {
            if (++failed <= 5)
                *failures +=
                    "round " + std::to_string(i) + " (way " + std::to_string(i % 4) + "): " + problem + "\n";
        }
        if (reader >= 0) close(reader);
        if (client < 0 || server < 0)
            if (resetter >= 0) close(resetter);
    }
    relay.stop();
    close(listener);
    return failed;
}

} // namespace

class TestRelay : public QObject
{
    Q_OBJECT

private slots:
    // Every relay a test stops leaves no capture counted behind (threadpriority.h): one left behind would
    // keep every lowered thread of the process off the idle policy for good.
    void cleanup() { QCOMPARE(capturesBehind(), 0); }
    void randomBytesByteExactBothWays();
    void switchingBetweenCopyAndSpliceKeepsOrder();
    void slowReaderGetsEverySplicedByte();
    void grpcExchangeByteIdentical();
    void syncHandsOverEveryRelayedCall();
    void startOnPortInUseFails();
    void parseHostPortErrors();
    void probeClosedPortIsUnreachable();
    void targetRefusingClosesClient();
    void resetIsPassedOnBothWays();
    void serverResetReachesClientEveryTime();
    void clientResetReachesServerEveryTime();
    void aDecoderBehindSendsBoundedBatches();
    void aSmallDecoderBudgetCapsTheBacklog();
    void theDecoderRunsBelowTheRelaysPriority();
    void aCaptureBehindLeavesTheIdlePolicy();
    // Last: it ends the idle policy for the rest of the process.
    void stoppingEndsTheIdlePolicyForGood();
};

void TestRelay::randomBytesByteExactBothWays()
{
    constexpr size_t kSize = 8u << 20;
    const std::string clientData = randomBytes(kSize, 0xC11E47);
    const std::string serverData = randomBytes(kSize, 0x5E4E4);
    QVERIFY(clientData != serverData);

    SinkSourceServer server(serverData, 77);
    QVERIFY(server.start());

    EventLog log;
    Relay relay;
    const int fd = relayAndConnect(relay, log, server.port(), 15);
    QVERIFY(fd >= 0);
    QVERIFY(relay.listenAddress().port != 0);
    const std::string clientPeer = loopback(localPort(fd));

    std::atomic<bool> clientSentAll{false};
    std::atomic<bool> clientShutdownOk{false};
    std::thread writer([&] {
        clientSentAll = sendInRandomChunks(fd, clientData, 4242, 150'000);
        // Half-close: the server must see EOF while we still read its bytes.
        clientShutdownOk = shutdown(fd, SHUT_WR) == 0;
    });
    const ReadResult clientGot = readToEnd(fd);
    writer.join();
    close(fd);

    QVERIFY(waitUntil([&] { return server.finished(); }, 15s));
    const ReadResult serverGot = server.received();
    QVERIFY2(server.acceptError().empty(), server.acceptError().c_str());

    QVERIFY(clientSentAll);
    QVERIFY(clientShutdownOk);
    QVERIFY(server.sentAll());
    // Both sides ended on a clean EOF: the relay passed the client's half-close on, and the server's close.
    QVERIFY2(serverGot.eof, serverGot.error.c_str());
    QVERIFY2(clientGot.eof, clientGot.error.c_str());
    QCOMPARE(serverGot.bytes, kSize);
    QCOMPARE(clientGot.bytes, kSize);
    QCOMPARE(serverGot.sha256.toHex(), sha256(clientData).toHex());
    QCOMPARE(clientGot.sha256.toHex(), sha256(serverData).toHex());
    QVERIFY(relay.bytesRelayed() >= 2 * kSize);
    // Writes of up to 150 KB make large reads: those directions went over to splicing.
    QVERIFY2(relay.bytesSpliced() > 0 && relay.bytesSpliced() < relay.bytesRelayed(),
             std::to_string(relay.bytesSpliced()).c_str());

    // The relay's view: this connection opened, failed to decode (random bytes), and closed.
    QTRY_VERIFY_WITH_TIMEOUT(log.connectionFromPeer(clientPeer).has_value(), 5000);
    const std::uint32_t id = *log.connectionFromPeer(clientPeer);
    QTRY_VERIFY2_WITH_TIMEOUT(log.count(id, EventKind::ConnectionClosed) == 1, EventLog::describe(log.all()),
                              5000);
    QTRY_COMPARE_WITH_TIMEOUT(relay.openConnections(), 0, 5000);
    const std::vector<WireEvent> events = log.forConnection(id);
    QVERIFY2(log.count(id, EventKind::DecodeError) >= 1, EventLog::describe(events));
    QCOMPARE(log.count(id, EventKind::ConnectionOpened), 1);
    QCOMPARE(events.front().kind, EventKind::ConnectionOpened);
    QCOMPARE(events.back().kind, EventKind::ConnectionClosed);
    QCOMPARE(events.front().peers()->server, loopback(server.port()));
    QVERIFY(events.back().tNs >= events.front().tNs);
    // Random bytes are not HTTP/2: nothing may have been decoded as frames or headers.
    for (const WireEvent &e : events)
        QVERIFY2(e.kind != EventKind::Headers && e.kind != EventKind::Message, kindName(e.kind));

    relay.stop();
}

// Bulk bytes are spliced and small messages copied; a direction moves between the two ways as its reads
// change size. Whatever way each byte took, they all arrive, in order.
void TestRelay::switchingBetweenCopyAndSpliceKeepsOrder()
{
    CollectingServer server;
    QVERIFY(server.start());
    EventLog log;
    Relay relay;
    const int fd = relayAndConnect(relay, log, server.port(), 15);
    QVERIFY(fd >= 0);

    std::string expected;
    for (int phase = 0; phase < 6; ++phase) {
        const std::uint64_t splicedBefore = relay.bytesSpliced();
        if (phase % 2 == 0) {
            const std::string bulk = randomBytes(4u << 20, 1000 + phase);
            QVERIFY(sendAll(fd, bulk.data(), bulk.size()));
            expected += bulk;
            QVERIFY2(waitUntil([&] { return server.size() == expected.size(); }, 10s),
                     (std::to_string(server.size()) + " of " + std::to_string(expected.size())).c_str());
            const std::uint64_t spliced = relay.bytesSpliced() - splicedBefore;
            QVERIFY2(spliced >= (2u << 20),
                     ("phase " + std::to_string(phase) + ": spliced " + std::to_string(spliced)).c_str());
        } else {
            for (int i = 0; i < 50; ++i) {
                const std::string small = randomBytes(100, std::uint64_t(phase) * 100 + std::uint64_t(i));
                QVERIFY(sendAll(fd, small.data(), small.size()));
                expected += small;
                QVERIFY(waitUntil([&] { return server.size() == expected.size(); }, 5s));
            }
            // At most the first small read after the bulk may still have been spliced; then it copies again.
            const std::uint64_t spliced = relay.bytesSpliced() - splicedBefore;
            QVERIFY2(spliced <= 100,
                     ("phase " + std::to_string(phase) + ": spliced " + std::to_string(spliced)).c_str());
        }
    }
    QVERIFY(shutdown(fd, SHUT_WR) == 0);
    QVERIFY(waitUntil([&] { return server.eof(); }, 10s));
    close(fd);
    const std::string got = server.data();
    QCOMPARE(got.size(), expected.size());
    QCOMPARE(sha256(got).toHex(), sha256(expected).toHex());
    relay.stop();
}

// A peer that reads slowly makes the relay's splices towards it block: what waits in the pipe must still
// arrive whole, and the sender's half-close must follow the last byte, not overtake it. The reader is quick
// for its first 2 MiB, so the relay's first large read goes out whole and the direction starts splicing.
void TestRelay::slowReaderGetsEverySplicedByte()
{
    CollectingServer server(16 * 1024, std::chrono::microseconds(100), 2u << 20);
    QVERIFY(server.start());
    EventLog log;
    Relay relay;
    const int fd = relayAndConnect(relay, log, server.port(), 30);
    QVERIFY(fd >= 0);

    const std::string data = randomBytes(24u << 20, 0x510E);
    bool sent = true;
    for (size_t off = 0; off < data.size() && sent; off += 1u << 20)
        sent = sendAll(fd, data.data() + off, std::min<size_t>(1u << 20, data.size() - off));
    QVERIFY(sent);
    QVERIFY(shutdown(fd, SHUT_WR) == 0);
    QVERIFY2(waitUntil([&] { return server.eof(); }, 30s),
             (std::to_string(server.size()) + " of " + std::to_string(data.size())).c_str());
    close(fd);
    const std::string got = server.data();
    QCOMPARE(got.size(), data.size());
    QCOMPARE(sha256(got).toHex(), sha256(data).toHex());
    // Once splicing, a direction copies again only after a small read; a slow reader keeps the sender's bytes
    // queued, so how much was spliced depends on timing. That some was is certain.
    QVERIFY2(relay.bytesSpliced() > 0, std::to_string(relay.bytesSpliced()).c_str());
    relay.stop();
}

void TestRelay::grpcExchangeByteIdentical()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());

    // client -> tapA -> relay -> tapB -> server
    Tap tapB(std::uint16_t(server.port()));
    QVERIFY(tapB.start());
    EventLog log;
    Relay relay;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", tapB.port()}, log.sink(), &error), error.c_str());
    Tap tapA(relay.listenAddress().port);
    QVERIFY(tapA.start());

    const std::string serviceConfig =
        R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":3,)"
        R"("initialBackoff":"0.05s","maxBackoff":"1s","backoffMultiplier":2,)"
        R"("retryableStatusCodes":["UNAVAILABLE"]}}]})";
    auto client = std::make_unique<lab::LabClient>(loopback(tapA.port()), serviceConfig);

    constexpr int kBig = 300 * 1024;
    std::vector<lab::CallRequest> requests;
    {
        lab::CallRequest r;
        r.set_call_id("small-1");
        r.set_payload("hello");
        r.set_response_size(100);
        requests.push_back(r);
    }
    {
        lab::CallRequest r;
        r.set_call_id("big-1");
        r.set_payload(randomBytes(kBig, 1));
        r.set_response_size(kBig);
        requests.push_back(r);
    }
    {
        lab::CallRequest r;
        r.set_call_id("retry-1");
        r.set_fail_first_n(2);
        r.set_fail_code(14); // UNAVAILABLE: retried by the policy above
        r.set_payload(randomBytes(10 * 1024, 2));
        r.set_response_size(1000);
        requests.push_back(r);
    }
    {
        lab::CallRequest r;
        r.set_call_id("big-2");
        r.set_payload(randomBytes(kBig, 3));
        r.set_response_size(10);
        requests.push_back(r);
    }
    for (const lab::CallRequest &r : requests) {
        const lab::CallResult result = client->call(r, 20000ms);
        QVERIFY2(result.code == 0,
                 (r.call_id() + ": code " + std::to_string(result.code) + " " + result.message).c_str());
    }
    const std::vector<lab::Arrival> retryArrivals = server.arrivalsFor("retry-1");
    QCOMPARE(int(retryArrivals.size()), 3);
    QCOMPARE(retryArrivals.back().previousAttempts.value_or(-1), 2);

    // Closing the channel closes its connection; every direction of both taps must then end.
    client.reset();
    const bool ended = waitUntil(
        [&] {
            return !tapA.connections().empty() && tapA.allDone() && !tapB.connections().empty() &&
                   tapB.allDone();
        },
        15s);
    QVERIFY2(ended, "the taps did not see both directions end after the client closed its channel");

    const std::vector<Tap::Conn> a = tapA.connections();
    const std::vector<Tap::Conn> b = tapB.connections();
    QCOMPARE(int(a.size()), 1); // one channel, one connection
    QCOMPARE(int(b.size()), 1);
    QVERIFY2(a[0].connectError.empty(), a[0].connectError.c_str());
    QVERIFY2(b[0].connectError.empty(), b[0].connectError.c_str());
    qInfo("tapA: c2s %zu bytes (%s), s2c %zu bytes (%s); tapB: c2s %zu bytes (%s), s2c %zu bytes (%s)",
          a[0].c2s.size(), a[0].c2sEnd.c_str(), a[0].s2c.size(), a[0].s2cEnd.c_str(), b[0].c2s.size(),
          b[0].c2sEnd.c_str(), b[0].s2c.size(), b[0].s2cEnd.c_str());

    // What the relay emitted ended on a clean EOF, and everything handed to it was accepted.
    QCOMPARE(QByteArray::fromStdString(a[0].s2cEnd), QByteArray("eof"));
    QCOMPARE(QByteArray::fromStdString(b[0].c2sEnd), QByteArray("eof"));
    QVERIFY(!a[0].c2sSendFailed);
    QVERIFY(!b[0].s2cSendFailed);

    QVERIFY(a[0].c2s.size() > size_t(kBig));
    QVERIFY(a[0].s2c.size() > size_t(kBig));
    QCOMPARE(b[0].c2s.size(), a[0].c2s.size());
    QCOMPARE(a[0].s2c.size(), b[0].s2c.size());
    QCOMPARE(sha256(b[0].c2s).toHex(), sha256(a[0].c2s).toHex());
    QCOMPARE(sha256(a[0].s2c).toHex(), sha256(b[0].s2c).toHex());

    // The relay decoded the same connection as gRPC: request headers for every attempt, no decode error.
    const std::string peer = loopback(a[0].upstreamLocalPort);
    QTRY_VERIFY_WITH_TIMEOUT(log.connectionFromPeer(peer).has_value(), 5000);
    const std::uint32_t id = *log.connectionFromPeer(peer);
    QTRY_COMPARE_WITH_TIMEOUT(log.count(id, EventKind::ConnectionClosed), 1, 5000);
    const std::vector<WireEvent> events = log.forConnection(id);
    QVERIFY2(log.count(id, EventKind::DecodeError) == 0, EventLog::describe(events));
    int requestHeaders = 0;
    for (const WireEvent &e : events) {
        if (e.kind != EventKind::Headers || e.grpc.path != "/rpcscope.lab.Lab/Call") continue;
        QCOMPARE(e.dir, Direction::ClientToServer);
        const bool hasPath = std::any_of(e.headers.begin(), e.headers.end(), [](const Header &h) {
            return h.name == ":path" && h.value == "/rpcscope.lab.Lab/Call";
        });
        QVERIFY(hasPath);
        ++requestHeaders;
    }
    // small-1, big-1, big-2 once each; retry-1 three times.
    QCOMPARE(requestHeaders, 6);

    relay.stop();
}

// A run of traffic is over when its events are: sync() returns once the decoder has handed over the events of
// every byte relayed so far, so a call's trailers are with the sink the moment sync() returns, not a batch
// interval (16 ms) or, on a busy machine, seconds later.
void TestRelay::syncHandsOverEveryRelayedCall()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    EventLog log;
    Relay relay;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, log.sink(), &error),
             error.c_str());
    lab::LabClient client(loopback(relay.listenAddress().port), {});
    // Responses' trailers (a grpc-status) handed over so far.
    auto trailers = [&] {
        const std::vector<WireEvent> all = log.all();
        return int(std::count_if(all.begin(), all.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Headers && e.grpc.status.has_value();
        }));
    };
    for (int i = 0; i < 20; ++i) {
        lab::CallRequest r;
        r.set_call_id("sync-" + std::to_string(i));
        r.set_response_size(100);
        QCOMPARE(client.call(r, std::chrono::seconds(5)).code, 0);
        QVERIFY(relay.sync(std::chrono::seconds(5)));
        // Looked at once, not waited for.
        QCOMPARE(trailers(), i + 1);
    }
    relay.stop();
    // A stopped relay's sync has nothing to wait for.
    QVERIFY(relay.sync(std::chrono::milliseconds(1)));
}

void TestRelay::startOnPortInUseFails()
{
    const int busy = listenLoopback();
    QVERIFY(busy >= 0);
    const std::uint16_t port = localPort(busy);

    EventLog log;
    Relay relay;
    std::string error;
    const bool started = relay.start({"127.0.0.1", port}, {"127.0.0.1", 9}, log.sink(), &error);
    close(busy);
    QVERIFY2(!started, "relay started on a port another socket listens on");
    QVERIFY2(QByteArray::fromStdString(error).contains(QByteArray::number(port)), error.c_str());
    QVERIFY2(QByteArray::fromStdString(error).contains("in use"), error.c_str());
    QCOMPARE(relay.openConnections(), 0);

    // And a running relay refuses a second start.
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", 9}, log.sink(), &error), error.c_str());
    std::string again;
    QVERIFY(!relay.start({"127.0.0.1", 0}, {"127.0.0.1", 9}, log.sink(), &again));
    QVERIFY(!again.empty());
    relay.stop();
}

void TestRelay::parseHostPortErrors()
{
    for (const char *bad : {"nohost", "host:99999", "host:abc", "[]:80", "::1:8080"}) {
        HostPort hp;
        std::string error;
        QVERIFY2(!parseHostPort(bad, &hp, &error), bad);
        QVERIFY2(!error.empty(), bad);
        // The message quotes what it rejected.
        QVERIFY2(QByteArray::fromStdString(error).contains(bad), error.c_str());
    }

    HostPort hp;
    std::string error;
    QVERIFY2(parseHostPort("127.0.0.1:0", &hp, &error), error.c_str());
    QCOMPARE(QByteArray::fromStdString(hp.host), QByteArray("127.0.0.1"));
    QCOMPARE(int(hp.port), 0);

    QVERIFY2(parseHostPort("[::1]:8080", &hp, &error), error.c_str());
    QCOMPARE(QByteArray::fromStdString(hp.host), QByteArray("::1"));
    QCOMPARE(int(hp.port), 8080);
    QCOMPARE(QByteArray::fromStdString(hp.toString()), QByteArray("[::1]:8080"));
}

void TestRelay::probeClosedPortIsUnreachable()
{
    const std::uint16_t port = closedPort();
    QVERIFY(port != 0);
    std::string error;
    QVERIFY(!probeTarget({"127.0.0.1", port}, 2000, &error));
    QVERIFY2(QByteArray::fromStdString(error).contains("unreachable"), error.c_str());
    QVERIFY2(QByteArray::fromStdString(error).contains(QByteArray::number(port)), error.c_str());

    // The same probe succeeds against something listening.
    const int live = listenLoopback();
    QVERIFY(live >= 0);
    error.clear();
    const bool ok = probeTarget({"127.0.0.1", localPort(live)}, 2000, &error);
    close(live);
    QVERIFY2(ok, error.c_str());
}

void TestRelay::targetRefusingClosesClient()
{
    const HostPort target{"127.0.0.1", closedPort()};
    QVERIFY(target.port != 0);

    EventLog log;
    Relay relay;
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, target, log.sink(), &error), error.c_str());

    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY2(fd >= 0, std::strerror(errno));
    const std::string clientPeer = loopback(localPort(fd));

    // The relay cannot reach the target, so it must close our connection: EOF or reset, within the timeout.
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, 5000);
    char byte;
    const ssize_t n = ready == 1 ? recv(fd, &byte, 1, 0) : 1;
    close(fd);
    QVERIFY2(ready == 1, "relay kept the client connection open although its target refuses connections");
    QVERIFY2(n <= 0, "relay sent bytes although its target is unreachable");

    QTRY_VERIFY_WITH_TIMEOUT(log.connectionFromPeer(clientPeer).has_value(), 5000);
    const std::uint32_t id = *log.connectionFromPeer(clientPeer);
    QTRY_COMPARE_WITH_TIMEOUT(log.count(id, EventKind::ConnectionClosed), 1, 5000);
    const std::vector<WireEvent> events = log.forConnection(id);
    const bool mentionsTarget = std::any_of(events.begin(), events.end(), [&](const WireEvent &e) {
        return e.kind != EventKind::ConnectionOpened && e.reason.find(target.toString()) != std::string::npos;
    });
    QVERIFY2(mentionsTarget, EventLog::describe(events));
    QTRY_COMPARE_WITH_TIMEOUT(relay.openConnections(), 0, 5000);
    relay.stop();
}

// A reset is not a close: a peer that resets must reach the other side as a reset (ECONNRESET), not as a
// clean EOF, in both directions, after the bytes sent before it.
void TestRelay::resetIsPassedOnBothWays()
{
    const int listener = listenLoopback();
    QVERIFY(listener >= 0);
    EventLog log;
    Relay relay;
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(listener)}, log.sink(), &error),
             error.c_str());
    const linger abort{1, 0};
    // What the next recv on fd gives once it is readable: the bytes, "EOF" or the error's name.
    auto next = [](int fd) -> std::string {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 5000) != 1) return "nothing within 5 s";
        char buf[64];
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) return std::string(buf, size_t(n));
        return n == 0 ? "EOF" : (errno == ECONNRESET ? "ECONNRESET" : std::strerror(errno));
    };
    auto accepted = [&]() -> int {
        pollfd p{listener, POLLIN, 0};
        return poll(&p, 1, 5000) == 1 ? accept(listener, nullptr, nullptr) : -1;
    };

    // The server resets: the client gets what was sent before it, then the reset.
    int client = connectLoopback(relay.listenAddress().port);
    QVERIFY(client >= 0);
    int server = accepted();
    QVERIFY(server >= 0);
    QVERIFY(sendAll(server, "hi", 2));
    QCOMPARE(next(client), std::string("hi"));
    QVERIFY(setsockopt(server, SOL_SOCKET, SO_LINGER, &abort, sizeof abort) == 0);
    close(server);
    QCOMPARE(next(client), std::string("ECONNRESET"));
    close(client);

    // The client resets: the server gets the reset.
    client = connectLoopback(relay.listenAddress().port);
    QVERIFY(client >= 0);
    server = accepted();
    QVERIFY(server >= 0);
    QVERIFY(sendAll(client, "ho", 2));
    QCOMPARE(next(server), std::string("ho"));
    QVERIFY(setsockopt(client, SOL_SOCKET, SO_LINGER, &abort, sizeof abort) == 0);
    close(client);
    QCOMPARE(next(server), std::string("ECONNRESET"));
    close(server);

    // A clean close stays a clean close.
    client = connectLoopback(relay.listenAddress().port);
    QVERIFY(client >= 0);
    server = accepted();
    QVERIFY(server >= 0);
    close(server);
    QCOMPARE(next(client), std::string("EOF"));
    close(client);

    // Each reset is recorded as such on its connection (the decoder thread hands the closes over after the
    // relay has let go of the connections).
    QTRY_COMPARE_WITH_TIMEOUT(relay.openConnections(), 0, 5000);
    std::vector<std::string> reasons;
    auto closes = [&] {
        reasons.clear();
        for (const WireEvent &e : log.all())
            if (e.kind == EventKind::ConnectionClosed) reasons.push_back(e.reason);
        return reasons.size();
    };
    QTRY_COMPARE_WITH_TIMEOUT(closes(), size_t(3), 5000);
    QVERIFY2(reasons[0].find("server reset the connection") != std::string::npos, reasons[0].c_str());
    QVERIFY2(reasons[1].find("client reset the connection") != std::string::npos, reasons[1].c_str());
    QVERIFY2(reasons[2].find("closed by server") != std::string::npos, reasons[2].c_str());
    relay.stop();
    close(listener);
}

// The reset test above, repeated: a reset must reach the other side as a reset every time, whatever the
// relay was doing when it came (connecting, forwarding, idle), not most of the time.
void TestRelay::serverResetReachesClientEveryTime()
{
    std::string failures;
    std::map<std::string, int> ends;
    const int failed = resetRounds(true, 1000, &failures, &ends);
    for (const auto &[end, n] : ends)
        qInfo("client read %s %d times", end.c_str(), n);
    QVERIFY2(failed == 0, (std::to_string(failed) + " of 1000 rounds failed:\n" + failures).c_str());
}

void TestRelay::clientResetReachesServerEveryTime()
{
    std::string failures;
    std::map<std::string, int> ends;
    const int failed = resetRounds(false, 1000, &failures, &ends);
    for (const auto &[end, n] : ends)
        qInfo("server read %s %d times", end.c_str(), n);
    QVERIFY2(failed == 0, (std::to_string(failed) + " of 1000 rounds failed:\n" + failures).c_str());
}

// When the decoder falls behind (here: its sink is held until everything has been relayed), the round that
// catches up goes out in bounded batches, not as one batch of every event in the backlog.
void TestRelay::aDecoderBehindSendsBoundedBatches()
{
    CollectingServer server;
    QVERIFY(server.start());
    // A client preface, an empty SETTINGS, then 200,000 PINGs of 17 bytes: 3.4 MB, an event each.
    constexpr int kPings = 200'000;
    std::string wire =
        std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\x04\0\0\0\0\0", 9);
    for (int i = 0; i < kPings; ++i) {
        const char ping[17] = {0, 0, 8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, char(i & 0x7f)};
        wire.append(ping, sizeof ping);
    }
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::vector<size_t> batchSizes;
    size_t pings = 0;
    Relay relay;
    std::string error;
    const Relay::Sink sink = [&](EventBatch &&b) {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return release; }); // the model is behind until everything has been relayed
        batchSizes.push_back(b.size());
        // A flood of PINGs is mostly runs (ControlFrameRate): each counts the PINGs it stands for.
        for (const WireEvent &e : b)
            if (e.kind == EventKind::Frame && e.frameType == FramePing)
                pings += e.frameRun() ? e.frameRun()->count : 1;
    };
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", server.port()}, sink, &error), error.c_str());
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    QVERIFY(sendAll(fd, wire.data(), wire.size()));
    QVERIFY(waitUntil([&] { return server.size() == wire.size(); }, 30s));
    {
        std::lock_guard lk(mu);
        release = true;
    }
    cv.notify_all();
    close(fd);
    QVERIFY(waitUntil([&] { return relay.openConnections() == 0; }, 30s));
    relay.stop();
    std::lock_guard lk(mu);
    QCOMPARE(pings, size_t(kPings));
    // Batches of 4096 events, plus what one relayed read adds past that: a spliced read is up to a 1 MiB
    // pipe, 61,680 PINGs. Without the bound the catching-up round was one batch of nearly all 200,000.
    const size_t largest = *std::max_element(batchSizes.begin(), batchSizes.end());
    QVERIFY2(largest <= 4096 + 61'700, qPrintable(QStringLiteral("largest batch: %1 events").arg(largest)));
}

// A capture's budget limits what waits for a decoder that is behind (DecoderLimits::maxDecoderHeldBytes):
// past it the relay stops decoding the connection, says so on it, and relays every byte unchanged.
void TestRelay::aSmallDecoderBudgetCapsTheBacklog()
{
    CollectingServer server;
    QVERIFY(server.start());
    // A client preface, an empty SETTINGS, then 1,000,000 PINGs of 17 bytes: 17 MB.
    constexpr int kPings = 1'000'000;
    std::string wire =
        std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\x04\0\0\0\0\0", 9);
    for (int i = 0; i < kPings; ++i) {
        const char ping[17] = {0, 0, 8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, char(i & 0x7f)};
        wire.append(ping, sizeof ping);
    }
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::vector<WireEvent> errors;
    Relay relay;
    DecoderLimits limits;
    limits.maxDecoderHeldBytes = 256 * 1024;
    relay.setDecoderLimits(limits);
    std::string error;
    const Relay::Sink sink = [&](EventBatch &&b) {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return release; }); // the model is behind until everything has been relayed
        for (WireEvent &e : b)
            if (e.kind == EventKind::DecodeError) errors.push_back(std::move(e));
    };
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", server.port()}, sink, &error), error.c_str());
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    QVERIFY(sendAll(fd, wire.data(), wire.size()));
    QVERIFY(waitUntil([&] { return server.size() == wire.size(); }, 30s));
    const size_t peak = relay.peakDecoderBacklog();
    {
        std::lock_guard lk(mu);
        release = true;
    }
    cv.notify_all();
    close(fd);
    QVERIFY(waitUntil([&] { return relay.openConnections() == 0; }, 30s));
    relay.stop();
    QVERIFY(server.data() == wire);
    // The limit, plus the one read that crossed it (a spliced read is up to a 1 MiB pipe). With the default
    // limit the whole 17 MB waited for the decoder.
    QVERIFY2(peak <= limits.maxDecoderHeldBytes + (1u << 20) + (256u << 10),
             qPrintable(QStringLiteral("peak decoder backlog: %1 bytes").arg(peak)));
    std::lock_guard lk(mu);
    QVERIFY2(std::any_of(errors.begin(), errors.end(),
                         [](const WireEvent &e) {
                             return e.reason.find("decoder fell behind (over 256 KiB") != std::string::npos &&
                                    e.reason.find("relaying continues without decoding") != std::string::npos;
                         }),
             qPrintable(QStringLiteral("%1 decode errors").arg(errors.size())));
}

// Each thread of this process named `name`: field `index` of /proc/self/task/TID/stat (1-based, as proc(5)
// numbers them; 19 is the nice value, 41 the scheduling policy).
static std::vector<int> statOfThreads(const char *name, int index)
{
    std::vector<int> values;
    QDir tasks(QStringLiteral("/proc/self/task"));
    for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile comm(tasks.filePath(tid + QStringLiteral("/comm")));
        if (!comm.open(QIODevice::ReadOnly) || comm.readAll().trimmed() != name) continue;
        QFile stat(tasks.filePath(tid + QStringLiteral("/stat")));
        if (!stat.open(QIODevice::ReadOnly)) continue;
        const QByteArray line = stat.readAll();
        // The command may hold spaces: the fields after it start past its closing parenthesis (field 3).
        const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
        if (fields.size() > index - 3) values.push_back(fields[index - 3].toInt());
    }
    return values;
}

static std::vector<int> niceOfThreads(const char *name)
{
    return statOfThreads(name, 19);
}

static std::vector<int> policyOfThreads(const char *name)
{
    return statOfThreads(name, 41);
}

void TestRelay::theDecoderRunsBelowTheRelaysPriority()
{
    EventLog log;
    Relay relay;
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", 9}, log.sink(), &error), error.c_str());
    std::vector<int> relayNice, decoderNice;
    // The decoder lowers its own priority as its thread starts.
    QTRY_VERIFY_WITH_TIMEOUT(
        (relayNice = niceOfThreads("rpcscope-relay"), decoderNice = niceOfThreads("rpcscope-decode"),
         relayNice.size() == 1 && decoderNice.size() == 1 && decoderNice[0] != relayNice[0]),
        5000);
    QCOMPARE(decoderNice[0], std::min(19, relayNice[0] + 10));
    // And, where the process may undo it (this suite runs as root), takes the idle policy: the relay keeps
    // the normal one.
    if (geteuid() == 0) QVERIFY(captureUsesIdlePolicy());
    if (captureUsesIdlePolicy()) {
        QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_IDLE}, 5000);
        QCOMPARE(policyOfThreads("rpcscope-relay"), std::vector<int>{SCHED_OTHER});
    }
    relay.stop();
    QCOMPARE(relay.bytesRelayed(), std::uint64_t(0));
}

// A decoder that cannot keep up (here its sink waits) makes the capture behind: every lowered thread, the
// decoder's and any other (the CLI's model thread), goes back to the normal policy so that a busy machine
// cannot starve them, and returns to idle once the backlog is decoded.
void TestRelay::aCaptureBehindLeavesTheIdlePolicy()
{
    if (!captureUsesIdlePolicy()) QSKIP("this process may not leave the idle policy once in it");
    std::mutex m;
    std::condition_variable cv;
    bool release = false;
    std::atomic<int> batches{0};
    auto sink = [&](EventBatch &&) {
        ++batches;
        std::unique_lock lk(m);
        cv.wait(lk, [&] { return release; });
    };
    SinkSourceServer server(std::string(), 5);
    Relay relay; // stopped after the sink lets go (below), whatever fails
    // Another lowered thread, as the CLI's model thread is.
    std::atomic<bool> otherDone{false};
    std::thread other([&] {
        pthread_setname_np(pthread_self(), "rpcscope-other");
        lowerThisThreadsPriority();
        while (!otherDone)
            std::this_thread::sleep_for(5ms);
        forgetThisThread();
    });
    auto releaseSink = qScopeGuard([&] {
        {
            std::lock_guard lk(m);
            release = true;
        }
        cv.notify_all();
        otherDone = true;
        if (other.joinable()) other.join();
    });
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-other"), std::vector<int>{SCHED_IDLE}, 5000);

    QVERIFY(server.start());
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", server.port()}, sink, &error), error.c_str());
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    setIoTimeouts(fd, 15);
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_IDLE}, 5000);
    // The connection's opening is a batch; the sink holds the decoder in it while 4 MiB more come.
    QTRY_VERIFY_WITH_TIMEOUT(batches.load() >= 1, 5000);
    QVERIFY(!relay.decoderBehind());
    QVERIFY(sendInRandomChunks(fd, randomBytes(4u << 20, 99), 7, 64 * 1024));
    QTRY_VERIFY_WITH_TIMEOUT(relay.decoderBehind(), 5000);
    // The relay thread changes the policies right after it counts the capture behind.
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_OTHER}, 5000);
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-other"), std::vector<int>{SCHED_OTHER}, 5000);
    // Their nice values stay below the relay's.
    QCOMPARE(niceOfThreads("rpcscope-decode"), niceOfThreads("rpcscope-other"));
    QVERIFY(niceOfThreads("rpcscope-decode") != niceOfThreads("rpcscope-relay"));

    {
        std::lock_guard lk(m);
        release = true;
    }
    cv.notify_all();
    QTRY_VERIFY_WITH_TIMEOUT(!relay.decoderBehind(), 10000);
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_IDLE}, 5000);
    QCOMPARE(policyOfThreads("rpcscope-other"), std::vector<int>{SCHED_IDLE});
    close(fd);
    relay.stop();
}

// A process that is ending (a stop signal's handler calls this) takes every lowered thread off the idle
// policy, and a thread lowered afterwards does not take it. Lowered threads leave stop signals to threads
// that run now.
void TestRelay::stoppingEndsTheIdlePolicyForGood()
{
    if (!captureUsesIdlePolicy()) QSKIP("this process does not use the idle policy");
    EventLog log;
    Relay relay;
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", 9}, log.sink(), &error), error.c_str());
    QTRY_COMPARE_WITH_TIMEOUT(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_IDLE}, 5000);
    // Signal masks, from /proc/self/task/TID/status: the decoder blocks SIGINT, the relay does not.
    auto blocksSigint = [](const char *name) {
        QDir tasks(QStringLiteral("/proc/self/task"));
        for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            QFile comm(tasks.filePath(tid + QStringLiteral("/comm")));
            if (!comm.open(QIODevice::ReadOnly) || comm.readAll().trimmed() != name) continue;
            QFile status(tasks.filePath(tid + QStringLiteral("/status")));
            if (!status.open(QIODevice::ReadOnly)) return -1;
            for (const QByteArray &line : status.readAll().split('\n'))
                if (line.startsWith("SigBlk:"))
                    return int((line.mid(7).trimmed().toULongLong(nullptr, 16) >> (SIGINT - 1)) & 1);
        }
        return -1;
    };
    QCOMPARE(blocksSigint("rpcscope-decode"), 1);
    // A thread starting blocks every signal until its creator's mask is restored: the relay's may be there.
    QTRY_COMPARE_WITH_TIMEOUT(blocksSigint("rpcscope-relay"), 0, 5000);

    stopUsingIdlePolicy();
    QCOMPARE(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_OTHER});
    relay.stop();
    Relay again;
    QVERIFY2(again.start({"127.0.0.1", 0}, {"127.0.0.1", 9}, log.sink(), &error), error.c_str());
    // Lowered (its nice value differs from the relay's), and still on the normal policy.
    QTRY_VERIFY_WITH_TIMEOUT(niceOfThreads("rpcscope-decode") != niceOfThreads("rpcscope-relay"), 5000);
    QCOMPARE(policyOfThreads("rpcscope-decode"), std::vector<int>{SCHED_OTHER});
    again.stop();
}

QTEST_GUILESS_MAIN(TestRelay)

#include "tst_relay.moc"
