#pragma once

#include "calllanepass.h"
#include "legendpass.h"
#include "paintcontext.h"
#include "rulerpass.h"
#include "timeaxis.h"
#include "timeformat.h"
#include "timelineindex.h"
#include "timelinelayout.h"
#include "timelineoptions.h"
#include "timelinestore.h"
#include "timelinetheme.h"
#include "zoomcontrol.h"

#include <QColor>
#include <QImage>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

class QPainter;

class QIODevice;

namespace rpcscope {

// Paints the swimlanes of a TimelineStore onto any QPainter: the widget, PNG/SVG export and the CLI share
// this one code path. It reads the store only.
//
// An orchestrator: it gathers a PaintContext (store, index, layout, options, theme, time axis, view state)
// and hands it to the paint passes in order: the lanes in view (connection lanes, call lanes), the header
// (ruler and bands), the legend, and for the widget the overlay (hover, selection, rubber band).
//
// Cost model (tests/bench/viewbench.cpp measures it at 100,000 calls): everything that depends on the whole
// store lives in the TimelineIndex, cached and keyed on the store's generation; a paint touches only the
// lanes in view (binary search over the layout) and, for the overview, one pass over a flat array of attempt
// spans per change of range or width. The widget keeps the painted lanes as an image too, so hover and
// selection only blit and draw an overlay.
//
// The visible range, scroll, hover and selection live in a ZoomControl: the widget's when it passes one,
// otherwise the painter's own.
class TimelinePainter
{
public:
    using Options = TimelineOptions;
    using GapLabel = rpcscope::GapLabel; // a gap label painted in the last paint(), for hit-testing and tests

    // What is under a point.
    struct Hit
    {
        enum Kind
        {
            None,
            Attempt,
            CallHeader,
            Connection,
            GroupHeader,
            LabEvent,
            BandSegment,   // a circuit breaker state on the policy band
            MarkerCluster, // markers drawn as one, with a count
            Gap,           // the backoff gap before an attempt (its line or its label)
            Deadline,      // a call's deadline line
            RateStrip      // the rates strip (rect: the strip; over the label column, the row labels)
        };
        Kind kind = None;
        size_t call = 0;                            // Attempt, CallHeader, Gap, Deadline
        size_t attempt = 0;                         // Attempt; Gap: the attempt the gap leads to
        size_t connection = 0;                      // Connection: index into store.connections()
        size_t group = 0;                           // GroupHeader: index into layout().groups()
        const LabEventRecord *labEvent = nullptr;   // LabEvent: valid until the store changes
        std::vector<const LabEventRecord *> events; // MarkerCluster, in time order
        QString state;                              // BandSegment
        qint64 fromNs = 0, toNs = 0;                // BandSegment; RateStrip: the bucket under the point
        bool current = false;                       // BandSegment: still the state at the end of the capture
        QRectF rect; // the bar (Attempt), the lane header, the marker, the band segment
    };

    explicit TimelinePainter(const TimelineStore *store, ZoomControl *zoom = nullptr);

    void setOptions(const Options &o);
    const Options &options() const { return m_options; }
    // Options::gapEnvelopes alone (the picture is drawn again).
    void setGapEnvelopes(std::shared_ptr<const GapEnvelopes> envelopes);
    const GapEnvelopes *gapEnvelopes() const { return m_options.gapEnvelopes.get(); }
    ZoomControl &zoomControl() { return *m_zoom; }
    const ZoomControl &zoomControl() const { return *m_zoom; }
    // The visible range (ZoomControl::setVisibleRange: follow and live stay as they are).
    void setRange(qint64 startNs, qint64 endNs) { m_zoom->setVisibleRange(startNs, endNs); }
    qint64 rangeStart() const { return m_zoom->rangeStart(); }
    qint64 rangeEnd() const { return m_zoom->rangeEnd(); }
    void setScrollY(int y) { m_zoom->setScrollY(y); }
    int scrollY() const { return m_zoom->scrollY(); }
    // Drops every cache; the widget calls it when the model is reset (a cleared store can reuse its memory).
    void invalidate();

