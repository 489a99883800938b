#include "ratestrippass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"

#include <QFontMetricsF>
#include <QLocale>
#include <QPainter>
#include <QPolygonF>
#include <algorithm>

namespace rpcscope {

namespace {
// A bucket is at least this many pixels wide (at scale 1): narrower, one call in a bucket reads as a spike.
constexpr double kMinBucketPx = 8;

QColor seriesColor(const TimelineTheme &th, RateStripPass::Series s)
{
    switch (s) {
    case RateStripPass::Calls:
        return th.rateCalls;
    case RateStripPass::Failures:
        return th.rateFailures;
    case RateStripPass::Retries:
        return th.rateRetries;
    default:
        return th.rateInFlight;
    }
}
} // namespace

namespace {
// A row holds its 11 px name (at scale 1) with a little room; the strip adds 2 px above and below.
constexpr int kRowHeight = 14;
constexpr int kPadding = 4;
} // namespace

int RateStripPass::height(double scale)
{
    return int(std::lround((kSeries * kRowHeight + kPadding) * scale));
}

qint64 RateStripPass::bucketWidth(const PaintContext &ctx)
{
    return RateBins::bucketWidth(ctx.axis.nsPerPx * kMinBucketPx * ctx.metrics.scale);
}

double RateStripPass::value(const RateBins::Bucket &b, Series s)
{
    switch (s) {
    case Calls:
        return b.perSecond(b.calls);
    case Failures:
        return b.perSecond(b.failures);
    case Retries:
        return b.perSecond(b.retries);
    default:
        return b.inFlight;
    }
}

QString RateStripPass::name(Series s)
{
    switch (s) {
    case Calls:
        return QStringLiteral("calls/s");
    case Failures:
        return QStringLiteral("failures/s");
    case Retries:
        return QStringLiteral("retries/s");
    default:
        return QStringLiteral("avg in flight");
    }
}

QString RateStripPass::formatValue(double v)
{
    const QLocale c = QLocale::c();
    if (v >= 10'000) return QString::number(v / 1000, 'f', v >= 100'000 ? 0 : 1) + QLatin1Char('k');
    if (v >= 100 || v == 0) {
        QLocale grouped(QLocale::English);
        return grouped.toString(qlonglong(v + 0.5));
    }
    // Two significant digits below 10: an average of 0.012 calls in flight is not "0.0".
    return v >= 10 ? c.toString(v, 'f', 0) : QString::number(v, 'g', 2);
}

std::optional<RateBins::Bucket> RateStripPass::bucketAt(const PaintContext &ctx, double x)
{
    if (x < ctx.axis.left) return std::nullopt;
    const qint64 t = ctx.axis.xToTime(x);
    const auto one = ctx.index.rates().buckets(t, t + 1, bucketWidth(ctx));
    if (one.empty()) return std::nullopt;
    return one.front();
}

QString RateStripPass::toolTip(const PaintContext &ctx, double x)
{
    if (x < ctx.axis.left)
        return QStringLiteral(
            "Rates over the visible range, each row scaled to its own peak:\n"
            "calls/s: calls started\n"
            "failures/s: attempts that ended without OK, the server's own and those injected by a fault rule "
            "alike, at their end (a call's last one when the client got the failure); a refusal the client "
            "replayed transparently is not counted\n"
            "retries/s: attempts after the first; transparent retries (a stream the server never saw) are "
            "not counted\n"
            "avg in flight: calls started and not yet ended, on average over each span\n"
            "Calls evicted by retention stay counted. Drag across the strip to zoom to a range.");
    const auto b = bucketAt(ctx, x);
    if (!b) return {};
    const qint64 origin = ctx.store.originNs();
    auto line = [&](const QString &what, qint64 n) {
        return QStringLiteral("%1: %2 (%3/s)").arg(what).arg(n).arg(formatValue(b->perSecond(n)));
    };
    QString text = QStringLiteral("%1 – %2 (%3)\n")
                       .arg(formatDuration(b->startNs - origin),
                            formatDuration(b->startNs + b->widthNs - origin), formatDuration(b->widthNs));
    text += line(QStringLiteral("calls started"), b->calls) + QLatin1Char('\n');
    // Failed attempts are what the row draws; the calls among them that failed for the client are what a
    // retry did not hide.
    text += line(QStringLiteral("failed attempts"), b->failures) +
            QStringLiteral(", calls failed: %1").arg(b->failedCalls) + QLatin1Char('\n');
    text += line(QStringLiteral("retries"), b->retries);
    if (b->transparent > 0) text += QStringLiteral(" + %1 transparent, not counted").arg(b->transparent);
    text += QStringLiteral("\nin flight: %1 on average").arg(formatValue(b->inFlight));
    if (b->startNs + b->widthNs > ctx.store.latestNs())
        text += QStringLiteral("\n(the capture ends %1 into this span)")
                    .arg(formatDuration(ctx.store.latestNs() - b->startNs));
    text += QStringLiteral("\nDrag across the strip to zoom to a range");
    return text;
}

void RateStripPass::paintHover(QPainter *p, const PaintContext &ctx, const QRectF &strip,
                               std::pair<qint64, qint64> span)
{
    const TimeAxis &ax = ctx.axis;
    const double x1 = std::max(ax.left, ax.timeToX(span.first));
    const double x2 = std::min(strip.right(), ax.timeToX(span.second));
    if (x2 <= x1) return;
    p->save();
    p->fillRect(QRectF(x1, strip.top(), x2 - x1, strip.height()), ctx.theme.hover);
    p->setPen(QPen(ctx.theme.selection, 1));
    p->drawRect(QRectF(x1, strip.top(), std::max(1.0, x2 - x1 - 1), strip.height() - 1));
    p->restore();
}

void RateStripPass::paint(QPainter *p, const PaintContext &ctx, const QRectF &strip, double scale)
{
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    p->fillRect(strip, th.background);
    const qint64 latest = ctx.store.latestNs();
    const qint64 width = bucketWidth(ctx);
    // Nothing after the latest event: the future has no rates yet.
    const qint64 to = std::min(ctx.endNs(), latest + 1);
    const Key key{ctx.store.generation(), ctx.startNs(), to, width};
    if (m_key != key) {
        m_buckets = to > ctx.startNs() ? ctx.index.rates().buckets(ctx.startNs(), to, width)
                                       : std::vector<RateBins::Bucket>{};
        m_key = key;
    }
    const double right = strip.right();
    const double latestX = std::min(right, ax.timeToX(latest));
    // The value at the right edge: the last whole bucket (the one the capture ends in has not finished).
    const RateBins::Bucket *edge = nullptr;
    for (auto it = m_buckets.rbegin(); it != m_buckets.rend() && !edge; ++it)
        if (it->startNs + it->widthNs <= latest || it + 1 == m_buckets.rend()) edge = &*it;
    // "now" while calls are still in flight and the view reaches the latest event; a finished capture's last
    // bucket is no "now", so only the peak is given.
    const bool now = ctx.endNs() >= latest && (ctx.index.legendUse() & (1u << 5));

    const double rowH = (strip.height() - kPadding * scale) / int(kSeries);
    const double top = strip.top() + kPadding / 2 * scale;
    paintGrid(p, ctx, top, top + int(kSeries) * rowH);
    const QFont nameFont = PaintContext::scaledFont(11, scale, true),
                valueFont = PaintContext::scaledFont(11, scale);
    for (int si = 0; si < kSeries; ++si) {
        const Series s = Series(si);
        const QColor color = seriesColor(th, s);
        const QRectF row(strip.left(), top + si * rowH, strip.width(), rowH);
        const double base = row.bottom() - 1;
        const double room = rowH - 3 * scale;
        double peak = 0;
        for (const RateBins::Bucket &b : m_buckets)
            peak = std::max(peak, value(b, s));
        if (peak > 0) {
            // A step area, each bucket at least 1 px tall when it counted anything.
            QPolygonF area;
            QPolygonF edgeLine;
            for (const RateBins::Bucket &b : m_buckets) {
                const double x1 = std::clamp(ax.timeToX(b.startNs), ax.left, latestX);
                const double x2 = std::clamp(ax.timeToX(b.startNs + b.widthNs), ax.left, latestX);
                if (x2 <= x1) continue;
                const double v = value(b, s);
                const double h = v > 0 ? std::max(1.0, room * v / peak) : 0;
                if (area.isEmpty()) area << QPointF(x1, base);
                area << QPointF(x1, base - h) << QPointF(x2, base - h);
                edgeLine << QPointF(x1, base - h) << QPointF(x2, base - h);
            }
            if (!area.isEmpty()) {
                area << QPointF(area.back().x(), base);
                QColor fill = color;
                fill.setAlpha(th.background.lightness() > 128 ? 110 : 120);
                p->setPen(Qt::NoPen);
                p->setBrush(fill);
                p->drawPolygon(area);
                p->setBrush(Qt::NoBrush);
                p->setPen(QPen(color, std::max(1.0, 1.5 * scale)));
                p->drawPolyline(edgeLine);
            }
        }
        // The label column: the row's name in its colour, its value now (while calls are in flight) and its
        // peak in view.
        const QRectF label(strip.left(), row.top(), m.labelWidth, rowH);
        p->fillRect(label, th.background);
        const QRectF text = label.adjusted(10, 0, -6, 0);
        p->setFont(nameFont);
        p->setPen(color);
        p->drawText(text, Qt::AlignVCenter | Qt::AlignLeft, name(s));
        const double nameRight = text.left() + QFontMetricsF(nameFont).horizontalAdvance(name(s)) + 8;
        QString values = QStringLiteral("max %1").arg(formatValue(peak));
        if (edge && now) values = QStringLiteral("%1 now · ").arg(formatValue(value(*edge, s))) + values;
        p->setFont(valueFont);
        const QFontMetricsF fm(valueFont);
        if (fm.horizontalAdvance(values) > text.right() - nameRight)
            values = QStringLiteral("max %1").arg(formatValue(peak));
        p->setPen(th.text);
        p->drawText(text, Qt::AlignVCenter | Qt::AlignRight, values);
        p->setPen(th.grid);
        p->drawLine(QPointF(strip.left(), row.bottom()), QPointF(right, row.bottom()));
    }
    // Set apart from the policy band above it and the lanes or the overview below.
    p->setPen(th.grid.darker(115));
    p->drawLine(QPointF(strip.left(), strip.top()), QPointF(right, strip.top()));
    p->drawLine(QPointF(strip.left(), strip.bottom() - 1), QPointF(right, strip.bottom() - 1));
    p->drawLine(QPointF(ax.left - 1, strip.top()), QPointF(ax.left - 1, strip.bottom()));
}

} // namespace rpcscope
