#pragma once

#include "labcomparison.h"

#include <QMap>
#include <QString>
#include <QWidget>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

class QAction;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace rpcscope {

class ScenarioTextEdit;

namespace lab {
class LabSession;
} // namespace lab

// The lab's Scenario dock: the chosen scenario's explanation and parameters, Repeat, Run and the last result.
// Its scenario box and its Run again and Stop actions go on the window's toolbar. Runs happen off the GUI
// thread, since a scenario blocks on real RPCs and drawing must stay live.
class LabPanel : public QWidget
{
    Q_OBJECT
public:
    // Without a lab (null) nothing can run. `scenario` is chosen first when it names one.
    LabPanel(lab::LabSession *lab, const QString &scenario, QWidget *parent = nullptr);
    ~LabPanel() override;

    QComboBox *scenarioBox() const { return m_scenarioBox; }
    QAction *runAction() const { return m_runAction; }
    QAction *stopAction() const { return m_stopAction; }
    QString scenario() const { return m_scenario; }
    // Waits for a run still going (the window calls it while it is still whole: the run signals it).
    void waitForRun();
    // Asked on the GUI thread before a run starts; false cancels it (the window puts the run on a stage of
    // its own).
    void setBeforeRun(std::function<bool(const QString &scenario)> hook) { m_beforeRun = std::move(hook); }
    // A run's thread is going (until the window has seen it finish).
    bool isRunning() const { return m_worker.joinable(); }
    // One line at the top saying what to try next (empty hides it); the first run replaces it with how to
    // read the timeline.
    void setNextStep(const QString &text);
    // The line shown, as plain text; empty when hidden.
    QString nextStep() const { return m_nextStepText; }
    // How to read the timeline: the next step once there is something on it.
    static QString readTimelineStep();

    // "Compare…": a menu of the lab's built-in comparisons (labcomparison.h).
    QToolButton *compareButton() const { return m_compareButton; }

public slots:
    void runScenario();
    // Runs both sides of a built-in comparison (or "A,B"), one after the other, each a run of its own, then
    // emits comparisonFinished. False when it cannot start (unknown name, a run going, no lab).
    bool runComparison(const QString &name);

signals:
    // Emitted on the run's own thread. One run of the scenario ended (a Repeat N emits it N times).
    void scenarioFinished(bool expectationHeld, const QString &summary);
    // Every requested run ended (or Stop cut the repeats short).
    void runFinished();
    // For the window's status bar.
    void statusMessage(const QString &text);
    // On the GUI thread, as a run starts: the scenario (or comparison side) and its parameters' values.
    void runStarting(const QString &label, const QMap<QString, QString> &values);
    // Both runs of runComparison() ended: the window's last two runs are A and B.
    void comparisonFinished(const QString &name, const QString &labelA, const QString &labelB);

private:
    void showScenario(int index);
    void onScenarioFinished(bool held, const QString &summary);
    void onRunFinished();
    void showResult();
    bool startRun(const std::string &scenario, const std::map<std::string, std::string> &overrides,
                  const QString &label, int repeat);

protected:
    void changeEvent(QEvent *event) override;

private:
    lab::LabSession *m_lab;
    QString m_scenario;
    QComboBox *m_scenarioBox;
    QAction *m_runAction;
    QAction *m_stopAction;
    QLabel *m_nextStep;
    QString m_nextStepText;
    QLabel *m_explanation;
    QLabel *m_hints;
    QFormLayout *m_paramForm;
    std::vector<std::pair<std::string, QLineEdit *>> m_paramEdits;
    std::vector<std::pair<std::string, ScenarioTextEdit *>> m_textEdits; // service configs, fault rules
    QSpinBox *m_repeat;
    QLabel *m_result;
    // The last result, shown in colours that read on the current palette (light or dark).
    enum class Result
    {
        None,
        Held,
        NotHeld,
        Error
    } m_resultKind = Result::None;
    QString m_resultText;
    std::thread m_worker;
    std::atomic<bool> m_stopRequested{false};
    std::function<bool(const QString &)> m_beforeRun;
    QToolButton *m_compareButton = nullptr;
    QString m_runLabel; // what the result line names: the scenario, or a comparison's side
    std::optional<lab::LabComparison> m_comparison;
    int m_comparisonSide = 0;
};

} // namespace rpcscope
