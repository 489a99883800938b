// The OTLP/JSON metrics export (otlpmetrics.h): gRPC's own metric names, units, attributes and buckets
// checked against lists copied from the gRFCs, and exact counts per bucket, sums and attribute sets from
// synthetic stores with known attempts, latencies and sizes.

#include "otlpmetrics.h"
#include "wireevents.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <map>
#include <set>

using namespace rpcscope;

namespace {
using testev::trailers;
constexpr std::int64_t us = 1'000, ms = 1'000'000;
constexpr std::int64_t kWall = 1'700'000'000'000'000'000; // the capture's wall-clock origin
constexpr Direction c2s = Direction::ClientToServer, s2c = Direction::ServerToClient;
constexpr int kOk = 0, kInternal = 13, kUnavailable = 14;
constexpr std::uint32_t kRefusedStream = 7, kCancel = 8;

// gRFC A66 "Client Per-Attempt Instruments" and "Client Per-Call Instruments", and gRFC A96 "Proposal":
// name, instrument type (a Counter is an OTLP monotonic sum), unit and attributes, as the specs list them.
struct SpecMetric
{
    const char *name;
    const char *kind;
    const char *unit;
    QStringList attributes;
};
const std::vector<SpecMetric> kSpec{
    {"grpc.client.attempt.started", "sum", "{attempt}", {"grpc.method", "grpc.target"}},
    {"grpc.client.attempt.duration", "histogram", "s", {"grpc.method", "grpc.target", "grpc.status"}},
    {"grpc.client.attempt.sent_total_compressed_message_size",
     "histogram",
     "By",
     {"grpc.method", "grpc.target", "grpc.status"}},
    {"grpc.client.attempt.rcvd_total_compressed_message_size",
     "histogram",
     "By",
     {"grpc.method", "grpc.target", "grpc.status"}},
    {"grpc.client.call.duration", "histogram", "s", {"grpc.method", "grpc.target", "grpc.status"}},
    {"grpc.client.call.retries", "histogram", "{retry}", {"grpc.method", "grpc.target"}},
    {"grpc.client.call.transparent_retries",
     "histogram",
     "{transparent_retry}",
     {"grpc.method", "grpc.target"}},
    {"grpc.client.call.retry_delay", "histogram", "s", {"grpc.method", "grpc.target"}},
};

// gRFC A66 "Units": "Buckets for histograms in default views".
const QList<double> kLatencyBuckets{
    0,    0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
    0.01, 0.013,   0.016,   0.02,   0.025,  0.03,   0.04,   0.05,  0.065, 0.08,  0.1,   0.13,  0.16,  0.2,
    0.25, 0.3,     0.4,     0.5,    0.65,   0.8,    1,      2,     5,     10,    20,    50,    100};
const QList<double> kSizeBuckets{0,       1024,    2048,     4096,     16384,     65536,      262144,
                                 1048576, 4194304, 16777216, 67108864, 268435456, 1073741824, 4294967296};
// gRFC A96: "Recommended histogram bucket boundaries are [1,2,3,4,5]" (retries), "[1,2,3,4,5,10]"
// (transparent retries); retry_delay uses A66's latency buckets.
const QList<double> kRetryBuckets{1, 2, 3, 4, 5};
const QList<double> kTransparentRetryBuckets{1, 2, 3, 4, 5, 10};

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &path,
                  const std::string &callId, int previous = 0, std::optional<std::int64_t> timeout = {})
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, c2s);
    e.grpc.path = path;
    e.grpc.callId = callId;
    e.grpc.previousAttempts = previous;
    e.grpc.timeoutNs = timeout;
    return e;
}

WireEvent message(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir,
                  std::uint32_t length)
{
    WireEvent e = testev::event(EventKind::Message, conn, stream, t, dir);
    e.length = length; // without the 5-byte prefix
    return e;
}

WireEvent rst(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction by, std::uint32_t code)
{
    return testev::frame(conn, stream, t, by, FrameRstStream, code, 4);
}

