#include "mainwindow.h"

#include "attemptinspector.h"
#include "callsfilterproxy.h"
#include "elidingstatusbar.h"
#include "filewrite.h"
#include "labpanel.h"
#include "labsession.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>

namespace rpcscope {

namespace {
// The Calls and Inspector docks' height on first start: about six rows of the table, so the timeline keeps
// ten calls in workshop mode at 1920x1080 (its text 1.5 times larger).
constexpr int kFirstStartBottomDocks = 140;
} // namespace

MainWindow::MainWindow(TimelineModel *model, lab::LabSession *lab, QString scenario, QWidget *parent)
    : QMainWindow(parent), m_model(model), m_lab(lab)
{
    setWindowTitle(QStringLiteral("rpcscope"));
    setStatusBar(
        new ElidingStatusBar(this)); // a long message ends in an ellipsis beside the session's status
    m_view = new SwimlaneView(model, this);
    setCentralWidget(m_view);

    auto *calls = new QTreeView(this);
    calls->setObjectName(QStringLiteral("callsTree"));
    m_calls = calls;
    m_callsProxy = new CallsFilterProxy(model, this);
    calls->setModel(m_callsProxy);
    calls->setUniformRowHeights(true);
    calls->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // After each append the whole table is painted again: QTreeView skips a row's dataChanged while its
    // layout is pending and repaints only the columns right of one that resized, which left rows of a busy
    // run with their times and no name (a click painted them). Coalesced by Qt: one paint per event loop
    // turn.
    connect(model, &TimelineModel::timelineChanged, calls->viewport(), qOverload<>(&QWidget::update));
    auto *dock = new QDockWidget(QStringLiteral("Calls"), this);
    dock->setObjectName(QStringLiteral("calls"));
    dock->setWidget(calls);
    addDockWidget(Qt::BottomDockWidgetArea, dock);
    // Selecting an attempt row in the tree selects it on the timeline too (and so in the inspector), a call's
    // row its last attempt, and brings it into view when it was not the timeline's own click. A call's row
    // counts only when the user chose it (a click, or the keys from another row): the tree also makes its
    // first row current by itself when it first gets the focus, and that chooses nothing.
    auto choose = [this](const QModelIndex &proxyIndex, bool callRows) {
        const QModelIndex i = m_callsProxy->mapToSource(proxyIndex);
        if (!i.isValid()) return;
        const auto before = m_view->selectedAttempt();
        if (i.parent().isValid()) {
            m_view->selectAttempt(i.parent().row(), i.row());
        } else if (callRows) { // a call's row: its last attempt, the one that decided it
            const auto &calls = m_model->store().calls();
            if (size_t(i.row()) >= calls.size() || calls[size_t(i.row())].attempts.empty()) return;
            // Already on one of its attempts (the timeline's click put the tree on its call): stay.
            if (before && before->first == size_t(i.row())) return;
            m_view->selectAttempt(i.row(), int(calls[size_t(i.row())].attempts.size()) - 1);
        }
        if (m_view->selectedAttempt() != before) m_view->revealSelection();
    };
    connect(calls->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [choose](const QModelIndex &current, const QModelIndex &previous) {
                choose(current, previous.isValid());
            });
    connect(calls, &QAbstractItemView::clicked, this,
            [choose](const QModelIndex &index) { choose(index, true); });

    m_inspector = new AttemptInspector(&model->store(), model->headerLog(), this);
    auto *inspectorDock = new QDockWidget(QStringLiteral("Inspector"), this);
    inspectorDock->setObjectName(QStringLiteral("inspector"));
    inspectorDock->setWidget(m_inspector);
    // Beside the calls, below the timeline: the timeline keeps the window's full width.
    addDockWidget(Qt::BottomDockWidgetArea, inspectorDock);
    splitDockWidget(dock, inspectorDock, Qt::Horizontal);
    connect(m_view, &SwimlaneView::attemptSelected, m_inspector, &AttemptInspector::showAttempt);
    // ... and a click on the timeline shows the attempt's row in the tree (selectAttempt ignores a repeat).
    connect(m_view, &SwimlaneView::attemptSelected, calls, [this, calls, model](int call, int attempt) {
        if (call < 0) return;
        // The call's own row chose it (its last attempt): the tree stays on that row, so its arrows keep
        // moving from call to call.
        if (const QModelIndex current = m_callsProxy->mapToSource(calls->currentIndex());
            current.isValid() && !current.parent().isValid() && current.row() == call)
            return;
        // Filtered out of the table (a lane the filter hides cannot be clicked, but a selection can stay).
        const QModelIndex row = m_callsProxy->mapFromSource(model->index(attempt, 0, model->index(call, 0)));
        if (!row.isValid()) return;
        calls->scrollTo(row);
        calls->setCurrentIndex(row);
    });

    auto *tb = addToolBar(QStringLiteral("Main"));
    tb->setObjectName(QStringLiteral("main"));
    tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_labPanel = new LabPanel(m_lab, scenario, this);
    tb->addWidget(m_labPanel->scenarioBox());
    tb->addAction(m_labPanel->runAction());
    tb->addAction(m_labPanel->stopAction());
    QAction *fit = tb->addAction(QStringLiteral("Fit"), m_view, &SwimlaneView::fitAll);
    fit->setToolTip(QStringLiteral("Fit the whole trace (F)"));
    auto *exportMenu = new QMenu(this);
    QAction *exportAction =
        exportMenu->addAction(QStringLiteral("PNG…"), this, &MainWindow::exportPngInteractive);
    exportAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
    exportMenu->addAction(QStringLiteral("SVG…"), this, &MainWindow::exportSvgInteractive);
    QAction *copy =
        exportMenu->addAction(QStringLiteral("Copy to clipboard"), this, &MainWindow::copyToClipboard);
    copy->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")));
    exportMenu->addSeparator();
    m_exportVisibleOnly = exportMenu->addAction(QStringLiteral("Visible range only"));
    m_exportVisibleOnly->setCheckable(true);
    m_exportScale = new QActionGroup(this);
    for (const auto &[name, scale] :
         {std::pair{QStringLiteral("PNG at screen pixel ratio"), 0.0},
          std::pair{QStringLiteral("PNG at 1×"), 1.0}, std::pair{QStringLiteral("PNG at 2×"), 2.0},
          std::pair{QStringLiteral("PNG at 3× (print)"), 3.0}}) {
        QAction *a = exportMenu->addAction(name);
        a->setCheckable(true);
        a->setData(scale);
        a->setChecked(scale == 0.0);
        m_exportScale->addAction(a);
    }
    auto *exportButton = new QToolButton(this);
    exportButton->setText(QStringLiteral("Export"));
    exportButton->setMenu(exportMenu);
    exportButton->setPopupMode(QToolButton::InstantPopup);
    exportButton->setToolTip(
        QStringLiteral("PNG (Ctrl+E), SVG or clipboard (Ctrl+Shift+C), with title, time range "
                       "and legend"));
    tb->addWidget(exportButton);
    addActions({exportAction, copy});
    QAction *clear = tb->addAction(QStringLiteral("Clear"), this, [this] { clearStage(); });
    clear->setShortcut(QKeySequence(QStringLiteral("Ctrl+L")));
    clear->setToolTip(
        QStringLiteral("Clear the run shown, asking first when it is not saved; the clock starts at "
                       "0 again (Ctrl+L)"));
    buildViewControls(tb);
    buildFileAndCapture(tb);
    buildDecoding(tb);
    buildRuns(tb); // the run list above the timeline, Replay on the toolbar
    auto *quit = new QAction(QStringLiteral("Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    addAction(quit);

    m_labLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_labLabel);
    if (m_lab)
        m_labLabel->setText(QStringLiteral("lab server %1 · capture proxy %2")
                                .arg(QString::fromStdString(m_lab->serverAddress().toString()),
                                     QString::fromStdString(m_lab->proxyAddress().toString())));
    else
        m_labLabel->setText(QStringLiteral("lab not running"));
    // Direct: the panel emits them on the run's thread, and so the window's signals are emitted there as
    // before.
    connect(m_labPanel, &LabPanel::scenarioFinished, this, &MainWindow::scenarioFinished,
            Qt::DirectConnection);
    connect(m_labPanel, &LabPanel::runFinished, this, &MainWindow::runFinished, Qt::DirectConnection);
    connect(m_labPanel, &LabPanel::statusMessage, this,
            [this](const QString &text) { statusBar()->showMessage(text); });

    auto *scenarioDock = new QDockWidget(QStringLiteral("Scenario"), this);
    scenarioDock->setObjectName(QStringLiteral("scenario"));
    scenarioDock->setWidget(m_labPanel);
    addDockWidget(Qt::LeftDockWidgetArea, scenarioDock);
    buildStats(dock);
    buildPolicy(dock);
    buildFaults(dock);
    resize(1400, 820);
    // First start: the docks below start low, so the timeline shows 25 calls and more at 1600x1000.
    const bool firstStart = !QSettings().contains(QStringLiteral("window/state"));
    restoreLayout();
    if (firstStart)
        resizeDocks({dock, inspectorDock}, {kFirstStartBottomDocks, kFirstStartBottomDocks}, Qt::Vertical);
    buildPresenting(m_viewBar, firstStart);
}

void MainWindow::buildViewControls(QToolBar *)
{
    addToolBarBreak();
    QToolBar *tb = addToolBar(QStringLiteral("View"));
    tb->setObjectName(QStringLiteral("view"));
    m_viewBar = tb;
    tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto *filter = new QLineEdit(this);
    filter->setObjectName(QStringLiteral("filter"));
    filter->setPlaceholderText(
        QStringLiteral("Filter: text  method:NAME  status:UNAVAILABLE|failed|ok|inflight  hop:NAME  "
                       "outcome:ok-after-retry  latency:>=10ms"));
    filter->setClearButtonEnabled(true);
    filter->setMinimumWidth(300);
    filter->setToolTip(QStringLiteral("Show only matching calls (Ctrl+F)"));
    connect(filter, &QLineEdit::textChanged, m_view, &SwimlaneView::setFilterText);
    m_filterBox = filter;
    tb->addWidget(filter);
    auto *focusFilter = new QAction(this);
    focusFilter->setShortcut(QKeySequence::Find);
    connect(focusFilter, &QAction::triggered, filter, [filter] {
        filter->setFocus();
        filter->selectAll();
    });
    addAction(focusFilter);

    auto *group = new QComboBox(this);
    group->setObjectName(QStringLiteral("grouping"));
    group->addItem(QStringLiteral("One lane per call"), int(LaneGrouping::None));
    group->addItem(QStringLiteral("Group by method"), int(LaneGrouping::Method));
    group->addItem(QStringLiteral("Group by connection"), int(LaneGrouping::Connection));
    group->addItem(QStringLiteral("Nest by chain"), int(LaneGrouping::Chain));
    connect(group, &QComboBox::currentIndexChanged, this,
            [this, group](int i) { m_view->setGrouping(LaneGrouping(group->itemData(i).toInt())); });
    tb->addWidget(group);

    // Row height: compact (a call on one row, retries a click away) or comfortable.
    auto *density = new QComboBox(this);
    density->setObjectName(QStringLiteral("density"));
    density->addItem(QStringLiteral("Compact rows"), int(LaneDensity::Compact));
    density->addItem(QStringLiteral("Comfortable rows"), int(LaneDensity::Comfortable));
    density->setToolTip(
        QStringLiteral("Row height: compact puts each call on one row (click a call's name, or "
                       "E, for a row per attempt); comfortable gives every attempt its row "
                       "(Ctrl+Shift+K switches)"));
    connect(density, &QComboBox::currentIndexChanged, this,
            [this, density](int i) { m_view->setDensity(LaneDensity(density->itemData(i).toInt())); });
    tb->addWidget(density);
    auto *nextDensity = new QAction(QStringLiteral("Switch row height"), this);
    nextDensity->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+K")));
    connect(nextDensity, &QAction::triggered, density,
            [density] { density->setCurrentIndex((density->currentIndex() + 1) % density->count()); });
    auto *expandCall = new QAction(QStringLiteral("Show the selected call's attempts a row each"), this);
    expandCall->setShortcut(QKeySequence(QStringLiteral("E")));
    connect(expandCall, &QAction::triggered, m_view, &SwimlaneView::toggleSelectedCallExpanded);
    auto *foldGroups = new QAction(QStringLiteral("Fold or unfold every group"), this);
    foldGroups->setShortcut(QKeySequence(QStringLiteral("G")));
    connect(foldGroups, &QAction::triggered, m_view, &SwimlaneView::toggleGroupsFolded);
    addActions({nextDensity, expandCall, foldGroups});
    group->setToolTip(
        QStringLiteral("How lanes are grouped; a click on a group's header folds it into one row "
                       "of counts (G folds or unfolds every group)"));

    auto toggle = [&](const QString &name, const QString &tip, const QString &key, auto slot) {
        QAction *a = tb->addAction(name);
        a->setCheckable(true);
        a->setToolTip(tip);
        if (!key.isEmpty()) a->setShortcut(QKeySequence(key));
        connect(a, &QAction::toggled, m_view, slot);
        return a;
    };
    QAction *live = toggle(QStringLiteral("Live"), QStringLiteral("Follow new calls at the current zoom (L)"),
                           QString(), &SwimlaneView::setLive);
    connect(m_view, &SwimlaneView::followChanged, live, [this, live] { live->setChecked(m_view->isLive()); });
    m_workshopAction = toggle(QStringLiteral("Workshop"),
                              QStringLiteral("Large text and thick bars for a projector (Ctrl+Shift+W)"),
                              QStringLiteral("Ctrl+Shift+W"), &SwimlaneView::setWorkshop);
    m_darkAction = toggle(QStringLiteral("Dark"), QStringLiteral("Dark theme (Ctrl+Shift+D)"),
                          QStringLiteral("Ctrl+Shift+D"), &SwimlaneView::setDark);
    toggle(QStringLiteral("Wall clock"),
           QStringLiteral("Ruler in wall-clock time (UTC) instead of time since start"), QString(),
           &SwimlaneView::setWallClock);
}

void MainWindow::setWorkshop(bool on)
{
    m_workshopAction->setChecked(on);
}

void MainWindow::setDark(bool on)
{
    m_darkAction->setChecked(on);
}

MainWindow::~MainWindow()
{
    // While the whole window still exists: stopping finishes a recording and signals the window and its
    // docks.
    if (m_capture) m_capture->stop();
    m_labPanel->waitForRun();
}

void MainWindow::runScenario()
{
    m_labPanel->runScenario();
}

QString MainWindow::exportTitle() const
{
    if (m_runs && m_runs->current() >= 0) // what is shown, a file or a renamed run as much as a scenario
        return QStringLiteral("rpcscope — %1").arg(m_runs->at(m_runs->current()).name);
    return m_lab ? QStringLiteral("rpcscope — %1").arg(m_labPanel->scenario()) : QStringLiteral("rpcscope");
}

std::optional<std::pair<qint64, qint64>> MainWindow::exportRange() const
{
    if (!m_exportVisibleOnly->isChecked()) return std::nullopt;
    return std::pair{m_view->timelinePainter().rangeStart(), m_view->timelinePainter().rangeEnd()};
}

QImage MainWindow::exportImage() const
{
    TimelinePainter::Options o = m_view->timelinePainter().options();
    o.title = exportTitle();
    o.legend = true;
    const double chosen =
        m_exportScale->checkedAction() ? m_exportScale->checkedAction()->data().toDouble() : 0;
    const qreal scale = chosen > 0 ? chosen : devicePixelRatioF();
    return TimelinePainter::renderImage(m_model->store(), std::max(1400, m_view->width()), o, scale,
                                        exportRange());
}

bool MainWindow::exportPng(const QString &fileName, std::string *why)
{
    // Encoded in memory and written like the other exports, so a failure says the system's reason.
    QByteArray png;
    QBuffer buffer(&png);
    std::string error = "cannot write " + fileName.toStdString() + ": the picture could not be encoded";
    const bool ok = buffer.open(QIODevice::WriteOnly) && exportImage().save(&buffer, "PNG") &&
                    saveFileAtomically(fileName, png, &error);
    if (!ok && why) *why = error;
    return ok;
}

bool MainWindow::exportSvg(const QString &fileName, std::string *why)
{
    TimelinePainter::Options o = m_view->timelinePainter().options();
    o.title = exportTitle();
    QByteArray svg;
    QBuffer buffer(&svg);
    std::string error = "cannot write " + fileName.toStdString() + ": the picture could not be drawn";
    bool ok = buffer.open(QIODevice::WriteOnly) &&
              TimelinePainter::renderSvg(m_model->store(), std::max(1400, m_view->width()), o, &buffer,
                                         exportRange());
    buffer.close();
    ok = ok && saveFileAtomically(fileName, svg, &error);
    if (!ok && why) *why = error;
    return ok;
}

void MainWindow::copyToClipboard()
{
    QApplication::clipboard()->setImage(exportImage());
    statusBar()->showMessage(QStringLiteral("Timeline copied to the clipboard"), 5000);
}

void MainWindow::exportSvgInteractive()
{
    const QString file = askSaveFile(QStringLiteral("Export SVG"),
                                     suggestedFileName(QStringLiteral("rpcscope"), QStringLiteral("svg")),
                                     QStringLiteral("SVG images (*.svg)"));
    if (file.isEmpty()) return;
    if (std::string why; !exportSvg(file, &why))
        QMessageBox::warning(this, QStringLiteral("Export failed"), QString::fromStdString(why));
    else
        statusBar()->showMessage(QStringLiteral("Exported %1").arg(file), 5000);
}

void MainWindow::exportPngInteractive()
{
    const QString file = askSaveFile(QStringLiteral("Export PNG"),
                                     suggestedFileName(QStringLiteral("rpcscope"), QStringLiteral("png")),
                                     QStringLiteral("PNG images (*.png)"));
    if (file.isEmpty()) return;
    if (std::string why; !exportPng(file, &why))
        QMessageBox::warning(this, QStringLiteral("Export failed"), QString::fromStdString(why));
    else
        statusBar()->showMessage(QStringLiteral("Exported %1").arg(file), 5000);
}

} // namespace rpcscope
