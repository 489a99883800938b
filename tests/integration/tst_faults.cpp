// Faults on the wire are recorded as events, and the relay goes on serving other connections.

#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "timelinemodel.h"

#include <QProcess>
#include <QtTest>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

// Events from a relay, collected on its decoder thread.
struct Recorder
{
    mutable std::mutex mu;
    EventBatch events;
    Relay::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            events.insert(events.end(), b.begin(), b.end());
        };
    }
    template <typename Pred> bool any(Pred pred) const
    {
        std::lock_guard lk(mu);
        return std::any_of(events.begin(), events.end(), pred);
    }
    EventBatch copy() const
    {
        std::lock_guard lk(mu);
        return events;
    }
};

struct RelayTo
{
    Recorder recorder;
    Relay relay;
    explicit RelayTo(std::uint16_t port)
    {
        std::string error;
        ok = relay.start({"127.0.0.1", 0}, {"127.0.0.1", port}, recorder.sink(), &error);
    }
    std::string address() const { return relay.listenAddress().toString(); }
    bool ok = false;
};

lab::CallRequest request(const std::string &id, int delayMs = 0)
{
    lab::CallRequest r;
    r.set_call_id(id);
    r.set_delay_ms(delayMs);
    return r;
}

bool isClose(const WireEvent &e)
{
    return e.kind == EventKind::ConnectionClosed;
}
} // namespace

class TestFaults : public QObject
{
    Q_OBJECT

    lab::LabServer m_healthy;
    std::unique_ptr<RelayTo> m_main;

    // The relay that saw a fault still serves a fresh connection.
    void healthyCallThrough(const std::string &address, const std::string &id)
    {
        lab::LabClient client(address, {});
        const auto r = client.call(request(id), std::chrono::seconds(5));
        QCOMPARE(r.code, 0);
    }

private slots:
    void initTestCase()
    {
        std::string error;
        QVERIFY2(m_healthy.start(&error), error.c_str());
        m_main = std::make_unique<RelayTo>(std::uint16_t(m_healthy.port()));
        QVERIFY(m_main->ok);
    }

    void clientCancels()
    {
        // The client gives up at its 200 ms deadline while the server still works: C-core resets the stream.
        lab::LabClient client(m_main->address(), {});
        // Connected first, so the 200 ms are the call's own and not spent on a busy machine's connection
        // set-up (a deadline that passes before the stream is opened sends no RST_STREAM at all).
        QCOMPARE(client.call(request("cancel-warm"), std::chrono::seconds(5)).code, 0);
        const auto r = client.call(request("cancel-1", 2000), std::chrono::milliseconds(200));
        QCOMPARE(r.code, 4); // DEADLINE_EXCEEDED
        auto rst = [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameRstStream &&
                   e.dir == Direction::ClientToServer && e.errorCode == 8; // CANCEL
        };
        QTRY_VERIFY_WITH_TIMEOUT(m_main->recorder.any(rst), 5000);

        TimelineModel model;
        model.appendBatch(m_main->recorder.copy());
        const auto &calls = model.store().calls();
        auto it = std::find_if(calls.begin(), calls.end(), [](const Call &c) { return c.key == "cancel-1"; });
        QVERIFY(it != calls.end());
        const Attempt &a = it->attempts.back();
        QVERIFY(a.ended());
        // The server's copy of the deadline races the client's RST: whichever reaches the wire first ends the
        // attempt (the RST itself is asserted above as a recorded frame).
        QVERIFY2(a.rstErrorCode.value_or(0) == 8 || a.status.value_or(-1) == 4,
                 qPrintable(QStringLiteral("rst %1 status %2")
                                .arg(a.rstErrorCode.value_or(0))
                                .arg(a.status.value_or(-1))));
        // It lasted the budget the attempt carried on the wire (its grpc-timeout, taken when the headers were
        // sent, so a client slow to send them does not shorten it), to within 10 ms.
        QVERIFY(a.timeoutNs);
        QVERIFY2(*a.endNs - a.startNs >= *a.timeoutNs - 10 * ms,
                 qPrintable(QStringLiteral("lasted %1 ms of a %2 ms grpc-timeout")
                                .arg(double(*a.endNs - a.startNs) / ms)
                                .arg(double(*a.timeoutNs) / ms)));
        healthyCallThrough(m_main->address(), "after-cancel");
    }

