// MainWindow: capture files (Open, Save, recent files, drag and drop, the unsaved-session prompt), live
// capture sessions of the user's own services, retention and the status bar.

#include "callsfilterproxy.h"
#include "capturedialog.h"
#include "captureio.h"
#include "capturesession.h"
#include "labpanel.h"
#include "mainwindow.h"
#include "mergeset.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QPointer>
#include <QProgressDialog>
#include <QRegularExpression>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace rpcscope {

namespace {

const char *const kRecentFiles = "files/recent";
const char *const kDialogDirectory = "files/lastDirectory";
const char *const kRetention = "capture/retention";

// The retention choices of the Capture dock: a memory budget by default, or minutes, or calls.
struct RetentionChoice
{
    const char *label;
    RetentionPolicy policy;
};
const RetentionChoice kRetentionChoices[] = {
    {"keep 256 MB", {size_t(256) << 20, 0, 0}},     {"keep 512 MB", {size_t(512) << 20, 0, 0}},
    {"keep 2 GB", {size_t(2) << 30, 0, 0}},         {"keep 10 minutes", {0, 600'000'000'000, 0}},
    {"keep 60 minutes", {0, 3'600'000'000'000, 0}}, {"keep 100,000 calls", {0, 0, 100'000}},
    {"keep 1,000,000 calls", {0, 0, 1'000'000}},    {"keep everything", {0, 0, 0}},
};
constexpr int kDefaultRetention = 1; // 512 MB

QString megabytes(size_t bytes)
{
    return QStringLiteral("%1 MB").arg(double(bytes) / (1 << 20), 0, 'f', 1);
}

} // namespace

void MainWindow::buildFileAndCapture(QToolBar *tb)
{
    setAcceptDrops(true);

    // File: Open, Save, recent files.
    auto *fileMenu = new QMenu(this);
    fileMenu->setObjectName(QStringLiteral("fileMenu"));
    QAction *open = fileMenu->addAction(QStringLiteral("Open…"), this, &MainWindow::openInteractive);
    open->setShortcut(QKeySequence::Open);
    // A pcap of TLS traffic opens with the key log its client or server wrote (SSLKEYLOGFILE, capture
    // --keylog): two file choices, the capture and then its key log.
    QAction *openKeylog = fileMenu->addAction(QStringLiteral("Open with key log…"), this, [this] {
        const QString path =
            askOpenFile(QStringLiteral("Open a pcap of TLS traffic"),
                        QStringLiteral("Packet captures (*.pcapng *.pcap *.cap);;All files (*)"));
        if (path.isEmpty()) return;
        const QString keylog = QFileDialog::getOpenFileName(
            this, QStringLiteral("Its TLS key log (NSS format, as SSLKEYLOGFILE writes)"),
            QFileInfo(path).absolutePath(), QStringLiteral("Key logs (*.log *.keys *.txt);;All files (*)"));
        if (!keylog.isEmpty()) openFile(path, nullptr, false, keylog);
    });
    openKeylog->setObjectName(QStringLiteral("openWithKeylog"));
    openKeylog->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
    openKeylog->setToolTip(QStringLiteral("Open a pcap/pcapng of TLS traffic with its key log (Ctrl+Alt+O): "
                                          "TLS 1.2 and 1.3 are decrypted and decoded as HTTP/2"));
    openKeylog->setStatusTip(openKeylog->toolTip());
    fileMenu->setToolTipsVisible(true);
    QAction *save = fileMenu->addAction(QStringLiteral("Save as…"), this, &MainWindow::saveInteractive);
    save->setShortcut(QKeySequence::Save);
    m_recentMenu = fileMenu->addMenu(QStringLiteral("Open recent"));
    rebuildRecentMenu();
    auto *fileButton = new QToolButton(this);
    fileButton->setText(QStringLiteral("File"));
    fileButton->setMenu(fileMenu);
    fileButton->setPopupMode(QToolButton::InstantPopup);
    fileButton->setToolTip(
        QStringLiteral("Start a capture of your own services with Ctrl+N; open one (.rpcscope, pcap, pcapng) "
                       "with Ctrl+O or by dropping it here; a pcap of TLS traffic with its key log with "
                       "Ctrl+Alt+O; add one to the "
                       "timeline with Ctrl+Shift+O or Shift+drop; save the session with Ctrl+S"));
    tb->insertWidget(tb->actions().value(0), fileButton);
    addActions({open, openKeylog, save});

    // Capture: your own services.
    m_capture = new CaptureSession(m_model, this);
    m_capturePanel = new CapturePanel(m_capture, this);
    connect(m_capturePanel, &CapturePanel::clearRequested, this, [this] { clearStage(); });
    auto *panel = new QWidget(this);
    auto *v = new QVBoxLayout(panel);
    v->setContentsMargins(0, 0, 0, 0);
    v->addWidget(m_capturePanel);
    auto *retention = new QComboBox(panel);
    retention->setObjectName(QStringLiteral("retention"));
    retention->setToolTip(QStringLiteral("How much a live session keeps: the oldest calls are evicted whole; "
                                         "pinned calls (P) stay"));
    for (const RetentionChoice &c : kRetentionChoices)
        retention->addItem(QString::fromLatin1(c.label));
    connect(retention, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i < 0 || i >= int(std::size(kRetentionChoices))) return;
        m_model->setRetention(kRetentionChoices[i].policy);
        QSettings().setValue(QLatin1String(kRetention), i);
        updateStatus();
    });
    v->addWidget(retention);
    auto *dock = new QDockWidget(QStringLiteral("Capture"), this);
    dock->setObjectName(QStringLiteral("capture"));
    dock->setWidget(panel);
    addDockWidget(Qt::LeftDockWidgetArea, dock);
    QAction *newCapture = new QAction(QStringLiteral("New capture…"), this);
    newCapture->setObjectName(QStringLiteral("newCapture"));
    newCapture->setShortcut(QKeySequence::New);
    newCapture->setToolTip(
        QStringLiteral("Capture your own services (Ctrl+N): a proxy per hop, or one CONNECT "
                       "proxy your clients reach with grpc_proxy, TLS intercepted or not"));
    // First in the File menu, where people look for it (the scenario panel's text names it too).
    fileMenu->insertAction(open, newCapture);
    fileMenu->insertSeparator(open);
    connect(newCapture, &QAction::triggered, this, [this, dock] {
        dock->show();
        m_capturePanel->newCapture();
    });
    addAction(newCapture);
    const int saved = QSettings().value(QLatin1String(kRetention), kDefaultRetention).toInt();
    retention->setCurrentIndex(saved >= 0 && saved < int(std::size(kRetentionChoices)) ? saved
                                                                                       : kDefaultRetention);
    m_model->setRetention(kRetentionChoices[retention->currentIndex()].policy);

    // Pin: keep the selected call whatever retention evicts.
    QAction *pin = new QAction(QStringLiteral("Pin call"), this);
    pin->setShortcut(QKeySequence(QStringLiteral("P")));
    connect(pin, &QAction::triggered, this, &MainWindow::togglePinSelected);
    addAction(pin);
    connect(m_view, &SwimlaneView::attemptSelected, this, [this](int call, int) { m_selectedCall = call; });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] { m_selectedCall = -1; });

