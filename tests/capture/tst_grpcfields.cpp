#include "grpcfields.h"

#include <QtTest>

using namespace rpcscope;

class TestGrpcFields : public QObject
{
    Q_OBJECT
private slots:
    void timeout_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("ns"); // -1: malformed
        QTest::newRow("ms") << "250m" << qint64(250'000'000);
        QTest::newRow("c-core 10ms steps") << "1230m" << qint64(1'230'000'000);
        QTest::newRow("seconds") << "5S" << qint64(5'000'000'000);
        QTest::newRow("minutes") << "2M" << qint64(120'000'000'000);
        QTest::newRow("hours") << "1H" << qint64(3'600'000'000'000);
        QTest::newRow("micros") << "7u" << qint64(7'000);
        QTest::newRow("past deadline") << "1n" << qint64(1);
        QTest::newRow("8 digits") << "99999999S" << qint64(99'999'999'000'000'000);
        QTest::newRow("9 digits") << "999999999S" << qint64(-1);
        // 8 digits of hours or minutes overflow int64 ns: capped at what the model takes (events.h).
        QTest::newRow("8 digits of hours") << "99999999H" << qint64(kMaxTimeoutNs);
        QTest::newRow("8 digits of minutes") << "99999999M" << qint64(kMaxTimeoutNs);
        QTest::newRow("largest uncapped") << "5000000M" << qint64(300'000'000'000'000'000);
        QTest::newRow("no unit") << "100" << qint64(-1);
        QTest::newRow("bad unit") << "100x" << qint64(-1);
        QTest::newRow("empty") << "" << qint64(-1);
        QTest::newRow("negative") << "-5m" << qint64(-1);
        QTest::newRow("unit only") << "m" << qint64(-1);
    }
    void timeout()
    {
        QFETCH(QString, text);
        QFETCH(qint64, ns);
        const auto v = parseGrpcTimeout(text.toStdString());
        if (ns < 0)
            QVERIFY(!v.has_value());
        else
            QCOMPARE(v.value_or(-2), ns);
    }

    void percent()
    {
        QCOMPARE(percentDecode("a%20b"), std::string("a b"));
        QCOMPARE(percentDecode("%E7%AC%AC 1"), std::string("\xE7\xAC\xAC 1"));
        QCOMPARE(percentDecode("100%"), std::string("100%"));
        QCOMPARE(percentDecode("%zz%4"), std::string("%zz%4"));
        QCOMPARE(percentDecode("%41%42"), std::string("AB"));
    }

    void fields()
    {
        const std::vector<Header> req = {{":method", "POST"},
                                         {":path", "/pkg.Svc/M"},
                                         {"grpc-timeout", "99m"},
                                         {"grpc-previous-rpc-attempts", "2"},
                                         {"rpcscope-call-id", "c-7"}};
        const GrpcFields r = extractGrpcFields(req);
        QCOMPARE(r.path, std::string("/pkg.Svc/M"));
        QCOMPARE(r.timeoutNs.value_or(0), std::int64_t(99'000'000));
        QCOMPARE(r.previousAttempts.value_or(-1), 2);
        QCOMPARE(r.callId, std::string("c-7"));
        QVERIFY(r.encoding.empty());
        QCOMPARE(extractGrpcFields({{"grpc-encoding", "gzip"}}).encoding, std::string("gzip"));
        QVERIFY(!r.status);

        const std::vector<Header> trailers = {
            {"grpc-status", "14"}, {"grpc-message", "down%21"}, {"grpc-retry-pushback-ms", "300"}};
        const GrpcFields t = extractGrpcFields(trailers);
        QCOMPARE(t.status.value_or(-1), 14);
        QCOMPARE(t.message.value_or(""), std::string("down!"));
        QCOMPARE(t.pushbackMs.value_or(0), std::int64_t(300));

        const GrpcFields policy =
            extractGrpcFields({{"rpcscope-retry-policy", "initial_ms=50;multiplier=2;max_ms=1000"}});
        QCOMPARE(policy.retryInitialMs, 50.0);
        QCOMPARE(policy.retryMultiplier, 2.0);
        QCOMPARE(policy.retryMaxMs, 1000.0);
        QCOMPARE(extractGrpcFields({{"rpcscope-retry-policy", "initial_ms=fast"}}).retryInitialMs, 0.0);
        QCOMPARE(extractGrpcFields({{"rpcscope-retry-policy", "initial_ms=50"}}).retryInitialMs, 0.0);
        // from_chars reads "nan" and "inf" too: not a policy.
        QCOMPARE(extractGrpcFields({{"rpcscope-retry-policy", "initial_ms=nan;multiplier=2;max_ms=1000"}})
                     .retryInitialMs,
                 0.0);
        QCOMPARE(extractGrpcFields({{"rpcscope-retry-policy", "initial_ms=50;multiplier=inf;max_ms=1000"}})
                     .retryInitialMs,
                 0.0);

        // C-core treats a malformed pushback like a negative one: stop retrying.
        QCOMPARE(extractGrpcFields({{"grpc-retry-pushback-ms", "soon"}}).pushbackMs.value_or(0),
                 std::int64_t(-1));
    }

    void traceparent_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("trace"); // empty: rejected
        QTest::addColumn<QString>("parent");
        const QString t = QStringLiteral("4bf92f3577b34da6a3ce929d0e0e4736"),
                      p = QStringLiteral("00f067aa0ba902b7");
        QTest::newRow("w3c example") << "00-" + t + "-" + p + "-01" << t << p;
        QTest::newRow("not sampled") << "00-" + t + "-" + p + "-00" << t << p;
        QTest::newRow("future version, extra field") << "01-" + t + "-" + p + "-01-what-ever" << t << p;
        QTest::newRow("future version, glued field")
            << "01-" + t + "-" + p + "-01x" << QString() << QString();
        QTest::newRow("version 00 is exactly 55") << "00-" + t + "-" + p + "-01-x" << QString() << QString();
        QTest::newRow("version ff") << "ff-" + t + "-" + p + "-01" << QString() << QString();
        QTest::newRow("upper case") << "00-" + t.toUpper() + "-" + p + "-01" << QString() << QString();
        QTest::newRow("zero trace") << "00-" + QString(32, '0') + "-" + p + "-01" << QString() << QString();
        QTest::newRow("zero parent") << "00-" + t + "-" + QString(16, '0') + "-01" << QString() << QString();
        QTest::newRow("short trace") << "00-" + t.left(31) + "-" + p + "-01" << QString() << QString();
        QTest::newRow("not hex") << "00-" + t + "-" + p.left(15) + "g-01" << QString() << QString();
        QTest::newRow("wrong separator") << "00_" + t + "-" + p + "-01" << QString() << QString();
        QTest::newRow("empty") << QString() << QString() << QString();
    }
    void traceparent()
    {
        QFETCH(QString, text);
        QFETCH(QString, trace);
        QFETCH(QString, parent);
        std::string traceId = "untouched", parentId = "untouched";
        QCOMPARE(parseTraceparent(text.toStdString(), &traceId, &parentId), !trace.isEmpty());
        QCOMPARE(traceId, trace.isEmpty() ? std::string("untouched") : trace.toStdString());
        QCOMPARE(parentId, parent.isEmpty() ? std::string("untouched") : parent.toStdString());

        // As metadata of a request: the fields land in GrpcFields, and a malformed header leaves them empty.
        const GrpcFields f = extractGrpcFields({{":path", "/a/B"}, {"traceparent", text.toStdString()}});
        QCOMPARE(f.traceId, trace.toStdString());
        QCOMPARE(f.parentSpanId, parent.toStdString());
    }
};

QTEST_GUILESS_MAIN(TestGrpcFields)
#include "tst_grpcfields.moc"
