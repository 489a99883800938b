#pragma once

#include "timeaxis.h"
#include "timelinelayout.h"
#include "timelinestore.h"
#include "timelinetheme.h"

#include <QColor>
#include <QImage>
#include <QRectF>
#include <QString>
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

class QPainter;

namespace rpcscope {

// Paints the swimlanes of a TimelineStore onto any QPainter: the widget, PNG/SVG export and the CLI share
// this one code path. It reads the store only.
//
// Cost model (tests/bench/viewbench.cpp measures it at 100,000 calls): everything that depends on the whole
// store (lane layout, the overview histogram's input, the trace's extent, per-connection marker lists) is
// cached and keyed on the store's generation; a paint touches only the lanes in view (binary search over the
// layout) and, for the overview, one pass over a flat array of attempt spans per change of range or width.
// The widget keeps the painted lanes as an image too, so hover and selection only blit and draw an overlay.
class TimelinePainter
{
public:
    struct Options
    {
        QString title;       // drawn above the ruler when set (exports)
        bool legend = false; // colour legend below the lanes (exports)
        bool dark = false;
        bool workshop = false;  // large text and thick bars, for a projector
        bool wallClock = false; // ruler in wall-clock time (when the capture has a wall-clock origin)
        LaneGrouping grouping = LaneGrouping::None;
        bool connectionLanes = true;
        LaneFilter filter{};
    };

    // Regions painted in the last paint(), for hit-testing and tests.
    struct GapLabel
    {
        QRectF rect;
        qint64 gapNs = 0;
        size_t call = 0;
        size_t attempt = 0; // the attempt the gap leads to
    };

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
            LabEvent
        };
        Kind kind = None;
        size_t call = 0;                          // Attempt, CallHeader
        size_t attempt = 0;                       // Attempt
        size_t connection = 0;                    // Connection: index into store.connections()
        const LabEventRecord *labEvent = nullptr; // LabEvent: valid until the store changes
        QRectF rect;                              // the bar (Attempt), the lane header, the marker
    };

    explicit TimelinePainter(const TimelineStore *store) : m_store(store) {}

    void setOptions(const Options &o);
    const Options &options() const { return m_options; }
    void setRange(qint64 startNs, qint64 endNs);
    qint64 rangeStart() const { return m_startNs; }
    qint64 rangeEnd() const { return m_endNs; }
    void setScrollY(int y) { m_scrollY = y; }
    int scrollY() const { return m_scrollY; }
    // Drops every cache; the widget calls it when the model is reset (a cleared store can reuse its memory).
    void invalidate();

    // The whole trace, with a margin, in absolute steady ns.
    std::pair<qint64, qint64> fullRange() const;
    // Everything stacked at this width (the legend flows into as many rows as the width needs).
    int contentHeight(double width = 1400) const;
    int legendHeight(double width) const;
    int labelWidth() const { return m_metrics.labelWidth; }
    // Height of the fixed part above the lanes (title, ruler, policy band, overview).
    int headerHeight() const;
    const LaneMetrics &metrics() const { return m_metrics; }
    const TimelineTheme &theme() const;
    TimeAxis axis(const QRectF &rect) const;
    const TimelineLayout &layout() const;

    void paint(QPainter *p, const QRectF &rect);
    // The widget's path: the lanes from an image cached on (range, size, scroll, data, options), then the
    // hover and selection overlay. Identical pixels to paint() plus the overlay.
    void paintCached(QPainter *p, const QRectF &rect, qreal dpr);
    const std::vector<GapLabel> &gapLabels() const { return m_gapLabels; }

    Hit hitTest(const QPointF &pos, const QRectF &rect) const;
    // The bar of an attempt in the current geometry (empty when its lane is filtered out).
    QRectF attemptRect(size_t call, size_t attempt, const QRectF &rect) const;
    // Content y of a call's lane, or -1 when filtered out.
    double laneY(size_t call) const;

    void setHover(std::optional<std::pair<size_t, size_t>> attempt) { m_hover = attempt; }
    void setSelection(std::optional<std::pair<size_t, size_t>> attempt) { m_selection = attempt; }
    // The time span being rubber-banded, drawn over the lanes.
    void setRubberBand(std::optional<std::pair<qint64, qint64>> span) { m_rubberBand = span; }

    // What the last applied batch changed (TimelineStore::apply's StoreChanges, or the same gathered from the
    // model's row signals), so the next paint updates its caches from those calls instead of all of them.
    // previousGeneration is the store's generation before the batch. Without it, caches are rebuilt.
    void noteChanges(std::uint64_t previousGeneration, const StoreChanges &changes);
    // Retention evicting calls (TimelineModel::aboutToEvictCalls / callsEvicted): prepareEviction() while the
    // store still holds them brings the caches up to date; applyEviction() after drops the evicted calls from
    // them and moves the rest up, instead of rebuilding from every call.
    void prepareEviction() const;
    void applyEviction(const std::vector<size_t> &evicted);

    static QColor statusColor(const Attempt &a);
    // A new stream repeating a request the transport refused (REFUSED_STREAM, or a stream GOAWAY cut) without
    // a higher grpc-previous-rpc-attempts: gRPC retries those transparently, outside the retry policy.

    // The whole trace (or [range]) at the given width, height as needed; the CLI's --png and exports use
    // this. scale multiplies every pixel (2 for a high-DPI or print copy) without changing the layout.
    static QImage renderImage(const TimelineStore &store, int width, const Options &options,
                              qreal scale = 1.0,
                              std::optional<std::pair<qint64, qint64>> range = std::nullopt);
    // The same picture as SVG (QSvgGenerator), for write-ups that need vector graphics.
    static bool renderSvg(const TimelineStore &store, int width, const Options &options,
                          const QString &fileName,
                          std::optional<std::pair<qint64, qint64>> range = std::nullopt);

    static constexpr int kLabelWidth = 230;
    static constexpr int kRulerHeight = 30;
    static constexpr int kTitleHeight = 30;
    static constexpr int kCallHeaderHeight = 24;
    static constexpr int kAttemptHeight = 34;
    static constexpr int kCallSpacing = 10;
    static constexpr int kBandHeight = 28;

