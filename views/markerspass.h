#pragma once

#include <QRectF>

class QFont;
class QFontMetricsF;
class QPainter;

namespace rpcscope {

struct Call;
struct PaintContext;

// Policy markers (lab events: hedges, budget checks, bulkhead rejections, custom events) on the policy band
// and on call lanes, and the overlay drawn over the cached lanes: hover, selection and the rubber band.
class MarkersPass
{
public:
    // The markers of calls without a lane, along the policy band.
    static void paintBand(QPainter *p, const PaintContext &ctx, const QRectF &band);
    // The lab events tied to one call, over its lane (top to laneBottom).
    static void paintLane(QPainter *p, const PaintContext &ctx, const Call &call, double top,
                          double laneBottom, const QFont &small, const QFontMetricsF &smallFm);
    // Hover and selection of an attempt, and the span being rubber-banded with its length.
    static void paintOverlay(QPainter *p, const PaintContext &ctx);
};

} // namespace rpcscope
