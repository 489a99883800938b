#include "latencyhistogram.h"

#include "timeformat.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <vector>

namespace rpcscope {

namespace {

// Fewer buckets than this are widened (to the right, then the left), so that one bucket is not a wall.
constexpr int kMinShown = 6;

// A bucket edge as it reads on the axis: "10 µs", "200 ms", "5 s" (edges are round: 1-2-5).
QString edgeLabel(std::int64_t ns)
{
    if (ns >= 1'000'000'000) return QStringLiteral("%1 s").arg(ns / 1'000'000'000);
    if (ns >= 1'000'000) return QStringLiteral("%1 ms").arg(ns / 1'000'000);
    if (ns >= 1'000) return QStringLiteral("%1 µs").arg(ns / 1'000);
    return QStringLiteral("%1 ns").arg(ns);
}

QString rangeLabel(int bucket)
{
    const auto [lo, hi] = LatencyBuckets::rangeNs(bucket);
    if (bucket >= LatencyBuckets::kEdges) return QStringLiteral("≥ %1").arg(edgeLabel(lo));
    if (bucket == 0) return QStringLiteral("< %1").arg(edgeLabel(hi));
    return QStringLiteral("%1 – %2").arg(edgeLabel(lo), edgeLabel(hi));
}

} // namespace

LatencyHistogram::Series LatencyHistogram::fromRecorder(const LatencyRecorder &recorder, const QString &label,
                                                        const QColor &colour)
{
    Series s;
    s.label = label;
    s.colour = colour;
    s.counts = recorder.buckets();
    s.p50Ns = recorder.percentile(0.5);
    s.p99Ns = recorder.percentile(0.99);
    return s;
}

LatencyHistogram::LatencyHistogram(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(false);
    setAttribute(Qt::WA_OpaquePaintEvent);
    m_emptyText = QStringLiteral("No ended calls yet");
    setToolTip(QStringLiteral("Latency in logarithmic buckets; click a bucket to show only those calls"));
}

void LatencyHistogram::setSeries(std::vector<Series> series)
{
    m_series = std::move(series);
    update();
}

void LatencyHistogram::setEmptyText(const QString &text)
{
    m_emptyText = text;
    update();
}

void LatencyHistogram::setSelectedBucket(int bucket)
{
    if (bucket == m_selected) return;
    m_selected = bucket;
    update();
}

std::pair<int, int> LatencyHistogram::shownBuckets() const
{
    int first = LatencyBuckets::kCount, last = -1;
    for (const Series &s : m_series)
        for (int b = 0; b < LatencyBuckets::kCount; ++b)
            if (s.counts[size_t(b)]) {
                first = std::min(first, b);
                last = std::max(last, b);
            }
    if (last < 0) return {1, 0};
    while (last - first + 1 < kMinShown && (last + 1 < LatencyBuckets::kCount || first > 0)) {
        if (last + 1 < LatencyBuckets::kCount) ++last;
        if (last - first + 1 < kMinShown && first > 0) --first;
    }
    return {first, last};
}

QRectF LatencyHistogram::plotRect() const
{
    const QFontMetricsF fm(font());
    std::uint64_t top = 1;
    for (const Series &s : m_series)
        for (std::uint64_t c : s.counts)
            top = std::max(top, c);
    const double left = fm.horizontalAdvance(QString::number(top)) + fm.height() * 0.6;
    const double right = fm.height() * 0.8;
    // The legend (several series) and the p50/p99 labels above; counts above the bars; edges below.
    // Two lines of p50/p99 labels per series (p99 goes up one when the two would overlap).
    const double above =
        fm.height() * ((m_series.size() > 1 ? 1.4 : 0.2) + 2.0 * double(m_series.size()) + 1.2);
    const double below = fm.height() * 1.6;
    return QRectF(left, above, std::max(10.0, width() - left - right),
                  std::max(10.0, height() - above - below));
}

QRectF LatencyHistogram::bucketRect(int bucket) const
{
    const auto [first, last] = shownBuckets();
    if (bucket < first || bucket > last) return {};
    const QRectF plot = plotRect();
    const double w = plot.width() / (last - first + 1);
    return QRectF(plot.left() + (bucket - first) * w, plot.top(), w, plot.height());
}

double LatencyHistogram::xOf(std::int64_t ns) const
{
    const int b = LatencyBuckets::bucketOf(ns);
    const QRectF r = bucketRect(b);
    if (r.isEmpty()) return -1;
    const auto [lo, hi] = LatencyBuckets::rangeNs(b);
    double frac = 0.5;
    if (b == 0)
        frac = double(ns) / double(hi);
    else if (b < LatencyBuckets::kEdges && ns > lo)
        frac = std::log(double(ns) / double(lo)) / std::log(double(hi) / double(lo));
    else if (b < LatencyBuckets::kEdges)
        frac = 0;
    return r.left() + std::clamp(frac, 0.0, 1.0) * r.width();
}

int LatencyHistogram::bucketAt(const QPoint &pos) const
{
    const auto [first, last] = shownBuckets();
    const QRectF plot = plotRect();
    // The labels below a bucket belong to it too.
    if (first > last || pos.x() < plot.left() || pos.x() >= plot.right() || pos.y() < 0) return -1;
    const double w = plot.width() / (last - first + 1);
    return std::clamp(first + int((pos.x() - plot.left()) / w), first, last);
}

QSize LatencyHistogram::sizeHint() const
{
    const QFontMetrics fm(font());
    return {fm.height() * 26, fm.height() * 12};
}

QSize LatencyHistogram::minimumSizeHint() const
{
    const QFontMetrics fm(font());
    return {fm.height() * 8, fm.height() * 4};
}

void LatencyHistogram::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    const QPalette &pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    QColor muted = text;
    muted.setAlphaF(0.6);
    QColor grid = text;
    grid.setAlphaF(0.15);
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetricsF fm(font());
    const auto [first, last] = shownBuckets();
    if (first > last) {
        p.setPen(muted);
        p.drawText(rect(), Qt::AlignCenter, m_emptyText);
        return;
    }
    const QRectF plot = plotRect();
    std::uint64_t top = 1;
    for (const Series &s : m_series)
        for (int b = first; b <= last; ++b)
            top = std::max(top, s.counts[size_t(b)]);

