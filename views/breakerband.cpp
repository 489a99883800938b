#include "breakerband.h"

#include "paintcontext.h"
#include "timelinestyle.h"

#include <algorithm>

namespace rpcscope {

int BreakerBand::legendUse(const QString &state)
{
    if (state == QLatin1String("open")) return kUseBreakerOpen;
    if (state == QLatin1String("half-open")) return kUseBreakerHalfOpen;
    return kUseBreakerClosed;
}

BreakerBand BreakerBand::build(const PaintContext &ctx, double right)
{
    BreakerBand band;
    const TimeAxis &ax = ctx.axis;
    const double minW = minWidth(ctx.metrics.scale);
    std::string state;
    qint64 from = ctx.index.fullRange().first;
    auto span = [&](qint64 to, bool current) {
        if (to < ctx.startNs() || from > ctx.endNs()) return;
        Segment s{QString::fromStdString(state), from, to, current};
        s.x1 = std::max(ax.timeToX(from), ax.left);
        s.x2 = std::min(ax.timeToX(to), right);
        if (s.x2 - s.x1 < minW) {
            // Widened to the right, or to the left against the right edge.
            s.widened = true;
            s.x2 = s.x1 + minW;
            if (s.x2 > right) {
                s.x2 = right;
                s.x1 = std::max(ax.left, right - minW);
            }
        }
        if (s.x2 > s.x1) band.segments.push_back(std::move(s));
    };
    for (const LabEventRecord *event : ctx.index.breakerEvents()) {
        const LabEventRecord &e = *event;
        const auto arrow = e.detail.find(" -> ");
        if (arrow == std::string::npos) continue;
        if (state.empty()) state = e.detail.substr(0, arrow);
        span(e.tNs, false);
        // The state is one word: a reported transition carries its source after it ("closed -> open
        // [front]").
        state = e.detail.substr(arrow + 4);
        state = state.substr(0, state.find(' '));
        from = e.tNs;
        const double x = ax.timeToX(e.tNs);
        if (x >= ax.left && x <= right) band.transitions.push_back({&e, x});
    }
    if (!state.empty()) span(std::max<qint64>(ctx.store.latestNs(), from), true);
    if (!band.segments.empty() && band.segments.back().current)
        band.segments.back().x2 = std::max(band.segments.back().x2, std::min(ax.timeToX(ctx.endNs()), right));
    return band;
}

} // namespace rpcscope
