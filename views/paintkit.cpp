#include "paintkit.h"

#include "paintcontext.h"
#include "timeformat.h"

#include <QFontMetricsF>
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

namespace {
// The 1-2-5 step below `step` (0 below 1 ns).
qint64 finerStep(qint64 step)
{
    qint64 p = 1;
    while (p * 10 <= step)
        p *= 10;
    const qint64 m = step / p;
    if (m >= 5) return 2 * p;
    if (m >= 2) return p;
    return p / 2;
}

qint64 chooseRulerStep(const PaintContext &ctx)
{
    qint64 step = ctx.axis.tickStepNs((wallClockRuler(ctx) ? 150 : 110) * ctx.metrics.scale);
    if (wallClockRuler(ctx)) return step;
    // Fewer than three ticks in view (workshop type, a narrow window: one "100 ms" over most of the lane, and
    // the range's start printed to the microsecond beside it): a finer step, while its labels keep a gap of
    // two characters or so.
    const QFontMetricsF fm(ctx.font(12));
    for (std::vector<qint64> ticks = rulerTicks(ctx, step); ticks.size() < 3;) {
        const qint64 finer = finerStep(step);
        if (finer < 1) break;
        std::vector<qint64> finerTicks = rulerTicks(ctx, finer);
        double widest = 0;
        for (const qint64 t : finerTicks)
            widest = std::max(widest, fm.horizontalAdvance(formatTick(t - ctx.store.originNs(), finer)));
        if (double(finer) / ctx.axis.nsPerPx < widest + 24 * ctx.metrics.scale) break;
        step = finer;
        ticks = std::move(finerTicks);
    }
    return step;
}
} // namespace

qint64 rulerStepNs(const PaintContext &ctx)
{
    if (!ctx.rulerStep) ctx.rulerStep = chooseRulerStep(ctx);
    return ctx.rulerStep;
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