const std::string kGet = "/pkg.Svc/Get", kPut = "/pkg.Svc/Put";

// Four calls on two targets:
// a: Get, UNAVAILABLE after 2 ms, a retry 50 ms later, OK after 3 ms;
// b: Get, refused (REFUSED_STREAM) after 0.5 ms, replayed transparently 0.1 ms later, OK after 0.4 ms;
// c: Put through hop A->B to another server, INTERNAL after exactly 1 ms;
// d: Get, still in flight.
void sampleStore(TimelineStore &store)
{
    store.setOrigin(0, kWall);
    store.apply({testev::opened(1, 0, "127.0.0.1:5000", "127.0.0.1:9000"),
                 testev::opened(2, 0, "127.0.0.1:5001", "10.0.0.2:443", "A->B"),
                 request(1, 1, 10 * ms, kGet, "a"), message(1, 1, 10 * ms, c2s, 95),
                 trailers(1, 1, 12 * ms, kUnavailable), request(1, 3, 62 * ms, kGet, "a", 1),
                 message(1, 3, 62 * ms, c2s, 95), message(1, 3, 64 * ms, s2c, 2000),
                 trailers(1, 3, 65 * ms, kOk), request(1, 5, 100 * ms, kGet, "b"),
                 message(1, 5, 100 * ms, c2s, 10), rst(1, 5, 100 * ms + 500 * us, s2c, kRefusedStream),
                 request(1, 7, 100 * ms + 600 * us, kGet, "b"), message(1, 7, 100 * ms + 600 * us, c2s, 10),
                 message(1, 7, 100 * ms + 900 * us, s2c, 5000), trailers(1, 7, 101 * ms, kOk),
                 request(2, 1, 200 * ms, kPut, "c"), trailers(2, 1, 201 * ms, kInternal),
                 request(1, 9, 300 * ms, kGet, "d")});
}

QJsonObject parse(const QByteArray &bytes)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError) qFatal("bad JSON: %s", qPrintable(error.errorString()));
    return doc.object();
}

QJsonArray metricsOf(const QJsonObject &doc)
{
    return doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].toArray();
}

QJsonObject metric(const QJsonObject &doc, const QString &name)
{
    for (const QJsonValue m : metricsOf(doc))
        if (m["name"].toString() == name) return m.toObject();
    return {};
}

QJsonArray pointsOf(const QJsonObject &m)
{
    return (m.contains("sum") ? m["sum"] : m["histogram"])["dataPoints"].toArray();
}

// "grpc.method=pkg.Svc/Get grpc.target=... grpc.status=OK": a data point's attribute set, in its order.
QString attrKey(const QJsonObject &point)
{
    QStringList parts;
    for (const QJsonValue a : point["attributes"].toArray())
        parts << a["key"].toString() + '=' + a["value"]["stringValue"].toString();
    return parts.join(' ');
}

std::map<QString, QJsonObject> pointsByAttrs(const QJsonObject &doc, const QString &name)
{
    std::map<QString, QJsonObject> out;
    for (const QJsonValue p : pointsOf(metric(doc, name)))
        out[attrKey(p.toObject())] = p.toObject();
    return out;
}

qint64 num(const QJsonValue &v)
{
    bool ok = false;
    const qint64 n = v.toString().toLongLong(&ok);
    if (!ok) qFatal("not a decimal string");
    return n;
}

// A histogram point's bucket counts as {bucket index: count}, the empty ones left out.
std::map<int, qint64> buckets(const QJsonObject &point)
{
    std::map<int, qint64> out;
    const QJsonArray counts = point["bucketCounts"].toArray();
    for (int i = 0; i < counts.size(); ++i)
        if (const qint64 n = num(counts[i])) out[i] = n;
    return out;
}

int latencyBucket(double s)
{
    return int(std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), s) - kLatencyBuckets.begin());
}

