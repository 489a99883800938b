#pragma once

#include "timeaxis.h"
#include "timelinestore.h"

#include <QRectF>
#include <QString>
#include <span>
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
    // A cluster views its markers where they are (the index's list, or Clusters' own sorted copy): a burst
    // of a million markers zoomed out is a few clusters, and copying each one's pointers cost a paint as
    // much as the burst had events.
    struct Cluster
    {
        double x = 0; // of its first marker
        std::span<const LabEventRecord *const> events;
    };
    // The clusters, and the sorted copy of markers they view when the list was not in time order. Moved,
    // never copied, so the views stay valid.
    class Clusters
    {
    public:
        Clusters() = default;
        Clusters(Clusters &&) = default;
        Clusters &operator=(Clusters &&) = default;
        Clusters(const Clusters &) = delete;
        Clusters &operator=(const Clusters &) = delete;
        auto begin() const { return m_list.begin(); }
        auto end() const { return m_list.end(); }
        size_t size() const { return m_list.size(); }
        bool empty() const { return m_list.empty(); }
        const Cluster &operator[](size_t i) const { return m_list[i]; }

    private:
        friend class MarkersPass;
        std::vector<Cluster> m_list;
        std::vector<const LabEventRecord *> m_sorted;
    };
    // The markers in [left, right] grouped the way they are drawn. Lane markers exclude suppressed retries
    // (those have a row of their own, paintSuppressed).
    // `inOrder`: the caller knows the events are in time order without suppressed retries (the index's band
    // markers), so they are not checked again.
    static Clusters clusters(std::span<const LabEventRecord *const> events, const TimeAxis &ax, double scale,
                             double left, double right, bool inOrder = false);
    // A diamond's half-width at this scale.
    static double radius(double scale) { return 4 * scale; }
    // The word beside a marker or a cluster.
    static QString label(const Cluster &c, bool withDetail);

    // The markers of calls without a lane, along the policy band.
    static void paintBand(QPainter *p, const PaintContext &ctx, const QRectF &band);
    // The lab events tied to one call, over its lane (top to laneBottom): its policy markers at their times.
    static void paintLane(QPainter *p, const PaintContext &ctx, const Call &call, double top,
                          double laneBottom, const QFont &small, const QFontMetricsF &smallFm);
    // A retry the client chose not to make (a lab event "retry-suppressed"): a row of its own below the
    // call's attempts (TimelineLayout::laneRows), where the next attempt would have been, with a cross at the
    // time the client decided and its reason beside it, cut short with an ellipsis where the row is too
    // narrow (the tooltip has it whole).
    static void paintSuppressed(QPainter *p, const PaintContext &ctx, const Call &call, double rowTop,
                                const QFontMetricsF &smallFm);
    // Hover and selection of an attempt, and the span being rubber-banded with its length.
    static void paintOverlay(QPainter *p, const PaintContext &ctx);
};

} // namespace rpcscope
