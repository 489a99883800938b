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

void injectedHatch(QPainter *p, const QRectF &r, double scale)
{
    p->save();
    p->setClipRect(r, Qt::IntersectClip);
    const double step = 7 * scale;
    p->setPen(QPen(QColor(0, 0, 0, 140), 2 * scale, Qt::SolidLine, Qt::FlatCap));
    for (double x = r.left() - r.height(); x < r.right() + step; x += step)
        p->drawLine(QPointF(x, r.top()), QPointF(x + r.height(), r.bottom()));
    p->setPen(QPen(QColor(255, 255, 255, 110), 1 * scale, Qt::SolidLine, Qt::FlatCap));
    for (double x = r.left() - r.height() + 2 * scale; x < r.right() + step; x += step)
        p->drawLine(QPointF(x, r.top()), QPointF(x + r.height(), r.bottom()));
    p->restore();
}

bool wallClockRuler(const PaintContext &ctx)
{
    return ctx.options.wallClock && ctx.store.originWallNs() != 0;
}

qint64 rulerStepNs(const PaintContext &ctx)
{
    return ctx.axis.tickStepNs((wallClockRuler(ctx) ? 150 : 110) * ctx.metrics.scale);
}

std::vector<qint64> rulerTicks(const PaintContext &ctx, qint64 step)
{
    const TimeAxis &ax = ctx.axis;
    const qint64 origin = ctx.store.originNs();
    // The time whose multiples of the step are round: the capture start, or the Unix epoch on a wall clock.
    const qint64 zero = wallClockRuler(ctx) ? origin - ctx.store.originWallNs() : origin;
    const qint64 from = ctx.startNs() - zero;
    qint64 first = (from / step) * step;
    if (first < from) first += step; // division truncates toward zero
    std::vector<qint64> ticks;
    for (qint64 t = zero + first; ax.timeToX(t) <= ctx.rect.right(); t += step)
        if (ax.timeToX(t) >= ax.left) ticks.push_back(t);
    return ticks;
}

void paintGrid(QPainter *p, const PaintContext &ctx, double top, double bottom)
{
    // Vertical grid lines through the lane, aligned with the ruler ticks.
    p->setPen(ctx.theme.grid);
    for (const qint64 t : rulerTicks(ctx, rulerStepNs(ctx))) {
        const double x = ctx.axis.timeToX(t);
        p->drawLine(QPointF(x, top), QPointF(x, bottom));
    }
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