const QString get9000 = QStringLiteral("grpc.method=pkg.Svc/Get grpc.target=127.0.0.1:9000");
const QString put443 = QStringLiteral("grpc.method=pkg.Svc/Put grpc.target=10.0.0.2:443");
} // namespace

class TestOtlpMetrics : public QObject
{
    Q_OBJECT

private slots:
    void namesUnitsAndKindsFollowTheSpec()
    {
        TimelineStore store;
        sampleStore(store);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const QJsonArray metrics = metricsOf(doc);
        QCOMPARE(metrics.size(), int(kSpec.size()));
        for (size_t i = 0; i < kSpec.size(); ++i) {
            const SpecMetric &spec = kSpec[i];
            const QJsonObject m = metrics[int(i)].toObject();
            QCOMPARE(m["name"].toString(), QString::fromLatin1(spec.name));
            QCOMPARE(m["unit"].toString(), QString::fromLatin1(spec.unit));
            QVERIFY2(!m["description"].toString().isEmpty(), spec.name);
            QVERIFY2(m.contains(spec.kind), spec.name);
            const QJsonObject data = m[spec.kind].toObject();
            QCOMPARE(data["aggregationTemporality"].toInt(), 2); // cumulative
            if (QLatin1String(spec.kind) == QLatin1String("sum"))
                QCOMPARE(data["isMonotonic"].toBool(), true);
            const QJsonArray points = data["dataPoints"].toArray();
            QVERIFY(!points.isEmpty());
            for (const QJsonValue p : points) {
                QStringList keys;
                for (const QJsonValue a : p["attributes"].toArray())
                    keys << a["key"].toString();
                QCOMPARE(keys, spec.attributes);
                // Every point covers the capture: from its wall-clock origin to its latest event (300 ms).
                QCOMPARE(num(p["startTimeUnixNano"]), kWall);
                QCOMPARE(num(p["timeUnixNano"]), kWall + 300 * ms);
            }
        }
    }

    void bucketBoundariesFollowTheSpec()
    {
        TimelineStore store;
        sampleStore(store);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const std::map<QString, QList<double>> expected{
            {"grpc.client.attempt.duration", kLatencyBuckets},
            {"grpc.client.attempt.sent_total_compressed_message_size", kSizeBuckets},
            {"grpc.client.attempt.rcvd_total_compressed_message_size", kSizeBuckets},
            {"grpc.client.call.duration", kLatencyBuckets},
            {"grpc.client.call.retries", kRetryBuckets},
            {"grpc.client.call.transparent_retries", kTransparentRetryBuckets},
            {"grpc.client.call.retry_delay", kLatencyBuckets},
        };
        for (const auto &[name, bounds] : expected) {
            const QJsonArray points = pointsOf(metric(doc, name));
            QVERIFY2(!points.isEmpty(), qPrintable(name));
            for (const QJsonValue p : points) {
                QList<double> got;
                for (const QJsonValue b : p["explicitBounds"].toArray())
                    got << b.toDouble();
                QCOMPARE(got, bounds);
                QCOMPARE(p["bucketCounts"].toArray().size(), int(bounds.size()) + 1);
            }
        }
        // The header's constants are the same lists.
        QCOMPARE(QList<double>(otlpmetrics::kLatencyBoundsS.begin(), otlpmetrics::kLatencyBoundsS.end()),
                 kLatencyBuckets);
        QCOMPARE(QList<double>(otlpmetrics::kSizeBoundsBy.begin(), otlpmetrics::kSizeBoundsBy.end()),
                 kSizeBuckets);
    }

