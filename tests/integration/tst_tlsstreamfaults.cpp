// Stream fault rules on TLS-intercepted hops: a real grpc++ TLS server, a grpc++ client with a retry policy
// that trusts the rpcscope CA, and a hop that decrypts, frames the HTTP/2 and injects, as tst_streamfaults
// does on a plain hop. What the client gets, what the server sees, the attempts marked injected on the
// timeline, and no broken HTTP/2 on either side. The connection actions (close, tcp-reset, blackhole,
// bandwidth, slow-close) as tst_faultrules checks them on a plain hop. Two cases go through a CONNECT tunnel
// intercepted the same way.

#include "brokenwire.h"
#include "capturedevents.h"
#include "clock.h"
#include "connectproxy.h"
#include "faultrule.h"
#include "faultset.h"
#include "lab.grpc.pb.h"
#include "proxyenv.h"
#include "relay.h"
#include "rpcscopeca.h"
#include "timelinestore.h"
#include "tlstestclient.h"
#include "tlstestserver.h"

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <thread>

using namespace rpcscope;
using namespace tlstest;
using testev::firstBroken;

namespace {
constexpr std::int64_t ms = 1'000'000;

std::shared_ptr<FaultSet> rulesOf(const std::vector<std::string> &texts, std::string *error)
{
    std::vector<FaultRule> rules;
    for (const std::string &text : texts) {
        FaultRule r;
        if (!parseFaultRule(text, &r, error)) return nullptr;
        rules.push_back(std::move(r));
    }
    return std::make_shared<FaultSet>(std::move(rules));
}

const Call *findCall(const TimelineStore &store, const std::string &key)
{
    const auto &calls = store.calls();
    auto it = std::find_if(calls.begin(), calls.end(), [&](const Call &c) { return c.key == key; });
    return it == calls.end() ? nullptr : &*it;
}

size_t injections(CapturedEvents &cap)
{
    std::lock_guard lk(cap.mutex);
    return size_t(std::count_if(cap.events.begin(), cap.events.end(), [](const WireEvent &e) {
        return e.kind == EventKind::Notice && e.injection();
    }));
}

std::vector<const WireEvent *> eventsOf(const EventBatch &events, EventKind kind)
{
    std::vector<const WireEvent *> found;
    for (const WireEvent &e : events)
        if (e.kind == kind) found.push_back(&e);
    return found;
}

// A TLS-intercepting hop to the test's server with fault rules, its events kept.
struct FaultyTlsHop
{
    CapturedEvents cap;
    std::shared_ptr<FaultSet> faults;
    Relay relay;
    bool ok = false;
    std::string error;

    FaultyTlsHop(const TlsInterceptOptions &tls, std::uint16_t port, const std::vector<std::string> &rules)
    {
        faults = rulesOf(rules, &error);
        if (!faults) return;
        relay.setFaults(faults);
        relay.setTlsIntercept(tls);
        ok = relay.start({"127.0.0.1", 0}, {"localhost", port}, cap.sink(), &error);
    }
    std::uint16_t port() const { return relay.listenAddress().port; }
    // Stops the hop (every close reaches the events) and says what broke, if anything did.
    std::string stopAndCheck()
    {
        relay.stop();
        std::lock_guard lk(cap.mutex);
        return firstBroken(cap.events);
    }
};
} // namespace

