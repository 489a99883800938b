#include "labpanel.h"

#include "labsession.h"

#include <QAction>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <map>

namespace rpcscope {

LabPanel::LabPanel(lab::LabSession *lab, const QString &scenario, QWidget *parent)
    : QWidget(parent), m_lab(lab), m_scenario(scenario)
{
    m_scenarioBox = new QComboBox(this); // the window's toolbar takes it
    for (const lab::Scenario &s : lab::allScenarios())
        m_scenarioBox->addItem(QString::fromStdString(s.name + "  —  " + s.title),
                               QString::fromStdString(s.name));
    m_scenarioBox->setToolTip(QStringLiteral("Lab scenario"));
    m_runAction = new QAction(QStringLiteral("Run again"), this);
    connect(m_runAction, &QAction::triggered, this, &LabPanel::runScenario);
    m_runAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
    m_runAction->setToolTip(QStringLiteral("Run the selected scenario (Ctrl+R)"));
    m_runAction->setEnabled(m_lab != nullptr);
    m_stopAction = new QAction(QStringLiteral("Stop"), this);
    connect(m_stopAction, &QAction::triggered, this, [this] { m_stopRequested = true; });
    m_stopAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+.")));
    m_stopAction->setToolTip(QStringLiteral("Stop after the current run (Ctrl+.)"));
    m_stopAction->setEnabled(false);

    auto *layout = new QVBoxLayout(this);
    m_explanation = new QLabel(this);
    m_explanation->setWordWrap(true);
    m_explanation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_explanation->setMinimumWidth(260);
    layout->addWidget(m_explanation);
    m_paramForm = new QFormLayout;
    layout->addLayout(m_paramForm);
    auto *repeatRow = new QFormLayout;
    m_repeat = new QSpinBox(this);
    m_repeat->setRange(1, 50);
    m_repeat->setToolTip(QStringLiteral("Run the scenario this many times in a row"));
    repeatRow->addRow(QStringLiteral("Repeat"), m_repeat);
    layout->addLayout(repeatRow);
    auto *run = new QPushButton(QStringLiteral("Run (Ctrl+R)"), this);
    connect(run, &QPushButton::clicked, this, &LabPanel::runScenario);
    connect(m_runAction, &QAction::enabledChanged, run, &QWidget::setEnabled);
    run->setEnabled(m_runAction->isEnabled());
    layout->addWidget(run);
    m_result = new QLabel(this);
    m_result->setWordWrap(true);
    layout->addWidget(m_result);
    layout->addStretch();

    connect(this, &LabPanel::scenarioFinished, this, &LabPanel::onScenarioFinished, Qt::QueuedConnection);
    connect(this, &LabPanel::runFinished, this, &LabPanel::onRunFinished, Qt::QueuedConnection);
    connect(m_scenarioBox, &QComboBox::currentIndexChanged, this, &LabPanel::showScenario);
    const int initial = m_scenarioBox->findData(m_scenario);
    m_scenarioBox->setCurrentIndex(initial < 0 ? 0 : initial);
    showScenario(m_scenarioBox->currentIndex());
}

LabPanel::~LabPanel()
{
    waitForRun();
}

void LabPanel::waitForRun()
{
    if (m_worker.joinable()) m_worker.join();
}

void LabPanel::showScenario(int index)
{
    m_scenario = m_scenarioBox->itemData(index).toString();
    const lab::Scenario *s = lab::findScenario(m_scenario.toStdString());
    if (!s) return;
    m_explanation->setText(QStringLiteral("<b>%1</b><br>%2")
                               .arg(QString::fromStdString(s->title).toHtmlEscaped(),
                                    QString::fromStdString(s->explanation).toHtmlEscaped()));
    while (m_paramForm->rowCount() > 0)
        m_paramForm->removeRow(0);
    m_paramEdits.clear();
    for (const lab::ScenarioParam &p : s->params) {
        auto *edit = new QLineEdit(QString::fromStdString(p.defaultValue));
        edit->setToolTip(QString::fromStdString(p.description));
        m_paramForm->addRow(QString::fromStdString(p.key), edit);
        m_paramEdits.emplace_back(p.key, edit);
    }
    m_result->clear();
}

void LabPanel::runScenario()
{
    const lab::Scenario *s = lab::findScenario(m_scenario.toStdString());
    if (!m_lab || !s || m_worker.joinable()) return;
    std::map<std::string, std::string> overrides;
    for (const auto &[key, edit] : m_paramEdits)
        overrides[key] = edit->text().trimmed().toStdString();
    lab::ScenarioParams params;
    std::string error;
    if (!s->resolveParams(overrides, &params, &error)) {
        m_result->setText(QStringLiteral("<span style='color:#c62828'>%1</span>")
                              .arg(QString::fromStdString(error).toHtmlEscaped()));
        return;
    }
    if (m_beforeRun && !m_beforeRun(m_scenario)) return;
    m_runAction->setEnabled(false);
    m_stopAction->setEnabled(true);
    m_stopRequested = false;
    const int repeat = m_repeat->value();
    emit statusMessage(QStringLiteral("Running %1…").arg(m_scenario));
    m_worker = std::thread([this, s, params, repeat] {
        for (int i = 0; i < repeat && !m_stopRequested; ++i) {
            const lab::ScenarioResult r = m_lab->run(*s, params);
            emit scenarioFinished(r.expectationHeld, QString::fromStdString(r.summary));
        }
        emit runFinished();
    });
}

void LabPanel::onScenarioFinished(bool held, const QString &summary)
{
    const QString line =
        QStringLiteral("%1: %2%3")
            .arg(m_scenario, summary,
                 held ? QStringLiteral(" — as expected") : QStringLiteral(" — NOT as expected"));
    emit statusMessage(line);
    m_result->setText(
        QStringLiteral("<span style='color:%1'>%2</span>")
            .arg(held ? QStringLiteral("#2e7d32") : QStringLiteral("#c62828"), line.toHtmlEscaped()));
}

void LabPanel::onRunFinished()
{
    waitForRun();
    m_runAction->setEnabled(true);
    m_stopAction->setEnabled(false);
}

} // namespace rpcscope
