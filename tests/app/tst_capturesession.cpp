// The "New capture…" workflow, driven offscreen: inline errors for bad input, then a real grpc++ client calls
// a real lab server through two labelled hops, the calls appear on the model, pause stops recording, stop
// ends it.

#include "capturedialog.h"
#include "capturefile.h"
#include "capturesession.h"
#include "jsonexport.h"
#include "labclient.h"
#include "labserver.h"
#include "modelfeed.h"
#include "testnet.h"
#include "timelinemodel.h"

#include <QApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QtTest>
#include <csignal>
#include <cstring>
#include <sys/resource.h>

using namespace rpcscope;

namespace {
const Call *callByKey(const TimelineStore &store, const std::string &key)
{
    for (const Call &c : store.calls())
        if (c.key == key) return &c;
    return nullptr;
}

// The calls in a capture file (whole or truncated), by key; empty when it does not read.
std::vector<std::string> callsIn(const QString &path)
{
    CaptureData data;
    if (!readCaptureFile(path, &data).usable()) return {};
    TimelineStore store;
    replayCapture(data, store);
    std::vector<std::string> keys;
    for (const Call &c : store.calls())
        keys.push_back(c.key);
    return keys;
}

lab::CallRequest request(const std::string &id)
{
    lab::CallRequest r;
    r.set_call_id(id);
    r.set_response_size(10);
    return r;
}
} // namespace

