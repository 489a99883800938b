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
    }
    std::vector<CompareWindow::Source> sources;
    for (int i = 0; i < m_runs->count(); ++i) {
        // By id: the list may change while the window is open.
        const int id = m_runs->at(i).id;
        sources.push_back({m_runs->at(i).name, [this, id] {
                               const int index = m_runs->indexOfId(id);
                               if (index < 0) return CaptureData{};
                               if (index == m_runs->current())
                                   return captureFromLog(m_model->store(), m_model->eventLog());
                               return m_runs->captureOf(index);
                           }});
    }
    m_compare->setSources(std::move(sources));
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