    // Status bar: refreshed once a second.
    m_statusLabel = new QLabel(this);
    m_statusLabel->setObjectName(QStringLiteral("sessionStatus"));
    m_statusLabel->setTextFormat(Qt::RichText);
    connect(m_statusLabel, &QLabel::linkActivated, this, [this](const QString &link) {
        bool ok = false;
        const size_t index = link.section(QLatin1Char(':'), 1).toULongLong(&ok);
        if (ok && index < m_model->store().connections().size())
            QMessageBox::information(
                this, QStringLiteral("Connection %1").arg(m_model->store().connections()[index].id),
                m_view->connectionToolTip(index));
    });
    // Permanent, on the right: a temporary message (a run's summary, a refit) then takes the left part
    // instead of being drawn over the session line when a font or style change shows every widget again.
    statusBar()->insertPermanentWidget(0, m_statusLabel);
    auto *timer = new QTimer(this);
    timer->setObjectName(QStringLiteral("statusTick"));
    connect(timer, &QTimer::timeout, this, &MainWindow::updateStatus);
    timer->start(1000);
    // And a tenth of a second after a zoom or a pan settles, or a run ends: "(M in view)" follows the view
    // instead of lagging it by up to a second. Continuous panning restarts it, so it costs one refresh.
    auto *soon = new QTimer(this);
    soon->setSingleShot(true);
    soon->setInterval(100);
    connect(soon, &QTimer::timeout, this, &MainWindow::updateStatus);
    connect(m_view, &SwimlaneView::rangeChanged, soon, qOverload<>(&QTimer::start));
    connect(this, &MainWindow::scenarioFinished, soon, qOverload<>(&QTimer::start));
    connect(m_capture, &CaptureSession::runningChanged, this, &MainWindow::updateStatus);
    connect(m_capture, &CaptureSession::runningChanged, this, [this](bool running) {
        if (!running) return;
        const bool empty = m_model->store().calls().empty();
        // The session started its clock after the run's fit: an empty timeline shows its first second from 0.
        if (empty) m_view->fitAll();
        advanceNextStep(empty ? captureStep() : LabPanel::readTimelineStep());
    });
    connect(m_capture, &CaptureSession::recordingFinished, this,
            [this](const QString &result) { statusBar()->showMessage(result, 15000); });
    m_savedGeneration = m_model->eventLog().generation();
    buildMerge(fileMenu); // Add capture to timeline…, the Merged captures dock (a tab beside Capture)
}

