// MainWindow: Compare runs (issue 20). Any two runs of the window, or capture files, side by side in a window
// of their own; the lab's built-in comparisons run both scenarios and open it on them.

#include "capturefile.h"
#include "comparewindow.h"
#include "labpanel.h"
#include "mainwindow.h"
#include "timelinemodel.h"
#include "windowlook.h"

#include <QAction>
#include <QMenu>
#include <QStatusBar>
#include <QToolButton>

namespace rpcscope {

namespace {

// Every run of the window; the one on stage is taken from the model, the others from their archives.
std::vector<CompareWindow::Source> compareSources(const RunList *runs, const TimelineModel *model)
{
    std::vector<CompareWindow::Source> sources;
    for (int i = 0; i < runs->count(); ++i) {
        // By id: the list may change while the window is open.
        const int id = runs->at(i).id;
        sources.push_back({runs->at(i).name, [runs, model, id] {
                               const int index = runs->indexOfId(id);
                               if (index < 0) return CaptureData{};
                               if (index == runs->current())
                                   return captureFromLog(model->store(), model->eventLog());
                               return runs->captureOf(index);
                           }});
    }
    return sources;
}

} // namespace

void MainWindow::buildCompare(QMenu *viewMenu)
{
    m_compareAction = viewMenu->addAction(QStringLiteral("Compare runs…"));
    m_compareAction->setObjectName(QStringLiteral("compareRuns"));
    m_compareAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+B")));
    m_compareAction->setToolTip(QStringLiteral("Two runs or capture files side by side: their statistics, "
                                               "latency histograms and timelines (Ctrl+Shift+B)"));
    connect(m_compareAction, &QAction::triggered, this, [this] { openCompare(); });
    addAction(m_compareAction); // window-wide, like the other View entries
    connect(m_labPanel, &LabPanel::comparisonFinished, this, [this] {
        if (m_runs->count() >= 2) openCompare(m_runs->count() - 2, m_runs->count() - 1);
    });
}

CompareWindow *MainWindow::openCompare(int a, int b)
{
    if (!m_compare) {
        m_compare = new CompareWindow(this);
        m_compare->setWorkshop(m_look && m_look->workshop());
        m_compare->setDark(m_look && m_look->dark());
        connect(m_workshopAction, &QAction::toggled, m_compare, &CompareWindow::setWorkshop);
        connect(m_darkAction, &QAction::toggled, m_compare, &CompareWindow::setDark);
        // Runs started, renamed or closed while it is open are offered too (it keeps its choices).
        connect(m_runs, &RunList::changed, m_compare, [this] {
            if (m_compare->isVisible()) m_compare->setSources(compareSources(m_runs, m_model));
        });
    }
    m_compare->setSources(compareSources(m_runs, m_model));
    const int n = m_runs->count();
    if (a < 0 || b < 0) {
        a = std::max(0, n - 2);
        b = n - 1;
    }
    if (n < 2)
        statusBar()->showMessage(
            QStringLiteral("Compare needs two runs: run another scenario, or open a file "
                           "in the Compare window"),
            8000);
    if (a >= 0 && a < n && b >= 0 && b < n) {
        m_compare->pick(0, a);
        m_compare->pick(1, b);
    }
    m_compare->show();
    m_compare->raise();
    m_compare->activateWindow();
    return m_compare;
}

} // namespace rpcscope