    void resourceAndScope()
    {
        TimelineStore store;
        sampleStore(store);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        QCOMPARE(doc["resourceMetrics"].toArray().size(), 1);
        const QJsonObject rm = doc["resourceMetrics"][0].toObject();
        QString service;
        for (const QJsonValue a : rm["resource"]["attributes"].toArray())
            if (a["key"] == "service.name") service = a["value"]["stringValue"].toString();
        QCOMPARE(service, QStringLiteral("rpcscope-capture"));
        QCOMPARE(rm["scopeMetrics"].toArray().size(), 1);
        const QJsonObject scope = rm["scopeMetrics"][0]["scope"].toObject();
        QCOMPARE(scope["name"].toString(), QStringLiteral("rpcscope"));
        QVERIFY(QRegularExpression("^\\d+\\.\\d+\\.\\d+$").match(scope["version"].toString()).hasMatch());
    }

    void attemptsCountedPerMethodAndTarget()
    {
        TimelineStore store;
        sampleStore(store);
        const auto started =
            pointsByAttrs(parse(timelineToOtlpMetricsBytes(store)), "grpc.client.attempt.started");
        QCOMPARE(started.size(), size_t(2));
        QCOMPARE(num(started.at(get9000)["asInt"]), 5); // a: 2, b: 2, d (in flight): 1
        QCOMPARE(num(started.at(put443)["asInt"]), 1);
    }

    void attemptDurationsPerStatus()
    {
        TimelineStore store;
        sampleStore(store);
        const auto d =
            pointsByAttrs(parse(timelineToOtlpMetricsBytes(store)), "grpc.client.attempt.duration");
        QCOMPARE(d.size(), size_t(3)); // the open attempt of d records no duration
        const QJsonObject unavailable = d.at(get9000 + " grpc.status=UNAVAILABLE"),
                          ok = d.at(get9000 + " grpc.status=OK"),
                          internal = d.at(put443 + " grpc.status=INTERNAL");
        // A bound holds the values up to and including it: 2 ms lands in (1 ms, 2 ms], 1 ms in (0.8 ms, 1
        // ms].
        QCOMPARE(latencyBucket(0.002), 8);
        QCOMPARE(buckets(unavailable), (std::map<int, qint64>{{5, 1}, {8, 1}})); // 0.5 ms (refused), 2 ms
        QCOMPARE(num(unavailable["count"]), 2);
        QCOMPARE(unavailable["sum"].toDouble(), 0.0025);
        QCOMPARE(unavailable["min"].toDouble(), 0.0005);
        QCOMPARE(unavailable["max"].toDouble(), 0.002);
        QCOMPARE(buckets(ok), (std::map<int, qint64>{{5, 1}, {9, 1}})); // 0.4 ms, 3 ms
        QCOMPARE(ok["sum"].toDouble(), 0.0034);
        QCOMPARE(buckets(internal), (std::map<int, qint64>{{7, 1}})); // exactly 1 ms
        QCOMPARE(internal["sum"].toDouble(), 0.001);
    }

    void messageSizesWithoutFraming()
    {
        TimelineStore store;
        sampleStore(store);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const auto sent = pointsByAttrs(doc, "grpc.client.attempt.sent_total_compressed_message_size");
        const auto rcvd = pointsByAttrs(doc, "grpc.client.attempt.rcvd_total_compressed_message_size");
        const QString unavailable = get9000 + " grpc.status=UNAVAILABLE", ok = get9000 + " grpc.status=OK",
                      internal = put443 + " grpc.status=INTERNAL";
        // Message bytes only: the 5-byte gRPC prefix of each message is framing.
        QCOMPARE(sent.at(unavailable)["sum"].toDouble(), 95.0 + 10.0);
        QCOMPARE(buckets(sent.at(unavailable)), (std::map<int, qint64>{{1, 2}}));
        QCOMPARE(sent.at(ok)["sum"].toDouble(), 95.0 + 10.0);
        QCOMPARE(rcvd.at(unavailable)["sum"].toDouble(), 0.0);
        QCOMPARE(buckets(rcvd.at(unavailable)), (std::map<int, qint64>{{0, 2}})); // nothing: the 0 bucket
        QCOMPARE(rcvd.at(ok)["sum"].toDouble(), 2000.0 + 5000.0);
        QCOMPARE(buckets(rcvd.at(ok)),
                 (std::map<int, qint64>{{2, 1}, {4, 1}})); // (1024, 2048], (4096, 16384]
        QCOMPARE(rcvd.at(ok)["max"].toDouble(), 5000.0);
        QCOMPARE(buckets(sent.at(internal)), (std::map<int, qint64>{{0, 1}}));
    }

