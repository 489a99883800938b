// MainWindow: runs as stages. Every lab run, live capture and opened file is a run with its own clock from 0;
// the model holds the one shown, the run list (RunBar, tabs above the timeline) the others, archived as their
// event logs. Clear, the window title, "Run again" on a file, and Replay of the run shown.

#include "capturefile.h"
#include "captureio.h"
#include "clock.h"
#include "labpanel.h"
#include "mainwindow.h"
#include "modelfeed.h"
#include "replayer.h"
#include "runbar.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinestore.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

namespace rpcscope {

namespace {
const double kSpeeds[] = {0.1, 0.25, 0.5, 1, 2, 5, 10};

QString speedText(double speed)
{
    return QStringLiteral("%1×").arg(speed);
}
} // namespace

void MainWindow::buildRuns(QToolBar *tb)
{
    m_runs = new RunList(this);
    m_runBar = new RunBar(m_runs, this);
    // The run list sits right above the timeline, as a terminal's tabs sit above its text.
    auto *stage = new QWidget(this);
    auto *v = new QVBoxLayout(stage);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(0);
    v->addWidget(m_runBar);
    v->addWidget(takeCentralWidget(), 1);
    setCentralWidget(stage);
    // Queued: a click is answered after the tab bar has finished with it (showing a run may rebuild the
    // tabs).
    connect(m_runBar, &RunBar::showRequested, this, &MainWindow::showRun, Qt::QueuedConnection);
    connect(m_runBar, &RunBar::renameRequested, this, &MainWindow::renameRunInteractive);
    connect(m_runBar, &RunBar::saveRequested, this, &MainWindow::saveRunInteractive);
    connect(m_runBar, &RunBar::closeRequested, this, [this](int index) { closeRun(index); });

    auto shortcut = [this](const QString &name, const QKeySequence &key, auto slot) {
        auto *a = new QAction(name, this);
        a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        addAction(a);
        return a;
    };
    shortcut(QStringLiteral("Previous run"), QKeySequence(QStringLiteral("Ctrl+PgUp")), [this] {
        if (m_runs->current() > 0) showRun(m_runs->current() - 1);
    });
    shortcut(QStringLiteral("Next run"), QKeySequence(QStringLiteral("Ctrl+PgDown")), [this] {
        if (m_runs->current() + 1 < m_runs->count()) showRun(m_runs->current() + 1);
    });
    shortcut(QStringLiteral("Close run"), QKeySequence(QStringLiteral("Ctrl+W")), [this] {
        if (m_runs->current() >= 0) closeRun(m_runs->current());
    });

    // The lab puts each run on a stage of its own; a live capture stops first (after asking).
    m_labPanel->setBeforeRun([this](const QString &scenario) {
        if (!mayStopCapture(QStringLiteral("run %1").arg(scenario))) return false;
        if (m_capture && m_capture->isRunning()) m_capture->stop();
        if (!beginRun(scenario, RunList::Kind::Scenario, QString(), true)) return false;
        QTimer::singleShot(0, this, &MainWindow::refreshRunBar); // the run has started: "recording"
        return true;
    });
    connect(m_labPanel, &LabPanel::runFinished, this, &MainWindow::refreshRunBar, Qt::QueuedConnection);
    connect(m_capture, &CaptureSession::starting, this, [this](const QString &hops) {
        beginRun(QStringLiteral("capture"), RunList::Kind::Capture, hops, false);
    });
    connect(m_capture, &CaptureSession::runningChanged, this, &MainWindow::refreshRunBar);
    connect(m_labPanel->scenarioBox(), &QComboBox::currentIndexChanged, this, &MainWindow::updateRunAction);

    // Replay of the run shown.
    m_replayer = new Replayer(m_model, this);
    tb->addSeparator();
    m_replayAction = tb->addAction(QStringLiteral("Replay"));
    m_replayAction->setObjectName(QStringLiteral("replay"));
    m_replayAction->setCheckable(true);
    m_replayAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+Y")));
    m_replayAction->setToolTip(QStringLiteral("Replay the run shown at the chosen speed, with a playhead "
                                              "(Ctrl+Shift+Y; again to show the whole run)"));
    connect(m_replayAction, &QAction::triggered, this, [this](bool on) {
        if (on)
            startReplay();
        else
            stopReplay();
    });
    m_playAction = tb->addAction(QStringLiteral("Play"));
    m_playAction->setObjectName(QStringLiteral("playPause"));
    m_playAction->setShortcut(QKeySequence(Qt::Key_Space));
    m_playAction->setToolTip(QStringLiteral("Play or pause the replay (Space)"));
    connect(m_playAction, &QAction::triggered, this, [this] {
        if (!m_replayer->isLoaded())
            startReplay();
        else
            m_replayer->togglePlay();
    });
    m_speedBox = new QComboBox(this);
    m_speedBox->setObjectName(QStringLiteral("replaySpeed"));
    for (double s : kSpeeds)
        m_speedBox->addItem(speedText(s), s);
    m_speedBox->setCurrentIndex(3); // 1×
    m_speedBox->setToolTip(QStringLiteral("Replay speed: [ slower, ] faster"));
    m_speedBox->setFocusPolicy(Qt::NoFocus);
    tb->addWidget(m_speedBox);
    connect(m_speedBox, &QComboBox::currentIndexChanged, this, [this](int i) {
        m_replayer->setSpeed(m_speedBox->itemData(i).toDouble());
        updateTitle();
    });
    shortcut(QStringLiteral("Replay slower"), QKeySequence(Qt::Key_BracketLeft),
             [this] { m_speedBox->setCurrentIndex(std::max(0, m_speedBox->currentIndex() - 1)); });
    shortcut(QStringLiteral("Replay faster"), QKeySequence(Qt::Key_BracketRight), [this] {
        m_speedBox->setCurrentIndex(std::min(m_speedBox->count() - 1, m_speedBox->currentIndex() + 1));
    });
    connect(m_replayer, &Replayer::playheadMoved, this, [this](qint64 ns) {
        if (m_replayer->isLoaded()) m_view->setPlayhead(ns);
    });
    // Feeding a saved run back does not make it unsaved.
    connect(m_replayer, &Replayer::fed, this, [this] {
        if (!m_replayUnsaved) m_savedGeneration = m_model->eventLog().generation();
    });
    connect(m_replayer, &Replayer::stateChanged, this, [this] {
        m_playAction->setText(m_replayer->isPlaying() ? QStringLiteral("Pause") : QStringLiteral("Play"));
        m_replayAction->setChecked(m_replayer->isLoaded());
        updateTitle();
    });
    connect(m_replayer, &Replayer::finished, this, [this] {
        statusBar()->showMessage(QStringLiteral("Replay finished: Space plays it again"), 5000);
        updateStatus(); // the count of calls is the whole run's now, not the last second's
    });
    connect(m_view, &SwimlaneView::refitted, this,
            [this](const QString &why) { statusBar()->showMessage(why, 5000); });

    // Unsaved markers and call counts follow the data without a signal for every batch.
    auto *timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, &MainWindow::refreshRunBar);
    timer->start(500);
    refreshRunBar();
}

