// Runs as stages: every lab run is a run of its own, with its own clock from 0, fitted when it starts; the
// run list keeps the earlier ones, any of which can be shown again. Clear restarts the clock and the zoom. A
// view never shows an empty range. Replay feeds a run back at a chosen speed, driven here by a virtual clock.
//
// With RPCSCOPE_SHOT_DIR set, the window after two runs is saved there as runs-two.png.

#include "capturefile.h"
#include "capturereader.h"
#include "capturesession.h"
#include "capturewriter.h"
#include "clock.h"
#include "labclient.h"
#include "labpanel.h"
#include "labserver.h"
#include "labsession.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "policydock.h"
#include "replayer.h"
#include "runbar.h"
#include "runlist.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using namespace rpcscope;

namespace {

// Offsets (ns after the first event) of the replayer test's events, deliberately spread over batches out of
// time order.
const std::vector<std::vector<qint64>> kBatchOffsets = {
    {0, 2'000'000, 50'000'000}, {1'000'000, 5'000'000}, {10'000'000, 100'000'000, 100'000'000}, {3'000'000}};
constexpr qint64 kStart = 5'000'000'000;

CaptureData replayData()
{
    CaptureData data;
    data.info.hasOrigin = true;
    data.info.originNs = kStart - 1'000'000;
    data.info.originWallNs = 1'700'000'000'000'000'000;
    std::uint32_t connection = 1;
    for (const auto &offsets : kBatchOffsets) {
        EventBatch batch;
        for (qint64 o : offsets) {
            WireEvent e;
            e.kind = EventKind::ConnectionOpened;
            e.connection = connection++; // an id each, so the order they were fed in can be read back
            e.tNs = kStart + o;
            batch.push_back(e);
        }
        data.batches.push_back(batch);
    }
    return data;
}

// Every event the model was fed, in order.
std::vector<WireEvent> fedEvents(const TimelineModel &model)
{
    std::vector<WireEvent> out;
    for (size_t i = 0; i < model.eventLog().batchCount(); ++i)
        for (const WireEvent &e : model.eventLog().batch(i))
            out.push_back(e);
    return out;
}

} // namespace

class TestRuns : public QObject
{
    Q_OBJECT

    TimelineModel *m_model = nullptr;
    lab::LabSession *m_lab = nullptr;
    MainWindow *m_window = nullptr;

