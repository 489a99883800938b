#include "policydock.h"

#include "findingsmodel.h"
#include "modelpolicycheck.h"
#include "retrypolicydialog.h"
#include "timelinemodel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

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
    if (number)
        it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    else // a narrow dock cuts a method or a list of clients short: the whole of it on hover
        it->setToolTip(text);
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
    m_findingsModel = new FindingsModel(this);
    m_findings = new QTableView(this);
    m_findings->setObjectName(QStringLiteral("policyFindings"));
    m_findings->setModel(m_findingsModel);
    m_findings->verticalHeader()->hide();
    m_findings->setShowGrid(false);
    m_findings->setWordWrap(false);
    m_findings->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_findings->setSelectionMode(QAbstractItemView::SingleSelection);
    m_findings->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_findings->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    m_findings->horizontalHeader()->setHighlightSections(false);
    // Widths fitted to the first rows (fitFindingColumns()), not kept fitted: a header that resizes to its
    // contents measures a thousand rows after every refresh that adds one, 20 ms a second in a flood of
    // findings. One line a row, each as high as the font's.
    m_findings->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_findings->horizontalHeader()->setStretchLastSection(true);
    m_findings->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_findings->verticalHeader()->setDefaultSectionSize(m_findings->fontMetrics().height() + 4);
    m_findings->setToolTip(QStringLiteral("The calls that do not conform, with the numbers"));
    connect(m_findings->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                if (!current.isValid()) return;
                const FindingsModel::Row &r = m_findingsModel->row(current.row());
                emit findingChosen(r.call, r.attempt - 1);
            });
    // An empty list says why it is empty (every call conforms, say), in the list's own font and colours.
    m_findingsEmpty = new QLabel(m_findings->viewport());
    m_findingsEmpty->setObjectName(QStringLiteral("policyFindingsEmpty"));
    m_findingsEmpty->setWordWrap(true);
    m_findingsEmpty->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_findingsEmpty->setMargin(8);
    m_findingsEmpty->setForegroundRole(QPalette::Text);
    m_findings->viewport()->installEventFilter(this);
    split->addWidget(m_findings);
    layout->addWidget(split, 1);

    // A reset model (a file opened into it, another run shown) is a new timeline: judged afresh, nothing kept
    // from the old one, and at once: the ranges the timeline shades (envelopes()) are of the calls shown, so
    // that a fit right after the reset is not stretched to where another run's gaps were.
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        if (m_config) m_live = std::make_unique<LiveModelPolicyCheck>(*m_config);
        refresh(true);
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
        fill();
        emit checked();
        return;
    }
    m_live->update(*m_model);
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
    // Once a second while calls come in: a cell whose text stays is left alone (a new item for every cell
    // was a fifth of a refresh), and the table hears of the changed ones at once, not cell by cell (each
    // cell's change had the view work out where it is).
    QAbstractItemModel *cells = m_summary->model();
    QSignalBlocker quiet(cells);
    bool changed = false;
    auto put = [&](int r, int c, const QString &text, bool number, bool flagged = false) {
        QTableWidgetItem *cell = m_summary->item(r, c);
        if (!cell) {
            m_summary->setItem(r, c, item(text, number));
            cell = m_summary->item(r, c);
            changed = true;
        } else if (cell->text() != text) {
            cell->setText(text);
            if (!number) cell->setToolTip(text);
            changed = true;
        }
        if (cell->font().bold() != flagged) {
            changed = true;
            QFont font = cell->font();
            font.setBold(flagged);
            cell->setFont(font);
            cell->setData(Qt::ForegroundRole,
                          flagged ? QVariant(QBrush(QColor(0xc0, 0x39, 0x2b))) : QVariant());
        }
    };
    for (int r = 0; r < int(rows.size()); ++r) {
        const PolicyCheck::MethodRow &row = rows[size_t(r)];
        int c = 0;
        put(r, c++, QString::fromStdString(row.method), false);
        put(r, c++, QString::fromStdString(row.policy), false);
        put(r, c++, QString::number(row.calls), true);
        for (Kind k : kColumns)
            put(r, c++, QString::number(row.count(k)), true,
                k != Kind::Conforms && k != Kind::InFlight && row.count(k) > 0);
        put(r, c++, QString::fromStdString(row.clients), false);
    }
    quiet.unblock();
    if (changed)
        emit cells->dataChanged(cells->index(0, 0),
                                cells->index(cells->rowCount() - 1, cells->columnCount() - 1));
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
    const LivePolicyCheck::FindingChanges *changes = m_live ? &m_live->findingChanges() : nullptr;
    const int before = m_findingsModel->rowCount();
    if (!changes || changes->all || changes->gone.size() > size_t(before) / 4 + 16) {
        // A fresh list: no config, the first check of a config or a timeline, or many rows gone at once.
        std::vector<FindingsModel::Row> rows;
        rows.reserve(check().findings().size());
        for (const PolicyCheck::Finding &f : check().findings())
            rows.push_back(FindingsModel::Row::of(f));
        m_findingsModel->reset(std::move(rows));
        fitFindingColumns();
        return;
    }
    // Only what the check says changed: so a refresh costs the calls that changed, and the selection and
    // the scroll position stay.
    m_findingsModel->remove(changes->gone);
    for (std::uint64_t serial : changes->changed)
        if (const std::optional<PolicyCheck::Finding> f = m_live->finding(serial))
            m_findingsModel->put(FindingsModel::Row::of(*f));
    m_findingsModel->flush();
    if (size_t(before) < kFitRows && m_findingsModel->rowCount() > before) fitFindingColumns();
}

void PolicyDock::fitFindingColumns()
{
    // The call, method and verdict columns as wide as their widest text among the first rows; the reason
    // takes the rest (and its tooltip the whole of it).
    for (int c = 0; c < 3; ++c)
        m_findings->resizeColumnToContents(c);
}

} // namespace rpcscope