void MainWindow::restoreLayout()
{
    // The window's layout as it was left (after every dock exists).
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    // A window starts with no merged captures: a dock left open over them would come back empty, in front
    // of Capture. It shows again with the next capture added to the timeline.
    if (m_mergeDock && m_merge && m_merge->empty()) m_mergeDock->hide();
}

QString MainWindow::statusText() const
{
    QStringList parts;
    const QString capture = m_capturePanel ? m_capturePanel->statusText() : QString();
    if (!capture.isEmpty()) parts << capture;
    const auto &store = m_model->store();
    // Calls in view: those overlapping the visible time range.
    const size_t inView =
        store.callsOverlapping(m_view->timelinePainter().rangeStart(), m_view->timelinePainter().rangeEnd());
    // With a filter, how many it keeps (its lanes and the Calls dock's rows), or "No call matches the
    // filter" sits beside "20 calls (20 in view)".
    const QString matching = m_callsProxy && !m_callsProxy->laneFilter().isEmpty()
                                 ? QStringLiteral(", %1 match the filter").arg(m_callsProxy->rowCount())
                                 : QString();
    parts << QStringLiteral("%1 call%2 (%3 in view%4)")
                 .arg(store.calls().size())
                 .arg(store.calls().size() == 1 ? "" : "s")
                 .arg(inView)
                 .arg(matching);
    parts << megabytes(m_model->memoryBytes());
    if (const int recording = m_runs ? recordingRun() : -1; recording >= 0 && recording != m_runs->current())
        parts << QStringLiteral("%1 recording in the background (%2 calls)")
                     .arg(m_runs->at(recording).name.toHtmlEscaped())
                     .arg(m_runs->at(recording).calls);
    if (store.evictedCalls()) parts << QStringLiteral("%1 older calls evicted").arg(store.evictedCalls());
    if (const std::string note = store.retentionNote(); !note.empty()) parts << QString::fromStdString(note);
    // Links: clicking one shows what went wrong on the last connection it counts.
    auto linkToConnections = [&](auto wentWrong, const char *what) {
        int count = 0;
        size_t which = 0;
        for (size_t i = 0; i < store.connections().size(); ++i)
            if (wentWrong(store.connections()[i])) {
                ++count;
                which = i;
            }
        if (count)
            parts << QStringLiteral("<a href=\"connection:%4\">%1 connection%2 %5 (last: connection %3)</a>")
                         .arg(count)
                         .arg(count == 1 ? "" : "s")
                         .arg(store.connections()[which].id)
                         .arg(which)
                         .arg(QLatin1String(what));
    };
    linkToConnections([](const Connection &c) { return !c.decodeError.empty(); }, "not decodable");
    linkToConnections([](const Connection &c) { return c.protocolError() != nullptr; },
                      "with HTTP/2 protocol errors");
    return parts.join(QStringLiteral(" · "));
}

void MainWindow::updateStatus()
{
    if (m_statusLabel) m_statusLabel->setText(statusText());
    if (m_labPanel && m_labPanel->nextStep() == captureStep() && !m_model->store().calls().empty())
        advanceNextStep(LabPanel::readTimelineStep());
}

QString MainWindow::captureStep()
{
    return QStringLiteral(
        "Next: start your clients with the addresses in the Capture dock; each call becomes a "
        "row as it comes in.");
}