    // Runs the chosen scenario as a new run and waits until it ended and every call's last event landed.
    void runAndWait()
    {
        QSignalSpy finished(m_window, &MainWindow::runFinished);
        m_window->runScenario();
        QVERIFY(m_window->isRecording());
        QVERIFY(finished.wait(60000));
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->isRecording(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!m_model->store().calls().empty(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(std::all_of(m_model->store().calls().begin(), m_model->store().calls().end(),
                                             [](const Call &c) { return c.endNs().has_value(); }),
                                 10000);
        QTest::qWait(100); // a last batch (connection closes) may still be queued
    }

    // Answers the next message box with `button`, keeping its text.
    static void answerNextQuestion(QMessageBox::StandardButton button, QString *text)
    {
        QTimer::singleShot(100, [button, text] {
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            if (!box) return;
            *text = box->text();
            box->button(button)->click();
        });
    }

    // Every call of the stage lies within the visible range.
    bool allCallsVisible() const
    {
        const SwimlaneView *view = m_window->swimlanes();
        const qint64 from = const_cast<SwimlaneView *>(view)->timelinePainter().rangeStart();
        const qint64 to = const_cast<SwimlaneView *>(view)->timelinePainter().rangeEnd();
        for (const Call &c : m_model->store().calls())
            if (c.startNs() < from || c.endNs().value_or(m_model->store().latestNs()) > to) return false;
        return true;
    }

private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_runs"));
        QSettings().clear();
    }

    void replayerFeedsInOrderAtSpeed_data()
    {
        QTest::addColumn<double>("speed");
        QTest::newRow("0.1x") << 0.1;
        QTest::newRow("1x") << 1.0;
        QTest::newRow("10x") << 10.0;
    }

    void replayerFeedsInOrderAtSpeed()
    {
        QFETCH(double, speed);
        TimelineModel model;
        Replayer replayer(&model);
        qint64 now = 777; // virtual ns
        replayer.setClock([&now] { return now; });
        const CaptureData data = replayData();
        replayer.load(data);
        QCOMPARE(model.store().originNs(), data.info.originNs); // the run's own origin
        QCOMPARE(model.eventLog().eventCount(), size_t(0));
        QCOMPARE(replayer.startNs(), kStart);
        QCOMPARE(replayer.endNs(), kStart + 100'000'000);

        std::vector<qint64> offsets;
        for (const auto &b : kBatchOffsets)
            offsets.insert(offsets.end(), b.begin(), b.end());
        std::vector<qint64> sorted = offsets;
        std::stable_sort(sorted.begin(), sorted.end());

        replayer.setSpeed(speed);
        replayer.play();
        // Wall steps, in virtual ns, chosen to land just before, on and after event times at this speed.
        std::vector<qint64> elapsed;
        for (qint64 o : sorted)
            for (qint64 d : {-1, 0, 1})
                elapsed.push_back(std::max<qint64>(0, qint64(std::llround(double(o) / speed)) + d));
        std::sort(elapsed.begin(), elapsed.end());
        for (qint64 e : elapsed) {
            now = 777 + e;
            replayer.tick();
            const qint64 position = qint64(std::llround(double(e) * speed));
            const auto expected =
                size_t(std::count_if(sorted.begin(), sorted.end(), [&](qint64 o) { return o <= position; }));
            const std::vector<WireEvent> fed = fedEvents(model);
            QCOMPARE(fed.size(), expected);
            for (size_t i = 0; i < fed.size(); ++i)
                QCOMPARE(fed[i].tNs - kStart, sorted[i]);
            QCOMPARE(replayer.playheadNs(),
                     kStart + std::min<qint64>(position, 100'000'000)); // stops at the end
        }
        QVERIFY(replayer.isFinished());
        QVERIFY(!replayer.isPlaying());
        // Equal times keep the order the model first saw them in: connection 7 before 8 (both at 100 ms).
        const std::vector<WireEvent> fed = fedEvents(model);
        QCOMPARE(fed[fed.size() - 2].connection, 7u);
        QCOMPARE(fed[fed.size() - 1].connection, 8u);
        QCOMPARE(model.store().connections().size(), offsets.size());
    }

    void replayerPausesAndChangesSpeed()
    {
        TimelineModel model;
        Replayer replayer(&model);
        qint64 now = 0;
        replayer.setClock([&now] { return now; });
        replayer.load(replayData());
        replayer.play();
        now = 2'000'000; // 2 ms at 1x: offsets 0, 1 and 2 ms
        replayer.tick();
        QCOMPARE(model.eventLog().eventCount(), size_t(3));
        replayer.pause();
        now = 1'000'000'000; // paused: the clock runs, the replay does not
        replayer.tick();
        QCOMPARE(model.eventLog().eventCount(), size_t(3));
        QCOMPARE(replayer.positionNs(), qint64(2'000'000));
        replayer.setSpeed(10);
        replayer.play();
        now += 300'000; // 0.3 ms at 10x = 3 ms more: position 5 ms
        replayer.tick();
        QCOMPARE(replayer.positionNs(), qint64(5'000'000));
        QCOMPARE(model.eventLog().eventCount(), size_t(5));
        replayer.setSpeed(100); // clamped
        QCOMPARE(replayer.speed(), Replayer::kMaxSpeed);
        replayer.setSpeed(0.01);
        QCOMPARE(replayer.speed(), Replayer::kMinSpeed);
    }

    void twoRunsInARow()
    {
        TimelineModel model;
        model.setKeepHeaders(true);
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        m_model = &model;
        m_lab = &lab;
        m_window = &window;
        SwimlaneView *view = window.swimlanes();
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope"));

        // The first run.
        runAndWait();
        const size_t calls1 = model.store().calls().size();
        const qint64 origin1 = model.store().originNs();
        QCOMPARE(window.runs()->count(), 1);
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — retry-basic (unsaved)"));
        QVERIFY(allCallsVisible());

        const qint64 span1 = model.store().latestNs() - model.store().calls().front().startNs();
        // A retry policy given: the timeline shades each run's gaps by it (the Policy check's ranges).
        QString policyError;
        QVERIFY2(
            window.policyDock()->setServiceConfig(
                QStringLiteral(R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],)"
                               R"("retryPolicy":{"maxAttempts":5,"initialBackoff":"0.05s","maxBackoff":"1s",)"
                               R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})"),
                &policyError),
            qPrintable(policyError));

        // Zoomed in on a sliver far from every call, then run: the new run is fitted, not left out of view.
        view->setRange(origin1 + 3'600'000'000'000, origin1 + 3'600'001'000'000);
        QVERIFY(!view->followsLive());
        runAndWait();
        const size_t calls2 = model.store().calls().size();
        QVERIFY(calls2 > 0);
        QCOMPARE(window.runs()->count(), 2);
        QCOMPARE(window.runBar()->count(), 2);
        QCOMPARE(window.runs()->at(0).calls, calls1);
        QVERIFY(window.runs()->at(0).info.has_value()); // archived
        QCOMPARE(window.runs()->at(1).name, QStringLiteral("retry-basic (2)"));
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — retry-basic (2) (unsaved)"));
        // Its own clock from 0: the origin moved to this run's start, its first call follows within a second.
        const qint64 origin2 = model.store().originNs();
        QVERIFY(origin2 > origin1);
        QVERIFY(model.store().calls().front().startNs() >= origin2);
        QVERIFY(model.store().calls().front().startNs() - origin2 < 1'000'000'000);
        // Fitted to its own calls: all of them in view, and the range no wider than the run with its margins.
        QVERIFY(view->followsLive());
        QVERIFY(allCallsVisible());
        const auto &p = view->timelinePainter();
        const qint64 runSpan = model.store().latestNs() - model.store().calls().front().startNs();
        QVERIFY2(p.rangeEnd() - p.rangeStart() < runSpan * 2 + 10'000'000,
                 qPrintable(QStringLiteral("range %1 ns for a run of %2 ns")
                                .arg(p.rangeEnd() - p.rangeStart())
                                .arg(runSpan)));
        QVERIFY(p.rangeStart() >= origin2 - 10'000'000);

        const QString shotDir = QString::fromLocal8Bit(qgetenv("RPCSCOPE_SHOT_DIR"));
        if (!shotDir.isEmpty()) {
            QTest::qWait(200);
            QVERIFY(window.grab().save(QDir(shotDir).filePath(QStringLiteral("runs-two.png"))));
        }

        // The policy's ranges for this run's gaps are with the timeline (the check follows once a second).
        QTRY_VERIFY_WITH_TIMEOUT(p.gapEnvelopes() && p.gapEnvelopes()->reachNs() > origin2, 5000);

        // The first run again: its calls, its origin, fitted.
        QVERIFY(window.showRun(0));
        QCOMPARE(window.runs()->current(), 0);
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.store().originNs(), origin1);
        QCOMPARE(window.runs()->at(1).calls, calls2);
        QVERIFY(allCallsVisible());
        // Fitted to its own calls, not stretched to where the run shown before had its policy's ranges.
        QVERIFY2(
            p.rangeEnd() - p.rangeStart() < span1 * 2 + 10'000'000 && p.rangeEnd() < origin2,
            qPrintable(QStringLiteral("range %1 ns (ending %2 ns after the second run's start) for a run "
                                      "of %3 ns")
                           .arg(p.rangeEnd() - p.rangeStart())
                           .arg(p.rangeEnd() - origin2)
                           .arg(span1)));
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — retry-basic (unsaved)"));
        // ... and the second, by the keyboard.
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QTest::keyClick(&window, Qt::Key_PageDown, Qt::ControlModifier);
        QCOMPARE(window.runs()->current(), 1);
        QCOMPARE(model.store().calls().size(), calls2);

        // Saved: the title drops the marker; renamed: the title follows.
        QTemporaryDir dir;
        QString saveError;
        QVERIFY2(window.saveRun(1, dir.filePath(QStringLiteral("second.rpcscope")), &saveError),
                 qPrintable(saveError));
        window.renameRun(1, QStringLiteral("after the fix"));
        QTRY_COMPARE(window.windowTitle(), QStringLiteral("rpcscope — after the fix"));
        // A run not shown is saved from its archive.
        QVERIFY(window.runs()->at(0).unsaved);
        QVERIFY2(window.saveRun(0, dir.filePath(QStringLiteral("first.rpcscope")), &saveError),
                 qPrintable(saveError));
        QVERIFY(!window.runs()->at(0).unsaved);
        QString openError;
        QVERIFY2(window.openFile(dir.filePath(QStringLiteral("first.rpcscope")), &openError, true),
                 qPrintable(openError));
        QCOMPARE(window.runs()->count(), 3);
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — first.rpcscope"));
        // "Run again" on a file says what it runs.
        QStringList runTexts;
        for (QAction *a : window.findChildren<QAction *>())
            if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+R"))) runTexts << a->text();
        QCOMPARE(runTexts, QStringList{QStringLiteral("Run retry-basic as a new run")});

        // While a run is recorded it cannot be closed; Ctrl+W closes a run.
        QVERIFY(window.closeRun(2));
        QCOMPARE(window.runs()->count(), 2);
        {
            QSignalSpy finished(&window, &MainWindow::runFinished);
            window.runScenario();
            QVERIFY(window.isRecording());
            QVERIFY(!window.closeRun(window.runs()->current(), false));
            QTRY_VERIFY(window.windowTitle().endsWith(QStringLiteral("— recording")) ||
                        !window.isRecording());
            QVERIFY(finished.wait(60000));
            QTRY_VERIFY(!window.isRecording());
        }
        QCOMPARE(window.runs()->count(), 3);
        QVERIFY(window.showRun(0));
        // Quitting asks about a run that is not shown and not saved; Cancel keeps the window.
        QVERIFY(!window.runs()->at(0).unsaved && window.runs()->at(2).unsaved);
        window.setPromptOnClose(true);
        QString asked;
        answerNextQuestion(QMessageBox::Cancel, &asked);
        QVERIFY(!window.close());
        QVERIFY2(asked.contains(QStringLiteral("retry-basic (2)")), qPrintable(asked));
        window.setPromptOnClose(false);
        m_window = nullptr;
        window.close();
    }

    // Issue 17: an earlier run can be shown while a lab run keeps recording; the recording run's batches go
    // to its archive, so the run shown does not change and the recording run has every call when it comes
    // back.
    void earlierRunWhileRecording()
    {
        TimelineModel model;
        lab::LabSession lab;
        // Every event the lab hands over, counted before the model sees it.
        auto handedOver = std::make_shared<std::atomic<size_t>>(0);
        auto toModel = queuedSinkTo(&model);
        std::string error;
        QVERIFY2(lab.start(
                     [handedOver, toModel](EventBatch &&batch) {
                         handedOver->fetch_add(batch.size());
                         toModel(std::move(batch));
                     },
                     &error),
                 error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        m_model = &model;
        m_window = &window;

        runAndWait();
        const size_t calls1 = model.store().calls().size();
        const size_t events1 = model.eventLog().eventCount();
        const qint64 origin1 = model.store().originNs();
        QTRY_COMPARE_WITH_TIMEOUT(handedOver->load(), events1, 10000);

        // A long run: the scenario repeated.
        constexpr int kRepeat = 6;
        auto *repeat = window.labPanel()->findChild<QSpinBox *>(QStringLiteral("repeat"));
        QVERIFY(repeat);
        repeat->setValue(kRepeat);
        QSignalSpy verdicts(&window, &MainWindow::scenarioFinished);
        QSignalSpy finished(&window, &MainWindow::runFinished);
        window.runScenario();
        QVERIFY(window.isRecording());
        QCOMPARE(window.runs()->count(), 2);
        QCOMPARE(window.recordingRun(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(!model.store().calls().empty(), 20000);
        QVERIFY(window.isRecording());

        // The earlier run, by its tab, while the second records: the tab is not refused.
        QVERIFY(window.runBar()->isTabEnabled(0));
        window.runBar()->setCurrentIndex(0);
        QTRY_COMPARE(window.runs()->current(), 0);
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.store().originNs(), origin1);
        QVERIFY(model.isDiverting());
        QVERIFY2(
            window.windowTitle().endsWith(QStringLiteral("— retry-basic (2) recording in the background")),
            qPrintable(window.windowTitle()));
        QVERIFY2(window.runBar()->tabText(1).contains(QStringLiteral("● recording")),
                 qPrintable(window.runBar()->tabText(1)));
        QVERIFY(!window.runBar()->tabText(0).contains(QStringLiteral("recording")));
        QVERIFY(window.runBar()->tabToolTip(1).contains(QStringLiteral("recording in the background")));
        // Recording runs cannot be closed, even in the background.
        QVERIFY(!window.closeRun(1, false));

        // Batches keep arriving for the second run (its archive grows, its tab counts them) while the run
        // shown stays as it was.
        const size_t archivedAtSwitch = window.runs()->at(1).log.eventCount();
        QTRY_VERIFY_WITH_TIMEOUT(window.runs()->at(1).log.eventCount() > archivedAtSwitch + 100, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(verdicts.size() >= 2, 60000);
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.eventLog().eventCount(), events1);
        QVERIFY(window.runs()->at(1).calls > 0);
        QVERIFY(window.runs()->at(1).unsaved);
        // A replay of the run shown is allowed: it is not the one recording.
        qint64 now = 0;
        window.replayer()->setClock([&now] { return now; });
        QVERIFY(window.startReplay(false));
        now = window.replayer()->endNs() - window.replayer()->startNs() + 1;
        window.replayer()->tick();
        window.stopReplay();
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.eventLog().eventCount(), events1);

        QVERIFY(finished.wait(120000));
        QTRY_VERIFY_WITH_TIMEOUT(!window.isRecording(), 10000);
        QCOMPARE(window.recordingRun(), -1);
        QTRY_VERIFY(!window.windowTitle().contains(QStringLiteral("recording")));
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.eventLog().eventCount(), events1);
        // Every repetition judged by the lab, and as expected: the verdicts do not read the stage.
        QCOMPARE(verdicts.size(), kRepeat);
        for (const QList<QVariant> &v : verdicts)
            QVERIFY2(v.at(0).toBool(), qPrintable(v.at(1).toString()));

        // Every batch the lab handed over is in the second run's archive once the queue has drained.
        QTRY_COMPARE_WITH_TIMEOUT(window.runs()->at(1).log.eventCount(), handedOver->load() - events1, 10000);
        QVERIFY(window.showRun(1));
        QVERIFY(!model.isDiverting());
        QCOMPARE(model.eventLog().eventCount(), handedOver->load() - events1);
        QCOMPARE(model.store().calls().size(),
                 calls1 * kRepeat); // each repetition makes the first run's calls
        QVERIFY(std::all_of(model.store().calls().begin(), model.store().calls().end(),
                            [](const Call &c) { return c.endNs().has_value(); }));
        QVERIFY(model.store().originNs() > origin1);
        QVERIFY(window.windowTitle().endsWith(QStringLiteral("(unsaved)")));
        // And the first run is still whole.
        QVERIFY(window.showRun(0));
        QCOMPARE(model.store().calls().size(), calls1);
        m_window = nullptr;
        window.close();
    }

    // The same with a live capture recording to a file: the calls made while an earlier run is shown are in
    // the capture's run when it comes back, and in the recording, and never on the run shown.
    void earlierRunWhileCaptureRecords()
    {
        TimelineModel model;
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        m_model = &model;
        m_window = &window;
        runAndWait();
        const size_t calls1 = model.store().calls().size();
        const size_t events1 = model.eventLog().eventCount();

        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("live.rpcscope"));
        CaptureSession *capture = window.captureSession();
        capture->setRecordTo(file);
        const QString target = QStringLiteral("127.0.0.1:%1").arg(lab.serverAddress().port);
        QString startError;
        QVERIFY2(capture->start({{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"), target}}, false,
                                &startError),
                 qPrintable(startError));
        QVERIFY(window.isRecording());
        QCOMPARE(window.runs()->count(), 2);
        QCOMPARE(window.recordingRun(), 1);
        auto call = [](lab::LabClient &client, const std::string &id) {
            lab::CallRequest r;
            r.set_call_id(id);
            r.set_response_size(10);
            return client.call(r, std::chrono::seconds(5)).code;
        };
        std::set<std::string> keys;
        {
            lab::LabClient client(capture->hops()[0].listen.toStdString(), {});
            for (int i = 0; i < 3; ++i) {
                keys.insert("before-" + std::to_string(i));
                QCOMPARE(call(client, "before-" + std::to_string(i)), 0);
            }
            QTRY_COMPARE_WITH_TIMEOUT(model.store().calls().size(), size_t(3), 5000);

            QVERIFY(window.showRun(0));
            QCOMPARE(model.store().calls().size(), calls1);
            QVERIFY2(window.windowTitle().endsWith(QStringLiteral("— capture recording in the background")),
                     qPrintable(window.windowTitle()));
            for (int i = 0; i < 5; ++i) {
                keys.insert("during-" + std::to_string(i));
                QCOMPARE(call(client, "during-" + std::to_string(i)), 0);
            }
            QTRY_COMPARE_WITH_TIMEOUT(window.runs()->at(1).calls, size_t(8), 5000);
            // The tab counts the calls that arrive in the background.
            QTRY_VERIFY(window.runBar()->tabToolTip(1).contains(QStringLiteral("8 calls")));
            QVERIFY2(
                window.statusText().contains(QStringLiteral("capture recording in the background (8 calls)")),
                qPrintable(window.statusText()));
            // The session line on the right follows within its second.
            auto *line = window.statusBar()->findChild<QLabel *>();
            QVERIFY(line);
            QTRY_VERIFY_WITH_TIMEOUT(line->text().contains(QStringLiteral("recording in the background")),
                                     3000);
            const QString shotDir = QString::fromLocal8Bit(qgetenv("RPCSCOPE_SHOT_DIR"));
            if (!shotDir.isEmpty()) {
                QVERIFY(window.grab().save(QDir(shotDir).filePath(QStringLiteral("runs-background.png"))));
            }
            QCOMPARE(model.store().calls().size(), calls1);
            QCOMPARE(model.eventLog().eventCount(), events1);
        }
        capture->stop();
        QVERIFY(!window.isRecording());
        QCoreApplication::sendPostedEvents(); // the last batches (connections closing) reach the archive
        ModelFeed::of(&model)->drainAll();
        QCOMPARE(model.store().calls().size(), calls1);
        QCOMPARE(model.eventLog().eventCount(), events1);
        QTRY_VERIFY(!window.windowTitle().contains(QStringLiteral("recording")));

        // The recording has every call of the capture.
        CaptureData recorded;
        const CaptureReadResult r = readCaptureFile(file, &recorded);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineStore replayed;
        replayCapture(recorded, replayed);
        std::set<std::string> inFile;
        for (const Call &c : replayed.calls())
            inFile.insert(c.key);
        QCOMPARE(inFile, keys);

        // And so has the capture's run, back on stage: the same calls and events as the file.
        QVERIFY(window.showRun(1));
        std::set<std::string> shown;
        for (const Call &c : model.store().calls())
            shown.insert(c.key);
        QCOMPARE(shown, keys);
        size_t fileEvents = 0;
        for (const EventBatch &b : recorded.batches)
            fileEvents += b.size();
        QCOMPARE(model.eventLog().eventCount(), fileEvents);
        m_window = nullptr;
        window.close();
    }

    // A file dialog starts in the directory of the file last chosen in one, or last opened without one, also
    // in a later session (the settings keep it): a save after an export goes next to the picture, not back
    // to the working directory; a dialog cancelled changes nothing.
    void fileDialogsStartWhereTheLastOneEnded()
    {
        QSettings().remove(QStringLiteral("files/lastDirectory"));
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("shots")));
        const QString shots = QDir(dir.path()).filePath(QStringLiteral("shots"));
        // Answers the next file dialog: where it started and the name it suggested, then the file chosen in
        // it (none: cancelled).
        QString suggested;
        // Looked for every 20 ms (for 10 s at most) while the dialog's own event loop runs.
        auto answer = [&suggested](QString *startedIn, const QString &choose) {
            *startedIn = QStringLiteral("(no file dialog)");
            auto *poll = new QTimer;
            QElapsedTimer waited;
            waited.start();
            poll->setInterval(20);
            QObject::connect(poll, &QTimer::timeout, poll, [poll, waited, startedIn, choose, &suggested] {
                auto *dialog = qobject_cast<QFileDialog *>(QApplication::activeModalWidget());
                if (!dialog || !dialog->isVisible()) {
                    if (waited.elapsed() > 10000) {
                        poll->stop();
                        poll->deleteLater();
                    }
                    return;
                }
                poll->stop();
                poll->deleteLater();
                *startedIn = dialog->directory().absolutePath();
                auto *name = dialog->findChild<QLineEdit *>(QStringLiteral("fileNameEdit"));
                if (name) suggested = name->text();
                if (choose.isEmpty()) {
                    dialog->reject();
                    return;
                }
                if (!name) {
                    *startedIn = QStringLiteral("(no name field)");
                    dialog->reject();
                    return;
                }
                name->setText(choose);                    // typed into its name field, as a user does
                static_cast<QDialog *>(dialog)->accept(); // QFileDialog::accept, protected there
            });
            poll->start();
        };
        auto action = [](QWidget &window, const QString &text) -> QAction * {
            for (QAction *a : window.findChildren<QAction *>())
                if (a->text() == text) return a;
            return nullptr;
        };
        {
            TimelineModel model;
            model.appendBatch(replayData().batches.front());
            MainWindow window(&model, nullptr, QString());
            window.setPromptOnClose(false);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            QAction *save = action(window, QStringLiteral("Save as…"));
            QAction *png = action(window, QStringLiteral("PNG…"));
            QVERIFY(save && png);
            QString startedIn;
            answer(&startedIn, QDir(shots).filePath(QStringLiteral("first.png")));
            png->trigger();
            QCOMPARE(startedIn, QDir::current().absolutePath()); // nothing chosen before
            QCOMPARE(suggested, QStringLiteral("rpcscope.png")); // no run named yet
            QTRY_VERIFY(QFileInfo::exists(QDir(shots).filePath(QStringLiteral("first.png"))));
            answer(&startedIn, QString());
            save->trigger();
            QCOMPARE(startedIn, shots);
            // An opened file's run: the dialogs suggest its name, without the extension, as a file name.
            std::string writeError;
            const QString opened = QDir(dir.path()).filePath(QStringLiteral("incident (nightly).rpcscope"));
            QVERIFY2(writeCaptureFile(opened, replayData(), Redaction{}, &writeError), writeError.c_str());
            QString openError;
            QVERIFY2(window.openFile(opened, &openError, true), qPrintable(openError));
            answer(&startedIn, QString());
            save->trigger();
            QCOMPARE(suggested, QStringLiteral("incident-nightly.rpcscope"));
            // Opened without a dialog (the command line, Recent), the file was chosen all the same: the
            // dialogs start beside it (they started where the last dialog had been).
            QCOMPARE(startedIn, dir.path());
            answer(&startedIn, QString());
            png->trigger();
            QCOMPARE(suggested, QStringLiteral("incident-nightly.png"));
            // Renamed, the run's own name, with nothing dangling where its brackets were.
            window.renameRun(window.runs()->current(), QStringLiteral("retry-basic (2)"));
            answer(&startedIn, QString());
            save->trigger();
            QCOMPARE(suggested, QStringLiteral("retry-basic-2.rpcscope"));
        }
        // A later session (a new window, the same settings): still there.
        TimelineModel model;
        MainWindow window(&model, nullptr, QString());
        window.setPromptOnClose(false);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QString startedIn;
        answer(&startedIn, QString());
        action(window, QStringLiteral("Open…"))->trigger();
        QCOMPARE(startedIn, dir.path());
    }

    void withoutALabNoScenarioIsNamed()
    {
        // `rpcscope --no-lab FILE`: the toolbar's box names no scenario (it named retry-basic, which could
        // not run), and the dock says why there is none and what to do instead.
        TimelineModel model;
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        LabPanel *panel = window.labPanel();
        QVERIFY(!panel->scenarioBox()->isEnabled());
        QVERIFY2(panel->scenarioBox()->currentText().startsWith(QStringLiteral("No lab")),
                 qPrintable(panel->scenarioBox()->currentText()));
        QVERIFY(!panel->runAction()->isEnabled());
        QVERIFY(!panel->findChild<QSpinBox *>(QStringLiteral("repeat"))->isEnabled());
        const auto *explanation = panel->findChild<QLabel *>(QStringLiteral("explanation"));
        QVERIFY(explanation);
        QVERIFY2(explanation->text().contains(QStringLiteral("No lab is running")),
                 qPrintable(explanation->text()));
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope"));

        // With a lab the box names the scenario asked for, and every scenario is there.
        lab::LabSession lab;
        TimelineModel labModel;
        MainWindow withLab(&labModel, &lab, QStringLiteral("retry-basic"));
        withLab.setPromptOnClose(false);
        QComboBox *box = withLab.labPanel()->scenarioBox();
        QVERIFY(box->isEnabled());
        QCOMPARE(box->currentData().toString(), QStringLiteral("retry-basic"));
        QCOMPARE(box->count(), int(lab::allScenarios().size()));
        QCOMPARE(panel->scenarioBox()->count(), int(lab::allScenarios().size()) + 1);
    }

    void clearResetsClockAndZoom()
    {
        TimelineModel model;
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        m_model = &model;
        m_window = &window;
        SwimlaneView *view = window.swimlanes();
        runAndWait();
        const qint64 origin = model.store().originNs();
        // A range that holds no call: a zoom by key fits it and says so.
        QSignalSpy refitted(view, &SwimlaneView::refitted);
        view->setRange(origin + 3'600'000'000'000, origin + 3'600'001'000'000);
        view->setFocus();
        QTest::keyClick(view, Qt::Key_Minus);
        QCOMPARE(refitted.size(), 1);
        QVERIFY(refitted.front().front().toString().contains(QStringLiteral("fitted to the whole run")));
        QVERIFY(allCallsVisible());

        view->setRange(origin + 1'000, origin + 2'000'000);
        QVERIFY(!view->followsLive());
        // Clear asks before dropping unsaved calls, as Quit does; Cancel keeps them.
        window.setPromptOnClose(true);
        QString asked;
        answerNextQuestion(QMessageBox::Cancel, &asked);
        QVERIFY(!window.clearStage());
        QVERIFY2(asked.contains(QStringLiteral("not saved")), qPrintable(asked));
        QVERIFY(!model.store().calls().empty());
        window.setPromptOnClose(false);
        QVERIFY(window.clearStage(false));
        QVERIFY(model.store().calls().empty());
        QVERIFY(model.eventLog().isEmpty());
        QVERIFY(model.store().originNs() > origin); // the ruler counts from 0 again
        QVERIFY(view->followsLive());               // and the zoom is the fit again
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — retry-basic"));

        // Replay in the window: the range stays on the whole run, calls come back in order, the playhead
        // moves.
        runAndWait();
        const size_t calls = model.store().calls().size();
        const auto fitted =
            std::pair{view->timelinePainter().rangeStart(), view->timelinePainter().rangeEnd()};
        qint64 now = 0;
        window.replayer()->setClock([&now] { return now; });
        QVERIFY(window.startReplay(false));
        QVERIFY(model.store().calls().empty());
        QCOMPARE(view->zoomControl().playheadNs(), window.replayer()->startNs());
        QCOMPARE(view->timelinePainter().rangeStart(), fitted.first);
        QVERIFY(window.windowTitle().contains(QStringLiteral("replay paused at 1×")));
        window.replayer()->play();
        QVERIFY(window.windowTitle().contains(QStringLiteral("replaying at 1×")));
        now = (window.replayer()->endNs() - window.replayer()->startNs()) / 2;
        window.replayer()->tick();
        QVERIFY(!model.store().calls().empty());
        QVERIFY(model.store().calls().size() <= calls);
        const QString shotDir = QString::fromLocal8Bit(qgetenv("RPCSCOPE_SHOT_DIR"));
        if (!shotDir.isEmpty())
            QVERIFY(window.grab().save(QDir(shotDir).filePath(QStringLiteral("runs-replay.png"))));
        QCOMPARE(view->timelinePainter().rangeStart(), fitted.first);
        QCOMPARE(view->timelinePainter().rangeEnd(), fitted.second);
        QCOMPARE(*view->zoomControl().playheadNs(), window.replayer()->startNs() + now);
        now *= 3;
        window.replayer()->tick();
        QVERIFY(window.replayer()->isFinished());
        QCOMPARE(model.store().calls().size(), calls);
        QVERIFY(window.windowTitle().contains(QStringLiteral("(unsaved)")));
        window.stopReplay();
        QVERIFY(!view->zoomControl().playheadNs());
        QCOMPARE(model.store().calls().size(), calls);
        QCOMPARE(window.windowTitle(), QStringLiteral("rpcscope — retry-basic (unsaved)"));
        m_window = nullptr;
        window.close();
    }

    // Opening a file while a live capture runs asks first, as running a scenario does: Cancel keeps the
    // capture recording, Yes stops it and the file takes the stage.
    void openingAFileAsksBeforeStoppingACapture()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        TimelineModel model;
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.show();
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("earlier.rpcscope"));
        QString why;
        const HopSpec hop{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"),
                          QStringLiteral("127.0.0.1:%1").arg(server.port())};
        QVERIFY2(window.startCapture({hop}, &why), qPrintable(why));
        {
            lab::LabClient client(window.captureSession()->hops()[0].listen.toStdString(), {});
            lab::CallRequest r;
            r.set_call_id("captured");
            QCOMPARE(client.call(r, std::chrono::seconds(5)).code, 0);
        }
        QTRY_COMPARE_WITH_TIMEOUT(model.store().calls().size(), size_t(1), 5000);
        QVERIFY2(window.saveFile(file, &why), qPrintable(why));

        window.setPromptOnClose(true);
        QString asked;
        answerNextQuestion(QMessageBox::Cancel, &asked);
        QVERIFY(!window.openFile(file, &why));
        QVERIFY2(asked.contains(QStringLiteral("open earlier.rpcscope")), qPrintable(asked));
        QVERIFY(window.captureSession()->isRunning());
        asked.clear();
        answerNextQuestion(QMessageBox::Yes, &asked);
        QVERIFY2(window.openFile(file, &why), qPrintable(why));
        QVERIFY(!asked.isEmpty());
        QVERIFY(!window.captureSession()->isRunning());
        QCOMPARE(window.runs()->at(window.runs()->current()).name, QStringLiteral("earlier.rpcscope"));
        QCOMPARE(model.store().calls().size(), size_t(1));
        window.setPromptOnClose(false);
        window.close();
    }
};

QTEST_MAIN(TestRuns)
#include "tst_runs.moc"
