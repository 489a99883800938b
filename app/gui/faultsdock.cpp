#include "faultsdock.h"

#include "faultrule.h"
#include "faultset.h"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace rpcscope {

namespace {
enum Column
{
    ColOn,
    ColNumber,
    ColRule,
    ColHits,
    ColCount
};
} // namespace

FaultsDock::FaultsDock(QWidget *parent) : QWidget(parent)
{
    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    m_caption = new QLabel(this);
    m_caption->setObjectName(QStringLiteral("faultsCaption"));
    m_caption->setWordWrap(true);
    v->addWidget(m_caption);

    m_table = new QTableWidget(0, ColCount, this);
    m_table->setObjectName(QStringLiteral("faultRules"));
    m_table->setHorizontalHeaderLabels(
        {QStringLiteral("On"), QStringLiteral("#"), QStringLiteral("Rule"), QStringLiteral("Hits")});
    m_table->horizontalHeaderItem(ColOn)->setToolTip(
        QStringLiteral("Whether the rule applies (Space switches)"));
    m_table->horizontalHeaderItem(ColNumber)->setToolTip(
        QStringLiteral("The rule's number, as injected attempts and exports name it"));
    m_table->horizontalHeaderItem(ColHits)->setToolTip(
        QStringLiteral("How often the rule was applied (refreshed every second)"));
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(ColRule, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(ColOn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(ColNumber, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(ColHits, QHeaderView::ResizeToContents);
    m_table->setToolTip(QStringLiteral("The running capture's fault rules: tick to switch one on or off, "
                                       "select one to edit it in the line below"));
    v->addWidget(m_table, 1);
    connect(m_table, &QTableWidget::itemChanged, this, [this](QTableWidgetItem *item) {
        if (m_filling || !m_faults || item->column() != ColOn) return;
        const size_t index = size_t(item->row());
        if (index >= m_faults->size()) return;
        const bool on = item->checkState() == Qt::Checked;
        m_faults->setEnabled(index, on);
        emit message(QStringLiteral("Fault rule %1 %2").arg(index + 1).arg(on ? "on" : "off"));
    });
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &FaultsDock::selectionChanged);

    auto *h = new QHBoxLayout;
    m_edit = new QLineEdit(this);
    m_edit->setObjectName(QStringLiteral("faultRuleEdit"));
    m_edit->setPlaceholderText(QStringLiteral("abort status=UNAVAILABLE method=/shop.Cart/* percent=30"));
    m_edit->setToolTip(QStringLiteral("A rule in the compact syntax of capture --fault: an action, then "
                                      "KEY=VALUE settings (Return adds it; F1 shows the syntax)"));
    m_edit->setClearButtonEnabled(true);
    h->addWidget(m_edit, 1);
    m_add = new QPushButton(QStringLiteral("&Add"), this);
    m_add->setObjectName(QStringLiteral("faultAdd"));
    m_add->setToolTip(QStringLiteral("Add the line as a new rule of the running capture (Return, Alt+A)"));
    h->addWidget(m_add);
    m_replace = new QPushButton(QStringLiteral("&Edit"), this);
    m_replace->setObjectName(QStringLiteral("faultEdit"));
    m_replace->setToolTip(QStringLiteral("Put the line in place of the selected rule; its hit count starts "
                                         "again (Ctrl+Return, Alt+E)"));
    h->addWidget(m_replace);
    m_help = new QPushButton(QStringLiteral("?"), this);
    m_help->setObjectName(QStringLiteral("faultHelp"));
    m_help->setToolTip(QStringLiteral("The rule syntax: actions and settings (F1 in the line)"));
    m_help->setFixedWidth(m_help->fontMetrics().horizontalAdvance(QStringLiteral("??")) + 16);
    h->addWidget(m_help);
    v->addLayout(h);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("faultError"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("color: #d0352b"));
    m_error->hide();
    v->addWidget(m_error);

    connect(m_add, &QPushButton::clicked, this, [this] { addRule(m_edit->text()); });
    connect(m_edit, &QLineEdit::returnPressed, this, [this] { addRule(m_edit->text()); });
    connect(m_replace, &QPushButton::clicked, this, [this] { replaceSelected(m_edit->text()); });
    connect(m_edit, &QLineEdit::textEdited, this, [this] { m_error->hide(); });
    auto *replaceKey = new QAction(this);
    replaceKey->setShortcut(QKeySequence(QStringLiteral("Ctrl+Return")));
    replaceKey->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(replaceKey, &QAction::triggered, this, [this] { replaceSelected(m_edit->text()); });
    addAction(replaceKey);
    auto showHelp = [this] {
        QMessageBox box(QMessageBox::Information, QStringLiteral("Fault rule syntax"),
                        QStringLiteral("One rule a line, as capture --fault takes it:"), QMessageBox::Close,
                        this);
        box.setDetailedText(QString::fromUtf8(faultRuleSyntaxHelp()));
        box.setInformativeText(QString::fromUtf8(faultRuleSyntaxHelp()).section(QLatin1Char('\n'), 0, 11));
        box.exec();
    };
    connect(m_help, &QPushButton::clicked, this, showHelp);
    auto *helpKey = new QAction(this);
    helpKey->setShortcut(QKeySequence(Qt::Key_F1));
    helpKey->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(helpKey, &QAction::triggered, this, showHelp);
    addAction(helpKey);

    m_timer = new QTimer(this);
    m_timer->setInterval(1000);
    connect(m_timer, &QTimer::timeout, this, &FaultsDock::refresh);
    m_timer->start();
    refresh();
}

void FaultsDock::setRunning(bool running)
{
    m_running = running;
    refresh();
}

void FaultsDock::setFaults(std::shared_ptr<FaultSet> faults)
{
    m_faults = std::move(faults);
    m_running = m_faults != nullptr;
    m_table->setRowCount(0);
    m_error->hide();
    refresh();
}

QString FaultsDock::errorText() const
{
    return m_error->isHidden() ? QString() : m_error->text();
}

void FaultsDock::showError(const QString &text)
{
    m_error->setText(text);
    m_error->setVisible(!text.isEmpty());
}

bool FaultsDock::parse(const QString &text, FaultRule *rule)
{
    if (!m_faults) {
        showError(QStringLiteral("No capture is running: start one (Ctrl+N), then add rules to it"));
        return false;
    }
    if (text.trimmed().isEmpty()) {
        showError(QStringLiteral("Type a rule first, for example: abort status=UNAVAILABLE percent=30"));
        return false;
    }
    std::string error;
    if (!parseFaultRule(text.trimmed().toStdString(), rule, &error)) {
        showError(QString::fromStdString(error));
        return false;
    }
    showError({});
    return true;
}

bool FaultsDock::addRule(const QString &text)
{
    FaultRule rule;
    if (!parse(text, &rule)) return false;
    const auto index = m_faults->add(std::move(rule));
    if (!index) {
        showError(
            QStringLiteral("A capture takes at most %1 rules; edit one instead").arg(FaultSet::kMaxRules));
        return false;
    }
    refresh();
    m_table->selectRow(int(*index));
    m_edit->clear();
    emit message(QStringLiteral("Fault rule %1 added: %2").arg(*index + 1).arg(text.trimmed()));
    return true;
}

bool FaultsDock::replaceSelected(const QString &text)
{
    const int row = m_table->currentRow();
    if (m_faults && (row < 0 || size_t(row) >= m_faults->size())) {
        showError(QStringLiteral("Select the rule to edit first"));
        return false;
    }
    FaultRule rule;
    if (!parse(text, &rule)) return false;
    m_faults->replace(size_t(row), std::move(rule));
    refresh();
    emit message(QStringLiteral("Fault rule %1 is now: %2").arg(row + 1).arg(text.trimmed()));
    return true;
}

void FaultsDock::selectionChanged()
{
    const int row = m_table->currentRow();
    if (m_faults && row >= 0 && size_t(row) < m_faults->size())
        m_edit->setText(QString::fromStdString(m_faults->rule(size_t(row)).text));
}

void FaultsDock::refresh()
{
    m_add->setEnabled(m_faults != nullptr);
    m_replace->setEnabled(m_faults != nullptr && m_table->currentRow() >= 0);
    if (!m_faults) {
        m_caption->setText(QStringLiteral("No capture running. Start one (Ctrl+N) to add fault rules: the "
                                          "proxy then makes the calls through it fail on purpose."));
        m_table->setRowCount(0);
        return;
    }
    const auto rules = m_faults->snapshot();
    QString caption =
        rules->rules.empty()
            ? QStringLiteral("No fault rules yet: type one below (connection actions apply to connections "
                             "opened after it is added).")
            : QStringLiteral("%1 rule%2 · attempts they fail are hatched on the timeline")
                  .arg(rules->rules.size())
                  .arg(rules->rules.size() == 1 ? "" : "s");
    if (!m_running)
        caption = QStringLiteral("No capture running: rules apply from the next one (Ctrl+N). ") + caption;
    m_caption->setText(caption);
    m_filling = true;
    const int had = m_table->rowCount();
    m_table->setRowCount(int(rules->rules.size()));
    for (int row = 0; row < int(rules->rules.size()); ++row) {
        const FaultRule &r = rules->rules[size_t(row)];
        const bool on = rules->enabled[size_t(row)] != 0;
        if (row >= had) {
            auto *check = new QTableWidgetItem;
            check->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable);
            m_table->setItem(row, ColOn, check);
            auto *number = new QTableWidgetItem(QString::number(row + 1));
            number->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, ColNumber, number);
            m_table->setItem(row, ColRule, new QTableWidgetItem);
            auto *hits = new QTableWidgetItem;
            hits->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, ColHits, hits);
        }
        m_table->item(row, ColOn)->setCheckState(on ? Qt::Checked : Qt::Unchecked);
        m_table->item(row, ColOn)
            ->setToolTip(on ? QStringLiteral("On: untick to stop this rule")
                            : QStringLiteral("Off: tick to apply this rule again"));
        const QString text = QString::fromStdString(r.text);
        QTableWidgetItem *ruleItem = m_table->item(row, ColRule);
        if (ruleItem->text() != text) ruleItem->setText(text);
        ruleItem->setToolTip(
            QStringLiteral("%1 rule · %2")
                .arg(isConnectionAction(r.action) ? QStringLiteral("Connection") : QStringLiteral("Stream"),
                     text));
        ruleItem->setForeground(on ? palette().color(QPalette::Text)
                                   : palette().color(QPalette::Disabled, QPalette::Text));
        m_table->item(row, ColHits)->setText(QString::number(m_faults->hits(size_t(row))));
    }
    m_filling = false;
}

} // namespace rpcscope
