#include "shortcutrouter.h"

#include <QAbstractItemView>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QKeyEvent>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTextEdit>
#include <QWidget>

namespace rpcscope {

namespace {
bool isNavigationKey(int key)
{
    switch (key) {
    case Qt::Key_Left:
    case Qt::Key_Right:
    case Qt::Key_Up:
    case Qt::Key_Down:
    case Qt::Key_Home:
    case Qt::Key_End:
    case Qt::Key_PageUp:
    case Qt::Key_PageDown:
        return true;
    default:
        return false;
    }
}
} // namespace

ShortcutRouter::ShortcutRouter(QWidget *window, QWidget *timeline)
    : QObject(window), m_window(window), m_timeline(timeline)
{
    qApp->installEventFilter(this);
}

bool ShortcutRouter::isTimelineKey(int key, Qt::KeyboardModifiers modifiers)
{
    // Shift is part of some keys' characters ('+' on most layouts), the keypad flag of others.
    if (modifiers & ~(Qt::ShiftModifier | Qt::KeypadModifier)) return false;
    switch (key) {
    case Qt::Key_F:
    case Qt::Key_L:
    case Qt::Key_W:
    case Qt::Key_S:
    case Qt::Key_A:
    case Qt::Key_D:
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_Minus:
    case Qt::Key_Escape:
        return true;
    default:
        return isNavigationKey(key);
    }
}

bool ShortcutRouter::isTextField(const QWidget *w)
{
    if (!w) return false;
    if (auto *combo = qobject_cast<const QComboBox *>(w)) return combo->isEditable();
    if (auto *edit = qobject_cast<const QTextEdit *>(w)) return !edit->isReadOnly();
    if (auto *edit = qobject_cast<const QPlainTextEdit *>(w)) return !edit->isReadOnly();
    // A line edit inside a spin box or an editable combo box has focus for it.
    return qobject_cast<const QLineEdit *>(w) || qobject_cast<const QAbstractSpinBox *>(w);
}

bool ShortcutRouter::keepsNavigationKeys(const QWidget *w) const
{
    return qobject_cast<const QAbstractItemView *>(w) || qobject_cast<const QComboBox *>(w) ||
           qobject_cast<const QAbstractSlider *>(w) || qobject_cast<const QTextEdit *>(w) ||
           qobject_cast<const QPlainTextEdit *>(w);
}

bool ShortcutRouter::inWindow(const QWidget *w) const
{
    return w && m_window && (w == m_window || m_window->isAncestorOf(w));
}

bool ShortcutRouter::isWindowShortcut(const QKeyEvent *e) const
{
    if (!(e->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier))) return false;
    // The text field's own editing keys stay its own.
    for (QKeySequence::StandardKey k : {QKeySequence::Copy, QKeySequence::Cut, QKeySequence::Paste,
                                        QKeySequence::Undo, QKeySequence::Redo, QKeySequence::SelectAll})
        if (e->matches(k)) return false;
    const QKeySequence pressed(e->keyCombination());
    const auto actions = m_window->findChildren<QAction *>();
    return std::any_of(actions.begin(), actions.end(), [&](const QAction *a) {
        if (!a->isEnabled()) return false;
        const auto keys = a->shortcuts();
        return std::any_of(keys.begin(), keys.end(), [&](const QKeySequence &k) {
            return k.matches(pressed) == QKeySequence::ExactMatch;
        });
    });
}

bool ShortcutRouter::eventFilter(QObject *watched, QEvent *event)
{
    const QEvent::Type type = event->type();
    if (type != QEvent::KeyPress && type != QEvent::ShortcutOverride) return false;
    auto *w = qobject_cast<QWidget *>(watched);
    if (!w || !m_timeline || !inWindow(w)) return false;
    // Only the first delivery, to the focus widget (or the window when nothing has focus); an ignored key
    // then travels up through the parents, which must not route it a second time.
    QWidget *focus = QApplication::focusWidget();
    if (focus ? w != focus : w != m_window) return false;
    if (w == m_timeline || m_timeline->isAncestorOf(w)) return false;
    auto *e = static_cast<QKeyEvent *>(event);

    if (type == QEvent::ShortcutOverride) {
        // Not accepting the override lets the window's shortcut fire instead of the field's editing key.
        if (isTextField(w) && isWindowShortcut(e)) {
            e->ignore();
            return true;
        }
        return false;
    }

    if (!isTimelineKey(e->key(), e->modifiers())) return false;
    if (isTextField(w)) {
        if (e->key() != Qt::Key_Escape) return false;
        m_timeline->setFocus(Qt::ShortcutFocusReason);
        return true;
    }
    if (isNavigationKey(e->key()) && keepsNavigationKeys(w)) return false;
    QKeyEvent copy(e->type(), e->key(), e->modifiers(), e->text(), e->isAutoRepeat(), e->count());
    QCoreApplication::sendEvent(m_timeline, &copy);
    return copy.isAccepted();
}

} // namespace rpcscope
