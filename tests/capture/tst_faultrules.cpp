// Fault rules: the parser refuses every malformed rule with one line saying why, and the relay's connection
// actions do to a real grpc++ client what the same failure on the network would (a blackhole times its calls
// out, a reset fails them UNAVAILABLE), each noted on its connection. A rule that matches nothing leaves the
// relay byte-exact.

#include "events.h"
#include "faultrule.h"
#include "faultset.h"
#include "faultsfile.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "testnet.h"

#include <QCryptographicHash>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace rpcscope;
using namespace std::chrono_literals;
using namespace testnet;

namespace {

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
    std::vector<std::string> notices() const
    {
        std::lock_guard lk(m_mu);
        std::vector<std::string> out;
        for (const WireEvent &e : m_events)
            if (e.kind == EventKind::Notice) out.push_back(e.reason);
        return out;
    }
    std::vector<std::string> closeReasons() const
    {
        std::lock_guard lk(m_mu);
        std::vector<std::string> out;
        for (const WireEvent &e : m_events)
            if (e.kind == EventKind::ConnectionClosed) out.push_back(e.reason);
        return out;
    }
    bool hasNotice(const std::string &text) const
    {
        const std::vector<std::string> n = notices();
        return std::find(n.begin(), n.end(), text) != n.end();
    }

private:
    mutable std::mutex m_mu;
    std::vector<WireEvent> m_events;
};

std::shared_ptr<FaultSet> rules(const std::vector<std::string> &texts)
{
    std::vector<FaultRule> parsed;
    for (const std::string &t : texts) {
        FaultRule r;
        std::string error;
        if (!parseFaultRule(t, &r, &error)) qFatal("rule '%s' refused: %s", t.c_str(), error.c_str());
        parsed.push_back(std::move(r));
    }
    return std::make_shared<FaultSet>(std::move(parsed));
}

std::string refusal(const std::string &text)
{
    FaultRule r;
    std::string error;
    if (parseFaultRule(text, &r, &error)) return "(accepted)";
    return error;
}

std::string randomData(size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (char &c : s)
        c = char(rng());
    return s;
}

QByteArray sha(const std::string &s)
{
    return QCryptographicHash::hash(QByteArrayView(s.data(), qsizetype(s.size())), QCryptographicHash::Sha256)
        .toHex();
}

// Sends `data` then half-closes, while reading everything the peer sends until its EOF.
std::string sendAndReceive(int fd, const std::string &data)
{
    std::thread writer([&] {
        sendAll(fd, data.data(), data.size());
        shutdown(fd, SHUT_WR);
    });
    std::string got;
    std::vector<char> buf(65537);
    for (;;) {
        const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
        if (n > 0)
            got.append(buf.data(), size_t(n));
        else if (!(n < 0 && errno == EINTR))
            break;
    }
    writer.join();
    return got;
}

const std::string kNoRetries;

bool waitUntil(const std::function<bool()> &cond, std::chrono::milliseconds timeout)
{
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

std::string loopback(std::uint16_t port)
{
    return "127.0.0.1:" + std::to_string(port);
}

lab::CallRequest request(const std::string &id, int delayMs = 0, int responseSize = 10)
{
    lab::CallRequest r;
    r.set_call_id(id);
    r.set_delay_ms(delayMs);
    r.set_payload("hello");
    r.set_response_size(responseSize);
    return r;
}

} // namespace

class TestFaultRules : public QObject
{
    Q_OBJECT

private slots:
    void parsesEveryAction();
    void refusesMalformedRules_data();
    void refusesMalformedRules();
    void globs();
    void jsonForm();
    void jsonRefusals_data();
    void jsonRefusals();

    void nothingMatchingStaysByteExact();
    void throttledConnectionStaysByteExact();
    void blackholeTimesTheCallOut();
    void closeFailsTheCallUnavailable();
    void tcpResetFailsTheCallUnavailable();
    void nthConnectionOnly();
    void percentChoosesAboutThatShare();
    void bandwidthSlowsTheResponse();
    void slowCloseHoldsTheClose();
};