class TestCaptureSession : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_capturesession"));
        QSettings().clear();
        std::string error;
        QVERIFY2(m_server.start(&error), error.c_str());
        m_target = QStringLiteral("127.0.0.1:%1").arg(m_server.port());
    }

    void badInputIsShownInline_data()
    {
        QTest::addColumn<QString>("listen");
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("expected");
        const QString busy = QStringLiteral("127.0.0.1:%1").arg(m_server.port()); // the lab server holds it
        const QString closed = QStringLiteral("127.0.0.1:%1").arg(testnet::closedPort());
        QTest::newRow("listen syntax")
            << "localhost" << m_target << "Listen: expected HOST:PORT, got 'localhost'";
        QTest::newRow("bad port") << "127.0.0.1:99999" << m_target << "Listen: bad port '99999'";
        QTest::newRow("port in use") << busy << m_target
                                     << QStringLiteral("Listen: port %1 is in use").arg(m_server.port());
        QTest::newRow("remote without consent")
            << "0.0.0.0:0" << m_target << "Listen: 0.0.0.0 is reachable from other machines";
        QTest::newRow("empty target") << "127.0.0.1:0"
                                      << ""
                                      << "Target: give the HOST:PORT";
        QTest::newRow("target unreachable")
            << "127.0.0.1:0" << closed << "Target: target " + closed + " is unreachable";
        QTest::newRow("unresolvable target") << "127.0.0.1:0"
                                             << "no-such-host.invalid:50051"
                                             << "Target: cannot resolve 'no-such-host.invalid'";
    }

    void badInputIsShownInline()
    {
        QFETCH(QString, listen);
        QFETCH(QString, target);
        QFETCH(QString, expected);
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.setHops({{QStringLiteral("front->api"), listen, target}});
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.errorText(0).startsWith(expected), qPrintable(dialog.errorText(0)));
        QVERIFY(!session.isRunning());
        QVERIFY(!dialog.isShowingAddresses());
    }

    void twoHopsOnOneTimeline()
    {
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        QSignalSpy running(&session, &CaptureSession::runningChanged);
        dialog.setHops({{QStringLiteral("front->api"), QStringLiteral("127.0.0.1:0"), m_target}});
        dialog.addHop();
        auto hops = dialog.hops();
        QCOMPARE(hops.size(), size_t(2));
        QVERIFY2(!hops[1].listen.endsWith(":0"), "a new row suggests a free port");
        hops[1].label = QStringLiteral("api->db");
        hops[1].target = m_target;
        dialog.setHops(hops);
        QTest::mouseClick(dialog.startButton(), Qt::LeftButton); // Start, as a user would
        QVERIFY2(dialog.isShowingAddresses(),
                 qPrintable(dialog.errorText(0) + dialog.errorText(1) + dialog.generalError()));
        QCOMPARE(running.count(), 1);
        QCOMPARE(session.hops().size(), size_t(2));
        // The shown address is the one to dial.
        auto *shown = dialog.findChild<QLineEdit *>(QStringLiteral("address0"));
        QVERIFY(shown);
        QCOMPARE(shown->text(), session.hops()[0].listen);
        QVERIFY(!shown->text().endsWith(":0"));
        QCOMPARE(CaptureDialog::recentTargets().value(0), m_target);

        {
            lab::LabClient viaFront(session.hops()[0].listen.toStdString(), {});
            lab::LabClient viaApi(session.hops()[1].listen.toStdString(), {});
            QCOMPARE(viaFront.call(request("front-1"), std::chrono::seconds(5)).code, 0);
            QCOMPARE(viaApi.call(request("api-1"), std::chrono::seconds(5)).code, 0);
            QTRY_VERIFY_WITH_TIMEOUT(callByKey(model.store(), "front-1") && callByKey(model.store(), "api-1"),
                                     5000);
            QTRY_COMPARE_WITH_TIMEOUT(session.openConnections(), 2, 5000);

            // Paused: the call still goes through, nothing is recorded.
            session.setPaused(true);
            QCOMPARE(viaFront.call(request("while-paused"), std::chrono::seconds(5)).code, 0);
            session.setPaused(false);
            QCOMPARE(viaFront.call(request("after-pause"), std::chrono::seconds(5)).code, 0);
            QTRY_VERIFY_WITH_TIMEOUT(callByKey(model.store(), "after-pause"), 5000);
            QVERIFY(!callByKey(model.store(), "while-paused"));
        }

        // Each call is on the connection of its hop, labelled.
        std::map<std::uint32_t, std::string> labels;
        for (const Connection &c : model.store().connections())
            labels[c.id] = c.label;
        QCOMPARE(QString::fromStdString(labels[callByKey(model.store(), "front-1")->attempts[0].connection]),
                 QStringLiteral("front->api"));
        QCOMPARE(QString::fromStdString(labels[callByKey(model.store(), "api-1")->attempts[0].connection]),
                 QStringLiteral("api->db"));

        session.stop();
        QCOMPARE(running.count(), 2);
        QVERIFY(!session.isRunning());
    }

    // Recording: what the capture records also goes to a file as it comes. The .partial file holds the calls
    // while the capture runs; at stop it becomes the file, which replays to exactly the live timeline.
    void recordsToAFileAsItGoes()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("live.rpcscope");
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.setHops({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), m_target}});
        dialog.setRecordTo(dir.filePath("live")); // the extension is added
        QVERIFY2(dialog.startCapture(), qPrintable(dialog.generalError()));
        QCOMPARE(session.recordTo(), file);
        QCOMPARE(session.recordingPartialPath(), file + ".partial");
        auto *shown = dialog.findChild<QLabel *>(QStringLiteral("recording"));
        QVERIFY(shown && shown->text().contains(file + ".partial"));
        {
            lab::LabClient client(session.hops()[0].listen.toStdString(), {});
            for (int i = 0; i < 5; ++i)
                QCOMPARE(client.call(request("rec-" + std::to_string(i)), std::chrono::seconds(5)).code, 0);
            QTRY_COMPARE_WITH_TIMEOUT(callsIn(file + ".partial").size(), size_t(5), 5000);
            QVERIFY(!QFile::exists(file));
            // Paused: not recorded, in the file either.
            session.setPaused(true);
            QCOMPARE(client.call(request("while-paused"), std::chrono::seconds(5)).code, 0);
            session.setPaused(false);
            QCOMPARE(client.call(request("after-pause"), std::chrono::seconds(5)).code, 0);
            QTRY_VERIFY_WITH_TIMEOUT(callByKey(model.store(), "after-pause"), 5000);
        }
        QSignalSpy finished(&session, &CaptureSession::recordingFinished);
        session.stop();
        QCOMPARE(finished.count(), 1);
        QVERIFY2(session.lastRecordingResult().startsWith(QStringLiteral("Recorded ")) &&
                     session.lastRecordingResult().endsWith(file),
                 qPrintable(session.lastRecordingResult()));
        QVERIFY(!session.isRecording());
        QVERIFY(!QFile::exists(file + ".partial"));
        QCoreApplication::sendPostedEvents(); // the model takes the last batches
        ModelFeed::of(&model)->drainAll();

        CaptureData data;
        const CaptureReadResult r = readCaptureFile(file, &data);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineStore replayed;
        replayCapture(data, replayed);
        QCOMPARE(replayed.calls().size(), size_t(6));
        QVERIFY(!callByKey(replayed, "while-paused"));
        QCOMPARE(timelineToJsonBytes(replayed, true), timelineToJsonBytes(model.store(), true));

        // The next capture from the same dialog settings does not record unless asked.
        QString error;
        session.setRecordTo({});
        QVERIFY2(
            session.start({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), m_target}}, false, &error),
            qPrintable(error));
        QVERIFY(!session.isRecording());
        session.stop();
        QVERIFY(session.lastRecordingResult().isEmpty());
    }

    // The file stops growing (a full disk; here a file-size limit): the Capture dock says so, the session
    // goes on in memory, and what was written stays readable in the .partial file.
    void recordingThatCannotGrowSaysSo()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("small.rpcscope");
        TimelineModel model;
        CaptureSession session(&model);
        session.setRecordTo(file);
        QString error;
        QVERIFY2(
            session.start({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), m_target}}, false, &error),
            qPrintable(error));
        CapturePanel panel(&session);
        {
            // This process's files may grow to 16 KiB for a while; past that a write fails (EFBIG) rather
            // than killing it. Restored however this block is left.
            struct SmallFiles
            {
                rlimit before{};
                bool set = false;
                SmallFiles()
                {
                    std::signal(SIGXFSZ, SIG_IGN);
                    getrlimit(RLIMIT_FSIZE, &before);
                    const rlimit small{16 * 1024, before.rlim_max};
                    set = setrlimit(RLIMIT_FSIZE, &small) == 0;
                }
                ~SmallFiles()
                {
                    setrlimit(RLIMIT_FSIZE, &before);
                    std::signal(SIGXFSZ, SIG_DFL);
                }
            } limit;
            QVERIFY(limit.set);
            lab::LabClient client(session.hops()[0].listen.toStdString(), {});
            for (int i = 0; i < 100; ++i)
                QCOMPARE(client.call(request("small-" + std::to_string(i)), std::chrono::seconds(5)).code, 0);
            QTRY_VERIFY_WITH_TIMEOUT(!session.recordingError().isEmpty(), 5000);
            QTRY_VERIFY_WITH_TIMEOUT(callByKey(model.store(), "small-99"), 5000); // the session goes on
        }
        QVERIFY2(session.recordingError().contains(QString::fromLocal8Bit(std::strerror(EFBIG))),
                 qPrintable(session.recordingError()));
        auto *shown = panel.findChild<QLabel *>(QStringLiteral("captureState"));
        QVERIFY(shown);
        QTRY_VERIFY_WITH_TIMEOUT(shown->text().contains(QStringLiteral("recording stopped")), 3000);
        session.stop();
        QVERIFY2(session.lastRecordingResult().startsWith(QStringLiteral("Recording stopped early")) &&
                     session.lastRecordingResult().endsWith(file + ".partial"),
                 qPrintable(session.lastRecordingResult()));
        const std::vector<std::string> kept = callsIn(file + ".partial");
        QVERIFY(kept.size() < 100);
        for (size_t i = 0; i < kept.size(); ++i)
            QCOMPARE(kept[i], "small-" + std::to_string(i));
        QVERIFY(!QFile::exists(file));
    }

    // A file that cannot be recorded to is refused before anything starts, and says why.
    void recordingToABadPlaceIsRefused()
    {
        QTemporaryDir dir;
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.setHops({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), m_target}});
        dialog.setRecordTo(dir.filePath("missing/x.rpcscope"));
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.generalError().contains(
                     QStringLiteral("the folder %1 does not exist").arg(dir.filePath("missing"))),
                 qPrintable(dialog.generalError()));
        QVERIFY(!session.isRunning());

        // A .partial file left by a capture that did not finish is never overwritten.
        const QString left = dir.filePath("x.rpcscope.partial");
        QFile f(left);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("left behind");
        f.close();
        dialog.setRecordTo(dir.filePath("x.rpcscope"));
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.generalError().contains(QStringLiteral("already exists")),
                 qPrintable(dialog.generalError()));
        QVERIFY(!session.isRunning());
        QVERIFY(!session.isRecording());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("left behind"));
    }

    void hopSpecFromTheCommandLine()
    {
        HopSpec h;
        QString error;
        QVERIFY(
            CaptureSession::parseHopSpec(QStringLiteral("front@127.0.0.1:7000=10.0.0.5:50051"), &h, &error));
        QCOMPARE(h.label, QStringLiteral("front"));
        QCOMPARE(h.listen, QStringLiteral("127.0.0.1:7000"));
        QCOMPARE(h.target, QStringLiteral("10.0.0.5:50051"));
        QVERIFY(CaptureSession::parseHopSpec(QStringLiteral("127.0.0.1:0=[::1]:50051"), &h, &error));
        QCOMPARE(h.label, QStringLiteral("[::1]:50051"));
        QVERIFY(!CaptureSession::parseHopSpec(QStringLiteral("127.0.0.1:7000"), &h, &error));
        QVERIFY2(error.contains(QStringLiteral("expects [LABEL@]LISTEN=TARGET")), qPrintable(error));
        QVERIFY(!CaptureSession::parseHopSpec(QStringLiteral("a@127.0.0.1:7000=db"), &h, &error));
        QVERIFY2(error.contains(QStringLiteral("expected HOST:PORT, got 'db'")), qPrintable(error));
    }

    void statsCountEvents()
    {
        TimelineModel model;
        CaptureSession session(&model);
        QString error;
        QVERIFY2(
            session.start({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), m_target}}, false, &error),
            qPrintable(error));
        QSignalSpy stats(&session, &CaptureSession::statsChanged);
        CapturePanel panel(&session);
        {
            lab::LabClient client(session.hops()[0].listen.toStdString(), {});
            for (int i = 0; i < 20; ++i)
                QCOMPARE(client.call(request("stats-" + std::to_string(i)), std::chrono::seconds(5)).code, 0);
            QTRY_VERIFY_WITH_TIMEOUT(session.eventsPerSecond() > 0, 5000);
            QVERIFY(stats.count() >= 1);
            QVERIFY2(panel.statusText().startsWith(QStringLiteral("1 open connection ·")),
                     qPrintable(panel.statusText()));
        }
        // The client gone, its calls stay and the count says what it counts: none open (it read "0
        // connections" beside the 20 calls).
        QTRY_VERIFY2_WITH_TIMEOUT(panel.statusText().startsWith(QStringLiteral("0 open connections ·")),
                                  qPrintable(panel.statusText()), 10000);
        QCOMPARE(model.store().calls().size(), size_t(20));
    }

    // What the capture's decoders and queues may come to hold is kept free of calls while it runs, in the
    // window as in the CLI, and given back when it stops.
    void aRunningCaptureReservesWhatItMayHold()
    {
        TimelineModel model;
        RetentionPolicy keep;
        keep.maxBytes = size_t(64) << 20;
        model.setRetention(keep);
        CaptureSession session(&model);
        QCOMPARE(model.externalReserve(), size_t(0));
        QString error;
        QVERIFY2(session.start({{QStringLiteral("a"), QStringLiteral("127.0.0.1:0"), m_target},
                                {QStringLiteral("b"), QStringLiteral("127.0.0.1:0"), m_target}},
                               false, &error),
                 qPrintable(error));
        const size_t reserve = model.externalReserve();
        QVERIFY2(reserve > 0, "nothing reserved while capturing");
        QCOMPARE(reserve, std::min(session.mostHeldBytes(), keep.maxBytes / 4 * 3));
        // Two hops hold more than one: the decoders' shares are counted per hop.
        QVERIFY2(reserve > ModelFeed::of(&model)->byteLimit(), qPrintable(QString::number(reserve)));
        lab::LabClient client(session.hops()[0].listen.toStdString(), {});
        for (int i = 0; i < 20; ++i)
            QCOMPARE(client.call(request("reserve-" + std::to_string(i)), std::chrono::seconds(5)).code, 0);
        QTRY_VERIFY_WITH_TIMEOUT(model.store().calls().size() == 20, 5000);
        session.stop();
        QCOMPARE(model.externalReserve(), size_t(0));
    }

private:
    lab::LabServer m_server;
    QString m_target;
};

QTEST_MAIN(TestCaptureSession)
#include "tst_capturesession.moc"
