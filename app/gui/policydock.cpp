#include "policydock.h"

#include "modelpolicycheck.h"
#include "retrypolicydialog.h"
#include "timelinemodel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <string_view>
#include <unordered_set>

namespace rpcscope {

namespace {

using Kind = RetryVerdict::Kind;

// The summary's columns after Method, Policy and Calls.
constexpr Kind kColumns[] = {Kind::Conforms, Kind::Attempts,    Kind::Gap,          Kind::NonRetryable,
                             Kind::Pushback, Kind::AfterCommit, Kind::PastDeadline, Kind::InFlight};

QString columnTitle(Kind k)
{
    switch (k) {
    case Kind::Conforms:
        return QStringLiteral("Conform");
    case Kind::Attempts:
        return QStringLiteral("Attempts");
    case Kind::Gap:
        return QStringLiteral("Gap");
    case Kind::NonRetryable:
        return QStringLiteral("Non-retryable");
    case Kind::Pushback:
        return QStringLiteral("Pushback");
    case Kind::AfterCommit:
        return QStringLiteral("After commit");
    case Kind::PastDeadline:
        return QStringLiteral("Past deadline");
    case Kind::InFlight:
        return QStringLiteral("In flight");
    }
    return {};
}

QTableWidgetItem *item(const QString &text, bool number = false)
{
    auto *it = new QTableWidgetItem(text);
    it->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (number) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return it;
}

} // namespace

PolicyDock::PolicyDock(TimelineModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto *top = new QHBoxLayout;
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("policyStatus"));
    m_status->setWordWrap(true);
    m_edit = new QPushButton(QStringLiteral("Retry policy…"), this);
    m_edit->setToolTip(QStringLiteral("Paste the service config the client was given (Ctrl+Shift+G)"));
    connect(m_edit, &QPushButton::clicked, this, &PolicyDock::editPolicy);
    top->addWidget(m_status, 1);
    top->addWidget(m_edit);
    layout->addLayout(top);

    auto *split = new QSplitter(Qt::Vertical, this);
    m_summary = new QTableWidget(this);
    m_summary->setObjectName(QStringLiteral("policySummary"));
    QStringList headers = {QStringLiteral("Method"), QStringLiteral("Policy"), QStringLiteral("Calls")};
    for (Kind k : kColumns)
        headers << columnTitle(k);
    headers << QStringLiteral("Client");
    m_summary->setColumnCount(int(headers.size()));
    m_summary->setHorizontalHeaderLabels(headers);
    m_summary->verticalHeader()->hide();
    m_summary->setWordWrap(false);
    m_summary->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_summary->horizontalHeader()->setStretchLastSection(true);
    m_summary->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_summary->setToolTip(
        QStringLiteral("Per method: the calls, those that conform, and each kind of violation"));
    split->addWidget(m_summary);
    m_findings = new QTreeWidget(this);
    m_findings->setObjectName(QStringLiteral("policyFindings"));
    m_findings->setRootIsDecorated(false);
    m_findings->setHeaderLabels(
        {QStringLiteral("Call"), QStringLiteral("Method"), QStringLiteral("Verdict"), QStringLiteral("Why")});
    // Widths fitted to the first rows (fitFindingColumns()), not kept fitted: a header that resizes to its
    // contents measures a thousand rows after every refresh that adds one, 20 ms a second in a flood of
    // findings. One line a row, so the view need not measure each.
    m_findings->header()->setSectionResizeMode(QHeaderView::Interactive);
    m_findings->header()->setStretchLastSection(true);
    m_findings->setUniformRowHeights(true);
    m_findings->setToolTip(QStringLiteral("The calls that do not conform, with the numbers"));
    // An empty list says why it is empty (every call conforms, say), in the list's own font and colours.
    connect(m_findings, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem *item) {
        const int row = item ? m_findings->indexOfTopLevelItem(item) : -1;
        if (row < 0 || size_t(row) >= m_shown.size()) return;
        emit findingChosen(QString::fromStdString(m_shown[size_t(row)].call),
                           m_shown[size_t(row)].attempt - 1);
    });
    m_findingsEmpty = new QLabel(m_findings->viewport());
    m_findingsEmpty->setObjectName(QStringLiteral("policyFindingsEmpty"));
    m_findingsEmpty->setWordWrap(true);
    m_findingsEmpty->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_findingsEmpty->setMargin(8);
    m_findingsEmpty->setForegroundRole(QPalette::Text);
    m_findings->viewport()->installEventFilter(this);
    split->addWidget(m_findings);
    layout->addWidget(split, 1);

    // A reset model (a file opened into it) is a new timeline: judged afresh, nothing kept from the old one.
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        if (m_config) m_live = std::make_unique<LiveModelPolicyCheck>(*m_config);
    });
    m_timer = new QTimer(this);
    m_timer->setInterval(kRefreshMs);
    connect(m_timer, &QTimer::timeout, this, [this] {
        // With a config given, also while hidden: the timeline shades new calls' gaps from the check.
        if (isVisible() || m_config) refresh();
    });
    m_timer->start();
    fill();
}

