// MainWindow: the Statistics dock (issue 20), a tab beside the Calls dock once shown. Its clicks write the
// filter box, so the timeline and the Calls table follow them and the user sees (and can edit or clear) what
// a click did.

#include "mainwindow.h"
#include "statsdock.h"
#include "timelinemodel.h"

#include <QAction>
#include <QDockWidget>
#include <QLineEdit>
#include <QStatusBar>
#include <QTreeView>

namespace rpcscope {

namespace {
// Tall enough for a few method rows and a readable histogram when the dock is shown for a picture.
constexpr int kRoomyHeight = 330;
} // namespace

void MainWindow::buildStats(QDockWidget *beside)
{
    m_stats = new StatsDock(m_model, this);
    m_statsDock = new QDockWidget(QStringLiteral("Statistics"), this);
    m_statsDock->setObjectName(QStringLiteral("statistics"));
    m_statsDock->setWidget(m_stats);
    addDockWidget(Qt::BottomDockWidgetArea, m_statsDock);
    tabifyDockWidget(beside, m_statsDock);
    // Hidden until asked for (Ctrl+Shift+T, View): a tab bar would take rows from the timeline the first
    // start's layout gives it (kFirstStartBottomDocks). Shown, it is a tab beside the Calls table.
    m_statsDock->hide();

    connect(m_stats, &StatsDock::filterRequested, m_filterBox, &QLineEdit::setText);
    connect(m_filterBox, &QLineEdit::textChanged, m_stats, &StatsDock::setFilterText);
    connect(m_stats, &StatsDock::message, this,
            [this](const QString &text) { statusBar()->showMessage(text, 8000); });
    addActions(m_stats->shortcutActions());
    // Its tab brought to the front: up to date at once rather than at the next tick.
    connect(m_statsDock, &QDockWidget::visibilityChanged, m_stats, [this](bool shown) {
        if (shown) m_stats->refresh();
    });

    // Ctrl+Shift+T brings the dock to the front (shown, its tab raised), or hides it when it is in front.
    m_statsAction = new QAction(QStringLiteral("Statistics"), this);
    m_statsAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+T")));
    m_statsAction->setToolTip(
        QStringLiteral("Calls, retries, outcomes and latency per method or hop (Ctrl+Shift+T)"));
    connect(m_statsAction, &QAction::triggered, this, [this] {
        if (m_stats->inFront()) {
            m_statsDock->hide();
            return;
        }
        showStatistics();
    });
    addAction(m_statsAction);
}

void MainWindow::showStatistics(bool roomy)
{
    m_statsDock->show();
    m_statsDock->raise();
    // The Calls tab's first-start height (kFirstStartBottomDocks) leaves the table two rows and the histogram
    // no room: grow to a readable height, never shrink what the user chose.
    const auto *calls = qobject_cast<QWidget *>(m_calls->parent());
    const int now = calls ? calls->height() : 0;
    if (roomy || now < kRoomyHeight * 3 / 4)
        resizeDocks({m_statsDock}, {std::max(now, kRoomyHeight)}, Qt::Vertical);
    m_stats->refresh(true);
}

} // namespace rpcscope
