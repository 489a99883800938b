#include "labpanel.h"

#include "labsession.h"
#include "scenariotextedit.h"

#include <QAction>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <map>

namespace rpcscope {

namespace {
constexpr int kComparisonSettleMs = 250;
} // namespace

LabPanel::LabPanel(lab::LabSession *lab, const QString &scenario, QWidget *parent)
    : QWidget(parent), m_lab(lab), m_scenario(scenario)
{
    m_scenarioBox = new QComboBox(this); // the window's toolbar takes it
    for (const lab::Scenario &s : lab::allScenarios())
        m_scenarioBox->addItem(QString::fromStdString(s.name + "  —  " + s.title),
                               QString::fromStdString(s.name));
    m_scenarioBox->setToolTip(QStringLiteral("Lab scenario"));
    if (!m_lab) {
        // Without a lab there is no scenario to pick: the box says so instead of naming one that cannot run.
        m_scenarioBox->insertItem(0, QStringLiteral("No lab (started with --no-lab)"), QString());
        m_scenarioBox->setToolTip(QStringLiteral("No lab is running: rpcscope was started with --no-lab"));
        m_scenarioBox->setEnabled(false);
    }
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

    // Everything scrolls as one page when the dock is short, so no row is squashed and no text is cut.
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto *scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("scenarioScroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    outer->addWidget(scroll);
    auto *page = new QWidget(scroll);
    scroll->setWidget(page);
    auto *layout = new QVBoxLayout(page);
    layout->setSizeConstraint(QLayout::SetMinAndMaxSize);
    auto wrapped = [&](const QString &name) {
        auto *label = new QLabel(page);
        label->setObjectName(name);
        label->setWordWrap(true);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        label->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
        layout->addWidget(label);
        return label;
    };
    m_nextStep = wrapped(QStringLiteral("nextStep"));
    m_nextStep->hide();
    m_explanation = wrapped(QStringLiteral("explanation"));
    m_explanation->setMinimumWidth(260);
    m_hints = wrapped(QStringLiteral("hints"));
    m_paramForm = new QFormLayout;
    // Labels are read as written: long ones put their field on the next row instead of being cut.
    m_paramForm->setRowWrapPolicy(QFormLayout::WrapLongRows);
    m_paramForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    layout->addLayout(m_paramForm);
    auto *repeatRow = new QFormLayout;
    m_repeat = new QSpinBox(page);
    m_repeat->setObjectName(QStringLiteral("repeat"));
    m_repeat->setRange(1, 50);
    m_repeat->setToolTip(QStringLiteral("Run the scenario this many times in a row"));
    m_repeat->setMinimumHeight(m_repeat->sizeHint().height());
    m_repeat->setEnabled(m_lab != nullptr);
    repeatRow->addRow(QStringLiteral("Repeat"), m_repeat);
    layout->addLayout(repeatRow);
    auto *run = new QPushButton(QStringLiteral("Run (Ctrl+R)"), page);
    run->setToolTip(m_runAction->toolTip());
    connect(run, &QPushButton::clicked, this, &LabPanel::runScenario);
    connect(m_runAction, &QAction::enabledChanged, run, &QWidget::setEnabled);
    run->setEnabled(m_runAction->isEnabled());
    layout->addWidget(run);
    // Built-in comparisons: two runs, then the Compare window on them.
    m_compareButton = new QToolButton(page);
    m_compareButton->setObjectName(QStringLiteral("labCompare"));
    m_compareButton->setText(QStringLiteral("Compare…"));
    m_compareButton->setPopupMode(QToolButton::InstantPopup);
    m_compareButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_compareButton->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_compareButton->setToolTip(
        QStringLiteral("Run two scenarios one after the other and compare them side "
                       "by side (Compare runs, Ctrl+Shift+B, compares any two runs)"));
    auto *compareMenu = new QMenu(m_compareButton);
    for (const lab::LabComparison &c : lab::labComparisons()) {
        QAction *a = compareMenu->addAction(QString::fromStdString(c.title));
        a->setToolTip(QString::fromStdString(c.a.label + " against " + c.b.label + ": " + c.lookFor));
        a->setData(QString::fromStdString(c.name));
        connect(a, &QAction::triggered, this,
                [this, name = c.name] { runComparison(QString::fromStdString(name)); });
    }
    compareMenu->setToolTipsVisible(true);
    m_compareButton->setMenu(compareMenu);
    m_compareButton->setEnabled(m_lab != nullptr);
    connect(m_runAction, &QAction::enabledChanged, m_compareButton, &QWidget::setEnabled);
    layout->addWidget(m_compareButton);
    m_result = wrapped(QStringLiteral("result"));
    layout->addStretch();

    connect(this, &LabPanel::scenarioFinished, this, &LabPanel::onScenarioFinished, Qt::QueuedConnection);
    connect(this, &LabPanel::runFinished, this, &LabPanel::onRunFinished, Qt::QueuedConnection);
    connect(m_scenarioBox, &QComboBox::currentIndexChanged, this, &LabPanel::showScenario);
    const int initial = m_lab ? m_scenarioBox->findData(m_scenario) : 0;
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
    if (!s) {
        m_explanation->setText(QStringLiteral(
            "<b>No lab is running</b><br>rpcscope was started with --no-lab, so there is no scenario to run. "
            "Open a capture (Ctrl+O) or start one with New capture (Ctrl+N)."));
        m_hints->setVisible(false);
        return;
    }
    // The data joins the explanation and its "Look for:" hint; the hint gets a paragraph of its own.
    const QString text = QString::fromStdString(s->explanation);
    const QLatin1String marker(" Look for: ");
    const qsizetype at = text.indexOf(marker);
    m_explanation->setText(QStringLiteral("<b>%1</b><br>%2")
                               .arg(QString::fromStdString(s->title).toHtmlEscaped(),
                                    (at < 0 ? text : text.left(at)).toHtmlEscaped()));
    m_hints->setText(
        at < 0 ? QString()
               : QStringLiteral("<b>Look for:</b> %1").arg(text.mid(at + marker.size()).toHtmlEscaped()));
    m_hints->setVisible(at >= 0);
    while (m_paramForm->rowCount() > 0)
        m_paramForm->removeRow(0);
    m_paramEdits.clear();
    m_textEdits.clear();
    for (const lab::ScenarioParam &p : s->params) {
        if (p.isText()) {
            auto *edit = new ScenarioTextEdit(p);
            // The label above the editor: the text needs the dock's whole width.
            m_paramForm->addRow(new QLabel(QString::fromStdString(p.key)));
            m_paramForm->addRow(edit);
            m_textEdits.emplace_back(p.key, edit);
            continue;
        }
        auto *edit = new QLineEdit(QString::fromStdString(p.defaultValue));
        edit->setToolTip(QString::fromStdString(p.description));
        // Never shorter than it wants to be, whatever the dock's height.
        edit->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        edit->setMinimumHeight(edit->sizeHint().height());
        m_paramForm->addRow(QString::fromStdString(p.key), edit);
        m_paramEdits.emplace_back(p.key, edit);
    }
    m_resultKind = Result::None;
    m_resultText.clear();
    showResult();
}

void LabPanel::runScenario()
{
    if (!m_lab || m_worker.joinable()) return;
    std::map<std::string, std::string> overrides;
    for (const auto &[key, edit] : m_paramEdits)
        overrides[key] = edit->text().trimmed().toStdString();
    for (const auto &[key, edit] : m_textEdits)
        overrides[key] = edit->text().toStdString();
    m_comparison.reset();
    startRun(m_scenario.toStdString(), overrides, m_scenario, m_repeat->value());
}

bool LabPanel::runComparison(const QString &name)
{
    if (!m_lab || m_worker.joinable()) return false;
    lab::LabComparison c;
    std::string error;
    if (!lab::resolveLabComparison(name.toStdString(), &c, &error)) {
        m_resultKind = Result::Error;
        m_resultText = QString::fromStdString(error);
        showResult();
        return false;
    }
    m_comparison = c;
    m_comparisonSide = 0;
    if (startRun(c.a.scenario, c.a.overrides, QString::fromStdString(c.a.label), 1)) return true;
    m_comparison.reset();
    return false;
}

bool LabPanel::startRun(const std::string &scenario, const std::map<std::string, std::string> &overrides,
                        const QString &label, int repeat)
{
    const lab::Scenario *s = lab::findScenario(scenario);
    if (!m_lab || !s || m_worker.joinable()) return false;
    lab::ScenarioParams params;
    std::string error;
    if (!s->resolveParams(overrides, &params, &error)) {
        m_resultKind = Result::Error;
        m_resultText = QString::fromStdString(error);
        showResult();
        return false;
    }
    if (m_beforeRun && !m_beforeRun(label)) return false;
    QMap<QString, QString> values;
    for (const lab::ScenarioParam &p : s->params)
        values[QString::fromStdString(p.key)] = QString::fromStdString(params.text(p.key));
    emit runStarting(label, values);
    m_runLabel = label;
    m_runAction->setEnabled(false);
    m_stopAction->setEnabled(true);
    m_stopRequested = false;
    emit statusMessage(QStringLiteral("Running %1…").arg(label));
    m_worker = std::thread([this, s, params, repeat] {
        for (int i = 0; i < repeat && !m_stopRequested; ++i) {
            const lab::ScenarioResult r = m_lab->run(*s, params);
            emit scenarioFinished(r.expectationHeld, QString::fromStdString(r.summary));
        }
        emit runFinished();
    });
    return true;
}

void LabPanel::onScenarioFinished(bool held, const QString &summary)
{
    const QString line =
        QStringLiteral("%1: %2%3")
            .arg(m_runLabel, summary,
                 held ? QStringLiteral(" — as expected") : QStringLiteral(" — NOT as expected"));
    emit statusMessage(line);
    m_resultKind = held ? Result::Held : Result::NotHeld;
    m_resultText = line;
    showResult();
    if (!m_nextStep->isHidden()) setNextStep(readTimelineStep());
}

QString LabPanel::readTimelineStep()
{
    return QStringLiteral(
        "Next: click a bar to inspect it. F fits, W/S zoom, A/D pan, Ctrl+wheel zooms at the "
        "cursor.");
}

void LabPanel::setNextStep(const QString &text)
{
    m_nextStepText = text;
    m_nextStep->setText(text.isEmpty() ? QString() : QStringLiteral("<b>%1</b>").arg(text.toHtmlEscaped()));
    m_nextStep->setVisible(!text.isEmpty());
}

void LabPanel::showResult()
{
    if (m_resultKind == Result::None) {
        m_result->clear();
        return;
    }
    // Green and red that keep their contrast on the palette's window colour, light or dark.
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    const bool good = m_resultKind == Result::Held;
    const QString colour = good ? (dark ? QStringLiteral("#81c995") : QStringLiteral("#2e7d32"))
                                : (dark ? QStringLiteral("#f28b82") : QStringLiteral("#c62828"));
    m_result->setText(
        QStringLiteral("<span style='color:%1'>%2</span>").arg(colour, m_resultText.toHtmlEscaped()));
}

void LabPanel::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange) showResult();
    QWidget::changeEvent(event);
}

void LabPanel::onRunFinished()
{
    waitForRun();
    m_runAction->setEnabled(true);
    m_stopAction->setEnabled(false);
    if (!m_comparison) return;
    // The capture relay hands its events over in batches at most ~16 ms old: the side that just ended gets
    // its last ones before the next run takes the stage, and before the window compares them.
    m_runAction->setEnabled(false);
    QTimer::singleShot(kComparisonSettleMs, this, [this] {
        m_runAction->setEnabled(true);
        if (!m_comparison) return;
        const lab::LabComparison c = *m_comparison;
        if (m_comparisonSide == 0 && !m_stopRequested) {
            m_comparisonSide = 1;
            if (!startRun(c.b.scenario, c.b.overrides, QString::fromStdString(c.b.label), 1))
                m_comparison.reset();
            return;
        }
        m_comparison.reset();
        if (!m_stopRequested)
            emit comparisonFinished(QString::fromStdString(c.name), QString::fromStdString(c.a.label),
                                    QString::fromStdString(c.b.label));
    });
}

} // namespace rpcscope