    // The whole trace, with a margin, in absolute steady ns.
    std::pair<qint64, qint64> fullRange() const;
    // Everything stacked at this width (the legend flows into as many rows as the width needs).
    int contentHeight(double width = 1400) const;
    int legendHeight(double width) const;
    // The widget's cap on the legend: past this height (a quarter of the view, say) it is drawn smaller than
    // workshop size, as large as fits, so a projector-sized legend never takes the lanes' room. 0: no cap
    // (exports).
    void setLegendBudget(int height) { m_legendBudget = height; }
    // The widget's cap on the connection lanes above the calls (one lane per call): while every connection's
    // lane fits this height (a third of the view, say) each has its own, up to kMaxSeparateConnections;
    // beyond it they share one lane, so workshop-sized connection lanes never take the calls' room. 0: no
    // cap but kMaxSeparateConnections (exports).
    void setConnectionLaneBudget(int height);
    // The widget's legend: room for what its paints have drawn since the store was last cleared, not for
    // everything the store may draw (phases, frame ticks, trailers at a zoom nobody is at: rows of workshop
    // type taken from the lanes). It grows, never shrinks, so the lanes' room changes a few times a session
    // at most; paintCached() paints again at once when a paint drew an entry it had no room for.
    void setLegendRoomFromPaints(bool on);
    // Whether the last paintCached() drew a legend with room for an entry no longer on screen (the calls in
    // flight once a run ended). The widget shrinks the room to what is drawn (shrinkLegendToDrawn) once that
    // has lasted a while, so a legend that changes with every frame of a pan does not make the lanes' room
    // flicker.
    bool legendHasSpareRoom() const { return m_legendSpare; }
    void shrinkLegendToDrawn();
    // The entries the legend has room for (kUse bits, as drawnUse()).
    std::uint32_t legendRoomUse() const { return legendRoom(); }
    // The scale the legend is drawn at: the metrics' scale, unless that would take more than the budget,
    // then the largest tenth below it that fits (never below 1).
    double legendScale(double width) const;
    int labelWidth() const { return m_metrics.labelWidth; }
    // Height of the fixed part above the lanes (title, ruler, policy band, overview).
    int headerHeight() const;
    const LaneMetrics &metrics() const { return m_metrics; }
    const TimelineTheme &theme() const;
    TimeAxis axis(const QRectF &rect) const;
    const TimelineLayout &layout() const;
    // Lab events the index has placed so far, every rebuild included (tests: a burst places each once).
    std::uint64_t labEventsPlaced() const { return m_index.labEventsPlaced(); }
    // Entries the index's retention cuts looked at in its lists of lab events by call (tests: a cut looks at
    // what it drops).
    std::uint64_t labCutWork() const { return m_index.labCutWork(); }
    // The lab events drawn on a call's lane and the band's markers, caches brought up to date (tests).
    TimelineIndex::LabSpan labEventsOfCall(const std::string &key) const
    {
        m_index.refresh();
        return m_index.labEventsOfCall(key);
    }
    TimelineIndex::LabSpan bandMarkers() const
    {
        m_index.refresh();
        return m_index.bandMarkers();
    }
    // What the paint passes read for a picture in rect, caches brought up to date.
    PaintContext context(const QRectF &rect) const;

    void paint(QPainter *p, const QRectF &rect);
    // The widget's path: the lanes from an image cached on (range, size, scroll, data, options), then the
    // hover and selection overlay. Identical pixels to paint() plus the overlay.
    void paintCached(QPainter *p, const QRectF &rect, qreal dpr);
    const std::vector<GapLabel> &gapLabels() const { return m_callLanes.gapLabels(); }
    // What the last paint() drew (LegendUse and status-group bits) and the legend entries that explain it.
    std::uint32_t drawnUse() const { return m_drawn; }
    QStringList legendEntries() const { return LegendPass::entries(m_drawn); }
    // The ruler's tick times in this geometry (round in wall-clock time with TimelineOptions::wallClock).
    std::vector<qint64> rulerTicks(const QRectF &rect) const;
    // Where the ruler's tick labels go in this geometry (none over another).
    std::vector<QRectF> rulerLabelRects(const QRectF &rect) const;
    // The caption the ruler shows over the label column in this geometry, and the box it must fit.
    QString rulerCaption(const QRectF &rect, QRectF *box = nullptr) const;

    Hit hitTest(const QPointF &pos, const QRectF &rect) const;
    // The rates strip in this geometry (empty when it is not shown), and its tooltip at x.
    QRectF rateStripRect(const QRectF &rect) const;
    QString rateStripToolTip(double x, const QRectF &rect) const;
    // The strip's scale: the metrics' scale, unless that would take more than the legend's budget (a quarter
    // of the view), then as large as fits it (never below 1). Exports: always the metrics' scale.
    double rateStripScale() const;
    // The rates strip's bucket under the pointer (absolute ns), outlined by paintCached()'s overlay.
    void setRateHover(std::optional<std::pair<qint64, qint64>> span) { m_rateHover = span; }
    std::optional<std::pair<qint64, qint64>> rateHover() const { return m_rateHover; }
    // The bar of an attempt in the current geometry (empty when its lane is filtered out).
    QRectF attemptRect(size_t call, size_t attempt, const QRectF &rect) const;
    // Content y of a call's lane, or -1 when filtered out.
    double laneY(size_t call) const;

    void setHover(std::optional<std::pair<size_t, size_t>> attempt) { m_zoom->setHover(attempt); }
    void setSelection(std::optional<std::pair<size_t, size_t>> attempt) { m_zoom->setSelection(attempt); }
    // The time span being rubber-banded, drawn over the lanes.
    void setRubberBand(std::optional<std::pair<qint64, qint64>> span) { m_zoom->setRubberBand(span); }

