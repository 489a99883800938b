#include "mainwindow.h"

#include "labsession.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QAction>
#include <QDockWidget>
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
    m_runAction = tb->addAction(QStringLiteral("Run again"), this, &MainWindow::runScenario);
    m_runAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
    m_runAction->setToolTip(QStringLiteral("Run scenario '%1' again (Ctrl+R)").arg(m_scenario));
    m_runAction->setEnabled(m_lab != nullptr);
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
    resize(1280, 760);
}

MainWindow::~MainWindow()
{
    if (m_worker.joinable())
        m_worker.join();
}

void MainWindow::runScenario()
{
    const lab::Scenario *s = lab::findScenario(m_scenario.toStdString());
    if (!m_lab || !s || m_worker.joinable())
        return;
    m_runAction->setEnabled(false);
    statusBar()->showMessage(QStringLiteral("Running %1…").arg(m_scenario));
    // The scenario blocks on real RPCs; run it off the GUI thread so drawing stays live.
    m_worker = std::thread([this, s] {
        const lab::ScenarioResult r = m_lab->run(*s);
        emit scenarioFinished(r.expectationHeld, QString::fromStdString(r.summary));
    });
}

void MainWindow::onScenarioFinished(bool held, const QString &summary)
{
    if (m_worker.joinable())
        m_worker.join();
    m_runAction->setEnabled(true);
    statusBar()->showMessage(QStringLiteral("%1: %2%3")
                                 .arg(m_scenario, summary, held ? QString() : QStringLiteral(" — UNEXPECTED")));
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