class TstTlsStreamFaults : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    TlsServer m_server;
    std::string m_proxyCaPem;
    TlsInterceptOptions m_tls;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(m_server.start(m_dir.path().toStdString()));
        m_tls.enabled = true;
        m_tls.caDirectory = m_dir.filePath("rpcscope").toStdString();
        m_tls.targetCaFile = m_server.caFile;
        RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(m_tls.caDirectory, false, &error), error.c_str());
        m_proxyCaPem = ca.certPem();
        // The tunnel's client uses the default roots, as an unchanged client does: the rpcscope CA's.
        setenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", ca.certPath().c_str(), 1);
    }

    void abortBeforeTheServerIsRetried()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port),
                         {"abort status=UNAVAILABLE attempt=1 message='injected by rule 1'"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, true);
        // Two calls on one connection: the second's header blocks follow a faulted stream's.
        for (const char *id : {"tsf-abort-1", "tsf-abort-2"}) {
            const grpc::Status s = labCall(channel, id);
            QVERIFY2(s.ok(), s.error_message().c_str());
            // The server never saw the first attempt: the call arrived once, as its second attempt.
            const auto arrivals = m_server.service.arrivalsFor(id);
            QCOMPARE(arrivals.size(), size_t(1));
            QCOMPARE(arrivals[0].previousAttempts, 1);
        }
        QCOMPARE(hop.faults->hits(0), std::uint64_t(2));
        QTRY_COMPARE_WITH_TIMEOUT(injections(hop.cap), size_t(2), 5000);
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());

        // The timeline shows each call as the client saw it: the injected UNAVAILABLE, marked, then the
        // retry.
        const TimelineStore store = hop.cap.store();
        for (const char *id : {"tsf-abort-1", "tsf-abort-2"}) {
            const Call *c = findCall(store, id);
            QVERIFY2(c, id);
            QCOMPARE(c->attempts.size(), size_t(2));
            QCOMPARE(c->attempts[0].status.value_or(-1), 14);
            QVERIFY(c->attempts[0].injected());
            QCOMPARE(c->attempts[0].faultRule, 1u);
            QCOMPARE(c->attempts[1].status.value_or(-1), 0);
            QVERIFY(!c->attempts[1].injected());
        }
        QCOMPARE(store.connections().size(), size_t(1));
        QVERIFY2(store.connections().front().decodeError.empty(),
                 store.connections().front().decodeError.c_str());
        QVERIFY2(hop.cap.notes().find("fault: abort UNAVAILABLE before the server (rule 1)") !=
                     std::string::npos,
                 hop.cap.notes().c_str());
    }

    void abortAfterTheServerAnswered()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port),
                         {"abort status=UNAVAILABLE when=after attempt=1"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, true);
        const grpc::Status s = labCall(channel, "tsf-after");
        QVERIFY2(s.ok(), s.error_message().c_str());
        // The server answered both attempts (its side effect happened); the client saw the first fail.
        const auto arrivals = m_server.service.arrivalsFor("tsf-after");
        QCOMPARE(arrivals.size(), size_t(2));
        QCOMPARE(arrivals[1].previousAttempts, 1);
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        const TimelineStore store = hop.cap.store();
        const Call *c = findCall(store, "tsf-after");
        QVERIFY(c);
        QCOMPARE(c->attempts.size(), size_t(2));
        QVERIFY(c->attempts[0].injected());
        QCOMPARE(c->attempts[0].status.value_or(-1), 14);
    }

    void resetRefusedIsRetried()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"reset code=REFUSED_STREAM nth=1"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, true);
        const grpc::Status s = labCall(channel, "tsf-refused");
        QVERIFY2(s.ok(), s.error_message().c_str());
        QCOMPARE(m_server.service.arrivalsFor("tsf-refused").size(), size_t(1));
        QCOMPARE(hop.faults->hits(0), std::uint64_t(1));
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        const TimelineStore store = hop.cap.store();
        const Call *c = findCall(store, "tsf-refused");
        QVERIFY(c);
        QCOMPARE(c->attempts.size(), size_t(2));
        QVERIFY(c->attempts[0].injected());
    }

    void resetCancelFailsTheCall()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"reset code=CANCEL nth=1"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, true);
        QCOMPARE(labCall(channel, "tsf-cancel").error_code(), grpc::StatusCode::CANCELLED);
        QCOMPARE(m_server.service.arrivalsFor("tsf-cancel").size(), size_t(0));
        // The connection is still sound for the next call.
        const grpc::Status s = labCall(channel, "tsf-cancel-after");
        QVERIFY2(s.ok(), s.error_message().c_str());
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        std::lock_guard lk(hop.cap.mutex);
        QVERIFY(std::any_of(hop.cap.events.begin(), hop.cap.events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameRstStream &&
                   e.dir == Direction::ServerToClient && e.errorCode == 8;
        }));
    }

    void goawayBelowIsRetriedOnANewConnection()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"goaway last-stream=below nth=2"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        for (const char *id : {"tsf-goaway-1", "tsf-goaway-2", "tsf-goaway-3"}) {
            const grpc::Status s = labCall(channel, id);
            QVERIFY2(s.ok(), s.error_message().c_str());
            QCOMPARE(m_server.service.arrivalsFor(id).size(), size_t(1));
        }
        QCOMPARE(hop.faults->hits(0), std::uint64_t(1));
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        std::lock_guard lk(hop.cap.mutex);
        const EventBatch &events = hop.cap.events;
        const auto opened = std::count_if(events.begin(), events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::ConnectionOpened;
        });
        QCOMPARE(opened, 2); // the second call went on a new connection, with a TLS handshake of its own
        QVERIFY(std::any_of(events.begin(), events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameGoaway &&
                   e.dir == Direction::ServerToClient && e.lastStreamId == 1;
        }));
    }

    void delayHoldsOnlyItsStream()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"delay by=600ms nth=2"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        // Warm: the connection is up, so the held call and the other share it.
        QVERIFY(labCall(channel, "tsf-delay-warm").ok());
        const std::int64_t t0 = steadyNowNs();
        auto held = std::async(std::launch::async, [&] { return labCall(channel, "tsf-delay-held").ok(); });
        QTRY_VERIFY_WITH_TIMEOUT(hop.faults->hits(0) == 1, 5000);
        // Another stream on the same connection goes through at once.
        QVERIFY(labCall(channel, "tsf-delay-other").ok());
        const std::int64_t other = steadyNowNs() - t0;
        QVERIFY(held.get());
        const auto arrivals = m_server.service.arrivalsFor("tsf-delay-held");
        QCOMPARE(arrivals.size(), size_t(1));
        QVERIFY2(arrivals[0].tNs - t0 >= 590 * ms,
                 qPrintable(QString("held request arrived after %1 ms").arg((arrivals[0].tNs - t0) / ms)));
        QVERIFY2(other < 500 * ms, qPrintable(QString("the other call took %1 ms").arg(other / ms)));
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        QCOMPARE(hop.cap.store().connections().size(), size_t(1));
    }

    void delayTheResponse()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"delay by=400ms on=response"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        QVERIFY(labCall(channel, "tsf-delay-resp").ok());
        const std::int64_t done = steadyNowNs();
        const auto arrivals = m_server.service.arrivalsFor("tsf-delay-resp");
        QCOMPARE(arrivals.size(), size_t(1));
        QVERIFY2(done - arrivals[0].tNs >= 390 * ms,
                 qPrintable(QString("answered %1 ms after arrival").arg((done - arrivals[0].tNs) / ms)));
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
    }

    // Many calls, some with requests of several TLS records and flow-control windows, about a third of the
    // attempts injected: neither side ever finds the other's HTTP/2 broken, and the client sees only the
    // statuses the rules give (or success).
    void manyCallsStayValid()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port),
                         {"abort status=UNAVAILABLE percent=12",
                          "abort status=UNAVAILABLE when=after percent=12",
                          "reset code=REFUSED_STREAM percent=12"});
        QVERIFY2(hop.ok, hop.error.c_str());
        constexpr int kThreads = 4, kCalls = 60;
        const char config[] = R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],
            "retryPolicy":{"maxAttempts":5,"initialBackoff":"0.001s","maxBackoff":"0.01s","backoffMultiplier":2,
            "retryableStatusCodes":["UNAVAILABLE"]}}]})";
        std::atomic<int> badStatus{0};
        std::mutex whyMutex;
        std::string why;
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                auto channel = tlsChannel(hop.port(), m_proxyCaPem, true, config);
                for (int i = 0; i < kCalls; ++i) {
                    const std::string id = "tsf-many-" + std::to_string(t) + "-" + std::to_string(i);
                    const grpc::Status s = labCall(channel, id, i % 3 == 0 ? 200 * 1024 : 0);
                    if (s.ok() || s.error_code() == grpc::StatusCode::UNAVAILABLE) continue;
                    ++badStatus;
                    std::lock_guard lk(whyMutex);
                    why = id + ": " + std::to_string(s.error_code()) + " " + s.error_message();
                }
            });
        for (auto &t : threads)
            t.join();
        QVERIFY2(badStatus == 0, why.c_str());
        std::uint64_t hits = 0;
        for (size_t i = 0; i < 3; ++i) {
            QVERIFY(hop.faults->hits(i) > 0);
            hits += hop.faults->hits(i);
        }
        QTRY_COMPARE_WITH_TIMEOUT(injections(hop.cap), size_t(hits), 5000);
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        const TimelineStore store = hop.cap.store();
        for (const Connection &c : store.connections())
            QVERIFY2(c.decodeError.empty(), c.decodeError.c_str());
    }

    // Connection actions act on both TCP connections of an intercepted hop, as on a plain one. A close or a
    // reset while a call is in flight fails its attempt UNAVAILABLE, marked injected by the close; the retry
    // goes on a new connection, which the rule (nth=1) leaves alone.
    void closeAndResetFailTheAttempt_data()
    {
        QTest::addColumn<QString>("rule");
        QTest::addColumn<QString>("what");
        QTest::newRow("close") << "close after=300ms nth=1"
                               << "fault: close (rule 1)";
        QTest::newRow("tcp-reset") << "tcp-reset after=300ms nth=1"
                                   << "fault: tcp-reset (rule 1)";
    }
    void closeAndResetFailTheAttempt()
    {
        QFETCH(QString, rule);
        QFETCH(QString, what);
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {rule.toStdString()});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, true);
        const std::string id = "tsf-conn-" + what.section(' ', 1, 1).toStdString();
        // The server takes 600 ms: the rule strikes 300 ms after the connection opened, while it works.
        const grpc::Status s = labCall(channel, id, 0, 600);
        QVERIFY2(s.ok(), s.error_message().c_str());
        const auto arrivals = m_server.service.arrivalsFor(id);
        QCOMPARE(arrivals.size(), size_t(2));
        QCOMPARE(arrivals[1].previousAttempts, 1);
        QCOMPARE(hop.faults->hits(0), std::uint64_t(1));
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        QVERIFY2(hop.cap.notes().find(what.toStdString()) != std::string::npos, hop.cap.notes().c_str());
        {
            std::lock_guard lk(hop.cap.mutex);
            QCOMPARE(eventsOf(hop.cap.events, EventKind::ConnectionOpened).size(), size_t(2));
            const auto closes = eventsOf(hop.cap.events, EventKind::ConnectionClosed);
            QVERIFY(!closes.empty());
            QCOMPARE(QString::fromStdString(closes.front()->reason), what);
        }
        const TimelineStore store = hop.cap.store();
        const Call *c = findCall(store, id);
        QVERIFY(c);
        QCOMPARE(c->attempts.size(), size_t(2));
        QCOMPARE(c->attempts[0].faultRule, 1u);
        QVERIFY(c->attempts[0].connection != c->attempts[1].connection);
        QCOMPARE(c->attempts[1].status.value_or(-1), 0);
        QVERIFY(!c->attempts[1].injected());
    }

    // blackhole: once the hole opens nothing more reaches either side, and the connection stays open, so a
    // call with a deadline ends DEADLINE_EXCEEDED without the server ever seeing it; the timeline still has
    // it.
    void blackholeTimesTheCallOut()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"blackhole after=300ms"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        QVERIFY(labCall(channel, "tsf-hole-warm").ok());
        QTRY_COMPARE_WITH_TIMEOUT(hop.faults->hits(0), std::uint64_t(1), 5000);
        const std::int64_t t0 = steadyNowNs();
        const grpc::Status s = labCall(channel, "tsf-hole", 0, 0, std::chrono::milliseconds(800));
        QCOMPARE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
        QVERIFY(steadyNowNs() - t0 >= 790 * ms);
        QCOMPARE(m_server.service.arrivalsFor("tsf-hole").size(), size_t(0));
        QVERIFY2(hop.cap.notes().find("fault: blackhole (rule 1)") != std::string::npos,
                 hop.cap.notes().c_str());
        {
            // Still open: the client was never told.
            std::lock_guard lk(hop.cap.mutex);
            QCOMPARE(eventsOf(hop.cap.events, EventKind::ConnectionClosed).size(), size_t(0));
        }
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
        const TimelineStore store = hop.cap.store();
        QVERIFY(findCall(store, "tsf-hole"));
        QCOMPARE(store.connections().size(), size_t(1));
    }

    // bandwidth counts decrypted bytes: a 1 MiB request at 2 MiB/s takes about half a second, less the first
    // bucket (a 20th of the rate), and not much more.
    void bandwidthLimitsTheRequest()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"bandwidth rate=2m dir=up"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        QVERIFY(labCall(channel, "tsf-bw-warm").ok()); // the handshakes are not part of the measure
        const std::int64_t t0 = steadyNowNs();
        const grpc::Status s = labCall(channel, "tsf-bw", 1 << 20);
        const double seconds = double(steadyNowNs() - t0) / 1e9;
        QVERIFY2(s.ok(), s.error_message().c_str());
        QVERIFY2(seconds >= 0.45, qPrintable(QString::number(seconds)));
        QVERIFY2(seconds < 1.5, qPrintable(QString::number(seconds)));
        QCOMPARE(hop.faults->hits(0), std::uint64_t(1));
        QVERIFY2(hop.cap.notes().find("fault: bandwidth (rule 1)") != std::string::npos,
                 hop.cap.notes().c_str());
        channel.reset();
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
    }

    // slow-close: the client's close reaches the server only after `by`, and the server's close the client
    // after `by` again; the connection ends late.
    void slowCloseDelaysTheClose()
    {
        FaultyTlsHop hop(m_tls, std::uint16_t(m_server.port), {"slow-close by=400ms"});
        QVERIFY2(hop.ok, hop.error.c_str());
        auto channel = tlsChannel(hop.port(), m_proxyCaPem, false);
        QVERIFY(labCall(channel, "tsf-slowclose").ok());
        const std::int64_t t0 = steadyNowNs();
        channel.reset(); // the client closes its connection
        std::int64_t closedAt = 0;
        auto closed = [&] {
            std::lock_guard lk(hop.cap.mutex);
            const auto closes = eventsOf(hop.cap.events, EventKind::ConnectionClosed);
            if (!closes.empty()) closedAt = closes.front()->tNs;
            return closedAt != 0;
        };
        QTRY_VERIFY_WITH_TIMEOUT(closed(), 5000);
        QVERIFY2(closedAt - t0 >= 390 * ms,
                 qPrintable(QString("closed after %1 ms").arg((closedAt - t0) / ms)));
        QCOMPARE(hop.faults->hits(0), std::uint64_t(1));
        QVERIFY2(hop.cap.notes().find("fault: slow-close (rule 1)") != std::string::npos,
                 hop.cap.notes().c_str());
        const std::string broken = hop.stopAndCheck();
        QVERIFY2(broken.empty(), broken.c_str());
    }

    // TLS inside a CONNECT tunnel: the rule names the tunnel's hop (its target's authority). A stream action,
    // and a connection action that resets the tunnel's connections while the server works on the call.
    void faultThroughAConnectTunnel_data()
    {
        QTest::addColumn<QString>("rule");
        QTest::addColumn<int>("delayMs");
        QTest::addColumn<int>("arrivals");
        QTest::newRow("abort") << "abort status=UNAVAILABLE attempt=1" << 0 << 1;
        QTest::newRow("tcp-reset") << "tcp-reset after=300ms nth=1" << 600 << 2;
    }
    void faultThroughAConnectTunnel()
    {
        QFETCH(QString, rule);
        QFETCH(int, delayMs);
        QFETCH(int, arrivals);
        const std::string id = "tsf-tunnel-" + rule.section(' ', 0, 0).toStdString();
        const std::string target = "localhost:" + std::to_string(m_server.port);
        std::string error;
        auto faults = rulesOf({rule.toStdString() + " hop=" + target}, &error);
        QVERIFY2(faults, error.c_str());
        CapturedEvents cap;
        ConnectProxy proxy;
        proxy.setFaults(faults);
        proxy.setTlsIntercept(m_tls);
        QVERIFY2(proxy.start({"127.0.0.1", 0}, cap.sink(), &error), error.c_str());
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            // A client as its own code has it: only grpc_proxy and the roots file send it through rpcscope.
            auto channel = unchangedClient(target);
            const grpc::Status s = labCall(channel, id, 0, delayMs);
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        proxy.stop();
        const auto arrived = m_server.service.arrivalsFor(id);
        QCOMPARE(arrived.size(), size_t(arrivals));
        QCOMPARE(arrived.back().previousAttempts, 1);
        QCOMPARE(faults->hits(0), std::uint64_t(1));
        {
            std::lock_guard lk(cap.mutex);
            QVERIFY2(firstBroken(cap.events).empty(), firstBroken(cap.events).c_str());
        }
        const TimelineStore store = cap.store();
        const Call *c = findCall(store, id);
        QVERIFY(c);
        QCOMPARE(c->attempts.size(), size_t(2));
        QVERIFY(c->attempts[0].injected());
        QCOMPARE(c->attempts[1].status.value_or(-1), 0);
        QVERIFY2(cap.notes().find("TLS intercepted") != std::string::npos, cap.notes().c_str());
    }
};

QTEST_GUILESS_MAIN(TstTlsStreamFaults)
#include "tst_tlsstreamfaults.moc"
