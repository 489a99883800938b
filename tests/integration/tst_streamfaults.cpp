// The relay's stream fault rules against a real grpc++ client (with a retry policy) and a real server: what
// the client gets, what the server sees, and that neither peer ever sees a broken HTTP/2 connection.

#include "brokenwire.h"
#include "clock.h"
#include "faultrule.h"
#include "faultset.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "timelinemodel.h"

#include <QtTest>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

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

bool isInjection(const WireEvent &e)
{
    return e.kind == EventKind::Notice && e.injection();
}

using testev::brokenWire;
using testev::firstBroken;

// A relay with fault rules, its events collected on its decoder thread.
struct FaultyProxy
{
    mutable std::mutex mu;
    EventBatch events;
    std::shared_ptr<FaultSet> faults;
    Relay relay;
    bool ok = false;
    std::string error;

    // Counted as events come (every run); kept only when `keep` (the invariant run keeps none).
    std::atomic<std::uint64_t> broken{0}, injections{0}, requests{0};
    std::string firstBroken; // under mu

    FaultyProxy(std::uint16_t port, const std::vector<std::string> &rules, bool keep = true)
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
            [this, keep](EventBatch &&b) {
                std::lock_guard lk(mu);
                for (const WireEvent &e : b) {
                    std::string why;
                    if (brokenWire(e, &why) && broken++ == 0) firstBroken = why;
                    if (e.kind == EventKind::Notice && e.injection()) ++injections;
                    if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer &&
                        !e.grpc.path.empty())
                        ++requests;
                }
                if (keep) events.insert(events.end(), b.begin(), b.end());
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

