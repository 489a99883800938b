#pragma once

#include <QWidget>
#include <memory>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTimer;

namespace rpcscope {

class FaultSet;
struct FaultRule;

// The Faults dock (issue 19): the fault rules of the running capture, each with a checkbox that switches it
// on or off and its hit counter (refreshed every second), and a line to add a rule or edit the selected one
// in the compact syntax (`capture --fault`). Rules are never removed, so a rule's number stays its own for
// the whole capture, as the timeline's "injected" marks and the exports name it.
class FaultsDock : public QWidget
{
    Q_OBJECT
public:
    explicit FaultsDock(QWidget *parent = nullptr);

    // The set the running capture's relays read (null: no capture, nothing to add to).
    void setFaults(std::shared_ptr<FaultSet> faults);
    const std::shared_ptr<FaultSet> &faults() const { return m_faults; }
    // Whether a capture runs on the set: between captures, rules added wait for the next one.
    void setRunning(bool running);

    // Adds the line as a new rule, or (replace) puts it in place of the selected rule. False, with the
    // parser's one line shown under the line, when it is malformed.
    bool addRule(const QString &text);
    bool replaceSelected(const QString &text);
    QLineEdit *ruleEdit() const { return m_edit; }
    QTableWidget *table() const { return m_table; }
    QString errorText() const;
    void refresh();

signals:
    void message(const QString &text);

private:
    bool parse(const QString &text, FaultRule *rule);
    void showError(const QString &text);
    void selectionChanged();

    std::shared_ptr<FaultSet> m_faults;
    QTableWidget *m_table;
    QLineEdit *m_edit;
    QPushButton *m_add;
    QPushButton *m_replace;
    QPushButton *m_help;
    QLabel *m_error;
    QLabel *m_caption;
    QTimer *m_timer;
    bool m_filling = false;
    bool m_running = false;
};

} // namespace rpcscope
