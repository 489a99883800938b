#include "paintkit.h"

#include "paintcontext.h"

#include <QPainter>

namespace rpcscope {

void RunMerger::fill(QPainter *p, const QColor *colors)
{
    p->setPen(Qt::NoPen);
    for (auto &[group, runs] : m_runs) {
        p->setBrush(colors[group]);
        p->drawRects(runs.data(), int(runs.size()));
    }
    p->setBrush(Qt::NoBrush);
}

void hatch(QPainter *p, const QRectF &r)
{
    p->save();
    p->setClipRect(r, Qt::IntersectClip);
    p->setPen(QPen(QColor(255, 255, 255, 200), 1.5));
    for (double x = r.left() - r.height(); x < r.right(); x += 5)
        p->drawLine(QPointF(x, r.bottom()), QPointF(x + r.height(), r.top()));
    p->restore();
}

void paintGrid(QPainter *p, const PaintContext &ctx, double top, double bottom)
{
    // Vertical grid lines through the lane, aligned with the ruler ticks.
    const TimeAxis &ax = ctx.axis;
    const qint64 step = ax.tickStepNs(110 * ctx.metrics.scale);
    const qint64 origin = ctx.store.originNs();
    const qint64 rel = ((ctx.startNs() - origin) / step) * step;
    p->setPen(ctx.theme.grid);
    for (qint64 t = origin + rel; ax.timeToX(t) <= ctx.rect.right(); t += step)
        if (ax.timeToX(t) >= ax.left)
            p->drawLine(QPointF(ax.timeToX(t), top), QPointF(ax.timeToX(t), bottom));
}

void diamond(QPainter *p, const QPointF &c, double r, const QColor &fill, bool antialiased)
{
    p->setPen(Qt::NoPen);
    p->setBrush(fill);
    p->setRenderHint(QPainter::Antialiasing, antialiased);
    p->drawPolygon(QPolygonF({QPointF(c.x(), c.y() - r), QPointF(c.x() + r, c.y()), QPointF(c.x(), c.y() + r),
                              QPointF(c.x() - r, c.y())}));
    p->setRenderHint(QPainter::Antialiasing, false);
    p->setBrush(Qt::NoBrush);
}

} // namespace rpcscope