QString PolicyDock::findingsEmptyText() const
{
    return m_findingsEmpty->isHidden() ? QString() : m_findingsEmpty->text();
}

bool PolicyDock::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_findings->viewport() && event->type() == QEvent::Resize)
        m_findingsEmpty->setGeometry(m_findings->viewport()->rect());
    return QWidget::eventFilter(watched, event);
}

bool PolicyDock::setServiceConfig(const QString &json, QString *error)
{
    std::string why;
    std::optional<RetryServiceConfig> config = RetryServiceConfig::parse(json.toUtf8(), &why);
    if (!config) {
        if (error) *error = QString::fromStdString(why);
        return false;
    }
    m_json = json;
    m_config = std::move(config);
    m_live = std::make_unique<LiveModelPolicyCheck>(*m_config);
    refresh(true);
    return true;
}

void PolicyDock::clearServiceConfig()
{
    m_json.clear();
    m_config.reset();
    m_live.reset();
    refresh(true);
}

void PolicyDock::editPolicy()
{
    RetryPolicyDialog dialog(m_json, this);
    if (dialog.exec() != QDialog::Accepted) return;
    QString error;
    if (!setServiceConfig(dialog.json(), &error)) emit message(error);
}

void PolicyDock::refresh(bool force)
{
    const TimelineStore &store = m_model->store();
    if (!force && store.generation() == m_seenGeneration) return;
    m_seenGeneration = store.generation();
    if (!m_live) {
        m_envelopes.reset();
        fill();
        emit checked();
        return;
    }
    m_live->update(*m_model);
    m_envelopes = m_live->envelopes();
    fill();
    emit checked();
}

void PolicyDock::fill()
{
    if (!m_config) {
        m_status->setText(QStringLiteral("No retry policy given: paste the client's service config with "
                                         "Retry policy… (Ctrl+Shift+G) to judge its calls."));
    } else if (checkSummary().calls() == 0) {
        m_status->setText(QStringLiteral("No calls yet."));
    } else if (checkSummary().allConform()) {
        m_status->setText(
            QStringLiteral("All %1 calls conform to the retry policy.").arg(checkSummary().calls()));
    } else {
        m_status->setText(QStringLiteral("<b>%1 of %2 calls do not conform</b> to the retry policy.")
                              .arg(checkSummary().violations())
                              .arg(checkSummary().calls()));
    }
    const auto &rows = checkSummary().rows();
    m_summary->setRowCount(int(rows.size()));
    for (int r = 0; r < int(rows.size()); ++r) {
        const PolicyCheck::MethodRow &row = rows[size_t(r)];
        int c = 0;
        m_summary->setItem(r, c++, item(QString::fromStdString(row.method)));
        m_summary->setItem(r, c++, item(QString::fromStdString(row.policy)));
        m_summary->setItem(r, c++, item(QString::number(row.calls), true));
        for (Kind k : kColumns) {
            QTableWidgetItem *cell = item(QString::number(row.count(k)), true);
            if (k != Kind::Conforms && k != Kind::InFlight && row.count(k) > 0) {
                QFont bold = cell->font();
                bold.setBold(true);
                cell->setFont(bold);
                cell->setForeground(QColor(0xc0, 0x39, 0x2b));
            }
            m_summary->setItem(r, c++, cell);
        }
        m_summary->setItem(r, c++, item(QString::fromStdString(row.clients)));
    }
    const PolicyCheck &c = checkSummary();
    if (!m_config)
        m_findingsEmpty->setText(QStringLiteral("Not judged: no retry policy given."));
    else if (c.calls() == 0)
        m_findingsEmpty->setText(QStringLiteral("No calls to judge yet."));
    else if (c.calls() == 1)
        m_findingsEmpty->setText(QStringLiteral("The one call conforms to the retry policy."));
    else
        m_findingsEmpty->setText(QStringLiteral("All %1 calls conform to the retry policy.").arg(c.calls()));
    m_findingsEmpty->setVisible(c.allConform());
    m_findingsEmpty->setGeometry(m_findings->viewport()->rect());
    fillFindings();
}

