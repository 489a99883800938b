// Comparing two runs' statistics (statscompare.h): two synthetic stores with known attempts and latencies
// give exact values, differences and ratios, in the JSON and in the terminal table.

#include "statscompare.h"
#include "timelinestore.h"
#include "wireevents.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;
constexpr int kOk = 0, kUnavailable = 14;

WireEvent request(std::uint32_t stream, std::int64_t t, const std::string &path, const std::string &callId,
                  int previous = 0)
{
    WireEvent e = testev::event(EventKind::Headers, 1, stream, t, Direction::ClientToServer);
    e.grpc.path = path;
    e.grpc.callId = callId;
    e.grpc.previousAttempts = previous;
    return e;
}

WireEvent trailers(std::uint32_t stream, std::int64_t t, int status)
{
    WireEvent e = testev::event(EventKind::Headers, 1, stream, t, Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

const std::string kGet = "/t.S/Get", kPut = "/t.S/Put";

// A: four Get calls, each OK on its only attempt, taking 10, 20, 30 and 40 ms.
CallStats storeA()
{
    TimelineStore store;
    EventBatch b{testev::opened(1, 0)};
    for (std::uint32_t i = 0; i < 4; ++i) {
        const std::int64_t t = 100 * ms * i;
        b.push_back(request(1 + 2 * i, t, kGet, "a" + std::to_string(i)));
        b.push_back(trailers(1 + 2 * i, t + 10 * ms * (i + 1), kOk));
    }
    store.apply(b);
    CallStats s;
    s.rebuild(store);
    return s;
}

// B: two Get calls that fail UNAVAILABLE after 5 ms, retry at +10 ms and end OK at +30 ms; one Put call OK
// after 8 ms.
CallStats storeB()
{
    TimelineStore store;
    EventBatch b{testev::opened(1, 0)};
    std::uint32_t stream = 1;
    for (int i = 0; i < 2; ++i) {
        const std::int64_t t = 100 * ms * i;
        const std::string id = "b" + std::to_string(i);
        b.push_back(request(stream, t, kGet, id));
        b.push_back(trailers(stream, t + 5 * ms, kUnavailable));
        stream += 2;
        b.push_back(request(stream, t + 10 * ms, kGet, id, 1));
        b.push_back(trailers(stream, t + 30 * ms, kOk));
        stream += 2;
    }
    b.push_back(request(stream, 500 * ms, kPut, "p"));
    b.push_back(trailers(stream, 508 * ms, kOk));
    store.apply(b);
    CallStats s;
    s.rebuild(store);
    return s;
}

double num(const QJsonValue &v)
{
    return v.toDouble(-12345);
}
} // namespace

class TestStatsCompare : public QObject
{
    Q_OBJECT
private slots:
    void syntheticStoresAreWhatTheTestAssumes()
    {
        const CallStats a = storeA(), b = storeB();
        QCOMPARE(a.total().calls, 4u);
        QCOMPARE(b.total().calls, 3u);
        QCOMPARE(b.total().attempts, 5u);
        QCOMPARE(b.total().count(CallCategory::OkAfterRetry), 2u);
    }

    void totalValuesDifferencesAndRatios()
    {
        const StatsComparison c = compareStats(storeA(), storeB(), "a.rpcscope", "b.rpcscope");
        QCOMPARE(c.rows.size(), size_t(4)); // Total, Get, Put and the main proxy's hop
        const CompareRow *total = c.find(StatsRow::Kind::Total, {});
        QVERIFY(total);
        const CompareValue *calls = total->value("calls");
        QCOMPARE(*calls->a, 4.0);
        QCOMPARE(*calls->b, 3.0);
        QCOMPARE(*calls->difference(), -1.0);
        QCOMPARE(*calls->ratio(), 0.75);
        const CompareValue *amp = total->value("amplification");
        QCOMPARE(*amp->a, 1.0);
        QCOMPARE(*amp->b, 5.0 / 3.0);
        QCOMPARE(*amp->ratio(), 5.0 / 3.0);
        // Nothing retried in A: the ratio of a zero is none, the difference is exact.
        const CompareValue *afterRetry = total->value("ok_after_retry");
        QCOMPARE(*afterRetry->a, 0.0);
        QCOMPARE(*afterRetry->b, 2.0);
        QCOMPARE(*afterRetry->difference(), 2.0);
        QVERIFY(!afterRetry->ratio());
    }

    void rowsOnOneSideOnly()
    {
        const StatsComparison c = compareStats(storeA(), storeB(), "A", "B");
        const CompareRow *get = c.find(StatsRow::Kind::Method, kGet);
        const CompareRow *put = c.find(StatsRow::Kind::Method, kPut);
        QVERIFY(get && put);
        QVERIFY(get->inA && get->inB);
        QVERIFY(!put->inA && put->inB);
        QVERIFY(!put->value("calls")->a);
        QCOMPARE(*put->value("calls")->b, 1.0);
        QVERIFY(!put->value("calls")->difference());
        QVERIFY(!put->value("calls")->ratio());
        // Get: 10/20/30/40 ms against 30/30 ms; nearest rank: p50 = 2nd of 4, p90 = 4th.
        QCOMPARE(*get->value("call_p50_ns")->a, double(20 * ms));
        QCOMPARE(*get->value("call_p50_ns")->b, double(30 * ms));
        QCOMPARE(*get->value("call_p50_ns")->difference(), double(10 * ms));
        QCOMPARE(*get->value("call_p50_ns")->ratio(), 1.5);
        QCOMPARE(*get->value("call_p90_ns")->a, double(40 * ms));
        QCOMPARE(*get->value("call_max_ns")->ratio(), 0.75);
        // Attempts 5, 20, 5, 20 ms in B: p50 5 ms, p99 20 ms.
        QCOMPARE(*get->value("attempt_p50_ns")->b, double(5 * ms));
        QCOMPARE(*get->value("attempt_p99_ns")->b, double(20 * ms));
        QCOMPARE(*get->value("ok_first_try")->ratio(), 0.0);
        QCOMPARE(*get->value("attempts")->ratio(), 1.0);
        // Attempts per call: four calls of one attempt against two of two.
        QCOMPARE(*get->value("calls_1_attempt")->a, 4.0);
        QCOMPARE(*get->value("calls_1_attempt")->b, 0.0);
        QCOMPARE(*get->value("calls_2_attempts")->a, 0.0);
        QCOMPARE(*get->value("calls_2_attempts")->b, 2.0);
        QCOMPARE(*get->value("calls_6_or_more_attempts")->b, 0.0);
    }

    void jsonShape()
    {
        const QJsonObject o = comparisonToJson(compareStats(storeA(), storeB(), "a.rpcscope", "b.rpcscope"));
        QCOMPARE(o.value("a").toObject().value("label").toString(), QString("a.rpcscope"));
        QCOMPARE(o.value("b").toObject().value("label").toString(), QString("b.rpcscope"));
        const QJsonArray rows = o.value("rows").toArray();
        QCOMPARE(rows.size(), 4); // Total, two methods, one hop
        const QJsonObject total = rows.at(0).toObject();
        QCOMPARE(total.value("kind").toString(), QString("total"));
        QCOMPARE(total.value("key").toString(), QString());
        QVERIFY(total.value("in_a").toBool() && total.value("in_b").toBool());
        const QJsonObject values = total.value("values").toObject();
        for (const char *key : {"calls",
                                "attempts",
                                "amplification",
                                "transparent_retries",
                                "ok_first_try",
                                "ok_after_retry",
                                "failed_after_retries",
                                "failed_no_retry",
                                "failed_fast",
                                "deadline_exceeded",
                                "in_flight",
                                "call_p50_ns",
                                "call_p90_ns",
                                "call_p99_ns",
                                "call_p99_9_ns",
                                "call_max_ns",
                                "attempt_p50_ns",
                                "attempt_max_ns",
                                "calls_1_attempt",
                                "calls_5_attempts",
                                "calls_6_or_more_attempts",
                                "gaps_within",
                                "gaps_early",
                                "gaps_late",
                                "gaps_no_policy",
                                "gaps_transparent"})
            QVERIFY2(values.contains(key), key);
        const QJsonObject amp = values.value("amplification").toObject();
        QCOMPARE(num(amp.value("a")), 1.0);
        QCOMPARE(num(amp.value("b")), 5.0 / 3.0);
        QCOMPARE(num(amp.value("difference")), 2.0 / 3.0);
        QCOMPARE(num(amp.value("ratio")), 5.0 / 3.0);
        const QJsonObject p50 = values.value("call_p50_ns").toObject();
        QCOMPARE(p50.value("a").toInteger(), 20 * ms);
        QCOMPARE(p50.value("b").toInteger(), 30 * ms);
        QVERIFY(values.value("ok_after_retry").toObject().value("ratio").isNull());
        const QJsonObject put = rows.at(2).toObject();
        QCOMPARE(put.value("key").toString(), QString::fromStdString(kPut));
        QVERIFY(!put.value("in_a").toBool());
        QVERIFY(put.value("values").toObject().value("calls").toObject().value("a").isNull());
        QCOMPARE(rows.at(3).toObject().value("kind").toString(), QString("hop"));
        // Histograms: Get's calls took 10, 20, 30 and 40 ms in A ([10 ms, 20 ms) holds one, [20 ms, 50 ms)
        // three), 30 ms twice in B.
        const QJsonArray edges = o.value("bucket_edges_ns").toArray();
        QCOMPARE(edges.size(), LatencyBuckets::kEdges);
        QCOMPARE(edges.at(0).toInteger(), 10'000);
        const QJsonObject getBuckets = rows.at(1).toObject().value("call_latency_buckets").toObject();
        const QJsonArray ga = getBuckets.value("a").toArray(), gb = getBuckets.value("b").toArray();
        QCOMPARE(ga.size(), LatencyBuckets::kCount);
        const int b20 = LatencyBuckets::bucketOf(10 * ms), b50 = LatencyBuckets::bucketOf(20 * ms);
        QCOMPARE(ga.at(b20).toInt(), 1);
        QCOMPARE(ga.at(b50).toInt(), 3);
        QCOMPARE(gb.at(b50).toInt(), 2);
        int sumA = 0;
        for (const QJsonValue &v : ga)
            sumA += v.toInt();
        QCOMPARE(sumA, 4);
        // Put is not in A: its histogram there is empty.
        const QJsonArray pa =
            rows.at(2).toObject().value("call_latency_buckets").toObject().value("a").toArray();
        QVERIFY(std::all_of(pa.begin(), pa.end(), [](const QJsonValue &v) { return v.toInt() == 0; }));
    }

    void oneSidedJson()
    {
        const QJsonObject o = comparisonToJson(singleStats(storeB(), "b.rpcscope"));
        QCOMPARE(o.value("label").toString(), QString("b.rpcscope"));
        QVERIFY(!o.contains("a"));
        const QJsonObject total = o.value("rows").toArray().at(0).toObject();
        QVERIFY(!total.contains("in_a"));
        const QJsonObject values = total.value("values").toObject();
        QCOMPARE(values.value("attempts").toInteger(), 5);
        QCOMPARE(num(values.value("amplification")), 5.0 / 3.0);
        QCOMPARE(values.value("call_max_ns").toInteger(), 30 * ms);
        QCOMPARE(total.value("attempt_latency_buckets").toArray().size(), LatencyBuckets::kCount);
        QVERIFY(o.contains("bucket_edges_ns"));
    }

    void tableIsAligned()
    {
        const std::string table = comparisonTable(compareStats(storeA(), storeB(), "storm", "throttling"));
        QVERIFY2(table.rfind("A  storm\nB  throttling\n", 0) == 0, table.c_str());
        const QStringList lines = QString::fromStdString(table).split('\n');
        auto line = [&](const QString &start) {
            for (const QString &l : lines)
                if (l.startsWith(start)) return l;
            return QString();
        };
        // The first "  amplification" line is the Total row's.
        const QStringList amp = line("  amplification").split(' ', Qt::SkipEmptyParts);
        QCOMPARE(amp, (QStringList{"amplification", "1.00", "1.67", "+0.67", "1.67"}));
        const QStringList retried =
            line("  OK after retry").split(QRegularExpression("  +"), Qt::SkipEmptyParts);
        QCOMPARE(retried, (QStringList{"OK after retry", "0", "2", "+2", "—"}));
        QVERIFY(table.find("method /t.S/Put  (only in B)") != std::string::npos);
        QVERIFY(table.find("20.0 ms") != std::string::npos);
        // Every value row ends its last column at the same place as the header.
        const QString header = lines.at(3); // after the legend and a blank line
        QVERIFY2(header.endsWith("B/A"), qPrintable(header));
        for (const QString &l : lines)
            if (l.startsWith("  ")) QCOMPARE(l.size(), header.size());
    }

    void oneSidedTable()
    {
        const std::string table = comparisonTable(singleStats(storeA(), "a.rpcscope"));
        QVERIFY2(table.rfind("a.rpcscope\n\n", 0) == 0, table.c_str());
        QVERIFY(table.find("B/A") == std::string::npos);
        QVERIFY(table.find("  call p50") != std::string::npos);
    }

    void formatting()
    {
        using U = CompareValue::Unit;
        QCOMPARE(formatCompareValue(U::Nanoseconds, 850.0), std::string("850 ns"));
        QCOMPARE(formatCompareValue(U::Nanoseconds, 12'345.0), std::string("12.3 µs"));
        QCOMPARE(formatCompareValue(U::Nanoseconds, 1.5e9), std::string("1.50 s"));
        QCOMPARE(formatCompareValue(U::Nanoseconds, -2.5e6, true), std::string("−2.50 ms"));
        QCOMPARE(formatCompareValue(U::Count, 0.0, true), std::string("0"));
        QCOMPARE(formatCompareValue(U::Count, std::nullopt), std::string("—"));
        QCOMPARE(formatRatio(0.3333), std::string("0.33"));
        QCOMPARE(formatRatio(std::nullopt), std::string("—"));
        QCOMPARE(formatRatio(0.0047), std::string("<0.01"));
        QCOMPARE(formatRatio(0.0), std::string("0.00"));
        QCOMPARE(formatRatio(12.34), std::string("12.3"));
    }
};

QTEST_GUILESS_MAIN(TestStatsCompare)
#include "tst_statscompare.moc"