    // What the last applied batch changed (TimelineStore::apply's StoreChanges, or the same gathered from the
    // model's row signals), so the next paint updates its caches from those calls instead of all of them.
    // previousGeneration is the store's generation before the batch. Without it, caches are rebuilt.
    void noteChanges(std::uint64_t previousGeneration, const StoreChanges &changes)
    {
        m_index.noteChanges(previousGeneration, changes);
    }
    // Retention evicting calls (TimelineModel::aboutToEvictCalls / callsEvicted): prepareEviction() while the
    // store still holds them brings the caches up to date; applyEviction() after drops the evicted calls from
    // them and moves the rest up, instead of rebuilding from every call.
    void prepareEviction(const std::vector<size_t> &evicted) const { m_index.prepareEviction(evicted); }
    void applyEviction(const std::vector<size_t> &evicted);

    static QColor statusColor(const Attempt &a);

    // The whole trace (or [range]) at the given width, height as needed; the CLI's --png and exports use
    // this. scale multiplies every pixel (2 for a high-DPI or print copy) without changing the layout.
    // (timelineexport.cpp)
    static QImage renderImage(const TimelineStore &store, int width, const Options &options,
                              qreal scale = 1.0,
                              std::optional<std::pair<qint64, qint64>> range = std::nullopt);
    // The same picture as SVG (QSvgGenerator), for write-ups that need vector graphics.
    static bool renderSvg(const TimelineStore &store, int width, const Options &options,
                          const QString &fileName,
                          std::optional<std::pair<qint64, qint64>> range = std::nullopt);
    // The same into an open device, for a writer that reports its own errors.
    static bool renderSvg(const TimelineStore &store, int width, const Options &options, QIODevice *device,
                          std::optional<std::pair<qint64, qint64>> range = std::nullopt);

    static constexpr int kLabelWidth = 230;
    static constexpr int kRulerHeight = 30;
    static constexpr int kTitleHeight = 30;
    static constexpr int kCallHeaderHeight = 24;
    static constexpr int kAttemptHeight = 34;
    static constexpr int kCallSpacing = 10;
    static constexpr int kBandHeight = 28;
    // Workshop mode's scale: the smallest lane text (11 px) reads 24 px on a projector.
    static constexpr double kWorkshopScale = 2.2;
    // The label column a drag may choose, at scale 1.
    static constexpr int kMinLabelWidth = 120;
    static constexpr int kMaxLabelWidth = 600;

private:
    Hit hitRow(const QPointF &pos, const PaintContext &ctx, const LaneBlock &block, double blockTop) const;
    bool hasPolicyBand() const;
    // How many connection lanes the budget and the metrics allow (setConnectionLaneBudget).
    size_t maxConnectionLanes() const;
    // Exports: the legend's room from a first paint of the whole picture at this width (timelineexport.cpp).
    void fitLegendToPicture(int width);
    bool hasOverview() const;
    bool hasRates() const;
    void paintLanes(QPainter *p, const PaintContext &ctx);

    const TimelineStore *m_store;
    std::unique_ptr<ZoomControl> m_ownZoom; // when no ZoomControl was given
    ZoomControl *m_zoom;
    Options m_options;
    LaneMetrics m_metrics;
    // Caches that follow the store; refreshed from const accessors (layout, fullRange, hit-testing).
    mutable TimelineIndex m_index;
    mutable LegendPass m_legend;
    RulerPass m_ruler;
    CallLanePass m_callLanes;
    std::uint32_t m_drawn = 0; // what the last paint() drew
    // An export's legend takes the room of exactly what its picture draws (measured by a first paint).
    std::optional<std::uint32_t> m_legendRoomFor;
    bool m_legendFromPaints = false;
    mutable std::uint32_t m_legendSeen = 0;
    mutable std::uint64_t m_legendSeenSince = 0; // the store's clearedAt() m_legendSeen follows
    bool m_legendSpare = false;
    std::uint32_t legendRoom() const;
    int m_legendBudget = 0;
    int m_connectionLaneBudget = 0;
    // legendScale()'s answer, keyed on (width, metrics' scale, legend use, budget): it measures text.
    mutable std::optional<std::tuple<double, double, std::uint32_t, int>> m_legendScaleFor;
    mutable double m_legendScale = 1.0;
    std::optional<std::pair<qint64, qint64>> m_rateHover;

    // The widget's image of paint(), keyed on everything paint() reads.
    struct ImageKey
    {
        std::uint64_t generation;
        qint64 start, end;
        int scroll;
        QSize size;
        qreal dpr;
        bool operator==(const ImageKey &) const = default;
    };
    std::optional<ImageKey> m_imageKey;
    QImage m_image;
};

} // namespace rpcscope
