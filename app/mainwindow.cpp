#include "mainwindow.h"

#include "labsession.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFormLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeView>

namespace rpcscope {

MainWindow::MainWindow(TimelineModel *model, lab::LabSession *lab, QString scenario, QWidget *parent)
    : QMainWindow(parent), m_model(model), m_lab(lab), m_scenario(std::move(scenario))
{
    setWindowTitle(QStringLiteral("rpcscope"));
    m_view = new SwimlaneView(model, this);
    setCentralWidget(m_view);

    auto *calls = new QTreeView(this);
    calls->setModel(model);
    calls->setUniformRowHeights(true);
    calls->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto *dock = new QDockWidget(QStringLiteral("Calls"), this);
    dock->setObjectName(QStringLiteral("calls"));
    dock->setWidget(calls);
    addDockWidget(Qt::BottomDockWidgetArea, dock);

    auto *tb = addToolBar(QStringLiteral("Main"));
    tb->setObjectName(QStringLiteral("main"));
    tb->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_scenarioBox = new QComboBox(this);
    for (const lab::Scenario &s : lab::allScenarios())
        m_scenarioBox->addItem(QString::fromStdString(s.name + "  —  " + s.title), QString::fromStdString(s.name));
    m_scenarioBox->setToolTip(QStringLiteral("Lab scenario"));
    tb->addWidget(m_scenarioBox);
    m_runAction = tb->addAction(QStringLiteral("Run again"), this, &MainWindow::runScenario);
    m_runAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
    m_runAction->setToolTip(QStringLiteral("Run the selected scenario (Ctrl+R)"));
    m_runAction->setEnabled(m_lab != nullptr);
    m_stopAction = tb->addAction(QStringLiteral("Stop"), this, [this] { m_stopRequested = true; });
    m_stopAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+.")));
    m_stopAction->setToolTip(QStringLiteral("Stop after the current run (Ctrl+.)"));
    m_stopAction->setEnabled(false);
    QAction *fit = tb->addAction(QStringLiteral("Fit"), m_view, &SwimlaneView::fitAll);
    fit->setToolTip(QStringLiteral("Fit the whole trace (F)"));
    QAction *exportAction = tb->addAction(QStringLiteral("Export PNG…"), this, &MainWindow::exportPngInteractive);
    exportAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
    QAction *clear = tb->addAction(QStringLiteral("Clear"), model, &TimelineModel::clear);
    clear->setShortcut(QKeySequence(QStringLiteral("Ctrl+L")));
    auto *quit = new QAction(QStringLiteral("Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    addAction(quit);

    m_labLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_labLabel);
    if (m_lab)
        m_labLabel->setText(QStringLiteral("lab server %1 · capture proxy %2")
                                .arg(QString::fromStdString(m_lab->serverAddress().toString()),
                                     QString::fromStdString(m_lab->proxyAddress().toString())));
    else
        m_labLabel->setText(QStringLiteral("lab not running"));
    connect(this, &MainWindow::scenarioFinished, this, &MainWindow::onScenarioFinished, Qt::QueuedConnection);
    connect(this, &MainWindow::runFinished, this, &MainWindow::onRunFinished, Qt::QueuedConnection);

    auto *scenarioDock = new QDockWidget(QStringLiteral("Scenario"), this);
    scenarioDock->setObjectName(QStringLiteral("scenario"));
    scenarioDock->setWidget(buildScenarioPanel());
    addDockWidget(Qt::LeftDockWidgetArea, scenarioDock);
    connect(m_scenarioBox, &QComboBox::currentIndexChanged, this, &MainWindow::showScenario);
    const int initial = m_scenarioBox->findData(m_scenario);
    m_scenarioBox->setCurrentIndex(initial < 0 ? 0 : initial);
    showScenario(m_scenarioBox->currentIndex());
    resize(1400, 820);
}

MainWindow::~MainWindow()
{
    if (m_worker.joinable())
        m_worker.join();
}

QWidget *MainWindow::buildScenarioPanel()
{
    auto *panel = new QWidget(this);
    auto *layout = new QVBoxLayout(panel);
    m_explanation = new QLabel(panel);
    m_explanation->setWordWrap(true);
    m_explanation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_explanation->setMinimumWidth(260);
    layout->addWidget(m_explanation);
    m_paramForm = new QFormLayout;
    layout->addLayout(m_paramForm);
    auto *repeatRow = new QFormLayout;
    m_repeat = new QSpinBox(panel);
    m_repeat->setRange(1, 50);
    m_repeat->setToolTip(QStringLiteral("Run the scenario this many times in a row"));
    repeatRow->addRow(QStringLiteral("Repeat"), m_repeat);
    layout->addLayout(repeatRow);
    auto *run = new QPushButton(QStringLiteral("Run (Ctrl+R)"), panel);
    connect(run, &QPushButton::clicked, this, &MainWindow::runScenario);
    connect(m_runAction, &QAction::enabledChanged, run, &QWidget::setEnabled);
    run->setEnabled(m_runAction->isEnabled());
    layout->addWidget(run);
    m_result = new QLabel(panel);
    m_result->setWordWrap(true);
    layout->addWidget(m_result);
    layout->addStretch();
    return panel;
}

void MainWindow::showScenario(int index)
{
    m_scenario = m_scenarioBox->itemData(index).toString();
    const lab::Scenario *s = lab::findScenario(m_scenario.toStdString());
    if (!s)
        return;
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

void MainWindow::runScenario()
{
    const lab::Scenario *s = lab::findScenario(m_scenario.toStdString());
    if (!m_lab || !s || m_worker.joinable())
        return;
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
    m_runAction->setEnabled(false);
    m_stopAction->setEnabled(true);
    m_stopRequested = false;
    const int repeat = m_repeat->value();
    statusBar()->showMessage(QStringLiteral("Running %1…").arg(m_scenario));
    // The scenario blocks on real RPCs; run it off the GUI thread so drawing stays live.
    m_worker = std::thread([this, s, params, repeat] {
        for (int i = 0; i < repeat && !m_stopRequested; ++i) {
            const lab::ScenarioResult r = m_lab->run(*s, params);
            emit scenarioFinished(r.expectationHeld, QString::fromStdString(r.summary));
        }
        emit runFinished();
    });
}

void MainWindow::onScenarioFinished(bool held, const QString &summary)
{
    const QString line = QStringLiteral("%1: %2%3").arg(m_scenario, summary,
                                                        held ? QStringLiteral(" — as expected")
                                                             : QStringLiteral(" — NOT as expected"));
    statusBar()->showMessage(line);
    m_result->setText(QStringLiteral("<span style='color:%1'>%2</span>")
                          .arg(held ? QStringLiteral("#2e7d32") : QStringLiteral("#c62828"), line.toHtmlEscaped()));
}

void MainWindow::onRunFinished()
{
    if (m_worker.joinable())
        m_worker.join();
    m_runAction->setEnabled(true);
    m_stopAction->setEnabled(false);
}

bool MainWindow::exportPng(const QString &fileName)
{
    const QImage image = TimelinePainter::renderImage(
        m_model->store(), 1400, {QStringLiteral("rpcscope — %1").arg(m_scenario), true}, devicePixelRatioF());
    return image.save(fileName, "PNG");
}

void MainWindow::exportPngInteractive()
{
    const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export PNG"),
                                                      QStringLiteral("rpcscope.png"),
                                                      QStringLiteral("PNG images (*.png)"));
    if (file.isEmpty())
        return;
    if (!exportPng(file))
        QMessageBox::warning(this, QStringLiteral("Export failed"),
                             QStringLiteral("Could not write %1.").arg(file));
    else
        statusBar()->showMessage(QStringLiteral("Exported %1").arg(file), 5000);
}

} // namespace rpcscope
