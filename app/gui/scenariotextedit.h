#pragma once

#include "scenario.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;

namespace rpcscope {

// A scenario parameter that is text (a service config, fault rules): an editor, and under it, as you type,
// why the text would be refused, in the words the run would use.
class ScenarioTextEdit : public QWidget
{
    Q_OBJECT
public:
    ScenarioTextEdit(lab::ScenarioParam param, QWidget *parent = nullptr);

    QString text() const;
    bool isValid() const { return m_valid; }
    QPlainTextEdit *editor() const { return m_edit; }
    QLabel *problem() const { return m_problem; }

protected:
    void changeEvent(QEvent *event) override;

private:
    void check();

    lab::ScenarioParam m_param;
    QPlainTextEdit *m_edit;
    QLabel *m_problem;
    bool m_valid = true;
};

} // namespace rpcscope
