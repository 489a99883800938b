// The relay's stream fault rules against a real grpc++ client (with a retry policy) and a real server: what
// the client gets, what the server sees, and that neither peer ever sees a broken HTTP/2 connection.

#include "faultrule.h"
#include "faultset.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "timelinemodel.h"

#include <QtTest>
#include <chrono>
#include <mutex>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

std::string retryConfig(const char *initialBackoff = "0.01s", int maxAttempts = 3)
{
    return std::string(
               R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":)") +
           std::to_string(maxAttempts) + R"(,"initialBackoff":")" + initialBackoff +
           R"(","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";
}

lab::CallRequest request(const std::string &id)
{
    lab::CallRequest r;
    r.set_call_id(id);
    return r;
}

// A relay with fault rules, its events collected on its decoder thread.
struct FaultyProxy
{
    mutable std::mutex mu;
    EventBatch events;
    std::shared_ptr<FaultSet> faults;
    Relay relay;
    bool ok = false;
    std::string error;

    FaultyProxy(std::uint16_t port, const std::vector<std::string> &rules)
    {
        std::vector<FaultRule> parsed;
        for (const std::string &text : rules) {
            FaultRule r;
            if (!parseFaultRule(text, &r, &error)) return;
            parsed.push_back(std::move(r));
        }
        faults = std::make_shared<FaultSet>(std::move(parsed));
        relay.setFaults(faults);
        ok = relay.start(
            {"127.0.0.1", 0}, {"127.0.0.1", port},
            [this](EventBatch &&b) {
                std::lock_guard lk(mu);
                events.insert(events.end(), b.begin(), b.end());
            },
            &error);
    }
    std::string address() const { return relay.listenAddress().toString(); }
    EventBatch copy() const
    {
        std::lock_guard lk(mu);
        return events;
    }
    template <typename Pred> size_t count(Pred pred) const
    {
        std::lock_guard lk(mu);
        return size_t(std::count_if(events.begin(), events.end(), pred));
    }
};

bool isInjection(const WireEvent &e)
{
    return e.kind == EventKind::Notice && e.injection();
}

// An HTTP/2 error that says one side found the other broken: the thing stream faults must never cause.
bool brokenWire(const WireEvent &e, std::string *why)
{
    auto bad = [](std::uint32_t code) {
        return code == 1 || code == 3 || code == 9;
    }; // PROTOCOL, FLOW, COMPRESSION
    if (e.kind == EventKind::DecodeError) {
        *why = "decode error: " + e.reason;
        return true;
    }
    if (e.kind == EventKind::Notice && e.violation()) {
        *why = "violation: " + e.reason;
        return true;
    }
    if (e.kind == EventKind::Frame && (e.frameType == FrameRstStream || e.frameType == FrameGoaway) &&
        bad(e.errorCode)) {
        *why = std::string(e.frameType == FrameGoaway ? "GOAWAY " : "RST_STREAM ") +
               h2ErrorName(e.errorCode) +
               (e.dir == Direction::ClientToServer ? " from the client" : " to the client");
        return true;
    }
    if (e.kind == EventKind::ConnectionClosed && e.reason.find("fault rules:") != std::string::npos) {
        *why = e.reason;
        return true;
    }
    return false;
}

std::string firstBroken(const EventBatch &events)
{
    std::string why;
    for (const WireEvent &e : events)
        if (brokenWire(e, &why)) return why;
    return {};
}

const Call *findCall(const TimelineModel &model, const std::string &key)
{
    const auto &calls = model.store().calls();
    auto it = std::find_if(calls.begin(), calls.end(), [&](const Call &c) { return c.key == key; });
    return it == calls.end() ? nullptr : &*it;
}
} // namespace

class TestStreamFaults : public QObject
{
    Q_OBJECT

    lab::LabServer m_server;

private slots:
    void initTestCase()
    {
        std::string error;
        QVERIFY2(m_server.start(&error), error.c_str());
    }

