// Presenting: the whole window's workshop and dark look, the timeline alone and full screen, the timeline's
// keys from anywhere in the window, the Calls dock following the filter, and the first start's next step.

#include "attemptinspector.h"
#include "callsfilterproxy.h"
#include "labpanel.h"
#include "mainwindow.h"
#include "shortcutrouter.h"
#include "swimlaneview.h"
#include "windowlook.h"

#include <QAction>
#include <QDockWidget>
#include <QFontMetrics>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QStatusBar>
#include <QStatusTipEvent>
#include <QToolBar>
#include <QToolButton>
#include <QTreeWidget>
#include <memory>
#include <utility>

namespace rpcscope {

namespace {
// Workshop mode's docks below the timeline, in lines of the window's (workshop) text: the dock's title, its
// tabs, the inspector's header and two of its rows.
constexpr int kWorkshopBottomDockLines = 7;

const char *const kKeysHelp =
    "<b>Timeline</b> (the keys work wherever focus is, except while typing in a text field; Esc leaves "
    "the field)<br>"
    "F fit the whole trace · L follow live · W/S or +/- zoom · A/D or ←/→ pan · ↑/↓ and Page Up/Down scroll "
    "lanes · Home/End jump to the ends · Esc clear the selection · E the selected call's attempts a row each "
    "· P pin the selected call (retention keeps it) · G fold or unfold every group · Ctrl+Shift+K row "
    "height<br>"
    "Wheel scrolls lanes · Ctrl+wheel zooms at the cursor · Shift+wheel pans time · drag pans · Shift+drag "
    "or right-drag zooms to a span · drag across the rates strip zooms to that range<br><br>"
    "<b>Files and captures</b><br>"
    "Ctrl+O open · Ctrl+Alt+O open with key log · Ctrl+Shift+O add a capture to the timeline · Ctrl+S save "
    "· Ctrl+E export PNG · Ctrl+N new capture · Ctrl+Shift+M merged captures · Ctrl+Shift+P load .proto "
    "files · Ctrl+Shift+R fetch schemas by reflection<br><br>"
    "<b>Window</b><br>"
    "Ctrl+R run · Ctrl+. stop · Ctrl+F filter · Ctrl+Shift+C copy · Ctrl+C copy a message (its JSON) · "
    "Ctrl+L clear · Ctrl+Shift+W workshop · Ctrl+Shift+D dark · Ctrl+Shift+A rates strip · F10 timeline "
    "only · F11 full screen · F1 this list<br><br>"
    "<b>Docks</b><br>"
    "Ctrl+Shift+T statistics · Ctrl+Shift+V policy check · Ctrl+Shift+G retry policy · Ctrl+Shift+F faults "
    "· Ctrl+Return applies the retry policy, or replaces the fault rule being edited<br><br>"
    "<b>Statistics</b> (a click on a row or a histogram bucket filters the calls; again shows them all)<br>"
    "Alt+M per method · Alt+H per hop · Alt+C call latency · Alt+A attempt latency · Return or Enter "
    "shows only the current row's calls · Alt+X clear the filter<br><br>"
    "<b>Runs and replay</b><br>"
    "Ctrl+PgUp previous run · Ctrl+PgDown next run · Ctrl+W close the run · Ctrl+Shift+Y replay · Space "
    "play/pause · [ slower · ] faster · Ctrl+Shift+B compare two runs";

const QString kTimelineOnlyMessage = QStringLiteral("Timeline only: F10 brings the docks and toolbars back");
} // namespace

void MainWindow::buildPresenting(QToolBar *viewBar, bool firstStart)
{
    m_look = new WindowLook(this, m_view);
    connect(m_workshopAction, &QAction::toggled, m_look, &WindowLook::setWorkshop);
    connect(m_darkAction, &QAction::toggled, m_look, &WindowLook::setDark);
    m_workshopAction->setToolTip(QStringLiteral("Large text in the whole window and thick bars on the "
                                                "timeline, for a projector (Ctrl+Shift+W)"));
    m_darkAction->setToolTip(QStringLiteral("Dark theme for the whole window (Ctrl+Shift+D)"));
    // Its rows carry fonts of their own, made for the old size.
    connect(m_look, &WindowLook::changed, m_inspector, &AttemptInspector::refresh);
    // Its name column is sized in pixels: it grows with the text, so that names are not elided.
    connect(m_workshopAction, &QAction::toggled, this, [this](bool on) {
        QTreeWidget *tree = m_inspector->tree();
        const double scale = on ? WindowLook::kWorkshopFontScale : 1 / WindowLook::kWorkshopFontScale;
        tree->setColumnWidth(0, int(tree->columnWidth(0) * scale + 0.5));
    });
    // After the fonts changed: the docks' least heights are the new type's.
    connect(m_workshopAction, &QAction::toggled, this, &MainWindow::setWorkshopLayout);
    new ShortcutRouter(this, m_view);

    // The Calls dock shows the calls the timeline shows.
    connect(m_filterBox, &QLineEdit::textChanged, this, [this](const QString &text) {
        m_callsProxy->setFilterLine(text);
        showFilterProblem(m_callsProxy->laneFilter().problem);
        updateStatus(); // calls arriving under it are counted by the status bar's tick
    });
    m_filterToolTip = m_filterBox->toolTip();

    auto *menu = new QMenu(this);
    m_timelineOnlyAction = menu->addAction(QStringLiteral("Timeline only"));
    m_timelineOnlyAction->setCheckable(true);
    m_timelineOnlyAction->setShortcut(QKeySequence(Qt::Key_F10));
    m_timelineOnlyAction->setToolTip(
        QStringLiteral("Hide the docks and toolbars; F10 again brings them back"));
    connect(m_timelineOnlyAction, &QAction::toggled, this, &MainWindow::setTimelineOnly);
    m_fullScreenAction = menu->addAction(QStringLiteral("Full screen"));
    m_fullScreenAction->setCheckable(true);
    m_fullScreenAction->setShortcut(QKeySequence(Qt::Key_F11));
    m_fullScreenAction->setToolTip(QStringLiteral("Full screen (F11)"));
    connect(m_fullScreenAction, &QAction::toggled, this, [this](bool on) {
        setWindowState(on ? windowState() | Qt::WindowFullScreen : windowState() & ~Qt::WindowFullScreen);
    });
    menu->addAction(m_statsAction);
    menu->addAction(m_policyAction);
    menu->addAction(m_retryPolicyAction);
    menu->addAction(m_faultsAction);
    menu->addSeparator();
    menu->addAction(m_workshopAction);
    menu->addAction(m_darkAction);
    // The rates strip: calls/s, failures/s, retries/s and in flight under the ruler.
    QAction *rates = menu->addAction(QStringLiteral("Rates strip"));
    rates->setObjectName(QStringLiteral("ratesStrip"));
    rates->setCheckable(true);
    rates->setChecked(m_view->timelinePainter().options().rates);
    rates->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+A")));
    rates->setToolTip(
        QStringLiteral("Show calls/s, failures/s, retries/s and calls in flight under the ruler; "
                       "drag across it to zoom (Ctrl+Shift+A)"));
    connect(rates, &QAction::toggled, m_view, &SwimlaneView::setRates);
    addAction(rates);
    // Workshop mode starts without the strip: at the back of the room every row goes to the lanes (ten calls
    // at 1920x1080). Leaving it gives the strip back as it was; Ctrl+Shift+A shows it in workshop too.
    auto ratesOutsideWorkshop = std::make_shared<bool>(rates->isChecked());
    if (m_workshopAction->isChecked()) rates->setChecked(false);
    connect(m_workshopAction, &QAction::toggled, rates, [rates, ratesOutsideWorkshop](bool on) {
        if (on) {
            *ratesOutsideWorkshop = rates->isChecked();
            rates->setChecked(false);
        } else {
            rates->setChecked(*ratesOutsideWorkshop);
        }
    });
    menu->addSeparator();
    buildCompare(menu);
    menu->addSeparator();
    QAction *keys = menu->addAction(QStringLiteral("Keys and mouse…"));
    keys->setShortcut(QKeySequence::HelpContents);
    connect(keys, &QAction::triggered, this, [this] {
        auto *box = new QMessageBox(QMessageBox::NoIcon, QStringLiteral("Keys and mouse"), keysHelp(),
                                    QMessageBox::Close, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    });
    // Window-wide, so they work while the toolbars are hidden.
    addActions({m_timelineOnlyAction, m_fullScreenAction, keys});
    auto *button = new QToolButton(this);
    button->setObjectName(QStringLiteral("viewMenu"));
    button->setText(QStringLiteral("View"));
    button->setMenu(menu);
    button->setPopupMode(QToolButton::InstantPopup);
    button->setToolTip(QStringLiteral(
        "Timeline only (F10), full screen (F11), workshop (Ctrl+Shift+W), dark "
        "(Ctrl+Shift+D), rates strip (Ctrl+Shift+A), statistics (Ctrl+Shift+T), keys and mouse (F1)"));
    viewBar->addWidget(button);

    if (firstStart) {
        // The scenario gets the left side's full height, in front of Capture and Merged captures.
        auto *scenario = findChild<QDockWidget *>(QStringLiteral("scenario"));
        auto *capture = findChild<QDockWidget *>(QStringLiteral("capture"));
        if (scenario && capture && dockWidgetArea(capture) == dockWidgetArea(scenario))
            tabifyDockWidget(capture, scenario);
        if (scenario) {
            scenario->show();
            scenario->raise();
        }
        const QString next = m_lab ? QStringLiteral("Next: pick a scenario and press Run (Ctrl+R).")
                                   : QStringLiteral("Next: open a capture (Ctrl+O) or start one from the "
                                                    "Capture dock.");
        m_labPanel->setNextStep(next);
        statusBar()->showMessage(next);
    }
}

bool MainWindow::event(QEvent *event)
{
    if (event->type() == QEvent::StatusTip) {
        const QString tip = static_cast<QStatusTipEvent *>(event)->tip();
        const QString shown = statusBar()->currentMessage();
        if (!tip.isEmpty()) {
            if (m_hintUnderTip.isEmpty() && shown.startsWith(QLatin1String("Next:"))) m_hintUnderTip = shown;
            m_tipShown = tip;
        } else {
            const QString hint = std::exchange(m_hintUnderTip, QString());
            const QString covering = std::exchange(m_tipShown, QString());
            // Something said while the tip showed (a save's "Saved …") stays, rather than being cleared with
            // the tip.
            if (!covering.isEmpty() && !shown.isEmpty() && shown != covering) return true;
            if (!hint.isEmpty()) {
                statusBar()->showMessage(hint);
                return true;
            }
        }
    }
    return QMainWindow::event(event);
}

void MainWindow::advanceNextStep(const QString &next)
{
    if (!m_labPanel->nextStep().isEmpty() && m_labPanel->nextStep() != next) m_labPanel->setNextStep(next);
    if (statusBar()->currentMessage().startsWith(QLatin1String("Next:"))) statusBar()->showMessage(next);
}

void MainWindow::setWorkshopLayout(bool on)
{
    if (!on) {
        if (!m_layoutOutsideWorkshop.isEmpty()) restoreState(m_layoutOutsideWorkshop);
        m_layoutOutsideWorkshop.clear();
        return;
    }
    m_layoutOutsideWorkshop = saveState();
    // In workshop type the docks leave the lanes little height at a laptop's window size: say how to give
    // them the whole window.
    if (!timelineOnly())
        statusBar()->showMessage(
            QStringLiteral("Workshop: F10 gives the timeline the whole window, F11 the whole screen"), 10000);
    // At the back of the room the timeline is what is read: the Calls table and the inspector share one
    // place below it as tabs, the inspector in front of the table (its values get the window's width; a
    // Policy check or Statistics tab in front stays there), and that place is low, a few of the inspector's
    // rows.
    auto *calls = findChild<QDockWidget *>(QStringLiteral("calls"));
    auto *inspector = findChild<QDockWidget *>(QStringLiteral("inspector"));
    if (!calls || !inspector || calls->isFloating() || inspector->isFloating()) return;
    QDockWidget *front = inspector;
    for (QDockWidget *d : tabifiedDockWidgets(calls))
        if (d != inspector && d->isVisible() && !d->visibleRegion().isEmpty()) front = d;
    if (dockWidgetArea(calls) == dockWidgetArea(inspector) && !tabifiedDockWidgets(calls).contains(inspector))
        tabifyDockWidget(calls, inspector);
    if (!front->isHidden()) front->raise();
    QList<QDockWidget *> below;
    for (QDockWidget *d : {calls, inspector})
        if (!d->isHidden() && dockWidgetArea(d) == Qt::BottomDockWidgetArea) below << d;
    if (below.isEmpty()) return;
    const int height = QFontMetrics(font()).height() * kWorkshopBottomDockLines;
    resizeDocks(below, QList<int>(below.size(), height), Qt::Vertical);
}

QString MainWindow::keysHelp()
{
    return QString::fromUtf8(kKeysHelp);
}

void MainWindow::setTimelineOnly(bool on)
{
    if (m_timelineOnlyAction->isChecked() != on) {
        m_timelineOnlyAction->setChecked(on); // toggled calls back
        return;
    }
    if (on) {
        m_hiddenForTimeline.clear();
        m_frontForTimeline.clear();
        for (QDockWidget *d : findChildren<QDockWidget *>())
            if (d->isVisible()) {
                m_hiddenForTimeline.push_back(d);
                // A tab behind its group's current one is visible too, moved out of sight.
                if (!d->visibleRegion().isEmpty()) m_frontForTimeline.push_back(d);
            }
        for (QToolBar *t : findChildren<QToolBar *>())
            if (t->isVisible()) m_hiddenForTimeline.push_back(t);
        for (QWidget *w : m_hiddenForTimeline)
            w->hide();
        m_view->setFocus(Qt::ShortcutFocusReason);
        statusBar()->showMessage(kTimelineOnlyMessage, 8000);
    } else {
        for (QWidget *w : m_hiddenForTimeline)
            w->show();
        // Shown again, a tab group shows whichever tab came back first: the one that was in front goes there.
        for (QDockWidget *d : m_frontForTimeline)
            d->raise();
        m_hiddenForTimeline.clear();
        m_frontForTimeline.clear();
        if (statusBar()->currentMessage() == kTimelineOnlyMessage) statusBar()->clearMessage();
    }
}

void MainWindow::showFilterProblem(const QString &problem)
{
    if (problem.isEmpty()) {
        m_filterBox->setStyleSheet(QString());
        m_filterBox->setToolTip(m_filterToolTip);
        if (statusBar()->currentMessage().startsWith(QLatin1String("unknown "))) statusBar()->clearMessage();
        return;
    }
    m_filterBox->setStyleSheet(
        QStringLiteral("QLineEdit { border: 2px solid #d93025; border-radius: 3px; }"));
    m_filterBox->setToolTip(problem);
    statusBar()->showMessage(problem);
}

} // namespace rpcscope
