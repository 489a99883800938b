#include "grouplanepass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timelinestyle.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStringList>

namespace rpcscope {

void GroupLanePass::paint(QPainter *p, const PaintContext &ctx, size_t group, double top)
{
    const QRectF &rect = ctx.rect;
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    const TimelineLayout::Group &g = ctx.layout.groups()[group];
    const double h = m.aggregateRow;
    const double right = rect.right();
    p->fillRect(QRectF(rect.left(), top, rect.width(), h), th.headerBand);
    paintGrid(p, ctx, top, top + h);

    // The title over a stacked bar of outcomes, in the label column.
    const double half = h / 2;
    p->setPen(th.text);
    p->setFont(ctx.font(13, true));
    const QFontMetricsF titleFm(p->font());
    const double columnWidth = m.labelWidth - 20;
    p->drawText(QRectF(rect.left() + 10, top, columnWidth, half + 2), Qt::AlignVCenter | Qt::AlignLeft,
                titleFm.elidedText(QStringLiteral("▸ ") + g.title, Qt::ElideMiddle, columnWidth));
    const double stackTop = top + half + 3 * m.scale, stackH = half - 7 * m.scale;
    double x = rect.left() + 10;
    for (size_t k = 0; k < g.outcomes.size() && g.calls; ++k) {
        const double w = columnWidth * double(g.outcomes[k]) / double(g.calls);
        if (g.outcomes[k]) p->fillRect(QRectF(x, stackTop, std::max(w, 2.0), stackH), kGroupColors[k]);
        x += w;
    }

    // The counts in words, then when the calls ran: each call's span, merged per pixel column and outcome.
    QStringList parts{QStringLiteral("%1 call%2").arg(g.calls).arg(g.calls == 1 ? "" : "s")};
    for (const auto &[name, count] : g.statuses)
        parts << QStringLiteral("%1 %2").arg(count).arg(name);
    parts << QStringLiteral("click to show the calls");
    p->setFont(ctx.font(12));
    p->setPen(th.text);
    p->drawText(QRectF(ax.left + 4, top, right - ax.left - 8, half + 2), Qt::AlignVCenter | Qt::AlignLeft,
                parts.join(QStringLiteral(" · ")));
    p->save();
    p->setClipRect(QRectF(ax.left, top, right - ax.left, h), Qt::IntersectClip);
    // By start: everything after the view's end is skipped at once; a call within the pixel column its
    // colour already covers adds nothing.
    RunMerger runs;
    double covered[6] = {-1e9, -1e9, -1e9, -1e9, -1e9, -1e9};
    const qint64 viewEnd = ax.xToTime(right);
    for (const TimelineLayout::Group::Span &sp : g.spans) {
        if (sp.start > viewEnd) break;
        const double x1 = std::max(ax.timeToX(sp.start), ax.left);
        const double x2 = std::min(std::max(ax.timeToX(sp.end), x1 + 2), right);
        if (x2 < ax.left || x2 <= covered[sp.outcome]) continue;
        covered[sp.outcome] = x2;
        runs.add(sp.outcome, x1, x2, stackTop, stackH);
    }
    runs.fill(p, kGroupColors);
    p->restore();
}

} // namespace rpcscope
