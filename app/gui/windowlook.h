#pragma once

#include <QFont>
#include <QObject>
#include <QPalette>
#include <QPointer>
#include <QString>
#include <vector>

class QHeaderView;
class QWidget;

namespace rpcscope {

// Workshop and Dark for the whole window, not just the timeline (which keeps its own metrics and theme):
// - workshop scales the window's font, and with it the toolbar, the docks, the tables, the inspector, the
//   scenario text and tooltips, by kWorkshopFontScale; widgets with a font of their own are scaled too;
// - dark switches the application to the Fusion style with a dark palette (dialogs included).
// Turning either off restores exactly what was there before.
class WindowLook : public QObject
{
    Q_OBJECT
public:
    static constexpr double kWorkshopFontScale = 1.5;

    // `timeline` draws its own text at its own scale and keeps its font.
    WindowLook(QWidget *window, QWidget *timeline);

    bool workshop() const { return m_workshop; }
    bool dark() const { return m_dark; }
    static QPalette darkPalette();

public slots:
    void setWorkshop(bool on);
    void setDark(bool on);

signals:
    // After the fonts or the palette changed (the inspector rebuilds its rows, say).
    void changed();

protected:
    // In workshop mode: a window opened from the main window (a file dialog, a message box, a menu, the
    // compare window) does not inherit its font, so it is scaled as it is first polished.
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    struct SavedFont
    {
        QPointer<QWidget> widget;
        QFont font;
    };

    QPointer<QWidget> m_window;
    QPointer<QWidget> m_timeline;
    bool m_workshop = false;
    bool m_dark = false;
    QFont m_windowFont;
    bool m_windowHadFont = false;
    QFont m_toolTipFont;
    std::vector<SavedFont> m_ownFonts;
    std::vector<SavedFont> m_otherWindows; // windows scaled in workshop mode, their fonts before
    // File dialogs' list headers whose columns after the name fit their contents (the dialog's own widths
    // cut its dates, in either mode).
    std::vector<QPointer<QHeaderView>> m_fittedHeaders;
    QString m_styleName;
    QPalette m_palette;
};

} // namespace rpcscope
