// MainWindow: the Faults dock (issue 19), a tab beside the Calls dock once shown. Every capture the window
// starts carries a FaultSet, so rules can be added while it runs; a new capture starts with the rules the
// last one ended with (on or off as they were) and its counters at 0.

#include "capturesession.h"
#include "faultsdock.h"
#include "faultset.h"
#include "mainwindow.h"

#include <QAction>
#include <QDockWidget>
#include <QLineEdit>
#include <QStatusBar>
#include <QTreeView>

namespace rpcscope {

void MainWindow::buildFaults(QDockWidget *beside)
{
    m_faults = new FaultsDock(this);
    m_faultsDock = new QDockWidget(QStringLiteral("Faults"), this);
    m_faultsDock->setObjectName(QStringLiteral("faults"));
    m_faultsDock->setWidget(m_faults);
    addDockWidget(Qt::BottomDockWidgetArea, m_faultsDock);
    tabifyDockWidget(beside, m_faultsDock);
    m_faultsDock->hide();                              // as the other analysis docks: hidden until asked for
    m_faults->setFaults(std::make_shared<FaultSet>()); // rules typed before a capture wait for it
    m_faults->setRunning(false);
    connect(m_faults, &FaultsDock::message, this,
            [this](const QString &text) { statusBar()->showMessage(text, 8000); });

    // start() emits starting() before it makes the relays: they get this capture's set.
    connect(m_capture, &CaptureSession::starting, this, [this] {
        auto next = std::make_shared<FaultSet>();
        if (const std::shared_ptr<FaultSet> &last = m_faults->faults()) {
            const auto rules = last->snapshot();
            for (size_t i = 0; i < rules->rules.size(); ++i)
                if (const auto index = next->add(rules->rules[i]); index && !rules->enabled[i])
                    next->setEnabled(*index, false);
        }
        m_capture->setFaults(next);
        m_faults->setFaults(next);
    });
    connect(m_capture, &CaptureSession::runningChanged, this, [this](bool running) {
        // The rules stay listed with their final counts; rules added now wait for the next capture.
        m_faults->setRunning(running);
    });

    m_faultsAction = new QAction(QStringLiteral("Faults"), this);
    m_faultsAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+F")));
    m_faultsAction->setToolTip(QStringLiteral(
        "Fault rules of the running capture: make calls through it fail on purpose (Ctrl+Shift+F)"));
    connect(m_faultsAction, &QAction::triggered, this, [this] {
        if (m_faultsDock->isVisible() && !m_faults->visibleRegion().isEmpty()) {
            m_faultsDock->hide();
            return;
        }
        showFaults();
    });
    addAction(m_faultsAction);
}

void MainWindow::showFaults()
{
    auto *calls = qobject_cast<QDockWidget *>(m_calls->parent());
    if (calls && !m_faultsDock->isFloating() && !tabifiedDockWidgets(calls).contains(m_faultsDock))
        tabifyDockWidget(calls, m_faultsDock);
    m_faultsDock->show();
    m_faultsDock->raise();
    // Room for a few rules, their line and the error under it.
    constexpr int kRoomyHeight = 260;
    if (const int now = calls ? calls->height() : 0; now < kRoomyHeight)
        resizeDocks({m_faultsDock}, {kRoomyHeight}, Qt::Vertical);
    m_faults->refresh();
    m_faults->ruleEdit()->setFocus();
}

} // namespace rpcscope
