#include "markerspass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"
#include "timelinestyle.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPolygonF>
#include <algorithm>

namespace rpcscope {

namespace {
bool suppressedRetry(const LabEventRecord *e)
{
    return e->kind.size() == 16 && e->kind == "retry-suppressed";
}
} // namespace

MarkersPass::Clusters MarkersPass::clusters(std::span<const LabEventRecord *const> events, const TimeAxis &ax,
                                            double scale, double left, double right, bool inOrder)
{
    const auto earlier = [](const LabEventRecord *a, const LabEventRecord *b) { return a->tNs < b->tNs; };
    // A marker joins the cluster before it while its diamond would touch that cluster's first diamond.
    const double apart = 2 * radius(scale) + 2;
    Clusters out;
    // Reported events mostly come in time order and without suppressed retries (those have rows of their
    // own): then the markers in view and each cluster's end are found by bisection, so a burst of a million
    // events costs a paint a few bisections per cluster drawn, not a walk placing each one.
    bool plain = true;
    for (size_t i = 0; i < events.size() && plain && !inOrder; ++i)
        plain = !suppressedRetry(events[i]) && (i == 0 || !earlier(events[i], events[i - 1]));
    std::span<const LabEventRecord *const> list = events;
    if (!plain) {
        out.m_sorted.reserve(events.size());
        for (const LabEventRecord *e : events) {
            if (suppressedRetry(e)) continue;
            const double x = ax.timeToX(e->tNs);
            if (x >= left && x <= right) out.m_sorted.push_back(e);
        }
        std::stable_sort(out.m_sorted.begin(), out.m_sorted.end(), earlier);
        list = out.m_sorted;
    }
    auto it = std::partition_point(list.begin(), list.end(),
                                   [&](const LabEventRecord *e) { return ax.timeToX(e->tNs) < left; });
    while (it != list.end()) {
        const double x = ax.timeToX((*it)->tNs);
        if (x > right) break;
        const auto end = std::partition_point(it, list.end(), [&](const LabEventRecord *e) {
            const double ex = ax.timeToX(e->tNs);
            return ex - x < apart && ex <= right;
        });
        out.m_list.push_back({x, std::span<const LabEventRecord *const>(&*it, size_t(end - it))});
        it = end;
    }
    return out;
}

QString MarkersPass::label(const Cluster &c, bool withDetail)
{
    const LabEventRecord &e = *c.events.front();
    const char *word = markerLabel(e.kind);
    QString text = word ? QString::fromLatin1(word) : QString::fromStdString(e.kind);
    // A custom event (ingestion endpoint) says what it is itself: "label: detail".
    if (e.kind == "custom" && !e.detail.empty())
        text = QString::fromStdString(e.detail);
    else if (withDetail && !e.detail.empty())
        text += QStringLiteral(": ") + QString::fromStdString(e.detail);
    if (c.events.size() == 1) return text;
    // Only now: a cluster of a burst holds many thousands of events.
    const bool sameKind =
        e.kind != "custom" && std::all_of(c.events.begin(), c.events.end(),
                                          [&](const LabEventRecord *o) { return o->kind == e.kind; });
    if (!sameKind) return QStringLiteral("×%1 events").arg(c.events.size());
    return QStringLiteral("×%1 %2")
        .arg(c.events.size())
        .arg(QString::fromLatin1(word ? word : e.kind.c_str()));
}

namespace {
// A cluster's diamond carries a ring, so it reads as "more than one" before its count is read.
void clusterMark(QPainter *p, const PaintContext &ctx, const MarkersPass::Cluster &c, double cy)
{
    const double r = MarkersPass::radius(ctx.metrics.scale);
    if (c.events.size() > 1) {
        p->setRenderHint(QPainter::Antialiasing, true);
        p->setPen(QPen(ctx.theme.labMarker, std::max(1.0, ctx.metrics.scale)));
        p->setBrush(Qt::NoBrush);
        p->drawEllipse(QPointF(c.x, cy), r + 3 * ctx.metrics.scale, r + 3 * ctx.metrics.scale);
        p->setRenderHint(QPainter::Antialiasing, false);
        ctx.mark(kUseCluster);
    } else {
        ctx.mark(kUseMarker);
    }
    diamond(p, QPointF(c.x, cy), r, ctx.theme.labMarker, true);
}
} // namespace

// Markers of calls without a lane: a diamond each (or one per cluster), labelled where the label fits.
void MarkersPass::paintBand(QPainter *p, const PaintContext &ctx, const QRectF &band)
{
    const TimelineTheme &th = ctx.theme;
    const double right = band.right();
    double lastTextRight = -1e9;
    const double r = radius(ctx.metrics.scale);
    const double cy = band.center().y();
    for (const Cluster &c : clusters(ctx.index.bandMarkers(), ctx.axis, ctx.metrics.scale, ctx.axis.left,
                                     right, ctx.index.bandMarkersInOrder())) {
        clusterMark(p, ctx, c, cy);
        const QString text = label(c, false);
        const double tw = QFontMetricsF(p->font()).horizontalAdvance(text);
        const double tx = c.x + r + (c.events.size() > 1 ? 5 * ctx.metrics.scale : 2);
        if (tx > lastTextRight && tx + tw < right) {
            p->setPen(th.labMarker);
            p->drawText(QRectF(tx, band.top(), tw + 2, band.height()), Qt::AlignVCenter | Qt::AlignLeft,
                        text);
            lastTextRight = tx + tw + 6;
        }
    }
}

// Lab events tied to a call: policy markers (hedges, budget checks...) at their time. A retry the client
// chose not to make has a row of its own below the attempts (paintSuppressed), so it never covers a label.
void MarkersPass::paintLane(QPainter *p, const PaintContext &ctx, const Call &call, double top,
                            double laneBottom, const QFont &small, const QFontMetricsF &smallFm)
{
    const TimelineTheme &th = ctx.theme;
    const TimeAxis &ax = ctx.axis;
    const double right = ctx.rect.right();
    const auto events = ctx.index.labEventsOfCall(call.key);
    if (events.empty()) return;
    p->setFont(small);
    double lastTextRight = -1e9;
    const double r = radius(ctx.metrics.scale);
    // In the first attempt row's top strip, where only gap labels of later rows never go.
    const double cy = top + ctx.metrics.callHeader + r + 2;
    for (const Cluster &c : clusters(events, ax, ctx.metrics.scale, ax.left, right)) {
        p->setPen(QPen(th.labMarker, 1, Qt::DotLine));
        p->drawLine(QPointF(c.x, top + ctx.metrics.callHeader), QPointF(c.x, laneBottom));
        clusterMark(p, ctx, c, cy);
        const QString text = label(c, true);
        const double tw = smallFm.horizontalAdvance(text);
        const double gap = r + (c.events.size() > 1 ? 6 * ctx.metrics.scale : 3);
        // Right of the marker, or left of it near the right edge (the last marker of a trace fitted to
        // the view sits there), wherever it clears the label before it.
        const double textLeft = c.x + gap + tw < right ? c.x + gap : c.x - gap - tw;
        if (textLeft > lastTextRight && textLeft >= ax.left) {
            p->setPen(th.labMarker);
            p->drawText(QRectF(textLeft, cy - smallFm.height() / 2, tw + 2, smallFm.height()),
                        Qt::AlignVCenter | Qt::AlignLeft, text);
            lastTextRight = std::max(lastTextRight, textLeft + tw + 6);
        }
    }
}

void MarkersPass::paintSuppressed(QPainter *p, const PaintContext &ctx, const Call &call, double rowTop,
                                  const QFontMetricsF &smallFm)
{
    const TimeAxis &ax = ctx.axis;
    const LaneMetrics &m = ctx.metrics;
    const double right = ctx.rect.right();
    const double cy = rowTop + m.barOffset(false) + m.barHeight / 2;
    const QRectF rowBox(ctx.rect.left() + 22 * m.scale, rowTop, m.labelWidth - 26 * m.scale, m.attemptHeight);
    p->setPen(ctx.theme.deadline);
    p->drawText(QRectF(rowBox.left(), cy - m.barHeight / 2 - 3, rowBox.width(), m.barHeight + 6),
                Qt::AlignVCenter | Qt::AlignLeft,
                smallFm.elidedText(QStringLiteral("✕ not retried"), Qt::ElideRight, rowBox.width()));
    const double r = radius(m.scale);
    // Below this, not even a word of the reason is readable beside the cross: the tooltip tells it.
    const double least = smallFm.horizontalAdvance(QStringLiteral("next…"));
    double textLeft = ax.left; // a second reason (rare) goes after the first
    for (const LabEventRecord *e : ctx.index.labEventsOfCall(call.key)) {
        if (!suppressedRetry(e)) continue;
        // Beyond the view, at its edge, clear of it as the deadline's arrow is.
        const double x = std::clamp(ax.timeToX(e->tNs), ax.left + r, right - 8 - r);
        p->setPen(QPen(ctx.theme.deadline, 2 * m.scale));
        p->drawLine(QPointF(x - r, cy - r), QPointF(x + r, cy + r));
        p->drawLine(QPointF(x - r, cy + r), QPointF(x + r, cy - r));
        // The row's label says what it is: the reason alone, so more of it fits.
        const QString text = QString::fromStdString(e->detail);
        const double tw = smallFm.horizontalAdvance(text);
        // Right of the cross where it fits; else left of it, ending at the cross; else in the wider side.
        const double rightRoom = right - 8 - (x + r + 6), leftRoom = x - r - 6 - textLeft;
        const bool toRight = tw <= rightRoom || (tw > leftRoom && rightRoom >= leftRoom);
        const double room = std::min(tw, toRight ? rightRoom : leftRoom);
        if (room < least) continue;
        const QString shown = smallFm.elidedText(text, Qt::ElideRight, room + 1);
        const double sw = smallFm.horizontalAdvance(shown);
        const double left = toRight ? x + r + 6 : x - r - 6 - sw;
        p->setPen(ctx.theme.deadline);
        p->drawText(QRectF(left, cy - m.barHeight / 2 - 3, sw + 2, m.barHeight + 6),
                    Qt::AlignVCenter | Qt::AlignLeft, shown);
        textLeft = std::max(textLeft, left + sw + 8);
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
    if (const auto playhead = zoom.playheadNs()) {
        // A replay's playhead: a line from the ruler down, with a head in the ruler to find it by.
        const TimeAxis &ax = ctx.axis;
        const double x = ax.timeToX(*playhead);
        if (x >= ax.left && x <= rect.right()) {
            const double rulerTop = rect.top() + (ctx.options.title.isEmpty() ? 0 : ctx.metrics.titleHeight);
            p->setClipping(false);
            p->setRenderHint(QPainter::Antialiasing);
            p->setPen(QPen(th.selection, 2 * ctx.metrics.scale));
            p->drawLine(QPointF(x, rulerTop), QPointF(x, bottom));
            const double s = 6 * ctx.metrics.scale;
            p->setBrush(th.selection);
            p->drawPolygon(
                QPolygonF({QPointF(x - s, rulerTop), QPointF(x + s, rulerTop), QPointF(x, rulerTop + s)}));
        }
    }
    p->restore();
}

} // namespace rpcscope