bool MainWindow::startCapture(const std::vector<HopSpec> &hops, QString *error)
{
    for (const HopSpec &h : hops) {
        const HopCheck c = CaptureSession::check(h, false);
        if (!c.ok()) {
            *error = QStringLiteral("%1: %2").arg(h.label,
                                                  c.listenError.isEmpty() ? c.targetError : c.listenError);
            return false;
        }
    }
    if (!m_capture->start(hops, false, error)) return false;
    CaptureDialog::rememberTargets(hops);
    updateStatus();
    return true;
}

void MainWindow::togglePinSelected()
{
    if (m_selectedCall < 0 || size_t(m_selectedCall) >= m_model->store().calls().size()) {
        statusBar()->showMessage(QStringLiteral("Select a call to pin it (click an attempt)"), 3000);
        return;
    }
    const bool pinned = !m_model->store().calls()[size_t(m_selectedCall)].pinned;
    m_model->setPinned(m_selectedCall, pinned);
    statusBar()->showMessage(
        pinned ? QStringLiteral("Pinned: retention will keep this call") : QStringLiteral("Unpinned"), 3000);
}

bool MainWindow::hasUnsavedEvents() const
{
    return !m_model->eventLog().isEmpty() && m_model->eventLog().generation() != m_savedGeneration;
}

bool MainWindow::openFile(const QString &path, QString *errorOut, bool quiet, const QString &keylog)
{
    LoadOptions load;
    load.keylogFile = keylog.toStdString();
    QString dummy;
    QString *error = errorOut ? errorOut : &dummy;
    // The file takes the stage: a live capture stops for it, as for a scenario, after asking. (A file that
    // cannot be read leaves it running.)
    if (!quiet && !mayStopCapture(QStringLiteral("open %1").arg(QFileInfo(path).fileName()))) {
        *error = QStringLiteral("cancelled");
        return false;
    }
    QProgressDialog progress(QStringLiteral("Opening %1…").arg(QFileInfo(path).fileName()),
                             QStringLiteral("Cancel"), 0, 1000, this);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(400);
    // Streamed into the model batch by batch under the session's retention, so memory follows the budget and
    // not the file. The session on stage stays until the first batch arrives: a file that cannot be read
    // leaves it as it was.
    bool started = false;
    bool refused = false;
    std::vector<QPointer<QWidget>> held;
    CaptureInfo info;
    const CaptureReadResult r = loadCaptureBatches(
        path, &info,
        [&](EventBatch &&batch) {
            if (refused) return;
            if (!started) {
                if (m_capture->isRunning()) m_capture->stop();
                if (!beginRun(QFileInfo(path).fileName(), RunList::Kind::File, path, false)) {
                    refused = true;
                    return;
                }
                started = true;
                // No view paints a model in the middle of its reset; the progress dialog (a window) still
                // does. The views are held, not the window: on an X server a window whose updates were off
                // when it was exposed (a file named on the command line, or the file dialog closing over
                // it) never painted again, black or frozen on the dialog's last picture.
                if (centralWidget()) held.push_back(centralWidget());
                for (QDockWidget *d : findChildren<QDockWidget *>(Qt::FindDirectChildrenOnly))
                    held.push_back(d);
                for (QWidget *w : held)
                    w->setUpdatesEnabled(false);
                m_model->beginReplay(info); // the origin is the first batch's (captureio.h)
            }
            m_model->replayBatch(batch);
        },
        [&](std::int64_t done, std::int64_t total) {
            progress.setValue(total > 0 ? int(1000 * done / total) : 0);
            QCoreApplication::processEvents();
            return !refused && !progress.wasCanceled();
        },
        load);
    progress.reset();
    if (started) {
        m_model->endReplay();
        for (QWidget *w : held)
            if (w) w->setUpdatesEnabled(true);
    }
    if (refused) {
        *error = QStringLiteral("a lab scenario is still running: open the file when it ends");
        if (!quiet) QMessageBox::warning(this, QStringLiteral("Cannot open"), *error);
        return false;
    }
    if (!started && r.status == CaptureReadResult::Cancelled) {
        *error = QStringLiteral("cancelled");
        return false;
    }
    if (!started && r.status == CaptureReadResult::Failed) {
        *error = QString::fromStdString(r.message);
        if (!quiet) QMessageBox::warning(this, QStringLiteral("Cannot open"), *error);
        return false;
    }
    if (!started) {
        // A capture without a single batch opens as an empty run, as before.
        if (m_capture->isRunning()) m_capture->stop();
        if (!beginRun(QFileInfo(path).fileName(), RunList::Kind::File, path, false)) {
            *error = QStringLiteral("a lab scenario is still running: open the file when it ends");
            if (!quiet) QMessageBox::warning(this, QStringLiteral("Cannot open"), *error);
            return false;
        }
        m_model->beginReplay(info);
        m_model->endReplay();
    }
    m_savedGeneration = m_model->eventLog().generation();
    m_openedPath = path; // the first file if another is added to this timeline
    m_openedGeneration = m_savedGeneration;
    m_view->fitAll();
    rememberRecent(path);
    // However it was chosen (the command line, Recent, a drop): the next file dialog starts beside it.
    rememberDialogDirectory(path);
    refreshRunBar(); // the title names the file
    QStringList notes;
    if (r.status == CaptureReadResult::Cancelled)
        notes << QStringLiteral("cancelled: showing what was read before");
    else if (r.status != CaptureReadResult::Ok)
        notes << QString::fromStdString(r.message);
    for (const std::string &n : r.notes)
        notes << QString::fromStdString(n);
    if (!notes.isEmpty()) {
        *error = notes.join('\n');
        if (!quiet) QMessageBox::information(this, QStringLiteral("Opened with notes"), *error);
    }
    // Retention's cut is no fault of the file: said on the status bar (and kept in the session line).
    QString retained;
    const size_t evicted = m_model->store().evictedCalls();
    if (const std::string note = m_model->store().retentionNote(); evicted || !note.empty()) {
        QStringList what;
        if (evicted)
            what << QStringLiteral("%1 older %2 evicted while opening")
                        .arg(evicted)
                        .arg(evicted == 1 ? "call" : "calls");
        if (!note.empty()) what << QString::fromStdString(note);
        retained = QStringLiteral("; retention kept the newest: ") + what.join(QStringLiteral(", "));
    }
    advanceNextStep(LabPanel::readTimelineStep());
    const size_t calls = m_model->store().calls().size();
    statusBar()->showMessage(
        QStringLiteral("Opened %1: %2 %3%4%5")
            .arg(path)
            .arg(calls)
            .arg(calls == 1 ? "call" : "calls")
            .arg(retained)
            .arg(notes.isEmpty() ? QString() : QStringLiteral(" (with notes: ") + notes.front() + ')'),
        notes.isEmpty() && retained.isEmpty() ? 5000 : 15000);
    updateStatus();
    return true;
}

