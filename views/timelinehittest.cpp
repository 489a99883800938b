#include "timelinepainter.h"

#include <cmath>

namespace rpcscope {

// Hit-testing walks the same geometry paint() draws: the policy band, then the lane under the point found by
// binary search over the layout.
TimelinePainter::Hit TimelinePainter::hitTest(const QPointF &pos, const QRectF &rect) const
{
    Hit hit;
    const PaintContext ctx = context(rect);
    const double top = ctx.lanesTop;
    const double bottom = ctx.lanesBottom;
    const TimeAxis &ax = ctx.axis;
    const int scrollY = ctx.scrollY();
    // A lab event within a few pixels: policy band markers and fast failures, or a marker on a call's lane.
    auto nearest = [&](auto &&events) -> const LabEventRecord * {
        const LabEventRecord *best = nullptr;
        double bestDx = 5;
        for (const LabEventRecord *e : events)
            if (const double dx = std::abs(ax.timeToX(e->tNs) - pos.x()); dx <= bestDx) {
                best = e;
                bestDx = dx;
            }
        return best;
    };
    const double bandTop =
        rect.top() + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) + m_metrics.rulerHeight;
    if (ctx.policyBand && pos.y() >= bandTop && pos.y() < bandTop + m_metrics.bandHeight &&
        pos.x() >= ax.left) {
        std::vector<const LabEventRecord *> events = m_index.bandMarkers();
        for (const LabEventRecord &e : m_store->labEvents())
            if (e.kind == "fast-fail" || e.kind == "breaker") events.push_back(&e);
        if (const LabEventRecord *e = nearest(events)) {
            hit.kind = Hit::LabEvent;
            hit.labEvent = e;
            hit.rect = QRectF(ax.timeToX(e->tNs) - 5, bandTop, 10, m_metrics.bandHeight);
        }
        return hit;
    }
    if (pos.y() < top || pos.y() > bottom || !rect.contains(pos)) return hit;
    const TimelineLayout &lay = ctx.layout;
    const double cy = pos.y() - top + scrollY;
    const size_t b = lay.blockAt(cy);
    if (b >= lay.blocks().size()) return hit;
    const LaneBlock &block = lay.blocks()[b];
    const double blockTop = top - scrollY + block.y;
    if (block.kind == LaneBlock::GroupHeader || block.kind == LaneBlock::GroupAggregate) {
        hit.kind = Hit::GroupHeader;
        hit.group = block.index;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), block.h);
        return hit;
    }
    if (block.kind == LaneBlock::ConnectionLane) {
        hit.kind = Hit::Connection;
        hit.connection = block.index;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), block.h);
        return hit;
    }
    hit.call = block.index;
    const double inLane = cy - block.y;
    if (block.oneRow) return hitRow(pos, ctx, block, blockTop);
    // Markers sit in the top strip of the first attempt row.
    if (inLane >= m_metrics.callHeader && inLane < m_metrics.callHeader + m_metrics.attemptHeight * 0.44) {
        if (const auto *events = m_index.labEventsOfCall(m_store->calls()[block.index].key)) {
            std::vector<const LabEventRecord *> markers;
            for (const LabEventRecord *e : *events)
                if (e->kind != "retry-suppressed") markers.push_back(e);
            if (const LabEventRecord *e = nearest(markers)) {
                hit.kind = Hit::LabEvent;
                hit.labEvent = e;
                hit.rect = QRectF(ax.timeToX(e->tNs) - 5, blockTop + m_metrics.callHeader, 10, 12);
                return hit;
            }
        }
    }
    if (inLane < m_metrics.callHeader) {
        hit.kind = Hit::CallHeader;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), m_metrics.callHeader);
        return hit;
    }
    const size_t k = size_t((inLane - m_metrics.attemptTop(false, 0)) / m_metrics.attemptRowHeight(false));
    const Call &call = m_store->calls()[block.index];
    if (k >= call.attempts.size()) return hit;
    // A whole attempt row is the target when the pointer is over its label; on the time axis, the bar plus a
    // few pixels, so a 3 px bar is still easy to hit.
    const QRectF bar = ctx.attemptRect(block.index, k);
    const bool overLabel = pos.x() < rect.left() + m_metrics.labelWidth;
    if (overLabel || (pos.x() >= bar.left() - 4 && pos.x() <= bar.right() + 4)) {
        hit.kind = Hit::Attempt;
        hit.attempt = k;
        hit.rect = bar;
    }
    return hit;
}

// A call on one row: the bar under the pointer (a few pixels either side count), else the call itself.
TimelinePainter::Hit TimelinePainter::hitRow(const QPointF &pos, const PaintContext &ctx,
                                             const LaneBlock &block, double blockTop) const
{
    Hit hit;
    hit.call = block.index;
    const Call &call = m_store->calls()[block.index];
    // Over the label the row is the call's header (a click selects its outcome, shows a call with retries a
    // row per attempt, folds a chain on double-click); in time, the nearest bar within a few pixels.
    const bool overLabel = pos.x() < ctx.axis.left;
    double best = 5;
    for (size_t k = 0; !overLabel && k < call.attempts.size(); ++k) {
        const QRectF bar = ctx.attemptRect(block.index, k);
        const double d = pos.x() < bar.left() ? bar.left() - pos.x() : std::max(0.0, pos.x() - bar.right());
        if (d < best) {
            best = d;
            hit.kind = Hit::Attempt;
            hit.attempt = k;
            hit.rect = bar;
        }
    }
    if (hit.kind == Hit::None) {
        hit.kind = Hit::CallHeader;
        hit.rect = QRectF(ctx.rect.left(), blockTop, ctx.rect.width(), block.h);
    }
    return hit;
}

} // namespace rpcscope