    void resetCancelFailsTheCall()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"reset code=CANCEL nth=1"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig());
        QCOMPARE(client.call(request("sf-reset-cancel"), std::chrono::seconds(10)).code, 1); // CANCELLED
        QCOMPARE(m_server.arrivalsFor("sf-reset-cancel").size(), size_t(0));
        // The connection is still sound for the next call.
        QCOMPARE(client.call(request("sf-reset-after"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(1));
        proxy.relay.stop();
        QVERIFY2(firstBroken(proxy.copy()).empty(), firstBroken(proxy.copy()).c_str());
        QCOMPARE(proxy.count([](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameRstStream &&
                   e.dir == Direction::ServerToClient && e.errorCode == 8;
        }),
                 size_t(1));
    }

    void resetRefusedIsRetried()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"reset code=REFUSED_STREAM nth=1"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        // C-core fails a refused stream UNAVAILABLE, which its retry policy retries.
        lab::LabClient client(proxy.address(), retryConfig());
        QCOMPARE(client.call(request("sf-refused"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(m_server.arrivalsFor("sf-refused").size(), size_t(1));
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(1));
        proxy.relay.stop();
        QVERIFY2(firstBroken(proxy.copy()).empty(), firstBroken(proxy.copy()).c_str());
    }

    void goawayBelowIsRetriedOnANewConnection()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"goaway last-stream=below nth=2"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), {});
        QCOMPARE(client.call(request("sf-goaway-1"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(client.call(request("sf-goaway-2"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(client.call(request("sf-goaway-3"), std::chrono::seconds(10)).code, 0);
        for (const char *id : {"sf-goaway-1", "sf-goaway-2", "sf-goaway-3"})
            QCOMPARE(m_server.arrivalsFor(id).size(), size_t(1));
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(1));
        proxy.relay.stop();
        const EventBatch events = proxy.copy();
        QVERIFY2(firstBroken(events).empty(), firstBroken(events).c_str());
        const auto opened = std::count_if(events.begin(), events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::ConnectionOpened;
        });
        QCOMPARE(opened, 2); // the second call went on a new connection
        QVERIFY(std::any_of(events.begin(), events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameGoaway &&
                   e.dir == Direction::ServerToClient && e.lastStreamId == 1;
        }));
    }

    void goawayAboveLetsTheStreamFinish()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"goaway last-stream=above nth=1"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), {});
        QCOMPARE(client.call(request("sf-goaway-above-1"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(client.call(request("sf-goaway-above-2"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(m_server.arrivalsFor("sf-goaway-above-1").size(), size_t(1));
        QCOMPARE(m_server.arrivalsFor("sf-goaway-above-2").size(), size_t(1));
        proxy.relay.stop();
        const EventBatch events = proxy.copy();
        QVERIFY2(firstBroken(events).empty(), firstBroken(events).c_str());
        QVERIFY(std::any_of(events.begin(), events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameGoaway &&
                   e.dir == Direction::ServerToClient && e.lastStreamId == 1;
        }));
    }

    void abortAfterTheServerAnswered()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"abort status=UNAVAILABLE when=after attempt=1"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), retryConfig());
        QCOMPARE(client.call(request("sf-after-1"), std::chrono::seconds(10)).code, 0);
        QCOMPARE(client.call(request("sf-after-2"), std::chrono::seconds(10)).code, 0);
        // The server answered the first attempt too (its side effect happened); the client never saw that.
        const auto arrivals = m_server.arrivalsFor("sf-after-2");
        QCOMPARE(arrivals.size(), size_t(2));
        QCOMPARE(arrivals[1].previousAttempts.value_or(0), 1);
        QCOMPARE(proxy.faults->hits(0), std::uint64_t(2));
        proxy.relay.stop();
        const EventBatch events = proxy.copy();
        QVERIFY2(firstBroken(events).empty(), firstBroken(events).c_str());
        TimelineModel model;
        model.appendBatch(events);
        const Call *call = findCall(model, "sf-after-2");
        QVERIFY(call);
        QCOMPARE(call->attempts.size(), size_t(2));
        QCOMPARE(call->attempts[0].status.value_or(-1), 14);
        QCOMPARE(call->attempts[1].status.value_or(-1), 0);
    }

    void delayHoldsOnlyItsStream()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"delay by=600ms method=/rpcscope.lab.Lab/Call"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), {});
        // Warm: the connection is up, so the held call and the other share it.
        QCOMPARE(client.call(request("sf-delay-warm"), std::chrono::seconds(10), {}, true).code, 0);
        const std::int64_t t0 = steadyNowNs();
        auto held = std::async(std::launch::async, [&] {
            return client.call(request("sf-delay-held"), std::chrono::seconds(10)).code;
        });
        QTRY_VERIFY_WITH_TIMEOUT(proxy.faults->hits(0) == 1, 5000);
        // Another stream on the same connection goes through at once.
        QCOMPARE(client.call(request("sf-delay-other"), std::chrono::seconds(10), {}, true).code, 0);
        const std::int64_t other = steadyNowNs() - t0;
        QCOMPARE(held.get(), 0);
        const auto arrivals = m_server.arrivalsFor("sf-delay-held");
        QCOMPARE(arrivals.size(), size_t(1));
        QVERIFY2(arrivals[0].tNs - t0 >= 590 * ms,
                 qPrintable(QString("held request arrived after %1 ms").arg((arrivals[0].tNs - t0) / ms)));
        QVERIFY2(other < 500 * ms, qPrintable(QString("the other call took %1 ms").arg(other / ms)));
        proxy.relay.stop();
        QVERIFY2(firstBroken(proxy.copy()).empty(), firstBroken(proxy.copy()).c_str());
    }

    void delayTheResponse()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()), {"delay by=400ms on=response"});
        QVERIFY2(proxy.ok, proxy.error.c_str());
        lab::LabClient client(proxy.address(), {});
        QCOMPARE(client.call(request("sf-delay-resp"), std::chrono::seconds(10)).code, 0);
        const std::int64_t done = steadyNowNs();
        const auto arrivals = m_server.arrivalsFor("sf-delay-resp");
        QCOMPARE(arrivals.size(), size_t(1));
        QVERIFY2(done - arrivals[0].tNs >= 390 * ms,
                 qPrintable(QString("answered %1 ms after arrival").arg((done - arrivals[0].tNs) / ms)));
        proxy.relay.stop();
        QVERIFY2(firstBroken(proxy.copy()).empty(), firstBroken(proxy.copy()).c_str());
    }

    // The invariant run: 10,000 calls with about 30% of attempts injected (abort before and after the
    // server, refused streams), and not one protocol, compression or flow-control error from either side.
    void tenThousandCallsStayValid()
    {
        FaultyProxy proxy(std::uint16_t(m_server.port()),
                          {"abort status=UNAVAILABLE percent=10",
                           "abort status=UNAVAILABLE when=after percent=11.2",
                           "reset code=REFUSED_STREAM percent=12.5"},
                          false);
        QVERIFY2(proxy.ok, proxy.error.c_str());
        constexpr int kCalls = 10000;
        constexpr int kClients = 4;
        std::atomic<int> next{0}, failed{0}, badStatus{0};
        std::mutex whyMu;
        std::string why;
        const std::int64_t t0 = steadyNowNs();
        std::vector<std::thread> threads;
        for (int t = 0; t < kClients; ++t)
            threads.emplace_back([&] {
                lab::LabClient client(proxy.address(), retryConfig("0.001s", 5));
                for (int i = next++; i < kCalls; i = next++) {
                    const auto r =
                        client.call(request("sf-inv-" + std::to_string(i)), std::chrono::seconds(20));
                    if (r.code == 0) continue;
                    ++failed;
                    // Retries can run out (UNAVAILABLE); anything else is the client finding the wire broken.
                    if (r.code != 14) {
                        ++badStatus;
                        std::lock_guard lk(whyMu);
                        why = std::to_string(r.code) + " " + r.message;
                    }
                }
            });
        for (auto &t : threads)
            t.join();
        const double elapsed = double(steadyNowNs() - t0) / 1e9;
        proxy.relay.stop();
        std::uint64_t injected = 0, attempts = 0;
        for (size_t i = 0; i < 3; ++i)
            injected += proxy.faults->hits(i);
        attempts = proxy.requests.load();
        std::printf("invariant run: %d calls, %llu attempts, %llu injected (%.1f%%), %d calls failed "
                    "(retries used up), %llu wire errors, %d bad statuses, %.1f s\n",
                    kCalls, (unsigned long long)attempts, (unsigned long long)injected,
                    attempts ? 100.0 * double(injected) / double(attempts) : 0.0, failed.load(),
                    (unsigned long long)proxy.broken.load(), badStatus.load(), elapsed);
        QVERIFY2(proxy.broken == 0, proxy.firstBroken.c_str());
        QVERIFY2(badStatus == 0, why.c_str());
        QVERIFY(attempts >= std::uint64_t(kCalls));
        const double share = double(injected) / double(attempts);
        QVERIFY2(share > 0.25 && share < 0.35, qPrintable(QString::number(share)));
        QCOMPARE(proxy.injections.load(), injected);
    }
};

QTEST_GUILESS_MAIN(TestStreamFaults)
#include "tst_streamfaults.moc"