void PolicyDock::fillFindings()
{
    auto setTexts = [](QTreeWidgetItem *it, const PolicyCheck::Finding &f) {
        it->setText(0, QString::fromStdString(f.call));
        it->setText(1, QString::fromStdString(f.method));
        it->setText(2, QString::fromLatin1(RetryVerdict::title(f.verdict.kind)));
        it->setText(3, QString::fromStdString(f.verdict.reason));
        it->setToolTip(3, QString::fromStdString(f.verdict.reason));
    };
    auto shown = [](const PolicyCheck::Finding &f) {
        return ShownFinding{f.serial, f.call, f.verdict.reason, f.verdict.kind, f.verdict.attempt};
    };
    const LivePolicyCheck::FindingChanges *changes = m_live ? &m_live->findingChanges() : nullptr;
    if (!changes || changes->all || changes->gone.size() > m_shown.size() / 4 + 16) {
        // A fresh list: no config, the first check of a config or a timeline, or many rows gone at once.
        m_findings->clear();
        m_shown.clear();
        QList<QTreeWidgetItem *> items;
        for (const PolicyCheck::Finding &f : check().findings()) {
            auto *it = new QTreeWidgetItem;
            setTexts(it, f);
            items.push_back(it);
            m_shown.push_back(shown(f));
        }
        m_findings->addTopLevelItems(items);
        fitFindingColumns();
        return;
    }
    const size_t shownBefore = m_shown.size();
    // Only what the check says changed, rows found by serial (both lists are in serial order): so a refresh
    // costs the calls that changed, and the selection and the scroll position stay.
    auto rowOf = [this](std::uint64_t serial) {
        return size_t(std::lower_bound(m_shown.begin(), m_shown.end(), serial,
                                       [](const ShownFinding &s, std::uint64_t v) { return s.serial < v; }) -
                      m_shown.begin());
    };
    if (!changes->gone.empty()) {
        // Oldest first: evictions take the first rows, which the list drops without moving the others.
        size_t removed = 0;
        for (std::uint64_t serial : changes->gone) {
            const size_t row = rowOf(serial);
            if (row < m_shown.size() && m_shown[row].serial == serial) {
                delete m_findings->takeTopLevelItem(int(row - removed));
                ++removed;
            }
        }
        auto next = changes->gone.begin();
        std::erase_if(m_shown, [&](const ShownFinding &s) {
            while (next != changes->gone.end() && *next < s.serial)
                ++next;
            return next != changes->gone.end() && *next == s.serial;
        });
    }
    QList<QTreeWidgetItem *> appended;
    for (std::uint64_t serial : changes->changed) {
        const std::optional<PolicyCheck::Finding> f = m_live->finding(serial);
        if (!f) continue;
        const size_t row = rowOf(serial);
        if (row < m_shown.size() && m_shown[row].serial == serial) {
            ShownFinding &s = m_shown[row];
            if (s.kind != f->verdict.kind || s.reason != f->verdict.reason)
                setTexts(m_findings->topLevelItem(int(row)), *f);
            s = shown(*f);
            continue;
        }
        auto *it = new QTreeWidgetItem;
        setTexts(it, *f);
        if (row == m_shown.size())
            appended.push_back(it); // the common case: new calls at the end, added at once below
        else
            m_findings->insertTopLevelItem(int(row), it); // serials ascend: none is appended yet
        m_shown.insert(m_shown.begin() + std::ptrdiff_t(row), shown(*f));
    }
    if (!appended.isEmpty()) m_findings->addTopLevelItems(appended);
    if (shownBefore < kFitRows && m_shown.size() > shownBefore) fitFindingColumns();
}

void PolicyDock::fitFindingColumns()
{
    // The call, method and verdict columns as wide as their widest text among the first rows; the reason
    // takes the rest (and its tooltip the whole of it).
    for (int c = 0; c < 3; ++c)
        m_findings->resizeColumnToContents(c);
}

} // namespace rpcscope
