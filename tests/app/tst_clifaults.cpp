// rpcscope-cli capture --fault / --faults: a malformed rule is refused before anything starts, with exit 2
// and one line naming the rule and the problem; a rule that acts is noted on its connection in the output and
// counted in the hit report at the end.

#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "runtool.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>

using testtool::cli;

class TestCliFaults : public QObject
{
    Q_OBJECT

private slots:
    void refusesBadRules_data();
    void refusesBadRules();
    void helpListsTheRules();
    void closeIsNotedAndCounted();
    void streamAbortIsRetried();
};

void TestCliFaults::refusesBadRules_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("says");
    QTest::newRow("unknown action") << QStringList{"--fault", "explode"}
                                    << "--fault 'explode': unknown action 'explode'";
    QTest::newRow("bad glob") << QStringList{"--fault", "abort method=/a/[b"}
                              << "the method glob '/a/[b' has a [ without its ]";
    QTest::newRow("status out of range") << QStringList{"--fault", "abort status=17"}
                                         << "status 17 is out of range: a failing gRPC status is 1-16";
    QTest::newRow("unknown key") << QStringList{"--fault", "close colour=red"} << "unknown key 'colour'";
    QTest::newRow("second of two") << QStringList{"--fault", "close", "--fault", "blackhole nth=0"}
                                   << "--fault 'blackhole nth=0': nth=0: expected a count from 1";
    QTest::newRow("no rule") << QStringList{"--fault"} << "option --fault needs a rule";
    QTest::newRow("no file") << QStringList{"--faults", "/nonexistent/faults.json"} << "--faults cannot read";
}

void TestCliFaults::refusesBadRules()
{
    QFETCH(QStringList, args);
    QFETCH(QString, says);
    // The target is never reached: a rule is checked before anything else is.
    const testtool::Result r =
        cli(QStringList{"capture", "--target", "127.0.0.1:9", "--out", "never.json"} + args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(says), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count('\n'), 0);
    QVERIFY(!QFile::exists("never.json"));
}

void TestCliFaults::helpListsTheRules()
{
    const testtool::Result r = cli({"capture", "--help"});
    QCOMPARE(r.code, 0);
    for (const char *action :
         {"blackhole", "close", "tcp-reset", "bandwidth", "slow-close", "abort", "delay"})
        QVERIFY2(r.out.contains(QLatin1String(action)), action);
}

void TestCliFaults::closeIsNotedAndCounted()
{
    rpcscope::lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    QTemporaryDir dir;
    const QString out = dir.filePath("faults.json");
    const QString rulesFile = dir.filePath("rules.json");
    {
        QFile f(rulesFile);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"faults": [{"action": "blackhole", "hop": "elsewhere"}]})");
    }
    QProcess p;
    p.start(QStringLiteral(RPCSCOPE_CLI),
            {"capture", "--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out,
             "--fault", "close nth=1", "--faults", rulesFile});
    QVERIFY(p.waitForStarted());
    QString printed;
    QDeadlineTimer deadline(10000);
    while (!printed.contains('\n') && !deadline.hasExpired() && p.state() == QProcess::Running) {
        p.waitForReadyRead(100);
        printed += QString::fromUtf8(p.readAllStandardOutput());
    }
    const auto m = QRegularExpression(R"(listening on 127\.0\.0\.1:(\d+))").match(printed);
    QVERIFY2(m.hasMatch(), qPrintable(printed));
    {
        rpcscope::lab::LabClient client("127.0.0.1:" + m.captured(1).toStdString(), {});
        rpcscope::lab::CallRequest req;
        req.set_call_id("closed-1");
        QCOMPARE(client.call(req, std::chrono::seconds(5)).code,
                 14); // its connection was closed: UNAVAILABLE
    }
    p.terminate();
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 0);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("fault rule 1 (close nth=1): 1 hit\n"), qPrintable(err));
    QVERIFY2(err.contains("fault rule 2 (blackhole hop=elsewhere): 0 hits"), qPrintable(err));
    QVERIFY2(err.contains("warning: fault rule 2 names the hop 'elsewhere'"), qPrintable(err));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray connections =
        QJsonDocument::fromJson(f.readAll()).object().value("connections").toArray();
    QVERIFY(!connections.isEmpty());
    const QJsonObject first = connections.first().toObject();
    QCOMPARE(first.value("notes").toArray().first().toString(), QStringLiteral("fault: close (rule 1)"));
    QCOMPARE(first.value("close_reason").toString(), QStringLiteral("fault: close (rule 1)"));
}

void TestCliFaults::streamAbortIsRetried()
{
    rpcscope::lab::LabServer server;
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    QTemporaryDir dir;
    const QString out = dir.filePath("abort.json");
    QProcess p;
    p.start(QStringLiteral(RPCSCOPE_CLI),
            {"capture", "--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out,
             "--fault", "abort status=UNAVAILABLE attempt=1"});
    QVERIFY(p.waitForStarted());
    QString printed;
    QDeadlineTimer deadline(10000);
    while (!printed.contains('\n') && !deadline.hasExpired() && p.state() == QProcess::Running) {
        p.waitForReadyRead(100);
        printed += QString::fromUtf8(p.readAllStandardOutput());
    }
    const auto m = QRegularExpression(R"(listening on 127\.0\.0\.1:(\d+))").match(printed);
    QVERIFY2(m.hasMatch(), qPrintable(printed));
    {
        const std::string config =
            R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":3,)"
            R"("initialBackoff":"0.01s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";
        rpcscope::lab::LabClient client("127.0.0.1:" + m.captured(1).toStdString(), config);
        rpcscope::lab::CallRequest req;
        req.set_call_id("cli-abort-1");
        QCOMPARE(client.call(req, std::chrono::seconds(10)).code, 0);
    }
    // The server saw the call once, as its second attempt.
    const auto arrivals = server.arrivalsFor("cli-abort-1");
    QCOMPARE(arrivals.size(), size_t(1));
    QCOMPARE(arrivals[0].previousAttempts.value_or(0), 1);
    p.terminate();
    QVERIFY(p.waitForFinished(20000));
    QCOMPARE(p.exitCode(), 0);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains("fault rule 1 (abort status=UNAVAILABLE attempt=1): 1 hit"), qPrintable(err));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY2(f.readAll().contains("fault: abort UNAVAILABLE before the server (rule 1)"),
             "no injection note");
}

QTEST_GUILESS_MAIN(TestCliFaults)
#include "tst_clifaults.moc"