bool MainWindow::saveFile(const QString &path, QString *errorOut)
{
    QString dummy;
    QString *error = errorOut ? errorOut : &dummy;
    FileFormat format = formatFromPath(path);
    if (format == FileFormat::Unknown) format = FileFormat::Rpcscope;
    QProgressDialog progress(QStringLiteral("Saving %1…").arg(QFileInfo(path).fileName()),
                             QStringLiteral("Cancel"), 0, 1000, this);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(400);
    std::string why;
    const bool ok = exportSession(m_model->store(), m_model->eventLog(), format, path, {}, &why, "rpcscope",
                                  [&](std::int64_t done, std::int64_t total) {
                                      progress.setValue(total > 0 ? int(1000 * done / total) : 0);
                                      QCoreApplication::processEvents();
                                      return !progress.wasCanceled();
                                  });
    progress.reset();
    if (!ok) {
        *error = QString::fromStdString(why);
        return false;
    }
    if (format == FileFormat::Rpcscope) {
        m_savedGeneration = m_model->eventLog().generation();
        rememberRecent(path);
    }
    statusBar()->showMessage(QStringLiteral("Saved %1").arg(path), 5000);
    return true;
}

QString MainWindow::dialogStart(const QString &name)
{
    const QString dir = QSettings().value(QLatin1String(kDialogDirectory)).toString();
    if (dir.isEmpty() || !QFileInfo(dir).isDir()) return name;
    return name.isEmpty() ? dir : QDir(dir).filePath(name);
}

void MainWindow::rememberDialogDirectory(const QString &path)
{
    if (path.isEmpty()) return;
    QSettings().setValue(QLatin1String(kDialogDirectory), QFileInfo(path).absolutePath());
}

QString MainWindow::askOpenFile(const QString &title, const QString &filters)
{
    const QString path = QFileDialog::getOpenFileName(this, title, dialogStart(), filters);
    rememberDialogDirectory(path);
    return path;
}