    void abortBeforeTheServerIsRetried()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()),
                          {"abort status=UNAVAILABLE attempt=1 message='injected by rule 1'"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig());
        // A call without faults first, so the connection (and its HPACK tables) carry earlier blocks.
        const auto r = client.call(request("sf-abort-1"), std::chrono::seconds(10));
        QCOMPARE(r.code, 0);
        const auto r2 = client.call(request("sf-abort-2"), std::chrono::seconds(10));
        QCOMPARE(r2.code, 0);
        // The server never saw the first attempts: each call arrived once, as its second attempt.
        for (const char *id : {"sf-abort-1", "sf-abort-2"}) {
            const auto arrivals = m_server.arrivalsFor(id);
            QCOMPARE(arrivals.size(), size_t(1));
            QCOMPARE(arrivals[0].previousAttempts.value_or(0), 1);
        }
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(2));
        QTRY_COMPARE_WITH_TIMEOUT(proxy.count(isInjection), size_t(2), 5000);

        proxy.relay.stop();
        const EventBatch events = proxy.copy();
        QVERIFY2(firstBroken(events).empty(), firstBroken(events).c_str());
        // The decoder saw what the client saw: the injected Trailers-Only on the marked stream.
        for (const WireEvent &n : events) {
            if (!isInjection(n)) continue;
            QCOMPARE(n.injection()->rule, 1u);
            QVERIFY2(n.reason.find("abort UNAVAILABLE before the server (rule 1)") != std::string::npos,
                     n.reason.c_str());
            QCOMPARE(n.dir, Direction::ServerToClient);
            const bool answered = std::any_of(events.begin(), events.end(), [&](const WireEvent &e) {
                return e.kind == EventKind::Headers && e.dir == Direction::ServerToClient &&
                       e.stream == n.stream && e.endStream && e.grpc.status == 14 &&
                       e.grpc.message == "injected by rule 1";
            });
            QVERIFY(answered);
        }
        TimelineModel model;
        model.appendBatch(events);
        const Call *call = findCall(model, "sf-abort-2");
        QVERIFY(call);
        QCOMPARE(call->attempts.size(), size_t(2));
        QCOMPARE(call->attempts[0].status.value_or(-1), 14);
        QCOMPARE(call->attempts[1].status.value_or(-1), 0);
    }

    void abortEveryAttempt()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()),
                          {"abort status=UNAVAILABLE method=/rpcscope.lab.Lab/Call message='no luck'"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig());
        const auto r = client.call(request("sf-abort-all"), std::chrono::seconds(10));
        QCOMPARE(r.code, 14);
        QCOMPARE(r.message, std::string("no luck"));
        QCOMPARE(m_server.arrivalsFor("sf-abort-all").size(), size_t(0));
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(3)); // maxAttempts
        proxy.relay.stop();
        QVERIFY2(firstBroken(proxy.copy()).empty(), firstBroken(proxy.copy()).c_str());
    }

    void pushbackIsHonoured()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()),
                          {"abort status=UNAVAILABLE attempt=1 pushback=400"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig("0.01s"));
        QCOMPARE(client.call(request("sf-pushback"), std::chrono::seconds(10)).code, 0);
        const auto arrivals = m_server.arrivalsFor("sf-pushback");
        QCOMPARE(arrivals.size(), size_t(1));
        QTRY_COMPARE_WITH_TIMEOUT(proxy.count(isInjection), size_t(1), 5000);
        const EventBatch events = proxy.copy();
        const auto n = std::find_if(events.begin(), events.end(), isInjection);
        // The retry waited for the pushback, not for the 10 ms backoff.
        const std::int64_t gap = arrivals[0].tNs - n->tNs;
        QVERIFY2(gap >= 390 * ms, qPrintable(QString("retry after %1 ms").arg(gap / ms)));
    }

    void pushbackStopEndsTheCall()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"abort status=UNAVAILABLE pushback=stop"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig());
        QCOMPARE(client.call(request("sf-stop"), std::chrono::seconds(10)).code, 14);
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(1));
        QCOMPARE(m_server.arrivalsFor("sf-stop").size(), size_t(0));
    }
};

QTEST_GUILESS_MAIN(TestStreamFaults)
#include "tst_streamfaults.moc"
