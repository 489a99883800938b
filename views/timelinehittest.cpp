#include "breakerband.h"
#include "markerspass.h"
#include "ratestrippass.h"
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
    const double s = m_metrics.scale;
    // The markers drawn as one (MarkersPass::clusters) under x: a lab event, or a cluster of them.
    auto clusterAt = [&](std::span<const LabEventRecord *const> events, const QRectF &area) {
        const double r = MarkersPass::radius(s);
        for (const MarkersPass::Cluster &c : MarkersPass::clusters(events, ax, s, ax.left, rect.right())) {
            const double last = ax.timeToX(c.events.back()->tNs);
            if (pos.x() < c.x - r - 3 || pos.x() > last + r + 3) continue;
            const QRectF where(c.x - r - 3, area.top(), last - c.x + 2 * r + 6, area.height());
            if (c.events.size() == 1) {
                hit.kind = Hit::LabEvent;
                hit.labEvent = c.events.front();
            } else {
                hit.kind = Hit::MarkerCluster;
                hit.events.assign(c.events.begin(), c.events.end());
            }
            hit.rect = where;
            return true;
        }
        return false;
    };
    if (const QRectF strip = rateStripRect(rect); strip.contains(pos)) {
        // Its bucket's column, so the tooltip follows the pointer from bucket to bucket.
        hit.kind = Hit::RateStrip;
        hit.rect = QRectF(strip.left(), strip.top(), ax.left - strip.left(), strip.height());
        if (const auto b = RateStripPass::bucketAt(ctx, pos.x())) {
            hit.fromNs = b->startNs;
            hit.toNs = b->startNs + b->widthNs;
            const double x1 = std::max(ax.left, ax.timeToX(hit.fromNs));
            hit.rect = QRectF(x1, strip.top(), std::max(1.0, ax.timeToX(hit.toNs) - x1), strip.height());
        }
        return hit;
    }
    const double bandTop =
        rect.top() + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) + m_metrics.rulerHeight;
    if (ctx.policyBand && pos.y() >= bandTop && pos.y() < bandTop + m_metrics.bandHeight &&
        pos.x() >= ax.left) {
        const QRectF band(rect.left(), bandTop, rect.width(), m_metrics.bandHeight);
        // Markers sit on the band's middle, fast failures are ticks along its bottom, transitions marks at
        // its edges; anywhere else the pointer is over a state.
        if (std::abs(pos.y() - band.center().y()) <= MarkersPass::radius(s) + 4 &&
            clusterAt(m_index.bandMarkers(), band))
            return hit;
        if (pos.y() >= band.bottom() - 11 * s) {
            std::vector<const LabEventRecord *> fastFails;
            for (const LabEventRecord &e : m_store->labEvents())
                if (e.kind == "fast-fail") fastFails.push_back(&e);
            if (const LabEventRecord *e = nearest(fastFails)) {
                hit.kind = Hit::LabEvent;
                hit.labEvent = e;
                hit.rect = QRectF(ax.timeToX(e->tNs) - 5, bandTop, 10, m_metrics.bandHeight);
                return hit;
            }
        }
        const BreakerBand states = BreakerBand::build(ctx, rect.right());
        const BreakerBand::Transition *transition = nullptr;
        // Transition marks are drawn in the strips above and below the states; between them, the state.
        const double strip = 6 * s + 1;
        const bool inStrip = pos.y() <= band.top() + strip || pos.y() >= band.bottom() - strip;
        for (const BreakerBand::Transition &t : states.transitions) {
            const double dx = std::abs(t.x - pos.x());
            if (inStrip && dx <= 2.5 && (!transition || dx < std::abs(transition->x - pos.x())))
                transition = &t;
        }
        if (transition) {
            hit.kind = Hit::LabEvent;
            hit.labEvent = transition->event;
            hit.rect = QRectF(transition->x - 3, bandTop, 6, m_metrics.bandHeight);
            return hit;
        }
        // A widened state is drawn over its neighbours, so it wins where they overlap.
        const BreakerBand::Segment *under = nullptr;
        for (const BreakerBand::Segment &seg : states.segments)
            if (pos.x() >= seg.x1 && pos.x() < seg.x2 && (!under || seg.widened)) under = &seg;
        if (under) {
            hit.kind = Hit::BandSegment;
            hit.state = under->state;
            hit.fromNs = under->fromNs;
            hit.toNs = under->toNs;
            hit.current = under->current;
            hit.rect = QRectF(under->x1, bandTop, under->x2 - under->x1, m_metrics.bandHeight);
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
        if (const auto events = m_index.labEventsOfCall(m_store->calls()[block.index].key); !events.empty())
            if (clusterAt(events,
                          QRectF(0, blockTop + m_metrics.callHeader, 0, m_metrics.attemptHeight * 0.44)))
                return hit;
    }
    const Call &call = m_store->calls()[block.index];
    const double rowH = m_metrics.attemptRowHeight(false);
    const size_t k = inLane < m_metrics.attemptTop(false, 0)
                         ? call.attempts.size()
                         : size_t((inLane - m_metrics.attemptTop(false, 0)) / rowH);
    const QRectF bar = k < call.attempts.size() ? ctx.attemptRect(block.index, k) : QRectF();
    const bool onBar = bar.isValid() && pos.x() >= bar.left() && pos.x() <= bar.right();
    const bool overLabel = pos.x() < rect.left() + m_metrics.labelWidth;
    // The deadline's dashed line runs through the whole lane: within a few pixels of it, off any bar.
    if (const auto deadline = call.deadlineNs(); deadline && !onBar && !overLabel) {
        const double dx = ax.timeToX(*deadline);
        if (std::abs(pos.x() - dx) <= 4 && dx >= ax.left) {
            hit.kind = Hit::Deadline;
            hit.rect = QRectF(dx - 4, blockTop, 8, block.h);
            return hit;
        }
    }
    if (inLane < m_metrics.callHeader) {
        hit.kind = Hit::CallHeader;
        hit.rect = QRectF(rect.left(), blockTop, rect.width(), m_metrics.callHeader);
        return hit;
    }
    // The row of a retry the client chose not to make: its reason, whole.
    if (k == call.attempts.size() && lay.hasSuppressedRow(call)) {
        for (const LabEventRecord *e : m_index.labEventsOfCall(call.key))
            if (e->kind == "retry-suppressed") {
                hit.kind = Hit::LabEvent;
                hit.labEvent = e;
                hit.rect = QRectF(rect.left(), blockTop + m_metrics.attemptTop(false, k), rect.width(), rowH);
                return hit;
            }
    }
    if (k >= call.attempts.size()) return hit;
    // A whole attempt row is the target when the pointer is over its label; on the time axis, the bar.
    if (overLabel || onBar) {
        hit.kind = Hit::Attempt;
        hit.attempt = k;
        hit.rect = bar;
        return hit;
    }
    // The backoff gap before this attempt: its bracket, or its label above it.
    if (k > 0 && call.attempts[k - 1].endNs) {
        const double g1 = ax.timeToX(*call.attempts[k - 1].endNs);
        const double g2 = ax.timeToX(call.attempts[k].startNs);
        // The bar starts where the gap ends; it was tested first.
        bool onGap = pos.x() >= g1 - 2 && pos.x() < g2;
        for (const GapLabel &l : m_callLanes.gapLabels())
            if (l.call == block.index && l.attempt == k && l.rect.contains(pos)) onGap = true;
        if (onGap) {
            hit.kind = Hit::Gap;
            hit.attempt = k;
            hit.rect = QRectF(g1, blockTop + m_metrics.attemptTop(false, k), std::max(1.0, g2 - g1), rowH);
            return hit;
        }
    }
    // A few pixels around the bar, so a 3 px bar is still easy to hit.
    if (pos.x() >= bar.left() - 4 && pos.x() <= bar.right() + 4) {
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
    if (hit.kind != Hit::None || overLabel) {
        if (overLabel) {
            hit.kind = Hit::CallHeader;
            hit.rect = QRectF(ctx.rect.left(), blockTop, ctx.rect.width(), block.h);
        }
        return hit;
    }
    // Off the bars, the same things the comfortable rows explain: the deadline's line, then a backoff gap
    // between two bars side by side.
    if (const auto deadline = call.deadlineNs()) {
        const double dx = ctx.axis.timeToX(*deadline);
        if (std::abs(pos.x() - dx) <= 4 && dx >= ctx.axis.left) {
            hit.kind = Hit::Deadline;
            hit.rect = QRectF(dx - 4, blockTop, 8, block.h);
            return hit;
        }
    }
    for (size_t k = 1; k < call.attempts.size(); ++k) {
        if (!call.attempts[k - 1].endNs) continue;
        const double g1 = ctx.axis.timeToX(*call.attempts[k - 1].endNs);
        const double g2 = ctx.axis.timeToX(call.attempts[k].startNs);
        if (pos.x() >= g1 && pos.x() < g2) {
            hit.kind = Hit::Gap;
            hit.attempt = k;
            hit.rect = QRectF(g1, blockTop, std::max(1.0, g2 - g1), block.h);
            return hit;
        }
    }
    hit.kind = Hit::CallHeader;
    hit.rect = QRectF(ctx.rect.left(), blockTop, ctx.rect.width(), block.h);
    return hit;
}

} // namespace rpcscope
