#include "windowlook.h"

#include <QApplication>
#include <QEvent>
#include <QFileDialog>
#include <QHeaderView>
#include <QLayout>
#include <QScreen>
#include <QStyle>
#include <QStyleFactory>
#include <QToolTip>
#include <QTreeView>
#include <QWidget>
#include <algorithm>

namespace rpcscope {

namespace {
QFont scaled(QFont f, double s)
{
    if (f.pointSizeF() > 0)
        f.setPointSizeF(f.pointSizeF() * s);
    else if (f.pixelSize() > 0)
        f.setPixelSize(int(f.pixelSize() * s + 0.5));
    return f;
}
} // namespace

WindowLook::WindowLook(QWidget *window, QWidget *timeline)
    : QObject(window), m_window(window), m_timeline(timeline)
{
    // File dialogs are fitted as they open, in either mode (eventFilter()).
    qApp->installEventFilter(this);
}

QPalette WindowLook::darkPalette()
{
    // Text at least 7:1 against its background; links and highlights readable on the dark base.
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe8, 0xea, 0xed);
    const QColor disabled(0x80, 0x84, 0x8a), highlight(0x3d, 0x7e, 0xd6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x42));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0xa0, 0xa4, 0xaa));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x38, 0x3d));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x52));
    p.setColor(QPalette::Midlight, QColor(0x40, 0x43, 0x48));
    p.setColor(QPalette::Mid, QColor(0x25, 0x27, 0x2a));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x8a, 0xb4, 0xf8));
    p.setColor(QPalette::LinkVisited, QColor(0xc5, 0x8a, 0xf9));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    p.setColor(QPalette::Disabled, QPalette::Light, window);
    return p;
}

void WindowLook::setWorkshop(bool on)
{
    if (on == m_workshop || !m_window) return;
    m_workshop = on;
    if (on) {
        m_windowHadFont = m_window->testAttribute(Qt::WA_SetFont);
        m_windowFont = m_window->font();
        m_toolTipFont = QToolTip::font();
        // Widgets that chose a font of their own do not inherit the window's: scale theirs as well.
        m_ownFonts.clear();
        // Windows of its own (menus, dialogs) never inherit the window's font: those made and polished before
        // (the File menu) are scaled here, the others as they are polished (eventFilter()).
        for (QWidget *w : m_window->findChildren<QWidget *>()) {
            if (w->isWindow()) {
                if (w->windowType() != Qt::ToolTip && w->testAttribute(Qt::WA_WState_Polished))
                    m_otherWindows.push_back({w, w->font()});
                continue;
            }
            if (!w->testAttribute(Qt::WA_SetFont) || w == m_timeline ||
                (m_timeline && m_timeline->isAncestorOf(w)))
                continue;
            m_ownFonts.push_back({w, w->font()});
        }
        m_window->setFont(scaled(m_windowFont, kWorkshopFontScale));
        for (const SavedFont &s : m_ownFonts)
            if (s.widget) s.widget->setFont(scaled(s.font, kWorkshopFontScale));
        for (const SavedFont &s : m_otherWindows)
            if (s.widget) s.widget->setFont(scaled(s.font, kWorkshopFontScale));
        QToolTip::setFont(scaled(m_toolTipFont, kWorkshopFontScale));
        // The timeline scales its own text; it keeps the font it had (a size set, so not inherited).
        if (m_timeline) {
            QFont own = m_windowFont;
            if (own.pointSizeF() > 0)
                own.setPointSizeF(own.pointSizeF());
            else
                own.setPixelSize(own.pixelSize());
            m_timeline->setFont(own);
        }
    } else {
        for (const SavedFont &s : m_otherWindows)
            if (s.widget) s.widget->setFont(s.font);
        m_otherWindows.clear();
        for (const SavedFont &s : m_ownFonts)
            if (s.widget) s.widget->setFont(s.font);
        m_ownFonts.clear();
        if (m_timeline) {
            m_timeline->setFont(QFont());
            m_timeline->setAttribute(Qt::WA_SetFont, false);
        }
        if (m_windowHadFont) {
            m_window->setFont(m_windowFont);
        } else {
            m_window->setFont(QFont());
            m_window->setAttribute(Qt::WA_SetFont, false);
        }
        QToolTip::setFont(m_toolTipFont);
    }
    emit changed();
}

bool WindowLook::eventFilter(QObject *watched, QEvent *event)
{
    if ((event->type() != QEvent::Polish && event->type() != QEvent::Show) || !watched->isWidgetType())
        return false;
    auto *w = static_cast<QWidget *>(watched);
    // Tooltips have their own font (set above); the main window and its children are scaled already.
    if (!w->isWindow() || w == m_window || w->windowType() == Qt::ToolTip) return false;
    if (event->type() == QEvent::Show) {
        // A file dialog's details list keeps column widths of its own that cut dates ("3 Dec ...:16:39";
        // at the workshop size "2 De...2:48"): size, type and date follow their contents instead, and the
        // name takes what is left. On show, when the dialog has made its widgets.
        if (qobject_cast<QFileDialog *>(w))
            for (QTreeView *tree : w->findChildren<QTreeView *>()) {
                QHeaderView *h = tree->header();
                if (std::find(m_fittedHeaders.begin(), m_fittedHeaders.end(), h) != m_fittedHeaders.end())
                    continue;
                for (int i = 1; i < h->count(); ++i)
                    h->setSectionResizeMode(i, QHeaderView::ResizeToContents);
                std::erase(m_fittedHeaders, nullptr); // dialogs closed and gone since
                m_fittedHeaders.push_back(h);
            }
        // A window scaled on its polish was sized by layouts that had not yet seen the larger font (their
        // update was still posted): New capture's hop row came out squeezed to half its height, text over
        // text. Before it is mapped, its layout catches up and it grows to what the larger text needs.
        if (m_workshop && w->layout() &&
            std::any_of(m_otherWindows.begin(), m_otherWindows.end(),
                        [w](const SavedFont &s) { return s.widget == w; })) {
            w->layout()->invalidate();
            w->layout()->activate();
            QSize size = w->size().expandedTo(w->sizeHint());
            if (const QScreen *screen = w->screen()) size = size.boundedTo(screen->availableSize());
            w->resize(size);
        }
        return false;
    }
    if (!m_workshop) return false;
    for (const SavedFont &s : m_otherWindows)
        if (s.widget == w) return false;
    m_otherWindows.push_back({w, w->font()});
    w->setFont(scaled(w->font(), kWorkshopFontScale));
    return false;
}

void WindowLook::setDark(bool on)
{
    if (on == m_dark) return;
    m_dark = on;
    if (on) {
        m_styleName = QApplication::style()->name();
        m_palette = QApplication::palette();
        // Fusion draws with the palette everywhere; native styles may not.
        if (m_styleName.compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
            QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(darkPalette());
    } else {
        if (QApplication::style()->name().compare(m_styleName, Qt::CaseInsensitive) != 0)
            QApplication::setStyle(QStyleFactory::create(m_styleName));
        QApplication::setPalette(m_palette);
    }
    // Top-level windows hear of a new application palette through a posted event, and their children
    // inherit from them: resolve the window now, so that the whole window changes at once.
    if (m_window) {
        QEvent changed(QEvent::ApplicationPaletteChange);
        QCoreApplication::sendEvent(m_window, &changed);
    }
    emit changed();
}

} // namespace rpcscope