    void callDurationsAndRetries()
    {
        TimelineStore store;
        sampleStore(store);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const auto calls = pointsByAttrs(doc, "grpc.client.call.duration");
        QCOMPARE(calls.size(), size_t(2)); // d is in flight
        const QJsonObject ok = calls.at(get9000 + " grpc.status=OK");
        QCOMPARE(num(ok["count"]), 2);
        QCOMPARE(buckets(ok), (std::map<int, qint64>{{7, 1}, {22, 1}})); // b: 1 ms; a: 55 ms in (50, 65]
        QCOMPARE(latencyBucket(0.055), 22);
        QCOMPARE(ok["sum"].toDouble(), 0.056);
        QCOMPARE(num(calls.at(put443 + " grpc.status=INTERNAL")["count"]), 1);

        // Retries and transparent retries: only calls that had one are recorded (A96: "0 is not reported").
        const auto retries = pointsByAttrs(doc, "grpc.client.call.retries");
        QCOMPARE(retries.size(), size_t(1));
        QCOMPARE(num(retries.at(get9000)["count"]), 1); // a
        QCOMPARE(retries.at(get9000)["sum"].toDouble(), 1.0);
        QCOMPARE(buckets(retries.at(get9000)), (std::map<int, qint64>{{0, 1}}));
        const auto transparent = pointsByAttrs(doc, "grpc.client.call.transparent_retries");
        QCOMPARE(transparent.size(), size_t(1));
        QCOMPARE(num(transparent.at(get9000)["count"]), 1); // b
        QCOMPARE(transparent.at(get9000)["sum"].toDouble(), 1.0);

        // The retry delay of every ended call: a waited 50 ms, b 0.1 ms, c not at all.
        const auto delay = pointsByAttrs(doc, "grpc.client.call.retry_delay");
        QCOMPARE(delay.size(), size_t(2));
        QCOMPARE(num(delay.at(get9000)["count"]), 2);
        QCOMPARE(buckets(delay.at(get9000)), (std::map<int, qint64>{{3, 1}, {21, 1}}));
        QVERIFY(qAbs(delay.at(get9000)["sum"].toDouble() - 0.0501) < 1e-12);
        QCOMPARE(buckets(delay.at(put443)), (std::map<int, qint64>{{0, 1}}));
        QCOMPARE(delay.at(put443)["sum"].toDouble(), 0.0);
    }

