#pragma once

#include "timeaxis.h"
#include "timelinestore.h"

#include <QRectF>
#include <QString>
#include <vector>

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
    // Markers closer than a diamond's width are drawn as one, with a count ("×7"): a cluster.
    struct Cluster
    {
        double x = 0; // of its first marker
        std::vector<const LabEventRecord *> events;
    };
    // The markers in [left, right] grouped the way they are drawn. Lane markers exclude suppressed retries
    // (those are words in the lane header).
    // `inOrder`: the caller knows the events are in time order without suppressed retries (the index's band
    // markers), so they are not checked again.
    static std::vector<Cluster> clusters(const std::vector<const LabEventRecord *> &events,
                                         const TimeAxis &ax, double scale, double left, double right,
                                         bool inOrder = false);
    // A diamond's half-width at this scale.
    static double radius(double scale) { return 4 * scale; }
    // The word beside a marker or a cluster.
    static QString label(const Cluster &c, bool withDetail);

    // The markers of calls without a lane, along the policy band.
    static void paintBand(QPainter *p, const PaintContext &ctx, const QRectF &band);
    // The lab events tied to one call, over its lane (top to laneBottom).
    static void paintLane(QPainter *p, const PaintContext &ctx, const Call &call, double top,
                          double laneBottom, const QFont &small, const QFontMetricsF &smallFm);
    // Hover and selection of an attempt, and the span being rubber-banded with its length.
    static void paintOverlay(QPainter *p, const PaintContext &ctx);
};

} // namespace rpcscope
