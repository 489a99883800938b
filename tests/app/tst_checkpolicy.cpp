// rpcscope-cli check (issue 19) on real lab runs: the grpc++ lab client retrying against the lab server,
// recorded by `run --out`, judged against the service config it was given (conforms, exit 0) and against
// deliberately wrong expectations (exit 1, with the numbers). A C-core first retry jittered the way grpc-js
// would jitter it cannot come from the lab's C-core client, so that case is a hand-built capture. Bad input
// exits 2 with one line.

#include "capturereader.h"
#include "capturewriter.h"
#include "redaction.h"
#include "runtool.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;
using testtool::cli;

namespace {

constexpr std::int64_t kMs = 1'000'000;

QByteArray labConfig(int maxAttempts, int initialMs = 50, const char *codes = R"("UNAVAILABLE")")
{
    return QStringLiteral(R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":)"
                          R"({"maxAttempts":%1,"initialBackoff":"%2s","maxBackoff":"1s",)"
                          R"("backoffMultiplier":2,"retryableStatusCodes":[%3]}}]})")
        .arg(maxAttempts)
        .arg(initialMs / 1000.0)
        .arg(QLatin1String(codes))
        .toUtf8();
}

WireEvent headers(std::uint32_t stream, std::int64_t t, Direction dir, std::vector<Header> hs)
{
    WireEvent e;
    e.kind = EventKind::Headers;
    e.connection = 1;
    e.stream = stream;
    e.tNs = t;
    e.dir = dir;
    e.endStream = true;
    e.headers = std::move(hs);
    for (const Header &h : e.headers) {
        if (h.name == ":path") e.grpc.path = h.value;
        if (h.name == ":status") e.grpc.httpStatus = std::stoi(h.value);
        if (h.name == "grpc-status") e.grpc.status = std::stoi(h.value);
        if (h.name == "rpcscope-call-id") e.grpc.callId = h.value;
        if (h.name == "grpc-previous-rpc-attempts") e.grpc.previousAttempts = std::stoi(h.value);
    }
    return e;
}

// One call from `userAgent`: UNAVAILABLE, then OK after `gapMs`.
CaptureData retriedOnce(const std::string &userAgent, double gapMs)
{
    CaptureData data;
    data.info.originNs = 0;
    WireEvent open;
    open.kind = EventKind::ConnectionOpened;
    open.connection = 1;
    open.about = PeerNames{"127.0.0.1:40000", "127.0.0.1:50051"};
    const std::int64_t t0 = 10 * kMs, end1 = t0 + 2 * kMs, t1 = end1 + std::int64_t(gapMs * kMs);
    const std::vector<Header> request = {{":method", "POST"},
                                         {":path", "/rpcscope.lab.Lab/Call"},
                                         {"content-type", "application/grpc"},
                                         {"user-agent", userAgent},
                                         {"rpcscope-call-id", "hand-1"}};
    std::vector<Header> retry = request;
    retry.push_back({"grpc-previous-rpc-attempts", "1"});
    data.batches.push_back(
        {open, headers(1, t0, Direction::ClientToServer, request),
         headers(1, end1, Direction::ServerToClient,
                 {{":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", "14"}}),
         headers(3, t1, Direction::ClientToServer, retry),
         headers(3, t1 + 2 * kMs, Direction::ServerToClient,
                 {{":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", "0"}})});
    return data;
}

// The lab stops its capture as the client shuts its channel down, in either order: when the capture stops
// first, a retry still due after the last attempt is beyond the capture, and check rightly gives that call
// no verdict. A capture that runs on for another second (here: a lab event a second after the last event)
// would have seen the retry; its absence is then a verdict.
bool runOn(const QString &path)
{
    CaptureData data;
    if (!readCaptureFile(path, &data).usable()) return false;
    std::int64_t last = 0;
    for (const EventBatch &b : data.batches)
        for (const WireEvent &e : b)
            last = std::max(last, e.tNs);
    WireEvent later;
    later.kind = EventKind::LabEvent;
    later.tNs = last + 1000 * kMs;
    later.about = LabDecision{"note", "the capture ran on"};
    data.batches.push_back({later});
    std::string error;
    return writeCaptureFile(path, data, Redaction{}, &error);
}

} // namespace