void TestFaultRules::parsesEveryAction()
{
    FaultRule r;
    std::string error;
    QVERIFY2(parseFaultRule("abort status=UNAVAILABLE message='try later, please' pushback=250 when=after "
                            "method=/shop.Cart/* attempt=1-2 nth=3 percent=30 window=5s-20s hop=A->B",
                            &r, &error),
             error.c_str());
    QCOMPARE(r.action, FaultAction::Abort);
    QCOMPARE(r.status, 14);
    QCOMPARE(QString::fromStdString(r.message), QStringLiteral("try later, please"));
    QCOMPARE(r.pushbackMs.value_or(-2), 250);
    QVERIFY(!r.beforeServer);
    QCOMPARE(QString::fromStdString(r.method), QStringLiteral("/shop.Cart/*"));
    QVERIFY(r.attempt && r.attempt->from == 1 && r.attempt->to == 2);
    QVERIFY(r.nth && r.nth->from == 3 && r.nth->to == 3);
    QCOMPARE(r.percent, 30.0);
    QCOMPARE(r.windowFromNs, std::int64_t(5'000'000'000));
    QCOMPARE(r.windowToNs.value_or(0), std::int64_t(20'000'000'000));
    QCOMPARE(QString::fromStdString(r.hop), QStringLiteral("A->B"));
    QVERIFY(r.inWindow(6'000'000'000) && !r.inWindow(4'000'000'000) && !r.inWindow(20'000'000'000));
    // The rule's own text, as notes and the hit report quote it, reads back to the same rule.
    FaultRule again;
    QVERIFY2(parseFaultRule(r.text, &again, &error), (r.text + ": " + error).c_str());
    QCOMPARE(again.text, r.text);
    QCOMPARE(again.message, r.message);

    QVERIFY(parseFaultRule("abort,status=4,pushback=stop", &r, &error));
    QCOMPARE(r.status, 4);
    QCOMPARE(r.pushbackMs.value_or(0), -1);
    QVERIFY(parseFaultRule("delay by=1.5s jitter=100ms on=response", &r, &error));
    QCOMPARE(r.byNs, std::int64_t(1'500'000'000));
    QCOMPARE(r.jitterNs, std::int64_t(100'000'000));
    QVERIFY(r.delayResponse);
    QVERIFY(parseFaultRule("reset code=refused_stream", &r, &error));
    QCOMPARE(r.rstCode, 7u);
    QVERIFY(parseFaultRule("goaway last-stream=above", &r, &error));
    QVERIFY(!r.goawayBelow);
    QVERIFY(parseFaultRule("blackhole after=500 nth=2-", &r, &error));
    QCOMPARE(r.action, FaultAction::Blackhole);
    QCOMPARE(r.afterNs, std::int64_t(500'000'000));
    QVERIFY(r.nth->contains(2) && r.nth->contains(1000) && !r.nth->contains(1));
    QVERIFY(parseFaultRule("close window=-10s", &r, &error));
    QCOMPARE(r.windowToNs.value_or(0), std::int64_t(10'000'000'000));
    QVERIFY(parseFaultRule("tcp-reset percent=0.5", &r, &error));
    QCOMPARE(r.action, FaultAction::TcpReset);
    QVERIFY(parseFaultRule("bandwidth rate=1.5k dir=down", &r, &error));
    QCOMPARE(r.bytesPerSecond, std::uint64_t(1536));
    QVERIFY(!r.limitUp && r.limitDown);
    QVERIFY(parseFaultRule("slow-close by=2s", &r, &error));
    QCOMPARE(r.action, FaultAction::SlowClose);
    QVERIFY(isConnectionAction(FaultAction::SlowClose) && !isConnectionAction(FaultAction::Goaway));
}

void TestFaultRules::refusesMalformedRules_data()
{
    QTest::addColumn<QString>("rule");
    QTest::addColumn<QString>("says");
    QTest::newRow("empty") << ""
                           << "the rule is empty";
    QTest::newRow("unknown action") << "explode nth=1"
                                    << "unknown action 'explode'";
    QTest::newRow("no action first") << "nth=1 close"
                                     << "starts with its action";
    QTest::newRow("two actions") << "close blackhole"
                                 << "give 'blackhole' a rule of its own";
    QTest::newRow("bare word") << "close soon"
                               << "'soon' is no KEY=VALUE";
    QTest::newRow("unknown key") << "close colour=red"
                                 << "unknown key 'colour'";
    QTest::newRow("key for another action") << "close status=14"
                                            << "key 'status' does not apply to close";
    QTest::newRow("method on a connection") << "blackhole method=/a/b"
                                            << "matches connections, not calls";
    QTest::newRow("twice") << "close nth=1 nth=2"
                           << "key 'nth' is given twice";
    QTest::newRow("glob unclosed [") << "abort method=/a/[bc"
                                     << "has a [ without its ]";
    QTest::newRow("glob lone ]") << "abort method=/a/b]"
                                 << "has a ] without its [";
    QTest::newRow("glob lone \\") << "abort method=/a/b\\"
                                  << "ends in a lone \\";
    QTest::newRow("glob not a path") << "abort method=shop.Cart"
                                     << "starts with /";
    QTest::newRow("glob empty") << "abort method="
                                << "the method glob is empty";
    QTest::newRow("status 17") << "abort status=17"
                               << "status 17 is out of range";
    QTest::newRow("status 0") << "abort status=0"
                              << "status 0 is out of range";
    QTest::newRow("status OK") << "abort status=OK"
                               << "status OK is no failure";
    QTest::newRow("status name") << "abort status=BROKEN"
                                 << "unknown status 'BROKEN'";
    QTest::newRow("status negative") << "abort status=-1"
                                     << "unknown status '-1'";
    QTest::newRow("pushback") << "abort pushback=soon"
                              << "pushback=soon: expected milliseconds";
    QTest::newRow("when") << "abort when=during"
                          << "when=during: expected before or after";
    QTest::newRow("delay without by") << "delay jitter=5ms"
                                      << "delay needs by=DURATION";
    QTest::newRow("duration") << "delay by=fast"
                              << "by=fast: expected a duration";
    QTest::newRow("negative duration") << "delay by=-5ms"
                                       << "by=-5ms: expected a duration";
    QTest::newRow("too long") << "delay by=2000m"
                              << "expected a duration up to a day";
    QTest::newRow("on") << "delay by=1s on=both"
                        << "on=both: expected request or response";
    QTest::newRow("rst code") << "reset code=OOPS"
                              << "code=OOPS: expected an HTTP/2 error code";
    QTest::newRow("goaway") << "goaway last-stream=7"
                            << "last-stream=7: expected below or above";
    QTest::newRow("bandwidth without rate") << "bandwidth dir=up"
                                            << "bandwidth needs rate=";
    QTest::newRow("rate 0") << "bandwidth rate=0"
                            << "rate=0: expected bytes a second";
    QTest::newRow("dir") << "bandwidth rate=1k dir=sideways"
                         << "dir=sideways: expected up, down or both";
    QTest::newRow("slow-close without by") << "slow-close"
                                           << "slow-close needs by=DURATION";
    QTest::newRow("nth 0") << "close nth=0"
                           << "nth=0: expected a count from 1";
    QTest::newRow("nth backwards") << "close nth=5-2"
                                   << "nth=5-2: expected a count from 1";
    QTest::newRow("attempt") << "abort attempt=x"
                             << "attempt=x: expected a count from 1";
    QTest::newRow("percent over") << "close percent=101"
                                  << "percent=101: expected a percentage";
    QTest::newRow("percent negative") << "close percent=-3"
                                      << "percent=-3: expected a percentage";
    QTest::newRow("window backwards") << "close window=10s-5s"
                                      << "the window ends before it starts";
    QTest::newRow("window shape") << "close window=5s"
                                  << "expected FROM-TO";
    QTest::newRow("quote") << "abort message='oops"
                           << "a ' is not closed";
    QTest::newRow("no key") << "close =3"
                            << "a setting has no key";
    QTest::newRow("empty hop") << "close hop="
                               << "hop=: expected a hop's label";
}

void TestFaultRules::refusesMalformedRules()
{
    QFETCH(QString, rule);
    QFETCH(QString, says);
    const std::string error = refusal(rule.toStdString());
    QVERIFY2(QString::fromStdString(error).contains(says), error.c_str());
    QVERIFY2(error.find('\n') == std::string::npos, "a refusal is one line");
}

void TestFaultRules::globs()
{
    QVERIFY(faultGlobMatch("/shop.Cart/*", "/shop.Cart/Add"));
    QVERIFY(!faultGlobMatch("/shop.Cart/*", "/shop.Carts/Add"));
    QVERIFY(faultGlobMatch("*", "/a/b"));
    QVERIFY(faultGlobMatch("/a/?et", "/a/Get"));
    QVERIFY(!faultGlobMatch("/a/?et", "/a/Gets"));
    QVERIFY(faultGlobMatch("/a/[GS]et", "/a/Set"));
    QVERIFY(!faultGlobMatch("/a/[!GS]et", "/a/Set"));
    QVERIFY(faultGlobMatch("/a/[a-z]et", "/a/get"));
    QVERIFY(faultGlobMatch("/a/\\*", "/a/*"));
    QVERIFY(!faultGlobMatch("/a/\\*", "/a/x"));
    QVERIFY(faultGlobMatch("*/Get*", "/pkg.S/GetThing"));
    QVERIFY(!faultGlobMatch("*/Get", "/pkg.S/GetThing"));
    // Many stars against a long miss: one backtrack point keeps it linear.
    QVERIFY(!faultGlobMatch("*a*a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

void TestFaultRules::jsonForm()
{
    std::vector<FaultRule> parsed;
    std::string error;
    const QByteArray json = R"({"faults": [{"action": "blackhole", "nth": 2, "after": "500ms"}, )"
                            R"({"action": "abort", "status": "UNAVAILABLE", "method": "/shop.Cart/*", )"
                            R"("percent": 30.5}]})";
    QVERIFY2(parseFaultsJson(json, &parsed, &error), error.c_str());
    QCOMPARE(int(parsed.size()), 2);
    QCOMPARE(parsed[0].action, FaultAction::Blackhole);
    QCOMPARE(parsed[0].afterNs, std::int64_t(500'000'000));
    QVERIFY(parsed[0].nth && parsed[0].nth->from == 2);
    QCOMPARE(parsed[1].percent, 30.5);
    QVERIFY(parseFaultsJson(R"([{"action": "close"}])", &parsed, &error));
    QCOMPARE(int(parsed.size()), 1);
}

void TestFaultRules::jsonRefusals_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("says");
    QTest::newRow("not json") << "{faults"
                              << "not JSON";
    QTest::newRow("top key") << R"({"rules": []})"
                             << "unknown key 'rules'";
    QTest::newRow("not an array") << R"({"faults": 3})"
                                  << "expected an array of rules";
    QTest::newRow("not an object") << R"(["close"])"
                                   << "rule 1: expected an object";
    QTest::newRow("bool value") << R"([{"action": "close", "nth": true}])"
                                << "rule 1: the value of 'nth'";
    QTest::newRow("no action") << R"([{"nth": 1}])"
                               << "rule 1: the rule has no action";
    QTest::newRow("bad second rule") << R"([{"action": "close"}, {"action": "abort", "status": 99}])"
                                     << "rule 2: status 99 is out of range";
    QTest::newRow("unknown key") << R"([{"action": "close", "speed": 1}])"
                                 << "rule 1: unknown key 'speed'";
}

void TestFaultRules::jsonRefusals()
{
    QFETCH(QString, json);
    QFETCH(QString, says);
    std::vector<FaultRule> parsed;
    std::string error;
    QVERIFY(!parseFaultsJson(json.toUtf8(), &parsed, &error));
    QVERIFY2(QString::fromStdString(error).contains(says), error.c_str());
}

// A raw TCP peer that sends `data`, half-closes, and keeps what it receives until the client's EOF.
class SendReceiveServer
{
public:
    explicit SendReceiveServer(std::string data) : m_data(std::move(data)) {}
    ~SendReceiveServer()
    {
        if (m_thread.joinable()) m_thread.join();
        if (m_listen >= 0) close(m_listen);
    }
    bool start()
    {
        m_listen = listenLoopback();
        if (m_listen < 0) return false;
        m_thread = std::thread([this] {
            const int fd = accept(m_listen, nullptr, nullptr);
            if (fd < 0) return;
            m_got = sendAndReceive(fd, m_data);
            close(fd);
            m_done = true;
        });
        return true;
    }
    std::uint16_t port() const { return localPort(m_listen); }
    bool done() const { return m_done; }
    const std::string &got() const { return m_got; }

private:
    std::string m_data;
    int m_listen = -1;
    std::string m_got;
    std::atomic<bool> m_done{false};
    std::thread m_thread;
};

void TestFaultRules::nothingMatchingStaysByteExact()
{
    const std::string up = randomData(6u << 20, 1), down = randomData(6u << 20, 2);
    SendReceiveServer server(down);
    QVERIFY(server.start());
    EventLog log;
    Relay relay;
    relay.setLabel("front");
    // Rules for another hop, for a later connection and a window long past: none chooses this connection.
    auto faults =
        rules({"tcp-reset hop=back", "blackhole nth=2", "close window=0-1ms", "bandwidth rate=1 percent=0"});
    relay.setFaults(faults);
    std::string error;
    QTest::qWait(5); // the window of rule 3 is over before the connection comes
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", server.port()}, log.sink(), &error), error.c_str());
    QTest::qWait(5);
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    const std::string got = sendAndReceive(fd, up);
    close(fd);
    QVERIFY(waitUntil([&] { return server.done(); }, 15s));
    QCOMPARE(got.size(), down.size());
    QCOMPARE(sha(got), sha(down));
    QCOMPARE(server.got().size(), up.size());
    QCOMPARE(sha(server.got()), sha(up));
    // Large reads still went the zero-copy way.
    QVERIFY(relay.bytesSpliced() > 0);
    relay.stop();
    const std::vector<std::string> notices = log.notices();
    QVERIFY2(notices.empty(), notices.empty() ? "" : notices.front().c_str());
    for (size_t i = 0; i < faults->size(); ++i)
        QCOMPARE(faults->hits(i), std::uint64_t(0));
}

void TestFaultRules::throttledConnectionStaysByteExact()
{
    // A faulted connection is relayed by copy in measured reads: still every byte, in order.
    const std::string up = randomData(3u << 20, 3), down = randomData(3u << 20, 4);
    SendReceiveServer server(down);
    QVERIFY(server.start());
    EventLog log;
    Relay relay;
    auto faults = rules({"bandwidth rate=1000m"});
    relay.setFaults(faults);
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", server.port()}, log.sink(), &error), error.c_str());
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    const std::string got = sendAndReceive(fd, up);
    close(fd);
    QVERIFY(waitUntil([&] { return server.done(); }, 15s));
    QCOMPARE(sha(got), sha(down));
    QCOMPARE(sha(server.got()), sha(up));
    relay.stop();
    QCOMPARE(faults->hits(0), std::uint64_t(1));
    QVERIFY(log.hasNotice("fault: bandwidth (rule 1)"));
}

void TestFaultRules::blackholeTimesTheCallOut()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    EventLog log;
    Relay relay;
    // Rule 2: the call below is on the wire (the server has it) when its connection falls into the hole.
    auto faults = rules({"close hop=elsewhere", "blackhole after=500ms"});
    relay.setFaults(faults);
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, log.sink(), &error),
             error.c_str());
    lab::LabClient client(loopback(relay.listenAddress().port), kNoRetries);
    const lab::CallResult result = client.call(request("hole-1", 1200), 3000ms);
    QCOMPARE(result.code, 4); // DEADLINE_EXCEEDED: the server's answer never came back
    QCOMPARE(int(server.arrivalsFor("hole-1").size()), 1);
    QVERIFY(result.endNs - result.startNs >= 2'900'000'000);
    QTRY_VERIFY_WITH_TIMEOUT(log.hasNotice("fault: blackhole (rule 2)"), 5000);
    QCOMPARE(faults->hits(0), std::uint64_t(0));
    QCOMPARE(faults->hits(1), std::uint64_t(1));
    relay.stop();
}

void TestFaultRules::closeFailsTheCallUnavailable()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    EventLog log;
    Relay relay;
    auto faults = rules({"close after=500ms"});
    relay.setFaults(faults);
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, log.sink(), &error),
             error.c_str());
    lab::LabClient client(loopback(relay.listenAddress().port), kNoRetries);
    const lab::CallResult result = client.call(request("close-1", 3000), 10000ms);
    QCOMPARE(result.code, 14); // UNAVAILABLE, long before the server would have answered
    QVERIFY(result.endNs - result.startNs < 2'500'000'000);
    QCOMPARE(int(server.arrivalsFor("close-1").size()), 1);
    QTRY_VERIFY_WITH_TIMEOUT(log.hasNotice("fault: close (rule 1)"), 5000);
    QTRY_VERIFY_WITH_TIMEOUT(!log.closeReasons().empty(), 5000);
    QCOMPARE(QString::fromStdString(log.closeReasons().front()), QStringLiteral("fault: close (rule 1)"));
    QCOMPARE(faults->hits(0), std::uint64_t(1));
    relay.stop();
}

void TestFaultRules::tcpResetFailsTheCallUnavailable()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    EventLog log;
    Relay relay;
    auto faults = rules({"tcp-reset after=500ms"});
    relay.setFaults(faults);
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, log.sink(), &error),
             error.c_str());
    lab::LabClient client(loopback(relay.listenAddress().port), kNoRetries);
    const lab::CallResult result = client.call(request("reset-1", 3000), 10000ms);
    QCOMPARE(result.code, 14);
    QVERIFY(result.endNs - result.startNs < 2'500'000'000);
    QCOMPARE(int(server.arrivalsFor("reset-1").size()), 1);
    QTRY_VERIFY_WITH_TIMEOUT(log.hasNotice("fault: tcp-reset (rule 1)"), 5000);
    QCOMPARE(faults->hits(0), std::uint64_t(1));
    relay.stop();
}

void TestFaultRules::nthConnectionOnly()
{
    // Raw connections: the 2nd is reset at once, the 1st and 3rd are relayed.
    EventLog log;
    Relay relay;
    const int target = listenLoopback();
    QVERIFY(target >= 0);
    auto faults = rules({"tcp-reset nth=2"});
    relay.setFaults(faults);
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(target)}, log.sink(), &error),
             error.c_str());
    std::vector<std::string> got;
    for (int i = 0; i < 3; ++i) {
        const int fd = connectLoopback(relay.listenAddress().port);
        QVERIFY(fd >= 0);
        const int peer = accept(target, nullptr, nullptr); // the relay connects to the target in every case
        QVERIFY(peer >= 0);
        std::thread serve([peer, i] {
            const std::string reply = "reply " + std::to_string(i + 1);
            sendAll(peer, reply.data(), reply.size());
            shutdown(peer, SHUT_WR);
            char buf[64];
            while (recv(peer, buf, sizeof buf, 0) > 0) {
            }
            close(peer);
        });
        got.push_back(sendAndReceive(fd, "hi"));
        close(fd);
        serve.join();
    }
    close(target);
    QCOMPARE(QString::fromStdString(got[0]), QStringLiteral("reply 1"));
    QCOMPARE(QString::fromStdString(got[1]), QString());
    QCOMPARE(QString::fromStdString(got[2]), QStringLiteral("reply 3"));
    QCOMPARE(faults->hits(0), std::uint64_t(1));
    relay.stop();
    QCOMPARE(int(log.notices().size()), 1);
}

void TestFaultRules::percentChoosesAboutThatShare()
{
    // A target that answers every connection "ok" once the client has sent its EOF.
    const int target = listenLoopback();
    QVERIFY(target >= 0);
    std::atomic<bool> stopping{false};
    std::thread serve([&] {
        while (!stopping) {
            pollfd p{target, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            const int fd = accept(target, nullptr, nullptr);
            if (fd < 0) continue;
            char buf[64];
            while (recv(fd, buf, sizeof buf, 0) > 0) {
            }
            sendAll(fd, "ok", 2);
            close(fd);
        }
    });
    EventLog log;
    Relay relay;
    auto faults = rules({"close percent=30"});
    relay.setFaults(faults);
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(target)}, log.sink(), &error),
             error.c_str());
    // A chosen connection is closed before anything is read from it: the client gets no answer.
    constexpr int kConnections = 200;
    int closed = 0, answered = 0;
    for (int i = 0; i < kConnections; ++i) {
        const int fd = connectLoopback(relay.listenAddress().port);
        QVERIFY(fd >= 0);
        const std::string got = sendAndReceive(fd, "x");
        close(fd);
        if (got.empty())
            ++closed;
        else if (got == "ok")
            ++answered;
    }
    stopping = true;
    serve.join();
    close(target);
    relay.stop();
    QCOMPARE(closed + answered, kConnections);
    QCOMPARE(faults->hits(0), std::uint64_t(closed));
    // Binomial(200, 0.3): 60 on average, sd 6.5; outside 30-90 is a broken percentage, not chance.
    QVERIFY2(closed >= 30 && closed <= 90, qPrintable(QString::number(closed)));
    QCOMPARE(int(log.notices().size()), closed);
}

void TestFaultRules::bandwidthSlowsTheResponse()
{
    lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    EventLog log;
    Relay relay;
    auto faults = rules({"bandwidth rate=100k dir=down"});
    relay.setFaults(faults);
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, log.sink(), &error),
             error.c_str());
    lab::LabClient client(loopback(relay.listenAddress().port), kNoRetries);
    constexpr int kSize = 200 * 1024;
    const lab::CallResult result = client.call(request("slow-1", 0, kSize), 20000ms);
    QCOMPARE(result.code, 0);
    // 200 KiB at 100 KiB/s, less the first bucket (5 KiB): at least about 1.9 s.
    const double seconds = double(result.endNs - result.startNs) / 1e9;
    QVERIFY2(seconds >= 1.8, qPrintable(QString::number(seconds)));
    QVERIFY2(seconds < 6, qPrintable(QString::number(seconds)));
    QVERIFY(log.hasNotice("fault: bandwidth (rule 1)"));
    relay.stop();
}

void TestFaultRules::slowCloseHoldsTheClose()
{
    const int target = listenLoopback();
    QVERIFY(target >= 0);
    EventLog log;
    Relay relay;
    auto faults = rules({"slow-close by=700ms"});
    relay.setFaults(faults);
    std::string error;
    QVERIFY2(relay.start({"127.0.0.1", 0}, {"127.0.0.1", localPort(target)}, log.sink(), &error),
             error.c_str());
    const int fd = connectLoopback(relay.listenAddress().port);
    QVERIFY(fd >= 0);
    const int peer = accept(target, nullptr, nullptr);
    QVERIFY(peer >= 0);
    sendAll(peer, "bye", 3);
    close(peer); // the server closes at once
    char buf[16];
    QCOMPARE(int(recv(fd, buf, sizeof buf, 0)), 3);
    const std::int64_t dataAt = steadyNowNs();
    QCOMPARE(int(recv(fd, buf, sizeof buf, 0)), 0); // its EOF comes, but late
    const double heldMs = double(steadyNowNs() - dataAt) / 1e6;
    QVERIFY2(heldMs >= 600, qPrintable(QString::number(heldMs)));
    close(fd);
    close(target);
    QCOMPARE(faults->hits(0), std::uint64_t(1));
    relay.stop();
    QVERIFY(log.hasNotice("fault: slow-close (rule 1)"));
}

QTEST_GUILESS_MAIN(TestFaultRules)
#include "tst_faultrules.moc"