QString MainWindow::askSaveFile(const QString &title, const QString &name, const QString &filters,
                                QString *selectedFilter)
{
    const QString path =
        QFileDialog::getSaveFileName(this, title, dialogStart(name), filters, selectedFilter);
    rememberDialogDirectory(path);
    return path;
}

QString MainWindow::fileNameOf(QString runName)
{
    // "retry-basic (2)" -> "retry-basic-2": what a shell or another system takes without quoting.
    runName.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    runName.remove(QRegularExpression(QStringLiteral("^[-.]+|-+$")));
    return runName;
}

QString MainWindow::suggestedFileName(const QString &fallback, const QString &extension) const
{
    const int index = m_runs->current();
    QString name;
    if (index >= 0) {
        const RunList::Run &run = m_runs->at(index);
        // An opened file's run is named after the file: its name without the extension.
        name = fileNameOf(run.kind == RunList::Kind::File && run.name == QFileInfo(run.source).fileName()
                              ? QFileInfo(run.source).completeBaseName()
                              : run.name);
    }
    return (name.isEmpty() ? fallback : name) + QLatin1Char('.') + extension;
}

void MainWindow::openInteractive()
{
    const QString path =
        askOpenFile(QStringLiteral("Open capture"),
                    QStringLiteral("Captures (*.rpcscope *.pcapng *.pcap *.cap);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
}

void MainWindow::saveInteractive()
{
    QString filter;
    const QString path = withFilterExtension(
        askSaveFile(QStringLiteral("Save session"),
                    suggestedFileName(QStringLiteral("session"), QStringLiteral("rpcscope")),
                    saveFileFilters(), &filter),
        filter);
    if (path.isEmpty()) return;
    QString error;
    if (!saveFile(path, &error) && error != QLatin1String("cancelled"))
        QMessageBox::warning(this, QStringLiteral("Cannot save"), error);
}

void MainWindow::rememberRecent(const QString &path)
{
    QSettings settings;
    QStringList recent = settings.value(QLatin1String(kRecentFiles)).toStringList();
    const QString full = QFileInfo(path).absoluteFilePath();
    recent.removeAll(full);
    recent.prepend(full);
    while (recent.size() > 10)
        recent.removeLast();
    settings.setValue(QLatin1String(kRecentFiles), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    if (!m_recentMenu) return;
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QLatin1String(kRecentFiles)).toStringList();
    for (const QString &path : recent)
        m_recentMenu->addAction(QFileInfo(path).fileName() + QStringLiteral("  —  ") + path, this,
                                [this, path] { openFile(path); });
    m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    const auto urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent *event)
{
    // One file opens; several are merged onto one timeline; with Shift held they join what is shown.
    QStringList paths;
    for (const QUrl &url : event->mimeData()->urls())
        if (url.isLocalFile()) paths << url.toLocalFile();
    if (paths.isEmpty()) return;
    event->acceptProposedAction();
    const bool add = event->modifiers() & Qt::ShiftModifier;
    QTimer::singleShot(0, this, [this, paths, add] { // not inside the drag's event loop
        if (add || paths.size() > 1)
            addToTimeline(paths, nullptr, false, !add);
        else
            openFile(paths.front());
    });
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_promptOnClose && !confirmUnsavedRuns()) { // the runs not shown; the one shown is asked for below
        event->ignore();
        return;
    }
    if (m_promptOnClose && hasUnsavedEvents()) {
        const auto answer = QMessageBox::question(
            this, QStringLiteral("Unsaved session"),
            QStringLiteral("This session recorded %1 calls that are not saved. Save them first?")
                .arg(m_model->store().calls().size()),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        if (answer == QMessageBox::Cancel) {
            event->ignore();
            return;
        }
        if (answer == QMessageBox::Save) {
            const QString path =
                askSaveFile(QStringLiteral("Save session"),
                            suggestedFileName(QStringLiteral("session"), QStringLiteral("rpcscope")),
                            QStringLiteral("rpcscope capture (*.rpcscope)"));
            QString error;
            if (path.isEmpty() || !saveFile(path, &error)) {
                if (!path.isEmpty()) QMessageBox::warning(this, QStringLiteral("Cannot save"), error);
                event->ignore();
                return;
            }
        }
    }
    setTimelineOnly(false); // the layout saved is the one with the docks
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"),
                      m_layoutOutsideWorkshop.isEmpty() ? saveState() : m_layoutOutsideWorkshop);
    if (m_capture) m_capture->stop();
    event->accept();
}

} // namespace rpcscope