bool MainWindow::isRecording() const
{
    return m_labPanel->isRunning() || (m_capture && m_capture->isRunning());
}

int MainWindow::recordingRun() const
{
    return isRecording() && m_liveRunId ? m_runs->indexOfId(m_liveRunId) : -1;
}

void MainWindow::archiveStage()
{
    int current = m_runs->current();
    if (current < 0) {
        if (m_model->eventLog().isEmpty()) return;
        current = m_runs->add(QStringLiteral("session"), RunList::Kind::Capture); // fed before any run began
    }
    const bool recording = current == recordingRun();
    if (m_model->eventLog().isEmpty() && !recording) {
        m_runs->remove(current); // an empty run is not worth a tab
        return;
    }
    m_runs->archive(current, captureInfoOf(m_model->store()), m_model->eventLog(), hasUnsavedEvents(),
                    m_model->store().calls().size());
    m_runs->setCurrent(-1);
    if (recording) startDivert();
}

void MainWindow::startDivert()
{
    // The calls so far, so the run's tab counts the ones that keep arriving.
    m_divertStore = std::make_shared<TimelineStore>(m_model->store());
    m_model->setDivert([this](const EventBatch &batch) { return divertToRecordingRun(batch); });
}

void MainWindow::stopDivert()
{
    m_model->setDivert({});
    m_divertStore.reset();
}

bool MainWindow::divertToRecordingRun(const EventBatch &batch)
{
    const int index = m_runs->indexOfId(m_liveRunId);
    if (index < 0) return true; // closed after it stopped: a late batch of it belongs to no run shown
    if (index == m_runs->current()) return false;
    m_divertStore->apply(batch);
    m_runs->appendToArchive(index, batch, m_divertStore->calls().size());
    return true;
}

