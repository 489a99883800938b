#pragma once

#include "ratebins.h"

#include <QRectF>
#include <QString>
#include <QtGlobal>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

class QPainter;

namespace rpcscope {

struct PaintContext;

// The rates strip in the header: calls started, failures, retries (a second each) and calls in flight over
// the visible range, on the lanes' time axis. A row per series, each scaled to its own peak in view, so a
// few failures among thousands of calls still show; the label column names each row with its peak in view
// and, while calls are in flight and the view reaches the latest event, its value now. The counts come from
// the index's RateBins (kept incrementally), summed into buckets of 1, 2 or 5 times a power of ten ms, at
// least a few pixels wide.
class RateStripPass
{
public:
    enum Series
    {
        Calls,
        Failures,
        Retries,
        InFlight,
        kSeries
    };

    // Its height at a scale (the metrics' scale, or less in a short view: TimelinePainter::rateStripScale).
    static int height(double scale);
    // The bucket width of this picture.
    static qint64 bucketWidth(const PaintContext &ctx);
    // A bucket's value of one series: per second, or the average in flight.
    static double value(const RateBins::Bucket &b, Series s);
    // "calls/s", "failures/s", "retries/s", "avg in flight".
    static QString name(Series s);
    // 0.012, 3, 2.5, 12, 1,250, 12.3k.
    static QString formatValue(double v);
    // The bucket under x in this picture; nullopt left of the time axis.
    static std::optional<RateBins::Bucket> bucketAt(const PaintContext &ctx, double x);
    // The tooltip over the strip at x: the bucket's span and its four values; over the label column, what
    // each row counts.
    static QString toolTip(const PaintContext &ctx, double x);

    // Paints the strip into `strip` (height(scale) tall) with text and marks at `scale`.
    void paint(QPainter *p, const PaintContext &ctx, const QRectF &strip, double scale);
    void invalidate() { m_key.reset(); }
    // The widget's overlay: the hovered bucket [from, to) outlined across the strip.
    static void paintHover(QPainter *p, const PaintContext &ctx, const QRectF &strip,
                           std::pair<qint64, qint64> span);

private:
    struct Key
    {
        std::uint64_t generation;
        qint64 start, end, width;
        bool operator==(const Key &) const = default;
    };
    std::optional<Key> m_key;
    std::vector<RateBins::Bucket> m_buckets;
};

} // namespace rpcscope
