#pragma once

#include "timeaxis.h"
#include "timelinestore.h"

#include <QColor>
#include <QImage>
#include <QRectF>
#include <QString>

#include <string>
#include <unordered_map>
#include <vector>

class QPainter;

namespace rpcscope {

// Paints the swimlanes of a TimelineStore onto any QPainter: the widget, PNG export and the CLI share this one
// code path. It reads the store only.
class TimelinePainter
{
public:
    struct Options
    {
        QString title;       // drawn above the ruler when set (exports)
        bool legend = false; // colour legend below the lanes (exports)
    };

    // Regions painted in the last paint(), for hit-testing and tests.
    struct GapLabel
    {
        QRectF rect;
        qint64 gapNs = 0;
        size_t call = 0;
        size_t attempt = 0; // the attempt the gap leads to
    };

    explicit TimelinePainter(const TimelineStore *store) : m_store(store) {}

    void setOptions(const Options &o) { m_options = o; }
    void setRange(qint64 startNs, qint64 endNs);
    qint64 rangeStart() const { return m_startNs; }
    qint64 rangeEnd() const { return m_endNs; }
    void setScrollY(int y) { m_scrollY = y; }

    // The whole trace, with a margin, in absolute steady ns.
    std::pair<qint64, qint64> fullRange() const;
    int contentHeight() const;
    int labelWidth() const { return kLabelWidth; }
    TimeAxis axis(const QRectF &rect) const;

    void paint(QPainter *p, const QRectF &rect);
    const std::vector<GapLabel> &gapLabels() const { return m_gapLabels; }

    static QColor statusColor(const Attempt &a);

    // The whole trace at the given width, height as needed; the CLI's --png and exports use this.
    static QImage renderImage(const TimelineStore &store, int width, const Options &options, qreal dpr = 1.0);
    // The same picture as SVG (QSvgGenerator), for write-ups that need vector graphics.
    static bool renderSvg(const TimelineStore &store, int width, const Options &options, const QString &fileName);

    static constexpr int kLabelWidth = 230;
    static constexpr int kRulerHeight = 30;
    static constexpr int kTitleHeight = 30;
    static constexpr int kLegendHeight = 34;
    static constexpr int kCallHeaderHeight = 24;
    static constexpr int kAttemptHeight = 34;
    static constexpr int kCallSpacing = 10;
    static constexpr int kBandHeight = 28;

private:
    int headerHeight() const
    {
        return kRulerHeight + (m_options.title.isEmpty() ? 0 : kTitleHeight) + (hasBreakerBand() ? kBandHeight : 0);
    }
    bool hasBreakerBand() const;
    // Lab events by what they mean to the picture, rebuilt only when the store changes, so paint() never
    // scans every lab event for every lane.
    void refreshLabIndex() const;
    void paintBreakerBand(QPainter *p, const QRectF &band, const TimeAxis &ax);
    void paintRuler(QPainter *p, const QRectF &rect, const TimeAxis &ax);
    void paintCall(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t index, double top);
    void paintLegend(QPainter *p, const QRectF &rect);

    const TimelineStore *m_store;
    Options m_options;
    qint64 m_startNs = 0;
    qint64 m_endNs = 1'000'000'000;
    int m_scrollY = 0;
    std::vector<GapLabel> m_gapLabels;
    mutable std::uint64_t m_labIndexGeneration = ~std::uint64_t(0);
    mutable bool m_hasBreakerBand = false;
    mutable std::unordered_map<std::string, const LabEventRecord *> m_suppressedByCall;
};

QString formatDuration(qint64 ns);
QString formatTick(qint64 ns, qint64 stepNs);

} // namespace rpcscope
