// MainWindow: the Policy check dock (issue 19), a tab beside the Calls dock once shown, and its "Retry
// policy…" dialog.

#include "labpanel.h"
#include "mainwindow.h"
#include "policydock.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QAction>
#include <QDockWidget>
#include <QStatusBar>
#include <QTreeView>

namespace rpcscope {

namespace {
constexpr int kRoomyHeight = 330; // a few method rows and the non-conforming calls, for a picture
} // namespace

void MainWindow::buildPolicy(QDockWidget *beside)
{
    m_policy = new PolicyDock(m_model, this);
    m_policyDock = new QDockWidget(QStringLiteral("Policy check"), this);
    m_policyDock->setObjectName(QStringLiteral("policyCheck"));
    m_policyDock->setWidget(m_policy);
    addDockWidget(Qt::BottomDockWidgetArea, m_policyDock);
    tabifyDockWidget(beside, m_policyDock);
    m_policyDock->hide(); // as the Statistics dock: hidden until asked for
    connect(m_policy, &PolicyDock::message, this,
            [this](const QString &text) { statusBar()->showMessage(text, 8000); });
    // The timeline shades each captured call's backoff gaps by the config given, as a lab call's by its own.
    // A finding chosen in the list is the call selected and brought into view on the timeline (and so shown
    // in the inspector and the Calls list), as choosing its row in the Calls list does.
    connect(m_policy, &PolicyDock::findingChosen, this, [this](const QString &key, int attempt) {
        const TimelineStore &store = m_model->store();
        const std::optional<size_t> call = store.callIndex(key.toStdString());
        if (!call || store.calls()[*call].attempts.empty()) return;
        const int last = int(store.calls()[*call].attempts.size()) - 1;
        m_view->selectAttempt(int(*call), attempt < 0 ? last : std::min(attempt, last));
        m_view->revealSelection();
    });
    connect(m_policy, &PolicyDock::checked, this, [this] {
        m_view->timelinePainter().setGapEnvelopes(m_policy->envelopes());
        m_view->update();
    });
    connect(m_policyDock, &QDockWidget::visibilityChanged, m_policy, [this](bool shown) {
        if (shown) m_policy->refresh(true);
    });

    m_policyAction = new QAction(QStringLiteral("Policy check"), this);
    m_policyAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+V")));
    m_policyAction->setToolTip(
        QStringLiteral("Each call's retries judged against the client's retry policy (Ctrl+Shift+V)"));
    connect(m_policyAction, &QAction::triggered, this, [this] {
        if (m_policyDock->isVisible() && !m_policy->visibleRegion().isEmpty()) {
            m_policyDock->hide();
            return;
        }
        showPolicyCheck();
    });
    addAction(m_policyAction);

    m_retryPolicyAction = new QAction(QStringLiteral("Retry policy…"), this);
    m_retryPolicyAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+G")));
    m_retryPolicyAction->setToolTip(
        QStringLiteral("Paste the service config the client was given, to judge its calls (Ctrl+Shift+G)"));
    connect(m_retryPolicyAction, &QAction::triggered, this, [this] {
        showPolicyCheck();
        m_policy->editPolicy();
    });
    addAction(m_retryPolicyAction);

    // A scenario that hands its client a service config (verify-policy) is judged against that config; the
    // run keeps it (stagePolicy()).
    connect(m_labPanel, &LabPanel::runStarting, this,
            [this](const QString &, const QMap<QString, QString> &values) {
                const auto config = values.find(QStringLiteral("service_config"));
                if (m_runs->current() >= 0)
                    m_runs->setServiceConfig(m_runs->current(), config == values.end() ? QString() : *config);
                stagePolicy();
                if (config != values.end() && m_policy->serviceConfigText() == *config) showPolicyCheck(true);
            });
}

void MainWindow::stagePolicy()
{
    const QString own = m_runs->current() >= 0 ? m_runs->at(m_runs->current()).serviceConfig : QString();
    const QString shown = m_policy->serviceConfigText();
    // The config shown came from a run's scenario while it is still the text that run set; otherwise it is
    // the user's (Retry policy…, in the dock or the window), or none, and comes back once no run's own is
    // shown.
    if (m_runPolicy.isEmpty() || shown != m_runPolicy) m_userPolicy = shown;
    const QString wanted = own.isEmpty() ? m_userPolicy : own;
    m_runPolicy = own;
    if (wanted == shown) return;
    if (wanted.isEmpty()) {
        m_policy->clearServiceConfig();
        return;
    }
    QString error;
    if (!m_policy->setServiceConfig(wanted, &error)) statusBar()->showMessage(error, 8000);
}

void MainWindow::showPolicyCheck(bool roomy)
{
    // A tab beside the Calls table, wherever a restored layout (which may predate this dock) put it.
    auto *calls = qobject_cast<QDockWidget *>(m_calls->parent());
    if (calls && !m_policyDock->isFloating() && !tabifiedDockWidgets(calls).contains(m_policyDock))
        tabifyDockWidget(calls, m_policyDock);
    m_policyDock->show();
    m_policyDock->raise();
    const int now = calls ? calls->height() : 0;
    if (roomy || now < kRoomyHeight * 3 / 4)
        resizeDocks({m_policyDock}, {std::max(now, kRoomyHeight)}, Qt::Vertical);
    m_policy->refresh(true);
}

} // namespace rpcscope
