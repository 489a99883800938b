// The real rpcscope window (offscreen) capturing with its ingestion endpoint, under a burst of 200,000
// JSON-lines events: a SIGINT in the middle of it still quits promptly, and every event the endpoint
// acknowledged was applied or is counted as dropped at the quit. The bound is one of correctness (a GUI
// thread that keeps turning), not a speed goal: scripts/bench.sh --burst measures the times.

#include "burstprobe.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>
#include <csignal>

namespace {

QString guiBinary()
{
    const QByteArray other = qgetenv("RPCSCOPE_BURST_GUI"); // another build of the window, to compare
    return other.isEmpty() ? QStringLiteral(RPCSCOPE_GUI) : QString::fromLocal8Bit(other);
}

} // namespace

class TestIngestBurst : public QObject
{
    Q_OBJECT
private slots:
    void sigintQuitsDuringABurst()
    {
        const burstprobe::Target target;
        QProcess gui;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        gui.setProcessEnvironment(env);
        gui.start(guiBinary(), {"--no-lab", "--capture",
                                QStringLiteral("burst@127.0.0.1:0=127.0.0.1:%1").arg(target.port)});
        QVERIFY2(gui.waitForStarted(), qPrintable(gui.errorString()));
        const pid_t pid = pid_t(gui.processId());
        QString out;
        QTRY_VERIFY_WITH_TIMEOUT(
            (out += QString::fromUtf8(gui.readAllStandardOutput())).contains("capturing"), 20'000);
        std::uint16_t port = 0;
        if (!out.contains("JSON lines on")) QTest::qWait(300); // the address follows the hops' lines
        out += QString::fromUtf8(gui.readAllStandardOutput());
        const auto m = QRegularExpression(R"(JSON lines on 127\.0\.0\.1:(\d+))").match(out);
        if (m.hasMatch())
            port = std::uint16_t(m.captured(1).toUInt());
        else // a build that does not say where it listens
            port = burstprobe::findJsonPort(burstprobe::listeningPorts(pid));
        QVERIFY2(port != 0, qPrintable(out));

        constexpr int kEvents = 200'000;
        burstprobe::Burst burst(port, kEvents);
        QVERIFY(burst.connected());
        // In the middle of the burst: at least half of it handed over, or 20 s, whichever comes first.
        QElapsedTimer sending;
        sending.start();
        while (burst.written() < kEvents / 2 && !burst.writeDone() && sending.elapsed() < 20'000)
            QTest::qWait(5);
        QVERIFY2(burst.written() > 0, "the endpoint read nothing");

        QElapsedTimer quitting;
        quitting.start();
        ::kill(pid, SIGINT);
        const bool quit = gui.waitForFinished(10'000);
        const qint64 took = quitting.elapsed();
        if (!quit) {
            gui.kill();
            gui.waitForFinished();
        }
        QVERIFY2(quit, qPrintable(QStringLiteral("still running %1 ms after SIGINT, %2 of %3 events sent")
                                      .arg(took)
                                      .arg(burst.written())
                                      .arg(kEvents)));
        QCOMPARE(gui.exitStatus(), QProcess::NormalExit);
        QCOMPARE(gui.exitCode(), 0);
        const QString err = QString::fromUtf8(gui.readAllStandardError());
        QVERIFY2(err.contains("quitting on a signal"), qPrintable(err));
        qInfo("SIGINT to exit: %lld ms with %d of %d events sent, %d answered", took, burst.written(),
              kEvents, burst.answered());

        // Every event acknowledged is accounted for: applied, or still queued and dropped at the quit.
        const auto counts =
            QRegularExpression(R"(applied (\d+) events; (\d+) queued were dropped; .* refused (\d+))")
                .match(err);
        QVERIFY2(counts.hasMatch(), qPrintable(err));
        const qint64 applied = counts.captured(1).toLongLong(), dropped = counts.captured(2).toLongLong();
        QVERIFY2(applied > 0, qPrintable(err));
        QVERIFY2(applied + dropped >= burst.answered(), qPrintable(err));
        QVERIFY2(applied + dropped <= kEvents + 1, qPrintable(err)); // the port probe may add one
    }
};

QTEST_GUILESS_MAIN(TestIngestBurst)
#include "tst_ingestburst.moc"