class TestCheckPolicy : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    QString config(const QString &name, const QByteArray &json)
    {
        QFile f(path(name));
        if (!f.open(QIODevice::WriteOnly) || f.write(json) != json.size())
            qFatal("cannot write %s", qPrintable(name));
        return f.fileName();
    }

    QMap<QString, QString> m_recorded;

    // Runs a lab scenario (its defaults) through the capture proxy into NAME.rpcscope, once.
    QString record(const QString &scenario)
    {
        if (m_recorded.contains(scenario)) return m_recorded.value(scenario);
        const QString out = path(scenario + QStringLiteral(".rpcscope"));
        const testtool::Result r = cli({QStringLiteral("run"), scenario, QStringLiteral("--out"), out});
        if (r.code != 0) qWarning("run %s: %s%s", qPrintable(scenario), qPrintable(r.out), qPrintable(r.err));
        if (r.code == 0) m_recorded.insert(scenario, out);
        return r.code == 0 ? out : QString();
    }

    testtool::Result check(const QString &capture, const QString &configPath, bool json = false)
    {
        QStringList args = {QStringLiteral("check"), capture, QStringLiteral("--service-config"), configPath};
        if (json) args << QStringLiteral("--json");
        return cli(args);
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // The lab client's own config: every call conforms.
    void conformingLabRuns_data()
    {
        QTest::addColumn<QString>("scenario");
        QTest::addColumn<QByteArray>("json");
        QTest::newRow("retry-basic") << "retry-basic" << labConfig(3);
        QTest::newRow("max-attempts-4") << "max-attempts-4" << labConfig(4);
        QTest::newRow("non-retryable") << "non-retryable" << labConfig(3);
        QTest::newRow("committed") << "committed" << labConfig(3);
        QTest::newRow("pushback") << "pushback" << labConfig(3);
        QTest::newRow("pushback-stop") << "pushback-stop" << labConfig(3);
        QTest::newRow("deadline-cuts-retries") << "deadline-cuts-retries" << labConfig(5, 100);
        // maxAttempts 10 is judged against C-core's clamp: its 5 attempts are what the client must do.
        QTest::newRow("max-attempts-clamped") << "max-attempts-clamped" << labConfig(10);
    }

    void conformingLabRuns()
    {
        QFETCH(QString, scenario);
        QFETCH(QByteArray, json);
        const QString capture = record(scenario);
        QVERIFY(!capture.isEmpty());
        const testtool::Result r = check(capture, config(scenario + QStringLiteral(".json"), json), true);
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        const QJsonObject doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(doc.value("calls").toInt(), 1);
        QCOMPARE(doc.value("conforming").toBool(), true);
        const QJsonObject row = doc.value("methods").toArray().at(0).toObject();
        QCOMPARE(row.value("method").toString(), QStringLiteral("/rpcscope.lab.Lab/Call"));
        QCOMPARE(row.value("policy").toString(), QStringLiteral("rpcscope.lab.Lab"));
        QVERIFY2(row.value("clients").toString().contains(QLatin1String("(C-core)")), qPrintable(r.out));
        QCOMPARE(row.value("verdicts").toObject().value("conforms").toInt(), 1);
    }

    // A config that expects more than C-core does: maxAttempts 10 against a client that stops at 4 (its own
    // maxAttempts) is short of the 5 the clamp allows; maxAttempts 3 against the clamped client's 5 is over.
    void wrongExpectationsAreFlagged()
    {
        const QString four = record(QStringLiteral("max-attempts-4"));
        QVERIFY(!four.isEmpty());
        QVERIFY(runOn(four));
        testtool::Result r = check(four, config(QStringLiteral("ten.json"), labConfig(10)));
        QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
        QVERIFY2(
            r.out.contains(QLatin1String("attempts differ: stopped after 4 attempts on UNAVAILABLE (14)")),
            qPrintable(r.out));
        QVERIFY2(r.out.contains(QLatin1String("5 are allowed (maxAttempts 10, clamped to 5 by grpc-c++")),
                 qPrintable(r.out));
        QVERIFY2(r.out.contains(QLatin1String("1 of 1 calls do not conform")), qPrintable(r.out));

        const QString clamped = record(QStringLiteral("max-attempts-clamped"));
        QVERIFY(!clamped.isEmpty());
        r = check(clamped, config(QStringLiteral("three.json"), labConfig(3)));
        QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
        QVERIFY2(
            r.out.contains(QLatin1String("attempts differ: 5 attempts where 3 are allowed (maxAttempts 3)")),
            qPrintable(r.out));

        // INTERNAL made retryable: the client's single INTERNAL attempt is now one too few.
        const QString internal = record(QStringLiteral("non-retryable"));
        QVERIFY(!internal.isEmpty());
        QVERIFY(runOn(internal));
        r = check(internal,
                  config(QStringLiteral("internal.json"), labConfig(3, 50, R"("UNAVAILABLE","INTERNAL")")));
        QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QLatin1String("stopped after 1 attempt on INTERNAL (13)")),
                 qPrintable(r.out));
    }

    // grpc-js jitters the first retry in [0.8, 1.2], C-core does not: 820 ms after a 1 s initialBackoff is
    // grpc-js's, never C-core's (whose first retry reads within ms of initialBackoff at the proxy).
    void jitteredFirstRetryIsNotCCore()
    {
        const QString cfg = config(QStringLiteral("hand.json"), labConfig(3, 1000));
        std::string error;
        const QString core = path(QStringLiteral("core.rpcscope"));
        QVERIFY2(writeCaptureFile(core, retriedOnce("grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)", 820.0),
                                  Redaction{}, &error),
                 error.c_str());
        testtool::Result r = check(core, cfg);
        QVERIFY2(r.code == 1, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QLatin1String("gap outside envelope: the gap before attempt 2 was 820.0 ms; "
                                              "grpc-c++ 1.51.1 (C-core) waits exactly initialBackoff")),
                 qPrintable(r.out));
        const QString node = path(QStringLiteral("node.rpcscope"));
        QVERIFY2(writeCaptureFile(node, retriedOnce("grpc-node-js/1.14.7", 820.0), Redaction{}, &error),
                 error.c_str());
        r = check(node, cfg);
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QLatin1String("grpc-node-js 1.14.7")), qPrintable(r.out));
        // An unknown client is judged against the generic envelope, and the summary says so.
        const QString other = path(QStringLiteral("other.rpcscope"));
        QVERIFY2(writeCaptureFile(other, retriedOnce("curl/8.0", 820.0), Redaction{}, &error), error.c_str());
        r = check(other, cfg);
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QLatin1String("unknown client (curl/8.0)")), qPrintable(r.out));
    }

    void badInputExitsTwo()
    {
        const QString cfg = config(QStringLiteral("ok.json"), labConfig(3));
        const QString capture = path(QStringLiteral("core.rpcscope"));
        std::string error;
        QVERIFY(writeCaptureFile(capture, retriedOnce("grpc-go/1.33.3", 30.0), Redaction{}, &error));
        testtool::Result r = check(path(QStringLiteral("missing.rpcscope")), cfg);
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        r = check(capture, path(QStringLiteral("missing.json")));
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QLatin1String("missing.json")), qPrintable(r.err));
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        const QString bad = config(QStringLiteral("bad.json"), labConfig(3).replace("\"0.05s\"", "\"50ms\""));
        r = check(capture, bad);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QLatin1String(
                     "bad.json: methodConfig[0].retryPolicy.initialBackoff: \"50ms\" is not a duration")),
                 qPrintable(r.err));
        QCOMPARE(r.err.count(QLatin1Char('\n')), 1);
        r = cli({QStringLiteral("check"), capture});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QLatin1String("--service-config")), qPrintable(r.err));
        // grpc-go's full jitter: 30 ms after a 50 ms backoff conforms.
        r = check(capture, cfg);
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    }
};

QTEST_GUILESS_MAIN(TestCheckPolicy)
#include "tst_checkpolicy.moc"
