#pragma once

#include <QMainWindow>

#include <atomic>
#include <thread>

class QAction;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

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
    // One run of the scenario ended (a Repeat N emits it N times).
    void scenarioFinished(bool expectationHeld, const QString &summary);
    // Every requested run ended (or Stop cut the repeats short).
    void runFinished();

private:
    void onScenarioFinished(bool held, const QString &summary);
    void onRunFinished();
    void exportPngInteractive();
    void showScenario(int index);
    QWidget *buildScenarioPanel();

    TimelineModel *m_model;
    lab::LabSession *m_lab;
    QString m_scenario;
    SwimlaneView *m_view;
    QAction *m_runAction;
    QAction *m_stopAction;
    QLabel *m_labLabel;
    QComboBox *m_scenarioBox;
    QLabel *m_explanation;
    QFormLayout *m_paramForm;
    std::vector<std::pair<std::string, QLineEdit *>> m_paramEdits;
    QSpinBox *m_repeat;
    QLabel *m_result;
    std::thread m_worker;
    std::atomic<bool> m_stopRequested{false};
};

} // namespace rpcscope