private:
    // Flat copy of every attempt's span for the overview: 24 bytes each instead of walking ~200-byte
    // Attempts spread over 100,000 call vectors.
    struct Span
    {
        qint64 start = 0;
        qint64 end = 0;
        std::uint8_t group = 0;
    };
    struct PendingChanges
    {
        std::uint64_t previous = 0;
        std::uint64_t generation = 0;
        StoreChanges changes;
    };
    struct ConnIndex
    {
        std::vector<std::uint32_t> marks; // frame indices: SETTINGS (not ACK), RST_STREAM, GOAWAY
        std::vector<std::uint32_t> pings;
        std::vector<std::uint32_t> stalls;
    };

    bool hasPolicyBand() const;
    bool hasOverview() const;
    void refreshCaches() const;
    void compactSpans() const;
    // A frame the connection lanes mark: SETTINGS (not an ACK), RST_STREAM, GOAWAY.
    static bool isConnectionMark(const FrameRecord &f)
    {
        return (f.type == FrameSettings && !(f.flags & 0x1) /* ACK */) || f.type == FrameRstStream ||
               f.type == FrameGoaway;
    }
    void absorbCall(size_t call) const;
    void absorbAttempt(size_t call, size_t attempt) const;
    void refreshLayout() const;
    void paintPolicyBand(QPainter *p, const QRectF &band, const TimeAxis &ax);
    void paintOverview(QPainter *p, const QRectF &band, const TimeAxis &ax);
    void paintRuler(QPainter *p, const QRectF &rect, const TimeAxis &ax);
    void paintGroupHeader(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t group, double top);
    void paintConnection(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t conn, double top);
    void paintCall(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t index, double top);
    void paintPhases(QPainter *p, const Attempt &a, const QRectF &bar, const TimeAxis &ax);
    void paintLegend(QPainter *p, const QRectF &rect);
    // Each legend entry's x and row.
    std::vector<QPointF> legendLayout(double width, int *rows) const;
    bool legendShows(int use) const;
    void paintOverlay(QPainter *p, const QRectF &rect);
    void paintGrid(QPainter *p, const QRectF &rect, const TimeAxis &ax, double top, double bottom);
    double lanesTop(const QRectF &rect) const { return rect.top() + headerHeight(); }
    QFont font(double px, bool bold = false) const;
    QString tickLabel(qint64 t, qint64 step) const;

    const TimelineStore *m_store;
    Options m_options;
    LaneMetrics m_metrics;
    qint64 m_startNs = 0;
    qint64 m_endNs = 1'000'000'000;
    int m_scrollY = 0;
    std::vector<GapLabel> m_gapLabels;
    std::optional<std::pair<size_t, size_t>> m_hover, m_selection;
    std::optional<std::pair<qint64, qint64>> m_rubberBand;

    // Caches keyed on the store's generation (and, for the layout, the options that change it).
    mutable std::uint64_t m_cacheGeneration = ~std::uint64_t(0);
    mutable bool m_hasBreaker = false;
    mutable std::vector<const LabEventRecord *> m_bandMarkers; // lab events drawn on the policy band
    mutable std::unordered_map<std::string, std::vector<const LabEventRecord *>> m_labByCall;
    mutable std::pair<qint64, qint64> m_fullRange;
    mutable std::vector<Span> m_spans;
    // Where each call's spans are: its first attempts contiguous, attempts added later in m_extraSpans.
    mutable std::vector<std::uint32_t> m_callFirstSpan, m_callSpanCount;
    mutable std::unordered_map<std::uint64_t, std::uint32_t> m_extraSpans;
    mutable std::vector<std::pair<std::uint32_t, std::uint32_t>> m_openSpans; // (call, attempt) still open
    mutable qint64 m_dataLo = 0, m_dataHi = 0;
    mutable std::vector<qint64> m_deadlines; // sorted
    mutable std::uint32_t m_callUse = 0;
    mutable size_t m_labSeen = 0;
    mutable std::optional<PendingChanges> m_pending;
    // Evictions: spans of evicted calls stay in m_spans, emptied, until they are half of it.
    mutable size_t m_deadSpans = 0;
    mutable std::uint64_t m_evictFrom = ~std::uint64_t(0);   // the generation prepareEviction() saw
    mutable std::uint64_t m_spansCurrent = ~std::uint64_t(0); // generation whose spans applyEviction() made
    mutable std::optional<StoreChanges> m_layoutChanges;
    mutable std::unordered_map<std::uint32_t, ConnIndex> m_connIndex;
    mutable size_t m_framesIndexed = 0, m_pingsIndexed = 0, m_stallsIndexed = 0;
    mutable qint64 m_firstFrameNs = 0;
    mutable TimelineLayout m_layout;
    mutable std::uint64_t m_layoutGeneration = ~std::uint64_t(0);
    mutable bool m_layoutDirty = true;
    mutable std::tuple<double, double, std::uint32_t> m_legendHeightFor{-1, -1, 0}; // (width, scale, use)
    mutable std::uint32_t m_legendUse = 0;
    mutable int m_legendHeight = 0;

    // The overview's per-column counts, keyed on (generation, range, width).
    struct OverviewKey
    {
        std::uint64_t generation;
        qint64 start, end;
        int width;
        bool operator==(const OverviewKey &) const = default;
    };
    std::optional<OverviewKey> m_overviewKey;
    std::vector<std::array<int, 6>> m_overviewCounts;

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

QString formatDuration(qint64 ns);
QString formatTick(qint64 ns, qint64 stepNs);

} // namespace rpcscope
