// The seed-001 governance scenarios run headless through a real LabSession (grpc++ on loopback, capture
// relays) into a real TimelineModel; each is asserted on the assembled model: what was on the wire and the
// lab events tied to their calls.

#include "labrun.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QtTest>
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

using namespace rpcscope;

namespace {
using labrun::Run;
using labrun::runScenario;
constexpr std::int64_t ms = 1'000'000;

const Call *callByKey(const TimelineStore &store, const std::string &key)
{
    for (const Call &c : store.calls())
        if (c.key == key) return &c;
    return nullptr;
}

std::vector<const LabEventRecord *> labEvents(const TimelineStore &store, const std::string &kind)
{
    std::vector<const LabEventRecord *> out;
    for (const LabEventRecord &l : store.labEvents())
        if (l.kind == kind) out.push_back(&l);
    return out;
}

const Connection *connectionById(const TimelineStore &store, std::uint32_t id)
{
    for (const Connection &c : store.connections())
        if (c.id == id) return &c;
    return nullptr;
}

// Most attempts open at once among `calls`, from their wire start and end.
int maxOverlap(const std::vector<const Call *> &calls)
{
    std::vector<std::pair<std::int64_t, int>> edges;
    for (const Call *c : calls)
        for (const Attempt &a : c->attempts) {
            edges.push_back({a.startNs, 1});
            edges.push_back({a.endNs.value_or(a.startNs), -1});
        }
    std::sort(edges.begin(), edges.end(),
              [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
    int open = 0, most = 0;
    for (const auto &[t, d] : edges)
        most = std::max(most, open += d);
    return most;
}

std::int64_t median(std::vector<std::int64_t> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}
} // namespace

class TestGovernance : public QObject
{
    Q_OBJECT
private slots:
    void transparentRetry()
    {
        const Run run = runScenario("transparent-retry");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const Call *call = callByKey(store, run.result.expected.at(0).callId);
        QVERIFY(call);
        // On the wire: the refused stream, the transparent retry, the configured retry.
        QCOMPARE(int(call->attempts.size()), 3);
        const Attempt &refused = call->attempts[0];
        QVERIFY(refused.connection != call->attempts[1].connection);
        QCOMPARE(call->attempts[1].connection, call->attempts[2].connection);
        QVERIFY(!refused.status.has_value()); // no response at all: the server never saw it
        QVERIFY(refused.endNs.has_value());
        // It ends at the GOAWAY (last-stream-id 0 lies below it), not when the connection closes later.
        QCOMPARE(refused.goawayErrorCode.value_or(99), 0u);
        QCOMPARE(refused.outcomeLabel(), std::string("refused by GOAWAY"));
        // The transparent retry does not count: it carries no grpc-previous-rpc-attempts, the retry after
        // it 1.
        QCOMPARE(call->attempts[1].previousAttempts.value_or(-1), 0);
        QCOMPARE(call->attempts[2].previousAttempts.value_or(-1), 1);
        QCOMPARE(call->attempts[1].status.value_or(-1), 14);
        QCOMPARE(call->outcomeAttempt()->status.value_or(-1), 0);
        // The model names it: attempt 2 is transparent, attempt 3 a configured retry. No backoff is expected
        // before a transparent retry, and the configured retry after it is the first one: exactly
        // initialBackoff.
        QVERIFY(call->transparentRetry(1));
        QVERIFY(!call->transparentRetry(2));
        QVERIFY(!call->expectedGapNs(0));
        const auto expected = call->expectedGapNs(1);
        QVERIFY(expected);
        QCOMPARE(expected->first, expected->second);
        // The refusing connection carried one request stream and one GOAWAY with last-stream-id 0.
        int goaways = 0, streams = 0;
        for (const WireEvent &e : run.events) {
            if (e.connection != refused.connection || e.kind != EventKind::Frame) continue;
            if (e.frameType == FrameGoaway) {
                ++goaways;
                QCOMPARE(e.dir, Direction::ServerToClient);
                QCOMPARE(e.lastStreamId, 0u);
            }
            streams += e.frameType == FrameHeaders && e.dir == Direction::ClientToServer;
        }
        QCOMPARE(goaways, 1);
        QCOMPARE(streams, 1);
        const Connection *conn = connectionById(store, refused.connection);
        QVERIFY(conn);
        QCOMPARE(conn->label, std::string("GOAWAY front"));
        QVERIFY(refused.endNs <= call->attempts[1].startNs);
    }

    void breakerRetry()
    {
        const Run run = runScenario("breaker-retry");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const auto &expected = run.result.expected;
        QCOMPARE(int(expected.size()), 4);
        const Call *first = callByKey(store, expected[0].callId);
        const Call *second = callByKey(store, expected[1].callId);
        QVERIFY(first && second);
        QCOMPARE(int(first->attempts.size()), 3);
        QCOMPARE(int(second->attempts.size()), 1);
        for (const Call *c : {first, second})
            for (const Attempt &a : c->attempts)
                QCOMPARE(a.status.value_or(-1), 14);
        // Calls refused by the open breaker never reached the wire.
        QVERIFY(!callByKey(store, expected[2].callId));
        QVERIFY(!callByKey(store, expected[3].callId));

        const auto breaker = labEvents(store, "breaker");
        QCOMPARE(int(breaker.size()), 1);
        QCOMPARE(breaker[0]->detail, std::string("closed -> open"));
        const auto suppressed = labEvents(store, "retry-suppressed");
        QCOMPARE(int(suppressed.size()), 1);
        QCOMPARE(suppressed[0]->callId, expected[1].callId);
        // Suppressed right after the failure that opened the breaker, not after a backoff of 50 ms.
        const std::int64_t after = suppressed[0]->tNs - *second->attempts[0].endNs;
        QVERIFY2(after >= -2 * ms && after < 25 * ms, qPrintable(QString::number(double(after) / ms)));
        QVERIFY(breaker[0]->tNs <= suppressed[0]->tNs);
        const auto fastFails = labEvents(store, "fast-fail");
        QCOMPARE(int(fastFails.size()), 2);
        QCOMPARE(fastFails[0]->callId, expected[2].callId);
        QCOMPARE(fastFails[1]->callId, expected[3].callId);
    }

    void retryBudget()
    {
        const Run run = runScenario("retry-budget");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        int requests = 0;
        for (const lab::ExpectedCall &e : run.result.expected) {
            const Call *c = callByKey(store, e.callId);
            QVERIFY(c);
            requests += int(c->attempts.size());
        }
        // 10 calls, a budget of 20% of requests: 2 retries on the wire instead of 20.
        QCOMPARE(requests, 12);
        const auto failedChecks = labEvents(store, "budget-check-failed");
        const auto suppressed = labEvents(store, "retry-suppressed");
        QCOMPARE(failedChecks.size(), suppressed.size());
        QVERIFY(failedChecks.size() >= 9);
        for (const LabEventRecord *l : failedChecks) {
            const Call *c = callByKey(store, l->callId);
            QVERIFY2(c, l->callId.c_str());
            QVERIFY(c->attempts.size() < 3);
            // Checked after the last attempt failed, and no attempt of that call followed.
            QVERIFY(l->tNs >= *c->attempts.back().endNs - 2 * ms);
            QVERIFY(std::any_of(suppressed.begin(), suppressed.end(),
                                [&](const LabEventRecord *s) { return s->callId == l->callId; }));
        }
        // The reason under "not retried" says it once ("retry budget: retry budget spent: ..." before).
        for (const LabEventRecord *s : suppressed)
            QVERIFY2(s->detail.rfind("retry budget spent: ", 0) == 0 &&
                         s->detail.find("retry budget", 1) == std::string::npos,
                     s->detail.c_str());
    }

    void bulkhead()
    {
        const Run run = runScenario("bulkhead");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        std::vector<const Call *> search, healthy;
        for (const Call &c : store.calls()) {
            if (c.method == "/rpcscope.lab.Lab/Search")
                search.push_back(&c);
            else if (c.method == "/rpcscope.lab.Lab/Call")
                healthy.push_back(&c);
        }
        // 8 Search calls shared, 2 with the bulkhead (6 rejected before the wire); 10 healthy calls each.
        QCOMPARE(int(search.size()), 10);
        QCOMPARE(int(healthy.size()), 20);
        const auto rejected = labEvents(store, "bulkhead-rejected");
        QCOMPARE(int(rejected.size()), 6);
        for (const LabEventRecord *l : rejected)
            QVERIFY2(!callByKey(store, l->callId), l->callId.c_str());
        auto byStart = [](const Call *a, const Call *b) { return a->startNs() < b->startNs(); };
        std::sort(healthy.begin(), healthy.end(), byStart);
        std::vector<std::int64_t> shared, isolated;
        for (size_t i = 0; i < healthy.size(); ++i) {
            const Call *c = healthy[i];
            QCOMPARE(c->outcomeAttempt()->status.value_or(-1), 0);
            (i < 10 ? shared : isolated).push_back(*c->endNs() - c->startNs());
        }
        // On the wire: the shared pool made healthy calls wait for the slow ones; the bulkhead did not.
        QVERIFY2(median(shared) > 150 * ms, qPrintable(QString::number(double(median(shared)) / ms)));
        QVERIFY2(
            *std::max_element(isolated.begin(), isolated.end()) < 75 * ms,
            qPrintable(QString::number(double(*std::max_element(isolated.begin(), isolated.end())) / ms)));
        // Never more Search calls at the server than permits while the bulkhead was on.
        std::sort(search.begin(), search.end(), byStart);
        QCOMPARE(maxOverlap({search.begin() + 8, search.end()}), 2);
    }

    void keepaliveDrop()
    {
        const Run run = runScenario("keepalive-drop");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const auto &expected = run.result.expected;
        const Call *before = callByKey(store, expected[0].callId);
        const Call *held = callByKey(store, expected[1].callId);
        const Call *after = callByKey(store, expected[2].callId);
        QVERIFY(before && held && after);
        const std::uint32_t dead = held->attempts[0].connection;
        QCOMPARE(before->attempts[0].connection, dead);
        QVERIFY(after->attempts[0].connection != dead);
        QCOMPARE(after->outcomeAttempt()->status.value_or(-1), 0);
        const Connection *conn = connectionById(store, dead);
        QVERIFY(conn && conn->closedNs);
        QCOMPARE(conn->label, std::string("keepalive"));
        QCOMPARE(conn->closeReason, std::string("closed by client"));
        // The held call never got a status: the client reset it as it closed the connection.
        QVERIFY(!held->attempts[0].status.has_value());
        QVERIFY(*held->attempts[0].endNs <= *conn->closedNs);

        // A keepalive PING was answered while the connection was idle...
        int idlePings = 0;
        std::int64_t lastAck = 0;
        for (const PingRecord &p : store.pings())
            if (p.connection == dead && p.dir == Direction::ClientToServer) {
                idlePings += p.tNs > *before->endNs() && p.tNs < held->startNs();
                lastAck = std::max(lastAck, p.tNs);
            }
        QVERIFY2(idlePings >= 1, qPrintable(QString::number(idlePings)));
        // ...and the last one was not: the client sent a PING after the last ACK, then gave up on the
        // connection after keepalive_timeout (300 ms).
        std::int64_t unanswered = 0;
        for (const WireEvent &e : run.events)
            if (e.connection == dead && e.kind == EventKind::Frame && e.frameType == FramePing &&
                e.dir == Direction::ClientToServer && !(e.flags & FlagAck) && e.tNs > lastAck)
                unanswered = e.tNs;
        QVERIFY(unanswered > held->startNs());
        const std::int64_t gaveUp = *conn->closedNs - unanswered;
        QVERIFY2(gaveUp >= 290 * ms && gaveUp < 600 * ms, qPrintable(QString::number(double(gaveUp) / ms)));
        QVERIFY(*held->attempts[0].endNs >= unanswered + 290 * ms);
    }

    void channelPool()
    {
        const Run run = runScenario("channel-pool");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        // One channel's 300 calls, then 3 channels with equal arguments, then a pool with distinct ones.
        const auto &expected = run.result.expected;
        QCOMPARE(int(expected.size()), 900);
        std::vector<const Call *> waves[3];
        std::set<std::uint32_t> connections[3];
        std::map<std::uint32_t, std::vector<const Call *>> poolByConnection;
        for (size_t i = 0; i < expected.size(); ++i) {
            const Call *c = callByKey(store, expected[i].callId);
            QVERIFY2(c, expected[i].callId.c_str());
            QCOMPARE(int(c->attempts.size()), 1);
            QCOMPARE(c->outcomeAttempt()->status.value_or(-1), 0);
            waves[i / 300].push_back(c);
            connections[i / 300].insert(c->attempts[0].connection);
            if (i >= 600) poolByConnection[c->attempts[0].connection].push_back(c);
        }
        // Channels with equal arguments share the first channel's connection.
        QCOMPARE(int(connections[0].size()), 1);
        QCOMPARE(connections[1], connections[0]);
        QCOMPARE(int(connections[2].size()), 3);
        QVERIFY(!connections[2].count(*connections[0].begin()));
        // The server's limit, as seen on the wire: never more than 100 streams open on one connection.
        for (int w = 0; w < 2; ++w)
            QVERIFY2(maxOverlap(waves[w]) <= 100, qPrintable(QString::number(maxOverlap(waves[w]))));
        for (const auto &[conn, calls] : poolByConnection)
            QVERIFY(maxOverlap(calls) <= 100);
        QVERIFY2(maxOverlap(waves[2]) > 250, qPrintable(QString::number(maxOverlap(waves[2]))));
        auto span = [](const std::vector<const Call *> &calls) {
            std::int64_t first = INT64_MAX, last = 0;
            for (const Call *c : calls) {
                first = std::min(first, c->startNs());
                last = std::max(last, *c->endNs());
            }
            return last - first;
        };
        // One connection: three waves of 200 ms, however many channels; the pool: one.
        for (int w = 0; w < 2; ++w)
            QVERIFY2(span(waves[w]) >= 580 * ms, qPrintable(QString::number(double(span(waves[w])) / ms)));
        QVERIFY2(span(waves[2]) < 400 * ms, qPrintable(QString::number(double(span(waves[2])) / ms)));
    }

    void healthCheck()
    {
        const Run run = runScenario("health-check");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const Call *watch = callByKey(store, run.result.expected.at(0).callId);
        QVERIFY(watch);
        QCOMPARE(watch->method, std::string("/grpc.health.v1.Health/Watch"));
        QCOMPARE(int(watch->attempts.size()), 1);
        const Attempt &a = watch->attempts[0];
        QCOMPARE(a.responseMessages, 3);
        QVERIFY(a.endNs.has_value());
        const auto health = labEvents(store, "health");
        std::vector<std::string> details;
        for (const LabEventRecord *l : health) {
            QCOMPARE(l->callId, watch->key);
            QVERIFY(l->tNs >= a.startNs && l->tNs <= *a.endNs);
            details.push_back(l->detail);
        }
        QCOMPARE(details, (std::vector<std::string>{"SERVING", "NOT_SERVING", "SERVING"}));
    }

    void idempotencyKey()
    {
        const Run run = runScenario("idempotency-key");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const Call *unkeyed = callByKey(store, run.result.expected.at(0).callId);
        const Call *keyed = callByKey(store, run.result.expected.at(1).callId);
        QVERIFY(unkeyed && keyed);
        for (const Call *c : {unkeyed, keyed}) {
            QCOMPARE(int(c->attempts.size()), 2);
            QCOMPARE(c->attempts[0].status.value_or(-1), 14);
            QCOMPARE(c->attempts[1].previousAttempts.value_or(-1), 1);
            QCOMPARE(c->outcomeAttempt()->status.value_or(-1), 0);
        }
        const auto dedup = labEvents(store, "deduplicated");
        QCOMPARE(int(dedup.size()), 1);
        QCOMPARE(dedup[0]->callId, keyed->key);
        // De-duplicated while the retry was at the server.
        QVERIFY(dedup[0]->tNs >= keyed->attempts[1].startNs);
        QVERIFY(dedup[0]->tNs <= *keyed->attempts[1].endNs);
    }

    void hedgingByHand()
    {
        const Run run = runScenario("hedging-by-hand");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        const Call *hedged = callByKey(store, run.result.expected.at(0).callId);
        const Call *plain = callByKey(store, run.result.expected.at(1).callId);
        QVERIFY(hedged && plain);
        QCOMPARE(int(hedged->attempts.size()), 2);
        const Attempt &primary = hedged->attempts[0], &hedge = hedged->attempts[1];
        QCOMPARE(connectionById(store, primary.connection)->label, std::string("replica A"));
        QCOMPARE(connectionById(store, hedge.connection)->label, std::string("replica B"));
        // Both are first attempts as far as gRPC knows: hedging by hand is not gRPC's retry.
        QCOMPARE(hedge.previousAttempts.value_or(-1), 0);
        QCOMPARE(hedge.status.value_or(-1), 0);
        // The loser was cancelled on the wire (RST_STREAM CANCEL) right after the winner's reply.
        QCOMPARE(primary.rstErrorCode.value_or(0), 8u);
        QVERIFY2(!hedged->transparentRetry(1), "a hedge overlaps its sibling: not a transparent retry");
        QVERIFY(!primary.status.has_value());
        QVERIFY(*primary.endNs >= *hedge.endNs);
        QVERIFY(*primary.endNs - *hedge.endNs < 50 * ms);
        QVERIFY(hedge.startNs - primary.startNs >= 78 * ms);

        const auto fired = labEvents(store, "hedge-fired");
        const auto cancelled = labEvents(store, "hedge-cancelled");
        QCOMPARE(int(fired.size()), 1);
        QCOMPARE(int(cancelled.size()), 1);
        QCOMPARE(fired[0]->callId, hedged->key);
        QCOMPARE(cancelled[0]->callId, hedged->key);
        QVERIFY(fired[0]->tNs >= primary.startNs && fired[0]->tNs <= hedge.startNs);
        QVERIFY(cancelled[0]->tNs >= *hedge.endNs && cancelled[0]->tNs <= *primary.endNs);
        // The fast call needed no hedge.
        QCOMPARE(int(plain->attempts.size()), 1);
        QCOMPARE(plain->outcomeAttempt()->status.value_or(-1), 0);
    }

    // Every lab event kind of issue 4 is produced by some scenario, tied to a call where it concerns one.
    void everyLabEventKind()
    {
        std::set<std::string> kinds;
        for (const char *name :
             {"breaker-retry", "retry-budget", "bulkhead", "health-check", "hedging-by-hand"}) {
            const Run run = runScenario(name);
            QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
            for (const WireEvent &e : run.events)
                if (e.kind == EventKind::LabEvent) {
                    kinds.insert(e.decision()->kind);
                    if (e.decision()->kind != "breaker")
                        QVERIFY2(!e.grpc.callId.empty(), e.decision()->kind.c_str());
                }
        }
        for (const char *kind : {"breaker", "bulkhead-rejected", "retry-suppressed", "hedge-fired",
                                 "hedge-cancelled", "budget-check-failed", "health", "fast-fail"})
            QVERIFY2(kinds.count(kind), kind);
    }
};

QTEST_GUILESS_MAIN(TestGovernance)
#include "tst_governance.moc"