    void manyRetriesFillTheCountBuckets()
    {
        // Calls with 1 to 7 retries after UNAVAILABLE: A96's buckets [1,2,3,4,5] put 6 and 7 in the last.
        TimelineStore store;
        store.setOrigin(0, kWall);
        EventBatch batch{testev::opened(1, 0)};
        std::uint32_t stream = 1;
        std::int64_t t = 0;
        for (int retries = 1; retries <= 7; ++retries) {
            const std::string id = "call-" + std::to_string(retries);
            for (int k = 0; k <= retries; ++k, stream += 2, t += 10 * ms) {
                batch.push_back(request(1, stream, t, kGet, id, k));
                batch.push_back(trailers(1, stream, t + ms, k == retries ? kOk : kUnavailable));
            }
        }
        store.apply(batch);
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const QJsonObject r = pointsByAttrs(doc, "grpc.client.call.retries")
                                  .at(QStringLiteral("grpc.method=pkg.Svc/Get grpc.target=127.0.0.1:9000"));
        QCOMPARE(num(r["count"]), 7);
        QCOMPARE(r["sum"].toDouble(), 28.0);
        QCOMPARE(buckets(r), (std::map<int, qint64>{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 2}}));
        QVERIFY(metric(doc, "grpc.client.call.transparent_retries").isEmpty()); // none: no metric
        QCOMPARE(num(pointsByAttrs(doc, "grpc.client.attempt.started").begin()->second["asInt"]), 35);
    }

    void clientOutcomeGivesTheCallStatus()
    {
        // The client gave up at its 50 ms deadline and reset the stream: no grpc-status on the wire, and
        // both the attempt and the call end DEADLINE_EXCEEDED (clientoutcome.h) at the deadline.
        TimelineStore store;
        store.setOrigin(0, kWall);
        store.apply({testev::opened(1, 0), request(1, 1, 0, kGet, "late", 0, 50 * ms),
                     rst(1, 1, 50 * ms + 200 * us, c2s, kCancel),
                     // A reset by the client before any deadline: CANCELLED.
                     request(1, 3, 100 * ms, kPut, "cancelled"), rst(1, 3, 103 * ms, c2s, kCancel)});
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const auto calls = pointsByAttrs(doc, "grpc.client.call.duration");
        const QJsonObject late = calls.at(QStringLiteral(
            "grpc.method=pkg.Svc/Get grpc.target=127.0.0.1:9000 grpc.status=DEADLINE_EXCEEDED"));
        QCOMPARE(late["sum"].toDouble(), 0.05);
        QVERIFY(calls.count(
            QStringLiteral("grpc.method=pkg.Svc/Put grpc.target=127.0.0.1:9000 grpc.status=CANCELLED")));
        const auto attempts = pointsByAttrs(doc, "grpc.client.attempt.duration");
        QVERIFY(attempts.count(QStringLiteral(
            "grpc.method=pkg.Svc/Get grpc.target=127.0.0.1:9000 grpc.status=DEADLINE_EXCEEDED")));
    }

    void streamsEndedWithoutAStatus()
    {
        // No grpc-status on the wire: gRPC's mapping of the HTTP/2 error, or UNAVAILABLE for a connection
        // that closed under the stream; a code beyond the known ones reads UNKNOWN.
        TimelineStore store;
        store.setOrigin(0, kWall);
        constexpr std::uint32_t kInternalError = 2, kEnhanceYourCalm = 11;
        WireEvent closed = testev::event(EventKind::ConnectionClosed, 2, 0, 40 * ms);
        closed.reason = "closed by server";
        store.apply({testev::opened(1, 0), testev::opened(2, 0, "127.0.0.1:5001", "127.0.0.1:9000"),
                     request(1, 1, 0, kGet, "reset"), rst(1, 1, 1 * ms, s2c, kInternalError),
                     request(1, 3, 10 * ms, kGet, "calm"), rst(1, 3, 11 * ms, s2c, kEnhanceYourCalm),
                     request(1, 5, 20 * ms, kGet, "odd"), trailers(1, 5, 21 * ms, 99),
                     request(2, 1, 30 * ms, kPut, "closed"), closed});
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        const auto calls = pointsByAttrs(doc, "grpc.client.call.duration");
        QStringList got;
        for (const auto &[attrs, point] : calls)
            got << attrs.section("grpc.status=", 1) + ':' + QString::number(num(point["count"]));
        got.sort();
        QCOMPARE(got, (QStringList{"INTERNAL:1", "RESOURCE_EXHAUSTED:1", "UNAVAILABLE:1", "UNKNOWN:1"}));
        // The attempts read the same.
        QCOMPARE(pointsByAttrs(doc, "grpc.client.attempt.duration").size(), size_t(4));
    }

    void emptyStore()
    {
        TimelineStore store;
        const QJsonObject doc = parse(timelineToOtlpMetricsBytes(store));
        QVERIFY(doc["resourceMetrics"].isArray());
        QCOMPARE(metricsOf(doc).size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestOtlpMetrics)
#include "tst_otlpmetrics.moc"