    void serverGoaway()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        RelayTo hop{std::uint16_t(server.port())};
        QVERIFY(hop.ok);
        lab::LabClient client(hop.address(), {});
        QCOMPARE(client.call(request("before-goaway"), std::chrono::seconds(5)).code, 0);
        server.stop(); // graceful shutdown: GOAWAY, then the connection closes
        auto goaway = [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameGoaway &&
                   e.dir == Direction::ServerToClient;
        };
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(goaway), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(isClose), 5000);
        for (const WireEvent &e : hop.recorder.copy())
            if (goaway(e)) QVERIFY(e.lastStreamId >= 1);
        healthyCallThrough(m_main->address(), "after-goaway");
    }

    void peerReset()
    {
        // A "server" that accepts, reads the first bytes and answers with a TCP reset.
        const int lfd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        QCOMPARE(listen(lfd, 4), 0);
        socklen_t len = sizeof a;
        getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len);
        std::thread resetter([lfd] {
            const int fd = accept(lfd, nullptr, nullptr);
            if (fd < 0) return;
            char buf[256];
            (void)recv(fd, buf, sizeof buf, 0);
            linger l{1, 0}; // close with RST instead of FIN
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            close(fd);
        });
        RelayTo hop(ntohs(a.sin_port));
        QVERIFY(hop.ok);
        {
            lab::LabClient client(hop.address(), {});
            QCOMPARE(client.call(request("reset-1"), std::chrono::seconds(5)).code, 14); // UNAVAILABLE
        }
        resetter.join();
        close(lfd);
        auto resetClose = [](const WireEvent &e) {
            return isClose(e) && QString::fromStdString(e.reason).contains("server reset the connection");
        };
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(resetClose), 5000);
        healthyCallThrough(m_main->address(), "after-reset");
    }

    void serverKilledMidCall()
    {
        QProcess server;
        server.start(QStringLiteral(RPCSCOPE_TEST_LABSERVER));
        QVERIFY(server.waitForStarted());
        QByteArray line;
        QTRY_VERIFY_WITH_TIMEOUT((line += server.readAllStandardOutput()).contains('\n'), 10000);
        const int port = line.trimmed().split(' ').value(1).toInt();
        QVERIFY2(port > 0, line.constData());

        RelayTo hop{std::uint16_t(port)};
        QVERIFY(hop.ok);
        lab::CallResult result;
        std::thread caller([&] {
            lab::LabClient client(hop.address(), {});
            result = client.call(request("killed-1", 5000), std::chrono::seconds(10));
        });
        auto requestSeen = [](const WireEvent &e) {
            return e.kind == EventKind::Headers && e.dir == Direction::ClientToServer &&
                   e.grpc.callId == "killed-1";
        };
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(requestSeen), 5000);
        server.kill(); // SIGKILL: no GOAWAY, no trailers; the kernel closes its sockets
        QVERIFY(server.waitForFinished(5000));
        caller.join();
        QCOMPARE(result.code, 14); // UNAVAILABLE
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(isClose), 5000);

        TimelineModel model;
        model.appendBatch(hop.recorder.copy());
        const Call &call = model.store().calls().at(0);
        QCOMPARE(call.key, std::string("killed-1"));
        QVERIFY(call.attempts.back().ended()); // ended by the connection's close
        QVERIFY(!call.attempts.back().status); // with no status: the server never answered
        const Connection &conn = model.store().connections().at(0);
        QVERIFY2(QString::fromStdString(conn.closeReason).contains("server"), conn.closeReason.c_str());
        healthyCallThrough(m_main->address(), "after-kill");
    }

    void targetRefuses()
    {
        int port = 0;
        {
            const int fd = socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
            socklen_t len = sizeof a;
            getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
            port = ntohs(a.sin_port);
            close(fd); // nothing listens there now
        }
        RelayTo hop{std::uint16_t(port)};
        QVERIFY(hop.ok);
        {
            lab::LabClient client(hop.address(), {});
            QCOMPARE(client.call(request("refused-1"), std::chrono::seconds(2)).code, 14);
        }
        auto refused = [](const WireEvent &e) {
            return isClose(e) && QString::fromStdString(e.reason).contains("could not connect to target");
        };
        QTRY_VERIFY_WITH_TIMEOUT(hop.recorder.any(refused), 5000);
        healthyCallThrough(m_main->address(), "after-refused");
    }

    void cleanupTestCase()
    {
        m_main.reset();
        m_healthy.stop();
    }
};

QTEST_GUILESS_MAIN(TestFaults)
#include "tst_faults.moc"
