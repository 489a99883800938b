#pragma once

#include <QObject>
#include <QPointer>

class QKeyEvent;
class QWidget;

namespace rpcscope {

// Makes the timeline's keys work wherever focus is in one window, without taking focus from anything:
// - a timeline key (F, L, + and -, W/S zoom, A/D pan, the arrows, Home/End, Page Up/Down, Esc) pressed
//   in any other widget of the window is handed to the timeline;
// - a text field (line edits, spin boxes, text edits, editable combo boxes) keeps every key it types or
//   edits with, except Esc, which leaves the field for the timeline;
// - widgets that move through items with the arrows (lists, trees, combo boxes, sliders) keep those keys;
// - the window's own shortcuts (Ctrl+E, Ctrl+L ...) fire from a text field too, where a line edit would
//   otherwise take some of them (Ctrl+E moves to the end of the line on Linux).
// It filters the application's events, since key events go to whichever widget has focus.
class ShortcutRouter : public QObject
{
    Q_OBJECT
public:
    ShortcutRouter(QWidget *window, QWidget *timeline);

    // Whether `key` (with `modifiers`) is one the timeline acts on.
    static bool isTimelineKey(int key, Qt::KeyboardModifiers modifiers);
    static bool isTextField(const QWidget *w);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    bool inWindow(const QWidget *w) const;
    bool isWindowShortcut(const QKeyEvent *e) const;
    bool keepsNavigationKeys(const QWidget *w) const;

    QPointer<QWidget> m_window;
    QPointer<QWidget> m_timeline;
};

} // namespace rpcscope
