#include "markerspass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"
#include "timelinestyle.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>

namespace rpcscope {

// Markers of calls without a lane: a diamond each, labelled where the label fits.
void MarkersPass::paintBand(QPainter *p, const PaintContext &ctx, const QRectF &band)
{
    const TimelineTheme &th = ctx.theme;
    const TimeAxis &ax = ctx.axis;
    const double right = band.right();
    double lastTextRight = -1e9;
    for (const LabEventRecord *e : ctx.index.bandMarkers()) {
        const double x = ax.timeToX(e->tNs);
        if (x < ax.left || x > right) continue;
        const double r = 4 * ctx.metrics.scale;
        const double cy = band.center().y();
        diamond(p, QPointF(x, cy), r, th.labMarker, true);
        // A custom event (ingestion endpoint) says what it is itself: "label: detail".
        const QString text = e->kind == "custom" && !e->detail.empty()
                                 ? QString::fromStdString(e->detail)
                                 : QString::fromLatin1(markerLabel(e->kind));
        const double tw = QFontMetricsF(p->font()).horizontalAdvance(text);
        if (x + r + 2 > lastTextRight && x + r + 2 + tw < right) {
            p->setPen(th.labMarker);
            p->drawText(QRectF(x + r + 2, band.top(), tw + 2, band.height()),
                        Qt::AlignVCenter | Qt::AlignLeft, text);
            lastTextRight = x + r + 2 + tw + 6;
        }
    }
}

// Lab events tied to a call: a retry the client chose not to make goes in the lane header, left of the
// deadline label, so it never covers a gap label; policy markers (hedges, budget checks...) at their time.
void MarkersPass::paintLane(QPainter *p, const PaintContext &ctx, const Call &call, double top,
                            double laneBottom, const QFont &small, const QFontMetricsF &smallFm)
{
    const TimelineTheme &th = ctx.theme;
    const TimeAxis &ax = ctx.axis;
    const double right = ctx.rect.right();
    const auto *events = ctx.index.labEventsOfCall(call.key);
    if (!events) return;
    {
        p->setFont(small);
        double lastTextRight = -1e9;
        for (const LabEventRecord *e : *events) {
            if (e->kind == "retry-suppressed") {
                const QString text =
                    QStringLiteral("✕ retry suppressed: %1").arg(QString::fromStdString(e->detail));
                const double tw = smallFm.horizontalAdvance(text);
                p->setPen(th.deadline);
                p->drawText(QRectF(right - 270 * ctx.metrics.scale - tw, top, tw + 2, ctx.metrics.callHeader),
                            Qt::AlignLeft | Qt::AlignVCenter, text);
                continue;
            }
            const double x = ax.timeToX(e->tNs);
            if (x < ax.left || x > right) continue;
            // In the first attempt row's top strip, where only gap labels of later rows never go.
            const double r = 4 * ctx.metrics.scale;
            const double cy = top + ctx.metrics.callHeader + r + 2;
            p->setPen(QPen(th.labMarker, 1, Qt::DotLine));
            p->drawLine(QPointF(x, top + ctx.metrics.callHeader), QPointF(x, laneBottom));
            diamond(p, QPointF(x, cy), r, th.labMarker, true);
            QString text = QString::fromLatin1(markerLabel(e->kind));
            if (e->kind == "custom" && !e->detail.empty())
                text = QString::fromStdString(e->detail);
            else if (!e->detail.empty())
                text += QStringLiteral(": ") + QString::fromStdString(e->detail);
            const double tw = smallFm.horizontalAdvance(text);
            // Right of the marker, or left of it near the right edge (the last marker of a trace fitted to
            // the view sits there), wherever it clears the label before it.
            const double textLeft = x + r + 3 + tw < right ? x + r + 3 : x - r - 3 - tw;
            if (textLeft > lastTextRight && textLeft >= ax.left) {
                p->setPen(th.labMarker);
                p->drawText(QRectF(textLeft, cy - smallFm.height() / 2, tw + 2, smallFm.height()),
                            Qt::AlignVCenter | Qt::AlignLeft, text);
                lastTextRight = std::max(lastTextRight, textLeft + tw + 6);
            }
        }
    }
}

void MarkersPass::paintOverlay(QPainter *p, const PaintContext &ctx)
{
    const QRectF &rect = ctx.rect;
    const ZoomControl &zoom = ctx.zoom;
    const auto hover = zoom.hover(), selection = zoom.selection();
    const auto rubberBand = zoom.rubberBand();
    const TimelineTheme &th = ctx.theme;
    const double top = ctx.lanesTop;
    const double bottom = ctx.lanesBottom;
    p->save();
    p->setClipRect(QRectF(rect.left(), top, rect.width(), bottom - top));
    auto rowRect = [&](size_t call, size_t attempt) { return ctx.attemptRowRect(call, attempt); };
    if (hover && hover != selection) p->fillRect(rowRect(hover->first, hover->second), th.hover);
    if (selection) {
        const QRectF bar = ctx.attemptRect(selection->first, selection->second);
        if (!bar.isEmpty()) {
            p->fillRect(rowRect(selection->first, selection->second), th.hover);
            p->setPen(QPen(th.selection, 2 * ctx.metrics.scale));
            p->drawRect(bar.adjusted(-2, -2, 2, 2));
        }
    }
    if (rubberBand) {
        const TimeAxis &ax = ctx.axis;
        const double x1 = std::max(ax.timeToX(std::min(rubberBand->first, rubberBand->second)), ax.left);
        const double x2 = ax.timeToX(std::max(rubberBand->first, rubberBand->second));
        p->setClipping(false);
        p->fillRect(QRectF(x1, rect.top(), x2 - x1, rect.height()), th.rubberBand);
        p->setPen(QPen(th.selection, 1));
        p->drawLine(QPointF(x1, rect.top()), QPointF(x1, rect.bottom()));
        p->drawLine(QPointF(x2, rect.top()), QPointF(x2, rect.bottom()));
        // The span's length in the ruler, on its own background so the tick labels do not show through.
        p->setFont(ctx.font(12, true));
        const QString text = QStringLiteral("zoom to %1")
                                 .arg(formatDuration(std::abs(rubberBand->second - rubberBand->first)));
        const QRectF box(x1 + 1, rect.top() + (ctx.options.title.isEmpty() ? 0 : ctx.metrics.titleHeight) + 2,
                         QFontMetricsF(p->font()).horizontalAdvance(text) + 8, ctx.metrics.rulerHeight - 4);
        p->fillRect(box, th.selection);
        p->setPen(th.background);
        p->drawText(box, Qt::AlignCenter, text);
    }
    p->restore();
}

} // namespace rpcscope
