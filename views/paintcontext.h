#pragma once

#include "gapenvelopes.h"
#include "timeaxis.h"
#include "timelineindex.h"
#include "timelinelayout.h"
#include "timelineoptions.h"
#include "timelinestore.h"
#include "timelinetheme.h"
#include "zoomcontrol.h"

#include <QFont>
#include <QRectF>
#include <cstdint>
#include <utility>

namespace rpcscope {

// What a paint pass reads, gathered once per paint by TimelinePainter: the store and its index (caches and
// lane layout), the options, sizes and colours, the view's state (range, scroll, hover, selection) and the
// geometry of this picture. A pass paints from this alone; it never sees the painter.
struct PaintContext
{
    const TimelineStore &store;
    const TimelineIndex &index;
    const TimelineLayout &layout;
    const TimelineOptions &options;
    const LaneMetrics &metrics;
    const TimelineTheme &theme;
    const ZoomControl &zoom;
    QRectF rect;        // the whole picture
    TimeAxis axis;      // time <-> x over the lanes, right of the label column
    double lanesTop;    // below the fixed header (title, ruler, policy band, overview)
    double lanesBottom; // above the legend, when there is one
    bool policyBand;    // the header has a policy band
    bool overview;      // the header has the overview histogram
    // What this picture draws (LegendUse and status-group bits), set by the passes as they paint, so the
    // legend explains exactly that; null when nobody asks (hit-testing).
    std::uint32_t *drawn = nullptr;
    bool rates = false;   // the header has the rates strip (below the policy band, above the overview)
    double rateScale = 1; // its scale (TimelinePainter::rateStripScale)
    mutable qint64 rulerStep = 0;            // rulerStepNs(), once it was asked (every lane's grid asks it)
    const GapEnvelopes *envelopes = nullptr; // ranges given for calls without their own (TimelinePainter)

    // The range the client's policy allows for the gap before attempt k of `call`: the call's own, else a
    // given one (envelopes; *given says so), else none.
    GapEnvelopes::Range expectedGap(const Call &call, size_t k, bool *given) const
    {
        return GapEnvelopes::expected(envelopes, call, k, given);
    }

    void mark(int use) const
    {
        if (drawn) *drawn |= 1u << use;
    }

    qint64 startNs() const { return zoom.rangeStart(); }
    qint64 endNs() const { return zoom.rangeEnd(); }
    int scrollY() const { return zoom.scrollY(); }
    // The application font at px pixels, scaled like every other size (workshop mode).
    QFont font(double px, bool bold = false) const { return scaledFont(px, metrics.scale, bold); }
    static QFont scaledFont(double px, double scale, bool bold = false);
    // Content y of a call's lane, or -1 when filtered out.
    double laneY(size_t call) const;
    // The bar of an attempt in this geometry (empty when its lane is filtered out).
    QRectF attemptRect(size_t call, size_t attempt) const;
    // Where attempt k's bar starts and ends in x (before clipping to the lanes): at least 3 px, and a
    // widened mark (widenedMark) at least kMinMarkPx at the scale, short of the next attempt's start.
    std::pair<double, double> attemptSpan(const Call &call, size_t k) const;
    // An injected attempt, or a failed one that took no time (a proxy's abort before the server saw it is
    // both): its hatch and failure colour need more than the 3 px a short attempt gets to be seen at all.
    static bool widenedMark(const Attempt &a);
    static constexpr double kMinMarkPx = 10;
    // The whole row of an attempt across the picture (a call on one row: that row), in this geometry.
    QRectF attemptRowRect(size_t call, size_t attempt) const;
};

} // namespace rpcscope
