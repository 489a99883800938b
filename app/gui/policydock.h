#pragma once

#include "gapenvelopes.h"
#include "modelpolicycheck.h"
#include "policycheck.h"
#include "retryserviceconfig.h"

#include <QWidget>
#include <memory>
#include <optional>

class QLabel;
class QPushButton;
class QTableView;
class QTableWidget;
class QTimer;

namespace rpcscope {

class FindingsModel;
class TimelineModel;

// The Policy check dock (issue 19): the calls judged against the retry policy the user gave ("Retry
// policy…"), per method the calls, those that conform and each kind of violation, and under it every call
// that does not conform with its reason. It follows the model while visible (a timer looks at the store's
// generation once a second; with a config given, also while hidden, judging again only the calls that
// changed: LiveModelPolicyCheck). The implementation of each call's client comes from its user-agent, read
// off the model's header log.
class PolicyDock : public QWidget
{
    Q_OBJECT
public:
    static constexpr int kRefreshMs = 1000;

    explicit PolicyDock(TimelineModel *model, QWidget *parent = nullptr);

    // Parses and applies a service config; false with the one-line reason, the current one kept.
    bool setServiceConfig(const QString &json, QString *error);
    // Back to no policy: the calls are not judged until one is given.
    void clearServiceConfig();
    const QString &serviceConfigText() const { return m_json; }
    bool hasConfig() const { return m_config.has_value(); }
    // The whole check (its findings listed on first asking after a refresh: O(calls)).
    const PolicyCheck &check() const { return m_live ? m_live->check() : m_noCheck; }
    // Its summary (findings() empty), as each refresh keeps it.
    const PolicyCheck &checkSummary() const { return m_live ? m_live->summary() : m_noCheck; }
    // Each judged call's backoff ranges from the last check (the timeline shades them); null without a
    // config.
    std::shared_ptr<const GapEnvelopes> envelopes() const { return m_live ? m_live->envelopes() : nullptr; }
    QTableWidget *summary() const { return m_summary; }
    // The findings, a row each (FindingsModel), in call order.
    QTableView *findings() const { return m_findings; }
    FindingsModel *findingsModel() const { return m_findingsModel; }
    // What the findings list says while it has no rows (all calls conform, no calls, no policy); empty
    // while it lists findings.
    QString findingsEmptyText() const;

    // Judges the calls again when the timeline changed (or always, `force`).
    void refresh(bool force = false);

public slots:
    // The "Retry policy…" dialog; applies what it accepts.
    void editPolicy();

signals:
    void message(const QString &text);
    // A check ran (or the config went): envelopes() changed.
    void checked();
    // The user chose a finding (clicked it, or moved to it with the keys): the call with that key, and the
    // 0-based attempt its reason is about (-1: the call as a whole, or an attempt that never came).
    void findingChosen(const QString &callKey, int attempt);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void fill();

    TimelineModel *m_model;
    QString m_json;
    std::optional<RetryServiceConfig> m_config;
    // The check of the model against m_config, kept up to date call by call; null without a config.
    std::unique_ptr<LiveModelPolicyCheck> m_live;
    const PolicyCheck m_noCheck;
    void fillFindings();
    // Fits the findings' columns to their rows while there are fewer than kFitRows (and on a fresh list).
    static constexpr size_t kFitRows = 200;
    void fitFindingColumns();
    std::uint64_t m_seenGeneration = ~std::uint64_t(0);
    QLabel *m_status = nullptr;
    QPushButton *m_edit = nullptr;
    QTableWidget *m_summary = nullptr;
    QTableView *m_findings = nullptr;
    FindingsModel *m_findingsModel = nullptr;
    QLabel *m_findingsEmpty = nullptr; // over the findings' viewport while they have no rows
    QTimer *m_timer = nullptr;
};

} // namespace rpcscope
