#include "comparehistogram.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

namespace rpcscope {

namespace {

// "10 µs", "2 ms", "500 ms", "1 s": an edge of the 1-2-5 series.
QString edgeText(std::int64_t ns)
{
    if (ns >= 1'000'000'000) return QStringLiteral("%1 s").arg(double(ns) / 1e9);
    if (ns >= 1'000'000) return QStringLiteral("%1 ms").arg(double(ns) / 1e6);
    return QStringLiteral("%1 µs").arg(double(ns) / 1e3);
}

std::uint64_t sum(const CompareHistogram::Counts &c)
{
    std::uint64_t n = 0;
    for (std::uint64_t v : c)
        n += v;
    return n;
}

} // namespace

CompareHistogram::CompareHistogram(QWidget *parent) : QWidget(parent)
{
    setToolTip(QStringLiteral("Latency histogram of the selected row: A and B overlaid on logarithmic "
                              "buckets (1-2-5 series); the height is the count of each run"));
}

QColor CompareHistogram::colourA(bool dark)
{
    return dark ? QColor(0x8a, 0xb4, 0xf8) : QColor(0x1a, 0x73, 0xe8);
}

QColor CompareHistogram::colourB(bool dark)
{
    return dark ? QColor(0xfc, 0xad, 0x70) : QColor(0xe8, 0x71, 0x0a);
}

void CompareHistogram::setSeries(const QString &title, const Counts &a, const QString &labelA,
                                 const Counts &b, const QString &labelB)
{
    m_title = title;
    m_a = a;
    m_b = b;
    m_labelA = labelA;
    m_labelB = labelB;
    update();
}

void CompareHistogram::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QPalette &pal = palette();
    const bool dark = pal.color(QPalette::Window).lightness() < 128;
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetrics fm(font());
    const int line = fm.height();
    const QColor text = pal.color(QPalette::Text);
    QColor faint = text;
    faint.setAlphaF(0.35f);

    // Title, then the legend with each run's count.
    p.setPen(text);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(8, 4, width() - 16, line), Qt::AlignLeft | Qt::AlignVCenter, m_title);
    p.setFont(font());
    int x = 8;
    const int legendY = 4 + line + 2;
    for (int side = 0; side < 2; ++side) {
        const QColor c = side == 0 ? colourA(dark) : colourB(dark);
        const QString label =
            QStringLiteral("%1  %2 (%3)")
                .arg(side == 0 ? QStringLiteral("A") : QStringLiteral("B"), side == 0 ? m_labelA : m_labelB)
                .arg(sum(side == 0 ? m_a : m_b));
        p.fillRect(QRect(x, legendY + line / 4, line / 2 + 2, line / 2 + 2), c);
        x += line / 2 + 8;
        const QString shown = fm.elidedText(label, Qt::ElideMiddle, std::max(40, width() / 2 - 30));
        p.drawText(QRect(x, legendY, width() - x, line), Qt::AlignLeft | Qt::AlignVCenter, shown);
        x += fm.horizontalAdvance(shown) + 16;
    }

    // The buckets either run uses, plus one on each side so a single bucket is not drawn edge to edge.
    int first = LatencyBuckets::kCount, last = -1;
    for (int i = 0; i < LatencyBuckets::kCount; ++i)
        if (m_a[size_t(i)] || m_b[size_t(i)]) first = std::min(first, i), last = std::max(last, i);
    const QRect plot(8 + fm.horizontalAdvance(QStringLiteral("00000")), legendY + line + 8,
                     width() - 16 - fm.horizontalAdvance(QStringLiteral("00000")),
                     height() - (legendY + line + 8) - line - 10);
    if (plot.height() < 20 || plot.width() < 40) return;
    p.setPen(faint);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    if (last < 0) {
        p.setPen(text);
        p.drawText(plot, Qt::AlignCenter, QStringLiteral("no ended calls to measure"));
        return;
    }
    first = std::max(0, first - 1);
    last = std::min(LatencyBuckets::kCount - 1, last + 1);
    std::uint64_t top = 1;
    for (int i = first; i <= last; ++i)
        top = std::max({top, m_a[size_t(i)], m_b[size_t(i)]});
    const int n = last - first + 1;
    const double slot = double(plot.width()) / n;
    // The count axis: 0 and the top.
    p.setPen(text);
    p.drawText(QRect(0, plot.top() - line / 2, plot.left() - 4, line), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(top));
    p.drawText(QRect(0, plot.bottom() - line / 2, plot.left() - 4, line), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("0"));
    p.setPen(faint);
    p.drawLine(plot.left(), plot.top(), plot.right(), plot.top());
    const int labelEvery =
        std::max(1, int(std::ceil(fm.horizontalAdvance(QStringLiteral("500 ms  ")) / slot)));
    for (int i = first; i <= last; ++i) {
        const double x0 = plot.left() + slot * (i - first);
        const double barW = std::max(1.0, slot * 0.4);
        for (int side = 0; side < 2; ++side) {
            const std::uint64_t v = side == 0 ? m_a[size_t(i)] : m_b[size_t(i)];
            if (!v) continue;
            const double h = double(plot.height()) * double(v) / double(top);
            const QRectF bar(x0 + slot * 0.1 + side * barW, plot.bottom() - h, barW, h);
            p.fillRect(bar, side == 0 ? colourA(dark) : colourB(dark));
        }
        // Each bucket's lower edge under its left side.
        if ((i - first) % labelEvery == 0 && i > 0) {
            p.setPen(text);
            const QString label = edgeText(LatencyBuckets::edgeNs(i - 1));
            // The last label ends at the widget's edge rather than past it.
            const double lx = std::min(x0 + 2, double(width() - fm.horizontalAdvance(label) - 4));
            p.drawText(QPointF(lx, plot.bottom() + 2 + fm.ascent()), label);
            p.setPen(faint);
            p.drawLine(QPointF(x0, plot.bottom()), QPointF(x0, plot.bottom() + 3));
        }
    }
}

} // namespace rpcscope
