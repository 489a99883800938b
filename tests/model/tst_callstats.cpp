// Call statistics (callstats.h): synthetic captures with known latencies give exact percentiles and bucket
// counts; each outcome category from the wire that produces it; kept incrementally, batch by batch, equal to
// a rebuild; evicted calls stay counted.

#include "callstats.h"
#include "capturereader.h"
#include "capturestream.h"
#include "statsfeed.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;

namespace {
using testev::trailers;
constexpr std::int64_t us = 1'000, ms = 1'000'000;
constexpr Direction c2s = Direction::ClientToServer, s2c = Direction::ServerToClient;
constexpr int kOk = 0, kDeadlineExceeded = 4, kUnavailable = 14, kInternal = 13;
constexpr std::uint32_t kRefusedStream = 7, kCancel = 8;

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &callId,
                  const std::string &method = "/svc.S/Get", int previous = 0,
                  std::optional<std::int64_t> timeout = {})
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, c2s);
    e.grpc.path = method;
    e.grpc.callId = callId;
    e.grpc.previousAttempts = previous;
    e.grpc.timeoutNs = timeout;
    e.grpc.retryInitialMs = 100;
    e.grpc.retryMultiplier = 2;
    e.grpc.retryMaxMs = 1000;
    return e;
}

WireEvent labEvent(std::int64_t t, const std::string &kind)
{
    WireEvent e = testev::event(EventKind::LabEvent, 0, 0, t);
    e.about = LabDecision{kind, "breaker open: failed without a request"};
    return e;
}

// `n` one-attempt OK calls on connection 1, call i lasting latencies[i].
EventBatch okCalls(const std::vector<std::int64_t> &latencies, std::int64_t t0 = 0, int firstId = 0)
{
    EventBatch b{testev::opened(1, t0)};
    for (size_t i = 0; i < latencies.size(); ++i) {
        const auto stream = std::uint32_t(2 * (firstId + int(i)) + 1);
        const std::int64_t t = t0 + std::int64_t(i) * ms;
        b.push_back(request(1, stream, t, "c" + std::to_string(firstId + int(i))));
        b.push_back(trailers(1, stream, t + latencies[i], kOk));
    }
    return b;
}

// Compares every count two CallStats keep, row by row.
void compareStats(const CallStats &a, const CallStats &b)
{
    auto same = [](const StatsRow &x, const StatsRow &y) {
        QCOMPARE(x.calls, y.calls);
        QCOMPARE(x.attempts, y.attempts);
        QCOMPARE(x.transparentRetries, y.transparentRetries);
        QCOMPARE(x.outcomes, y.outcomes);
        QCOMPARE(x.callLatency.count(), y.callLatency.count());
        QCOMPARE(x.callLatency.buckets(), y.callLatency.buckets());
        QCOMPARE(x.attemptLatency.buckets(), y.attemptLatency.buckets());
        for (double q : {0.5, 0.9, 0.99, 0.999, 1.0}) {
            QCOMPARE(x.callLatency.percentile(q), y.callLatency.percentile(q));
            QCOMPARE(x.attemptLatency.percentile(q), y.attemptLatency.percentile(q));
        }
        auto trimmed = [](std::vector<std::uint64_t> v) {
            while (!v.empty() && v.back() == 0)
                v.pop_back();
            return v;
        };
        QCOMPARE(trimmed(x.attemptsPerCall), trimmed(y.attemptsPerCall));
        QCOMPARE(x.gaps.within, y.gaps.within);
        QCOMPARE(x.gaps.early, y.gaps.early);
        QCOMPARE(x.gaps.late, y.gaps.late);
        QCOMPARE(x.gaps.noPolicy, y.gaps.noPolicy);
        QCOMPARE(x.gaps.transparent, y.gaps.transparent);
    };
    same(a.total(), b.total());
    QCOMPARE(a.methods().size(), b.methods().size());
    for (const auto &[key, row] : a.methods()) {
        const StatsRow *other = b.find(StatsRow::Kind::Method, key);
        QVERIFY2(other, key.c_str());
        same(row, *other);
    }
    QCOMPARE(a.hops().size(), b.hops().size());
    for (const auto &[key, row] : a.hops()) {
        const StatsRow *other = b.find(StatsRow::Kind::Hop, key);
        QVERIFY2(other, key.c_str());
        same(row, *other);
    }
}
} // namespace