bool MainWindow::mayStopCapture(const QString &then)
{
    if (!m_capture || !m_capture->isRunning() || !m_promptOnClose) return true;
    return QMessageBox::question(
               this, QStringLiteral("Capture running"),
               QStringLiteral("A live capture is running. Stop it and %1 as a new run?").arg(then),
               QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
}

bool MainWindow::beginRun(const QString &name, RunList::Kind kind, const QString &source, bool freshClock)
{
    if (kind != RunList::Kind::Scenario && m_labPanel->isRunning()) {
        statusBar()->showMessage(
            QStringLiteral("A lab scenario is still running: wait for it (or Stop, Ctrl+.) "
                           "before starting another run"),
            8000);
        return false;
    }
    if (m_replayer->isLoaded()) stopReplay();
    // What the model's feed still queues belongs to the run before (a finished run's last batches): applied
    // to it before it is archived, not to the new run.
    if (auto *feed = m_model->findChild<ModelFeed *>(QString(), Qt::FindDirectChildrenOnly)) feed->drainAll();
    archiveStage();
    // A run recorded in the background has stopped (a new one cannot start while it records): what
    // arrives from now on belongs to the new run.
    stopDivert();
    m_model->clear();
    if (freshClock) m_model->setOrigin(clockPairNow());
    m_savedGeneration = m_model->eventLog().generation();
    m_openedPath.clear();
    const int index = m_runs->add(name, kind, source);
    const bool live = kind == RunList::Kind::Scenario || kind == RunList::Kind::Capture;
    m_liveRunId = live ? m_runs->at(index).id : 0;
    m_view->fitAll(); // and keeps fitting as the run's calls arrive
    stagePolicy();    // a scenario's own config comes with runStarting
    refreshRunBar();
    return true;
}

void MainWindow::putOnStage(int index)
{
    // The recording run comes back: its archive holds every batch diverted so far, the next ones are applied.
    if (m_runs->at(index).id == m_liveRunId) stopDivert();
    const bool unsaved = m_runs->at(index).unsaved;
    const CaptureData data = m_runs->restore(index);
    m_model->replay(data);
    const std::uint64_t generation = m_model->eventLog().generation();
    m_savedGeneration = unsaved ? generation - 1 : generation;
    const RunList::Run &r = m_runs->at(index);
    m_openedPath = r.kind == RunList::Kind::File ? r.source : QString();
    m_openedGeneration = generation;
    m_view->fitAll();
    stagePolicy();
    refreshRunBar();
}

bool MainWindow::showRun(int index)
{
    if (index < 0 || index >= m_runs->count()) return false;
    if (index == m_runs->current()) return true;
    if (m_replayer->isLoaded()) stopReplay();
    const int id = m_runs->at(index).id;
    archiveStage(); // may drop an empty run, and so move the others; a recording run keeps recording
    putOnStage(m_runs->indexOfId(id));
    const int recording = recordingRun();
    if (recording >= 0 && recording != m_runs->current())
        statusBar()->showMessage(QStringLiteral("Showing %1; %2 keeps recording in the background")
                                     .arg(m_runs->at(m_runs->current()).name, m_runs->at(recording).name),
                                 5000);
    else
        statusBar()->showMessage(QStringLiteral("Showing %1").arg(m_runs->at(m_runs->current()).name), 3000);
    return true;
}

bool MainWindow::closeRun(int index, bool ask)
{
    if (index < 0 || index >= m_runs->count()) return false;
    const bool onStage = index == m_runs->current();
    if (index == recordingRun()) {
        statusBar()->showMessage(
            QStringLiteral("\"%1\" is still being recorded: stop it first").arg(m_runs->at(index).name),
            8000);
        return false;
    }
    const bool unsaved = onStage ? hasUnsavedEvents() : m_runs->at(index).unsaved;
    if (ask && m_promptOnClose && unsaved) {
        const auto answer = QMessageBox::question(
            this, QStringLiteral("Close run"),
            QStringLiteral("\"%1\" is not saved. Save it first?").arg(m_runs->at(index).name),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        if (answer == QMessageBox::Cancel) return false;
        if (answer == QMessageBox::Save) {
            saveRunInteractive(index);
            if (onStage ? hasUnsavedEvents() : m_runs->at(index).unsaved) return false;
        }
    }
    if (!onStage) {
        m_runs->remove(index);
        refreshRunBar();
        return true;
    }
    if (m_replayer->isLoaded()) {
        m_replayer->unload();
        m_view->setPlayhead(std::nullopt);
    }
    m_runs->remove(index);
    if (m_runs->count() > 0) {
        putOnStage(std::min(index, m_runs->count() - 1));
    } else {
        m_model->clear();
        m_model->setOrigin(clockPairNow());
        m_savedGeneration = m_model->eventLog().generation();
        m_openedPath.clear();
        m_view->fitAll();
        refreshRunBar();
    }
    return true;
}

void MainWindow::renameRun(int index, const QString &name)
{
    if (index < 0 || index >= m_runs->count() || name.trimmed().isEmpty()) return;
    m_runs->rename(index, name);
    refreshRunBar();
}

void MainWindow::renameRunInteractive(int index)
{
    if (index < 0 || index >= m_runs->count()) return;
    bool ok = false;
    const QString name = QInputDialog::getText(this, QStringLiteral("Rename run"), QStringLiteral("Name:"),
                                               QLineEdit::Normal, m_runs->at(index).name, &ok);
    if (!ok) return;
    if (name.trimmed().isEmpty()) {
        statusBar()->showMessage(
            QStringLiteral("A run needs a name: kept \"%1\"").arg(m_runs->at(index).name), 5000);
        return;
    }
    renameRun(index, name);
}

bool MainWindow::saveRun(int index, const QString &path, QString *errorOut)
{
    QString dummy;
    QString *error = errorOut ? errorOut : &dummy;
    if (index < 0 || index >= m_runs->count()) {
        *error = QStringLiteral("no such run");
        return false;
    }
    if (index == m_runs->current()) {
        if (m_replayer->isLoaded()) stopReplay(); // the whole run, not what the replay reached
        const bool ok = saveFile(path, error);
        refreshRunBar();
        return ok;
    }
    FileFormat format = formatFromPath(path);
    if (format == FileFormat::Unknown) format = FileFormat::Rpcscope;
    std::string why;
    if (!exportCapture(m_runs->captureOf(index), format, path, {}, &why)) {
        *error = QString::fromStdString(why);
        return false;
    }
    if (format == FileFormat::Rpcscope) m_runs->setUnsaved(index, false);
    statusBar()->showMessage(QStringLiteral("Saved %1 as %2").arg(m_runs->at(index).name, path), 5000);
    refreshRunBar();
    return true;
}

void MainWindow::saveRunInteractive(int index)
{
    if (index < 0 || index >= m_runs->count()) return;
    const QString name = fileNameOf(m_runs->at(index).name);
    QString filter;
    const QString path =
        withFilterExtension(askSaveFile(QStringLiteral("Save run"), name + QStringLiteral(".rpcscope"),
                                        saveFileFilters(), &filter),
                            filter);
    if (path.isEmpty()) return;
    QString error;
    if (!saveRun(index, path, &error) && error != QLatin1String("cancelled"))
        QMessageBox::warning(this, QStringLiteral("Cannot save"), error);
}

bool MainWindow::clearStage(bool ask)
{
    if (ask && m_promptOnClose && hasUnsavedEvents()) {
        const auto answer = QMessageBox::question(
            this, QStringLiteral("Clear"),
            QStringLiteral("Clear drops %1 calls that are not saved. Save them first?")
                .arg(m_model->store().calls().size()),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        if (answer == QMessageBox::Cancel) return false;
        if (answer == QMessageBox::Save) {
            if (m_runs->current() >= 0) saveRunInteractive(m_runs->current());
            if (hasUnsavedEvents()) return false;
        }
    }
    if (m_replayer->isLoaded()) {
        m_replayer->unload();
        m_view->setPlayhead(std::nullopt);
    }
    m_model->clear();
    m_model->setOrigin(clockPairNow()); // the ruler counts from 0 again
    m_savedGeneration = m_model->eventLog().generation();
    m_view->fitAll();
    refreshRunBar();
    statusBar()->showMessage(QStringLiteral("Cleared: the clock starts at 0 again"), 3000);
    return true;
}

bool MainWindow::confirmUnsavedRuns()
{
    QStringList names;
    for (int i = 0; i < m_runs->count(); ++i)
        if (i != m_runs->current() && m_runs->at(i).unsaved) names << m_runs->at(i).name;
    if (names.isEmpty()) return true;
    return QMessageBox::question(this, QStringLiteral("Unsaved runs"),
                                 QStringLiteral("%1 other run%2 not saved (%3). Quit and drop %4?")
                                     .arg(names.size())
                                     .arg(names.size() == 1 ? QStringLiteral(" is") : QStringLiteral("s are"))
                                     .arg(names.join(QStringLiteral(", ")))
                                     .arg(names.size() == 1 ? QStringLiteral("it") : QStringLiteral("them")),
                                 QMessageBox::Discard | QMessageBox::Cancel,
                                 QMessageBox::Cancel) == QMessageBox::Discard;
}

bool MainWindow::startReplay(bool play)
{
    if (m_runs->current() >= 0 && m_runs->current() == recordingRun()) {
        statusBar()->showMessage(QStringLiteral("This run is still being recorded: replay it when it ends"),
                                 8000);
        m_replayAction->setChecked(false);
        return false;
    }
    if (m_model->eventLog().isEmpty()) {
        statusBar()->showMessage(QStringLiteral("Nothing to replay: run a scenario or open a capture first"),
                                 5000);
        m_replayAction->setChecked(false);
        return false;
    }
    m_replayUnsaved = hasUnsavedEvents();
    // The whole run's range stays put while the replay fills it in.
    const auto [lo, hi] = m_view->timelinePainter().fullRange();
    m_replayer->setSpeed(m_speedBox->currentData().toDouble());
    m_replayer->load(captureFromLog(m_model->store(), m_model->eventLog()));
    if (!m_replayUnsaved) m_savedGeneration = m_model->eventLog().generation();
    m_view->setRange(lo, hi);
    m_view->setPlayhead(m_replayer->startNs());
    if (play) m_replayer->play();
    statusBar()->showMessage(
        QStringLiteral("Replaying at %1: Space plays or pauses, [ and ] change the speed")
            .arg(speedText(m_replayer->speed())),
        5000);
    return true;
}

void MainWindow::stopReplay()
{
    if (!m_replayer->isLoaded()) return;
    const CaptureData data = m_replayer->data();
    m_replayer->unload();
    m_view->setPlayhead(std::nullopt);
    m_model->replay(data);
    const std::uint64_t generation = m_model->eventLog().generation();
    m_savedGeneration = m_replayUnsaved ? generation - 1 : generation;
    m_view->fitAll();
    updateTitle();
}

void MainWindow::updateRunAction()
{
    QAction *run = m_labPanel->runAction();
    if (!m_lab) {
        run->setToolTip(
            QStringLiteral("No lab is running (started with --no-lab): there is no scenario to run"));
        return;
    }
    const int current = m_runs ? m_runs->current() : -1;
    const bool file = current >= 0 && (m_runs->at(current).kind == RunList::Kind::File ||
                                       m_runs->at(current).kind == RunList::Kind::MergedFiles);
    const QString scenario = m_labPanel->scenarioBox()->currentData().toString();
    if (file) {
        run->setText(QStringLiteral("Run %1 as a new run").arg(scenario));
        run->setToolTip(
            QStringLiteral("Run the lab scenario %1 as a new run; the opened file stays in the run "
                           "list (Ctrl+R)")
                .arg(scenario));
    } else {
        run->setText(QStringLiteral("Run again"));
        run->setToolTip(QStringLiteral("Run %1 as a new run (Ctrl+R)").arg(scenario));
    }
}

void MainWindow::updateTitle()
{
    QString title = QStringLiteral("rpcscope");
    const int current = m_runs ? m_runs->current() : -1;
    if (current >= 0) title += QStringLiteral(" — ") + m_runs->at(current).name;
    if (hasUnsavedEvents()) title += QStringLiteral(" (unsaved)");
    if (m_replayer && m_replayer->isLoaded()) {
        const QString speed = speedText(m_replayer->speed());
        title += m_replayer->isPlaying()    ? QStringLiteral(" — replaying at %1").arg(speed)
                 : m_replayer->isFinished() ? QStringLiteral(" — replay finished")
                                            : QStringLiteral(" — replay paused at %1").arg(speed);
    } else if (const int recording = recordingRun(); recording >= 0 && recording == current) {
        title += QStringLiteral(" — recording");
    } else if (recording >= 0) {
        title += QStringLiteral(" — %1 recording in the background").arg(m_runs->at(recording).name);
    }
    if (windowTitle() != title) setWindowTitle(title);
    updateRunAction();
}

void MainWindow::refreshRunBar()
{
    if (!m_runBar) return;
    m_runBar->refresh(hasUnsavedEvents(), m_model->store().calls().size(), recordingRun());
    updateTitle();
}

} // namespace rpcscope
