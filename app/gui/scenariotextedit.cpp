#include "scenariotextedit.h"

#include <QEvent>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>
#include <algorithm>

namespace rpcscope {

ScenarioTextEdit::ScenarioTextEdit(lab::ScenarioParam param, QWidget *parent)
    : QWidget(parent), m_param(std::move(param))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_edit = new QPlainTextEdit(QString::fromStdString(m_param.defaultValue), this);
    m_edit->setObjectName(QString::fromStdString("text_" + m_param.key));
    m_edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_edit->setTabChangesFocus(true); // Tab leaves the editor, as in every other field of the dock
    m_edit->setToolTip(QString::fromStdString(m_param.description) +
                       QStringLiteral(" (checked as you type; Tab moves on)"));
    // The default's lines, and no more than a dozen, so the Run button stays in view.
    const int lines = std::clamp(int(m_edit->toPlainText().count(QLatin1Char('\n'))) + 2, 3, 12);
    m_edit->setMinimumHeight(QFontMetrics(m_edit->font()).lineSpacing() * lines + 12);
    layout->addWidget(m_edit);
    m_problem = new QLabel(this);
    m_problem->setObjectName(QString::fromStdString("problem_" + m_param.key));
    m_problem->setWordWrap(true);
    m_problem->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_problem);
    connect(m_edit, &QPlainTextEdit::textChanged, this, &ScenarioTextEdit::check);
    check();
}

QString ScenarioTextEdit::text() const
{
    return m_edit->toPlainText();
}

void ScenarioTextEdit::check()
{
    std::string why;
    m_valid = m_param.accepts(text().toStdString(), &why);
    // Red that keeps its contrast on the palette's window colour, light or dark.
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    m_problem->setText(m_valid ? QString()
                               : QStringLiteral("<span style='color:%1'>%2</span>")
                                     .arg(dark ? QStringLiteral("#f28b82") : QStringLiteral("#c62828"),
                                          QString::fromStdString(why).toHtmlEscaped()));
    m_problem->setVisible(!m_valid);
}

void ScenarioTextEdit::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange) check();
    QWidget::changeEvent(event);
}

} // namespace rpcscope