class TestCallStats : public QObject
{
    Q_OBJECT

private slots:
    void bucketsAreA125Series()
    {
        QCOMPARE(LatencyBuckets::edgeNs(0), 10 * us);
        QCOMPARE(LatencyBuckets::edgeNs(1), 20 * us);
        QCOMPARE(LatencyBuckets::edgeNs(2), 50 * us);
        QCOMPARE(LatencyBuckets::edgeNs(6), 1 * ms);
        QCOMPARE(LatencyBuckets::edgeNs(LatencyBuckets::kEdges - 1), 200'000 * ms);
        QCOMPARE(LatencyBuckets::bucketOf(0), 0);
        QCOMPARE(LatencyBuckets::bucketOf(10 * us - 1), 0);
        QCOMPARE(LatencyBuckets::bucketOf(10 * us), 1); // an edge starts the next bucket
        QCOMPARE(LatencyBuckets::bucketOf(1 * ms), 7);
        QCOMPARE(LatencyBuckets::bucketOf(1'000'000 * ms), LatencyBuckets::kCount - 1);
        for (int i = 0; i < LatencyBuckets::kCount; ++i) {
            const auto [lo, hi] = LatencyBuckets::rangeNs(i);
            QCOMPARE(LatencyBuckets::bucketOf(lo), i);
            if (i + 1 < LatencyBuckets::kCount) QCOMPARE(LatencyBuckets::bucketOf(hi - 1), i);
        }
    }

    // 1..1000 ms, one call each: nearest-rank percentiles within a bin's width (0.4 %) of the rank's value;
    // and exact where the rank's bin holds one distinct value.
    void percentilesAndBuckets()
    {
        std::vector<std::int64_t> lat;
        for (int i = 1000; i >= 1; --i) // out of order on purpose
            lat.push_back(i * ms);
        TimelineStore store;
        store.apply(okCalls(lat));
        CallStats stats;
        stats.rebuild(store);
        const StatsRow &t = stats.total();
        QCOMPARE(t.calls, 1000u);
        QCOMPARE(t.attempts, 1000u);
        QCOMPARE(t.amplification(), 1.0);
        QCOMPARE(t.count(CallCategory::OkFirstTry), 1000u);
        auto near = [](std::optional<std::int64_t> v, std::int64_t want) {
            return v && std::abs(*v - want) <= want / 256;
        };
        QVERIFY(near(t.callLatency.percentile(0.5), 500 * ms));
        QVERIFY(near(t.callLatency.percentile(0.9), 900 * ms));
        QVERIFY(near(t.callLatency.percentile(0.99), 990 * ms));
        QVERIFY(near(t.callLatency.percentile(0.999), 999 * ms));
        QVERIFY(near(t.callLatency.max(), 1000 * ms));
        QVERIFY(near(t.attemptLatency.percentile(0.5), 500 * ms));
        QCOMPARE(t.callLatency.percentile(0.001).value(), 1 * ms); // alone in its bin
        // [1 ms, 2 ms): 1; [2, 5): 3; [5, 10): 5; [10, 20): 10; [20, 50): 30; [50, 100): 50; [100, 200): 100;
        // [200, 500): 300; [500, 1000): 500; [1 s, 2 s): 1.
        const auto &b = t.callLatency.buckets();
        const int oneMs = LatencyBuckets::bucketOf(1 * ms);
        const std::vector<std::uint64_t> expected{1, 3, 5, 10, 30, 50, 100, 300, 500, 1};
        for (size_t k = 0; k < expected.size(); ++k)
            QCOMPARE(b[oneMs + k], expected[k]);
        std::uint64_t sum = 0;
        for (auto n : b)
            sum += n;
        QCOMPARE(sum, 1000u);
        QCOMPARE(t.attemptsPerCall.at(1), 1000u);
        // One method, one hop (the main proxy's, ""): the same numbers.
        QCOMPARE(stats.methods().size(), 1u);
        QVERIFY(near(stats.methods().at("/svc.S/Get").callLatency.percentile(0.99), 990 * ms));
        QCOMPARE(stats.hops().at("").calls, 1000u);
    }

    // A few distinct latencies: every percentile exact.
    void exactPercentiles()
    {
        std::vector<std::int64_t> lat;
        for (int i = 0; i < 1000; ++i)
            lat.push_back(i < 900 ? 10 * ms : i < 990 ? 50 * ms : i < 999 ? 200 * ms : 1000 * ms);
        TimelineStore store;
        store.apply(okCalls(lat));
        CallStats stats;
        stats.rebuild(store);
        const LatencyRecorder &r = stats.total().callLatency;
        QCOMPARE(r.percentile(0.5).value(), 10 * ms);
        QCOMPARE(r.percentile(0.9).value(), 10 * ms);
        QCOMPARE(r.percentile(0.901).value(), 50 * ms);
        QCOMPARE(r.percentile(0.99).value(), 50 * ms);
        QCOMPARE(r.percentile(0.999).value(), 200 * ms);
        QCOMPARE(r.max().value(), 1000 * ms);
        const auto &b = r.buckets();
        QCOMPARE(b[size_t(LatencyBuckets::bucketOf(10 * ms))], 900u); // [10 ms, 20 ms)
        QCOMPARE(b[size_t(LatencyBuckets::bucketOf(50 * ms))], 90u);
        QCOMPARE(b[size_t(LatencyBuckets::bucketOf(200 * ms))], 9u);
        QCOMPARE(b[size_t(LatencyBuckets::bucketOf(1000 * ms))], 1u);
    }

    // Values that share a bin read as their mean: within 0.4 %, whatever the count.
    void binsHoldTheirMean()
    {
        LatencyRecorder r;
        for (std::int64_t v = 0; v < 100'000; ++v)
            r.add(1'000'000'000 + v * 7); // 1 s to 1.0007 s
        const std::int64_t p50 = r.percentile(0.5).value();
        QVERIFY2(std::abs(p50 - (1'000'000'000 + 49'999 * 7)) <= 1'000'000'000 / 256,
                 qPrintable(QString::number(p50)));
        QVERIFY(std::abs(r.max().value() - (1'000'000'000 + 99'999 * 7)) <= 1'000'000'000 / 256);
        QCOMPARE(r.count(), 100'000u);
        QCOMPARE(r.buckets()[size_t(LatencyBuckets::bucketOf(1'000'000'000))], 100'000u);
        // Exact below 512 ns, one bin per ns.
        LatencyRecorder small;
        for (std::int64_t v : {3, 255, 256, 511})
            small.add(v);
        QCOMPARE(small.percentile(0.25).value(), 3);
        QCOMPARE(small.percentile(0.5).value(), 255);
        QCOMPARE(small.percentile(0.75).value(), 256);
        QCOMPARE(small.max().value(), 511);
    }

    void smallSetsRoundUp()
    {
        LatencyRecorder r;
        QVERIFY(!r.percentile(0.5));
        for (std::int64_t v : {30, 10, 20})
            r.add(v);
        QCOMPARE(r.percentile(0.5).value(), 20); // rank ceil(1.5) = 2
        QCOMPARE(r.percentile(0.34).value(), 20);
        QCOMPARE(r.percentile(0.33).value(), 10);
        QCOMPARE(r.percentile(0.999).value(), 30);
        r.remove(30);
        r.add(5);
        QCOMPARE(r.count(), 3u);
        QCOMPARE(r.max().value(), 20);
        QCOMPARE(r.percentile(0.01).value(), 5);
        r.remove(10);
        r.remove(10); // was only added once: the second takes nothing out of the values
        QCOMPARE(r.percentile(1.0).value(), 20);
    }

    // Every category from the wire that produces it.
    void categories()
    {
        EventBatch b{testev::opened(1, 0), testev::opened(2, 0, "127.0.0.1:5001", "127.0.0.1:9001", "B->C")};
        // ok first try
        b.push_back(request(1, 1, 0, "ok1"));
        b.push_back(trailers(1, 1, 5 * ms, kOk));
        // ok after retry: UNAVAILABLE, 100 ms (the policy's initial backoff exactly), OK
        b.push_back(request(1, 3, 0, "ok2"));
        b.push_back(trailers(1, 3, 10 * ms, kUnavailable));
        b.push_back(request(1, 5, 110 * ms, "ok2", "/svc.S/Get", 1));
        b.push_back(trailers(1, 5, 120 * ms, kOk));
        // failed after retries: three UNAVAILABLEs; the second gap too early (50 ms < 160 ms)
        b.push_back(request(1, 7, 0, "f3"));
        b.push_back(trailers(1, 7, 1 * ms, kUnavailable));
        b.push_back(request(1, 9, 101 * ms, "f3", "/svc.S/Get", 1));
        b.push_back(trailers(1, 9, 102 * ms, kUnavailable));
        b.push_back(request(1, 11, 152 * ms, "f3", "/svc.S/Get", 2));
        b.push_back(trailers(1, 11, 153 * ms, kUnavailable));
        // failed, no retry, on the other hop and another method
        b.push_back(request(2, 1, 0, "n1", "/svc.S/Put"));
        b.push_back(trailers(2, 1, 2 * ms, kInternal));
        // deadline exceeded: the client cancels at its deadline
        b.push_back(request(1, 13, 0, "d1", "/svc.S/Get", 0, 50 * ms));
        b.push_back(testev::frame(1, 13, 50 * ms, c2s, FrameRstStream, kCancel, 4));
        // in flight
        b.push_back(request(1, 15, 200 * ms, "i1"));
        // a transparent retry of a refused stream, then OK: two attempts, one transparent
        b.push_back(request(1, 17, 0, "t1"));
        b.push_back(testev::frame(1, 17, 1 * ms, s2c, FrameRstStream, kRefusedStream, 4));
        b.push_back(request(1, 19, 2 * ms, "t1"));
        b.push_back(trailers(1, 19, 3 * ms, kOk));
        // failed fast, twice: never on the wire (a breaker open, a bulkhead full)
        b.push_back(labEvent(20 * ms, "fast-fail"));
        b.push_back(labEvent(21 * ms, "bulkhead-rejected"));
        b.push_back(labEvent(22 * ms, "breaker"));
        TimelineStore store;
        store.apply(b);
        CallStats stats;
        stats.rebuild(store);
        const StatsRow &t = stats.total();
        QCOMPARE(t.count(CallCategory::OkFirstTry), 1u);
        QCOMPARE(t.count(CallCategory::OkAfterRetry), 2u);
        QCOMPARE(t.count(CallCategory::FailedAfterRetries), 1u);
        QCOMPARE(t.count(CallCategory::FailedNoRetry), 1u);
        QCOMPARE(t.count(CallCategory::DeadlineExceeded), 1u);
        QCOMPARE(t.count(CallCategory::InFlight), 1u);
        QCOMPARE(t.count(CallCategory::FailedFast), 2u);
        QCOMPARE(t.calls, 9u);
        QCOMPARE(t.attempts, 1u + 2 + 3 + 1 + 1 + 1 + 2);
        QCOMPARE(t.transparentRetries, 1u);
        QCOMPARE(t.amplification(), 11.0 / 7.0); // attempts per call on the wire
        QCOMPARE(t.gaps.within, 2u);             // ok2's, f3's first
        QCOMPARE(t.gaps.early, 1u);              // f3's second
        QCOMPARE(t.gaps.transparent, 1u);
        QCOMPARE(t.attemptsPerCall.at(1), 4u); // ok1, n1, d1, i1
        QCOMPARE(t.attemptsPerCall.at(2), 2u);
        QCOMPARE(t.attemptsPerCall.at(3), 1u);
        // Ended calls only: the deadline exceeded one at its deadline, 50 ms.
        QCOMPARE(t.callLatency.count(), 6u);
        QCOMPARE(t.callLatency.max().value(), 153 * ms);
        QCOMPARE(t.attemptLatency.count(), 10u); // the in-flight attempt is not counted
        // Rows: methods "", Get, Put; hops "", "B->C".
        QCOMPARE(stats.methods().size(), 3u);
        QCOMPARE(stats.methods().at("").count(CallCategory::FailedFast), 2u);
        QCOMPARE(stats.methods().at("/svc.S/Put").count(CallCategory::FailedNoRetry), 1u);
        QCOMPARE(stats.hops().at("B->C").calls, 1u);
        QCOMPARE(stats.hops().at("").calls, 6u);
        QCOMPARE(CallStats::categoryOf(store.calls()[store.callIndex("ok2").value()], store),
                 CallCategory::OkAfterRetry);
        QVERIFY(
            CallStats::rowMatches(StatsRow::Kind::Hop, "B->C", store.calls()[store.callIndex("n1").value()]));
        QVERIFY(
            !CallStats::rowMatches(StatsRow::Kind::Hop, "", store.calls()[store.callIndex("n1").value()]));
        QCOMPARE(QString(categoryKey(CallCategory::FailedFast)), QStringLiteral("failed_fast"));
    }

    // A call counted as failed moves when its next attempt arrives; the model's statistics, batch by batch,
    // equal a rebuild at every step.
    void incrementalEqualsRebuild()
    {
        std::vector<EventBatch> batches;
        batches.push_back({testev::opened(1, 0), request(1, 1, 0, "a"), request(1, 3, 0, "b")});
        batches.push_back({trailers(1, 1, 10 * ms, kUnavailable), trailers(1, 3, 4 * ms, kOk)});
        batches.push_back({request(1, 5, 110 * ms, "a", "/svc.S/Get", 1)}); // the retry after backoff
        batches.push_back(
            {trailers(1, 5, 130 * ms, kUnavailable), request(1, 7, 131 * ms, "c", "/svc.S/Put")});
        batches.push_back({request(1, 9, 330 * ms, "a", "/svc.S/Get", 2), trailers(1, 7, 140 * ms, kOk)});
        batches.push_back({trailers(1, 9, 335 * ms, kOk), labEvent(340 * ms, "fast-fail")});
        TimelineModel model;
        TimelineStore store;
        for (size_t i = 0; i < batches.size(); ++i) {
            model.appendBatch(batches[i]);
            store.apply(batches[i]);
            CallStats rebuilt;
            rebuilt.rebuild(store);
            compareStats(model.stats(), rebuilt);
            if (QTest::currentTestFailed()) QFAIL(qPrintable(QStringLiteral("after batch %1").arg(i)));
        }
        const StatsRow &t = model.stats().total();
        QCOMPARE(t.count(CallCategory::OkAfterRetry), 1u); // "a", after three attempts
        QCOMPARE(t.count(CallCategory::FailedAfterRetries), 0u);
        QCOMPARE(t.attemptsPerCall.at(3), 1u);
        QCOMPARE(t.callLatency.max().value(), 335 * ms);
        QCOMPARE(t.count(CallCategory::FailedFast), 1u);
        // A model cleared counts nothing; a replay rebuilds.
        model.clear();
        QCOMPARE(model.stats().total().calls, 0u);
    }

    // Retention evicts calls; the statistics keep counting them.
    void evictedCallsStayCounted()
    {
        TimelineModel model;
        std::vector<std::int64_t> lat;
        for (int i = 1; i <= 200; ++i)
            lat.push_back(i * ms);
        // A call in flight before all of them: eviction keeps it, and it still counts when it ends.
        model.appendBatch({testev::opened(2, 0), request(2, 1, 0, "long")});
        model.appendBatch(okCalls(lat));
        RetentionPolicy policy;
        policy.maxCalls = 50;
        model.setRetention(policy); // enforces it at once
        QVERIFY(model.store().calls().size() <= 50);
        QVERIFY(model.store().callIndex("long"));
        QCOMPARE(model.stats().total().calls, 201u);
        QCOMPARE(model.stats().total().count(CallCategory::InFlight), 1u);
        QCOMPARE(model.stats().total().callLatency.percentile(0.5).value(), 100 * ms);
        // New calls after the eviction still count, once each; the long one moves out of "in flight".
        model.appendBatch(okCalls({7 * ms, 8 * ms}, 1000 * ms, 1000));
        model.appendBatch({trailers(2, 1, 2000 * ms, kOk)});
        QCOMPARE(model.stats().total().calls, 203u);
        QCOMPARE(model.stats().total().count(CallCategory::InFlight), 0u);
        QCOMPARE(model.stats().total().count(CallCategory::OkFirstTry), 203u);
        QCOMPARE(model.stats().total().callLatency.max().value(), 2000 * ms);
    }

    // A peer that names a new method on every call: past the row limit their calls count in one row, said
    // with a count, instead of a row each that no eviction would free. Rows already there keep counting, and
    // the fast-failed calls' row "" is not held back by the limit.
    void rowsPastTheLimitFoldIntoOne()
    {
        TimelineModel model;
        model.setStatsRowLimit(3);
        const CallStats &stats = model.stats();
        EventBatch b{testev::opened(1, 0), testev::opened(2, 0)};
        for (int i = 0; i < 10; ++i) {
            const auto stream = std::uint32_t(2 * i + 1);
            b.push_back(request(1, stream, i * ms, "m" + std::to_string(i), "/svc.S/M" + std::to_string(i)));
            b.push_back(trailers(1, stream, i * ms + 5 * ms, kOk));
        }
        // A method seen before the limit was reached counts in its own row still.
        b.push_back(request(2, 1, 20 * ms, "again", "/svc.S/M1"));
        b.push_back(trailers(2, 1, 21 * ms, kOk));
        b.push_back(labEvent(30 * ms, "fast-fail"));
        model.appendBatch(b);
        QCOMPARE(stats.total().calls, 12u);
        QCOMPARE(stats.methods().size(), 5u); // M0, M1, M2, the other methods, ""
        QCOMPARE(stats.methods().at("/svc.S/M1").calls, 2u);
        const StatsRow *other = stats.find(StatsRow::Kind::Method, CallStats::kOtherMethods);
        QVERIFY(other);
        QCOMPARE(other->calls, 7u);
        QCOMPARE(other->count(CallCategory::OkFirstTry), 7u);
        QCOMPARE(other->callLatency.percentile(0.5).value(), 5 * ms);
        QCOMPARE(stats.foldedMethodCalls(), 7u);
        QCOMPARE(stats.methods().at("").count(CallCategory::FailedFast), 1u);
        // One hop (""), far below the limit: nothing folded there.
        QCOMPARE(stats.hops().size(), 1u);
        QCOMPARE(stats.foldedHopCalls(), 0u);
        // Incrementally as a rebuild does, and a clear starts the count again under the same limit.
        CallStats rebuilt;
        rebuilt.setMaxKeyedRows(3);
        rebuilt.rebuild(model.store());
        compareStats(stats, rebuilt);
        QCOMPARE(rebuilt.foldedMethodCalls(), 7u);
        model.clear();
        QCOMPARE(stats.foldedMethodCalls(), 0u);
        QCOMPARE(stats.maxKeyedRows(), size_t(3));
        // The limit follows a session's budget: a small one allows fewer rows, none the default.
        QCOMPARE(TimelineModel::statsRowsFor(0), CallStats::kDefaultMaxKeyedRows);
        QCOMPARE(TimelineModel::statsRowsFor(size_t(2) << 20), size_t(64));
        QCOMPARE(TimelineModel::statsRowsFor(size_t(16) << 20), size_t(512));
        QCOMPARE(TimelineModel::statsRowsFor(size_t(512) << 20), CallStats::kDefaultMaxKeyedRows);
        model.setRetention({size_t(2) << 20, 0, 0});
        QCOMPARE(stats.maxKeyedRows(), size_t(64));
    }

    // rpcscope-cli stats: a file read batch by batch, its calls counted and evicted as it goes, counts what a
    // store holding every call counts; a cut file hands over its intact batches and says it is cut.
    void streamedFileEqualsWholeStore()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("many.rpcscope");
        const size_t calls = StatsFeed::kKeepCalls * 2 + 1234;
        std::vector<EventBatch> batches;
        for (size_t i = 0; i < calls; i += 500) {
            std::vector<std::int64_t> lat;
            for (size_t k = i; k < std::min(calls, i + 500); ++k)
                lat.push_back(std::int64_t(k % 997 + 1) * us * 10);
            EventBatch b = okCalls(lat, std::int64_t(i) * ms, int(i));
            if (i) b.erase(b.begin()); // the connection opens once
            if (i % 5000 == 0) b.push_back(labEvent(std::int64_t(i) * ms, "fast-fail"));
            batches.push_back(std::move(b));
        }
        {
            CaptureFileStream out;
            std::string error;
            QVERIFY2(out.open(path, CaptureInfo{}, {}, &error), error.c_str());
            for (const EventBatch &b : batches)
                QVERIFY(out.append(b));
            QVERIFY2(out.finish(&error), error.c_str());
        }
        TimelineStore whole;
        for (const EventBatch &b : batches)
            whole.apply(b);
        CallStats expected;
        expected.rebuild(whole);

        StatsFeed feed;
        CaptureInfo info;
        size_t handed = 0;
        const CaptureReadResult r = readCaptureFile(path, &info, [&](EventBatch &&b) {
            ++handed;
            feed.apply(b);
        });
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        QCOMPARE(handed, batches.size());
        QVERIFY(feed.store().calls().size() <= StatsFeed::kKeepCalls * 5 / 4 + 500); // it evicted as it went
        compareStats(feed.stats(), expected);
        QCOMPARE(feed.stats().total().calls, std::uint64_t(calls + (calls + 4999) / 5000));

        // Cut in the middle: the batches before the cut arrive, and the result says where it was cut.
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() / 2));
        f.close();
        handed = 0;
        const CaptureReadResult cut = readCaptureFile(path, &info, [&](EventBatch &&) { ++handed; });
        QCOMPARE(cut.status, CaptureReadResult::Truncated);
        QVERIFY(handed > 0 && handed < batches.size());
        QVERIFY2(QString::fromStdString(cut.message).contains(QString::number(handed) + " batches"),
                 cut.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestCallStats)
#include "tst_callstats.moc"
