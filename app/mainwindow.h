#pragma once

#include <QMainWindow>

#include <thread>

class QAction;
class QLabel;

namespace rpcscope {

class SwimlaneView;
class TimelineModel;

namespace lab {
class LabSession;
struct ScenarioResult;
} // namespace lab

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    MainWindow(TimelineModel *model, lab::LabSession *lab, QString scenario, QWidget *parent = nullptr);
    ~MainWindow() override;

    SwimlaneView *swimlanes() const { return m_view; }

public slots:
    void runScenario();
    bool exportPng(const QString &fileName);

signals:
    void scenarioFinished(bool expectationHeld, const QString &summary);

private:
    void onScenarioFinished(bool held, const QString &summary);
    void exportPngInteractive();

    TimelineModel *m_model;
    lab::LabSession *m_lab;
    QString m_scenario;
    SwimlaneView *m_view;
    QAction *m_runAction;
    QLabel *m_labLabel;
    std::thread m_worker;
};

} // namespace rpcscope