    // The selected bucket behind everything.
    if (m_selected >= first && m_selected <= last) {
        QColor sel = pal.color(QPalette::Highlight);
        sel.setAlphaF(0.22);
        const QRectF r = bucketRect(m_selected);
        p.fillRect(
            QRectF(r.left(), plot.top() - fm.height() * 1.2, r.width(), plot.height() + fm.height() * 1.2),
            sel);
    }

    // Horizontal grid at the top count and half of it, with the counts on the left.
    p.setPen(grid);
    for (double f : {0.5, 1.0})
        p.drawLine(QPointF(plot.left(), plot.bottom() - f * plot.height()),
                   QPointF(plot.right(), plot.bottom() - f * plot.height()));
    p.setPen(muted);
    const double labelRight = plot.left() - fm.height() * 0.3;
    p.drawText(QRectF(0, plot.top() - fm.height() / 2, labelRight, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, QString::number(top));
    if (top >= 2)
        p.drawText(QRectF(0, plot.center().y() - fm.height() / 2, labelRight, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, QString::number(double(top) / 2, 'g', 3));

    // Bars, a sub-bar per series, each count above its bar where it fits (drawn last, over the marks).
    std::vector<std::pair<QRectF, QString>> counts;
    const double bucketW = plot.width() / (last - first + 1);
    const double pad = std::min(bucketW * 0.12, fm.height() * 0.5);
    const double barW = (bucketW - 2 * pad) / double(std::max<size_t>(1, m_series.size()));
    for (size_t si = 0; si < m_series.size(); ++si) {
        const Series &s = m_series[si];
        for (int b = first; b <= last; ++b) {
            const std::uint64_t c = s.counts[size_t(b)];
            if (!c) continue;
            const double h = std::max(1.0, plot.height() * double(c) / double(top));
            const QRectF bar(plot.left() + (b - first) * bucketW + pad + double(si) * barW, plot.bottom() - h,
                             barW, h);
            p.fillRect(bar, s.colour);
            const QString n = QString::number(c);
            const double w = fm.horizontalAdvance(n);
            if (w <= barW + pad)
                counts.push_back(
                    {QRectF(bar.center().x() - w / 2 - 1, bar.top() - fm.height(), w + 2, fm.height()), n});
        }
    }
    p.setPen(muted);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());

    // Edges below: every one where they fit, else the decades (10 µs, 100 µs, 1 ms, ...).
    double widest = 0;
    for (int b = first + 1; b <= last; ++b)
        widest = std::max(widest, fm.horizontalAdvance(edgeLabel(LatencyBuckets::edgeNs(b - 1))));
    const bool all = widest + fm.height() * 0.5 <= bucketW;
    const bool decades = !all && widest + fm.height() * 0.5 <= 3 * bucketW;
    for (int b = first + 1; b <= last; ++b) {
        const int edge = b - 1;
        if (!all && !(decades && edge % 3 == 0) && !(!decades && edge % 6 == 0)) continue;
        const double x = plot.left() + (b - first) * bucketW;
        p.setPen(muted);
        p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + fm.height() * 0.25));
        const QString label = edgeLabel(LatencyBuckets::edgeNs(edge));
        const double w = fm.horizontalAdvance(label) + 4;
        p.drawText(QRectF(x - w / 2, plot.bottom() + fm.height() * 0.25, w, fm.height()), Qt::AlignCenter,
                   label);
    }

    // p50 and p99: a dashed line each up to its label above the counts; p99's label a line higher when it
    // would overlap p50's, and each series two lines above the one before. The labels are placed first, so a
    // line that passes another's label (p99's, just right of p50's) goes around it instead of through its
    // figures.
    struct Mark
    {
        QRectF box;
        double x = 0;
        QString label;
        QColor colour;
    };
    std::vector<Mark> marks;
    for (size_t si = 0; si < m_series.size(); ++si) {
        const Series &s = m_series[si];
        // One series: the text's colour reads on its bar and on the background, light or dark.
        const QColor mark = m_series.size() == 1 ? text : s.colour;
        QRectF previous;
        int line = 0;
        for (const auto &[name, v] :
             {std::pair{QStringLiteral("p50"), s.p50Ns}, std::pair{QStringLiteral("p99"), s.p99Ns}}) {
            if (!v) continue;
            const double x = xOf(*v);
            if (x < 0) continue;
            const QString label = QStringLiteral("%1 %2").arg(name, formatDuration(*v));
            const double w = fm.horizontalAdvance(label) + 6;
            const double lx = std::clamp(x - w / 2, 0.0, std::max(0.0, width() - w));
            const auto top = [&](int l) {
                return plot.top() - fm.height() * (1.2 + 2.0 * double(m_series.size() - 1 - si) + 1.0 + l);
            };
            QRectF box(lx, top(line), w, fm.height());
            if (!previous.isNull() && box.intersects(previous)) box.moveTop(top(++line));
            previous = box;
            marks.push_back({box, x, label, mark});
        }
    }
    std::vector<const Mark *> downwards;
    for (const Mark &m : marks)
        downwards.push_back(&m);
    std::sort(downwards.begin(), downwards.end(),
              [](const Mark *a, const Mark *b) { return a->box.top() < b->box.top(); });
    for (const Mark &m : marks) {
        p.setPen(QPen(m.colour, std::max(1.0, fm.height() / 10), Qt::DashLine));
        double from = m.box.bottom();
        for (const Mark *other : downwards) {
            if (other == &m || other->box.bottom() <= from || m.x < other->box.left() ||
                m.x > other->box.right())
                continue;
            if (other->box.top() > from) p.drawLine(QPointF(m.x, from), QPointF(m.x, other->box.top()));
            from = std::max(from, other->box.bottom());
        }
        if (from < plot.bottom()) p.drawLine(QPointF(m.x, from), QPointF(m.x, plot.bottom()));
    }
    p.setPen(text);
    for (const Mark &m : marks)
        p.drawText(m.box, Qt::AlignCenter, m.label);

    for (const auto &[r, n] : counts) {
        p.fillRect(r, pal.color(QPalette::Base));
        p.setPen(text);
        p.drawText(r, Qt::AlignCenter, n);
    }

    // A legend when several series share the axes.
    if (m_series.size() > 1) {
        double x = plot.left();
        const double y = fm.height() * 0.2;
        for (const Series &s : m_series) {
            p.fillRect(QRectF(x, y + fm.height() * 0.2, fm.height() * 0.6, fm.height() * 0.6), s.colour);
            x += fm.height() * 0.8;
            p.setPen(text);
            p.drawText(QPointF(x, y + fm.ascent()), s.label);
            x += fm.horizontalAdvance(s.label) + fm.height();
        }
    }
}

void LatencyHistogram::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
    const int b = bucketAt(event->position().toPoint());
    if (b >= 0) emit bucketClicked(b);
}

bool LatencyHistogram::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const int b = bucketAt(help->pos());
        if (b < 0) {
            QToolTip::showText(help->globalPos(), toolTip(), this);
            return true;
        }
        QStringList lines{rangeLabel(b)};
        for (const Series &s : m_series)
            lines << QStringLiteral("%1: %2").arg(s.label).arg(s.counts[size_t(b)]);
        lines << QStringLiteral("Click to show only these calls");
        QToolTip::showText(help->globalPos(), lines.join(QLatin1Char('\n')), this);
        return true;
    }
    return QWidget::event(event);
}

} // namespace rpcscope
