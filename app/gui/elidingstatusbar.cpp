#include "elidingstatusbar.h"

#include <QPaintEvent>
#include <QPainter>
#include <QSizeGrip>
#include <QStyleOption>

namespace rpcscope {

ElidingStatusBar::ElidingStatusBar(QWidget *parent) : QStatusBar(parent)
{
    connect(this, &QStatusBar::messageChanged, this, [this] {
        updateToolTip();
        update();
    });
}

QRect ElidingStatusBar::messageRect() const
{
    // QStatusBar's own margins: 6 px on the left, 12 on the right, 2 before the first permanent widget.
    int left = 6, right = width() - 12;
    const bool rtl = layoutDirection() == Qt::RightToLeft;
    // While a message shows, the visible child widgets are the permanent ones and the size grip.
    for (const QWidget *w : findChildren<QWidget *>(QString(), Qt::FindDirectChildrenOnly)) {
        if (!w->isVisible()) continue;
        if (rtl)
            left = std::max(left, w->geometry().right() + 3);
        else
            right = std::min(right, w->x() - 2);
    }
    return QRect(left, 0, std::max(0, right - left), height());
}

QString ElidingStatusBar::shownMessage() const
{
    return elided(messageRect());
}

QString ElidingStatusBar::elided(const QRect &room) const
{
    return fontMetrics().elidedText(currentMessage(), Qt::ElideRight, room.width());
}

void ElidingStatusBar::updateToolTip()
{
    const QString message = currentMessage();
    setToolTip(!message.isEmpty() && shownMessage() != message ? message : QString());
}

void ElidingStatusBar::resizeEvent(QResizeEvent *event)
{
    QStatusBar::resizeEvent(event);
    updateToolTip();
}

void ElidingStatusBar::paintEvent(QPaintEvent *event)
{
    if (currentMessage().isEmpty()) {
        QStatusBar::paintEvent(event);
        return;
    }
    // As QStatusBar paints with a message: the panel, the permanent widgets' frames, then the message,
    // here elided.
    QPainter p(this);
    QStyleOption opt;
    opt.initFrom(this);
    style()->drawPrimitive(QStyle::PE_PanelStatusBar, &opt, &p, this);
    for (QWidget *w : findChildren<QWidget *>(QString(), Qt::FindDirectChildrenOnly)) {
        if (!w->isVisible() || qobject_cast<QSizeGrip *>(w)) continue;
        const QRect frame = w->geometry().adjusted(-2, -1, 2, 1);
        if (!event->rect().intersects(frame)) continue;
        QStyleOption item;
        item.rect = frame;
        item.palette = palette();
        item.state = QStyle::State_None;
        style()->drawPrimitive(QStyle::PE_FrameStatusBarItem, &item, &p, w);
    }
    const QRect room = messageRect();
    p.setPen(palette().windowText().color());
    p.drawText(room, Qt::AlignLeading | Qt::AlignVCenter | Qt::TextSingleLine, elided(room));
}

} // namespace rpcscope
