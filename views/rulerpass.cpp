#include "rulerpass.h"

#include "breakerband.h"
#include "markerspass.h"
#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"
#include "timelinestyle.h"

#include <QDateTime>
#include <QFontMetricsF>
#include <QPainter>
#include <QStringList>
#include <algorithm>
#include <array>

namespace rpcscope {

QString RulerPass::tickLabel(const PaintContext &ctx, qint64 t, qint64 step)
{
    if (ctx.options.wallClock && ctx.store.originWallNs() != 0) {
        const qint64 wallNs = ctx.store.originWallNs() + (t - ctx.store.originNs());
        const QDateTime dt = QDateTime::fromMSecsSinceEpoch(wallNs / 1'000'000, Qt::UTC);
        if (step >= 1'000'000'000) return dt.toString(QStringLiteral("HH:mm:ss"));
        if (step >= 1'000'000) return dt.toString(QStringLiteral("HH:mm:ss.zzz"));
        return dt.toString(QStringLiteral("ss.zzz")) +
               QStringLiteral("%1").arg((wallNs / 1000) % 1000, 3, 10, QLatin1Char('0'));
    }
    return formatTick(t - ctx.store.originNs(), step);
}

QRectF RulerPass::captionRect(const PaintContext &ctx)
{
    const double top = ctx.rect.top() + (ctx.options.title.isEmpty() ? 0 : ctx.metrics.titleHeight);
    return QRectF(ctx.rect.left() + 10, top, ctx.metrics.labelWidth - 20, ctx.metrics.rulerHeight);
}

QString RulerPass::caption(const PaintContext &ctx)
{
    const QStringList wordings =
        wallClockRuler(ctx)
            ? QStringList{QStringLiteral("wall clock (UTC)"), QStringLiteral("UTC")}
            : QStringList{QStringLiteral("time since capture start"), QStringLiteral("since capture start"),
                          QStringLiteral("since start")};
    const QFontMetricsF fm(ctx.font(12));
    const double room = captionRect(ctx).width();
    for (const QString &text : wordings)
        if (fm.horizontalAdvance(text) <= room) return text;
    return fm.elidedText(wordings.back(), Qt::ElideRight, room);
}

RulerPass::TitleLine RulerPass::titleLine(const PaintContext &ctx)
{
    const QRectF &rect = ctx.rect;
    const LaneMetrics &m = ctx.metrics;
    const QRectF band(rect.left() + 10, rect.top(), std::max(0.0, rect.width() - 20), m.titleHeight);
    const QFontMetricsF titleFm(ctx.font(16, true)), rangeFm(ctx.font(12));
    TitleLine line;
    line.title = titleFm.elidedText(ctx.options.title, Qt::ElideRight, band.width());
    const double titleWidth = titleFm.horizontalAdvance(line.title);
    line.titleRect = QRectF(band.left(), band.top(), titleWidth, band.height());
    const QString span = QStringLiteral("%1 – %2 from capture start")
                             .arg(formatDuration(ctx.startNs() - ctx.store.originNs()),
                                  formatDuration(ctx.endNs() - ctx.store.originNs()));
    QString range = span;
    if (ctx.store.originWallNs() != 0)
        range += QStringLiteral(" (%1 UTC)")
                     .arg(QDateTime::fromMSecsSinceEpoch(
                              (ctx.store.originWallNs() + ctx.startNs() - ctx.store.originNs()) / 1'000'000,
                              Qt::UTC)
                              .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz")));
    const double room = band.width() - titleWidth - 16 * m.scale; // a gap after the title
    if (rangeFm.horizontalAdvance(range) > room) range = span;
    if (rangeFm.horizontalAdvance(range) > room) range = rangeFm.elidedText(span, Qt::ElideRight, room);
    // Less than a few characters of it says nothing: then the title stands alone.
    if (range.size() < 8) range.clear();
    if (!range.isEmpty()) {
        const double w = rangeFm.horizontalAdvance(range);
        line.range = range;
        line.rangeRect = QRectF(band.right() - w - 1, band.top(), w + 1, band.height());
    }
    return line;
}

std::vector<RulerPass::TickLabel> RulerPass::tickLabels(const PaintContext &ctx, double rulerTop)
{
    const qint64 step = rulerStepNs(ctx);
    const double right = ctx.rect.right();
    const QFontMetricsF fm(ctx.font(12));
    const double height = ctx.metrics.rulerHeight - 6;
    std::vector<TickLabel> out;
    double taken = -1e9; // where the last label's text ends, and a gap after it
    for (const qint64 t : rulerTicks(ctx, step)) {
        const double x = ctx.axis.timeToX(t);
        QString text = tickLabel(ctx, t, step);
        const double w = fm.horizontalAdvance(text) + 1;
        // A label that would run off the right edge ends at its tick instead.
        const double left = x + 3 + w > right ? x - 3 - w : x + 3;
        if (left < taken) continue;
        out.push_back({t, std::move(text), QRectF(left, rulerTop, w, height)});
        taken = left + w + 8 * ctx.metrics.scale;
    }
    return out;
}

void RulerPass::paint(QPainter *p, const PaintContext &ctx)
{
    const QRectF &rect = ctx.rect;
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    double top = rect.top();
    if (!ctx.options.title.isEmpty()) {
        p->fillRect(QRectF(rect.left(), top, rect.width(), m.titleHeight), th.background);
        const TitleLine line = titleLine(ctx);
        p->setPen(th.text);
        p->setFont(ctx.font(16, true));
        p->drawText(line.titleRect, Qt::AlignVCenter | Qt::AlignLeft, line.title);
        p->setFont(ctx.font(12));
        p->setPen(th.muted);
        if (!line.range.isEmpty()) p->drawText(line.rangeRect, Qt::AlignVCenter | Qt::AlignRight, line.range);
        top += m.titleHeight;
    }
    const QRectF ruler(rect.left(), top, rect.width(), m.rulerHeight);
    p->fillRect(ruler, th.headerBand);
    p->setPen(th.grid.darker(115));
    p->drawLine(QPointF(ruler.left(), ruler.bottom()), QPointF(ruler.right(), ruler.bottom()));
    p->setFont(ctx.font(12));

    const qint64 step = rulerStepNs(ctx);
    const std::vector<qint64> ticks = rulerTicks(ctx, step);
    const double right = rect.right();
    if (ticks.empty() || ax.timeToX(ticks.front()) - ax.left > 0.4 * (right - ax.left)) {
        // A range narrower than a step or two (large type on a narrow window, a wide wall-clock label) still
        // says where it starts: as the title's range does ("3.60 ms", not a step's rounding "4 ms", which
        // would read as a tick), or to a tenth of a step on a wall clock.
        p->setPen(th.text);
        p->drawText(QRectF(ax.left + 3, ruler.top(), 200 * m.scale, ruler.height() - 6),
                    Qt::AlignLeft | Qt::AlignBottom,
                    wallClockRuler(ctx) ? tickLabel(ctx, ctx.startNs(), std::max<qint64>(step / 10, 1))
                                        : formatDuration(ctx.startNs() - ctx.store.originNs()));
    }
    p->setPen(th.grid.darker(130));
    for (const qint64 t : ticks) {
        const double x = ax.timeToX(t);
        p->drawLine(QPointF(x, ruler.bottom() - 8), QPointF(x, ruler.bottom()));
    }
    p->setPen(th.text);
    for (const TickLabel &l : tickLabels(ctx, ruler.top()))
        p->drawText(l.rect, Qt::AlignLeft | Qt::AlignBottom, l.text);
    // Where retention cut: everything before it was evicted (pinned calls excepted).
    if (ctx.store.evictedCalls() > 0) {
        const double x = ax.timeToX(ctx.store.retentionCutNs());
        if (x >= ax.left) {
            p->fillRect(QRectF(ax.left, ruler.top(), std::min(x, right) - ax.left, ruler.height() - 1),
                        QColor(128, 128, 128, 70));
            p->setPen(QPen(th.deadline, 2 * m.scale));
            if (x <= right) p->drawLine(QPointF(x, ruler.top()), QPointF(x, ruler.bottom()));
        }
        const QString cut =
            QStringLiteral("◀ retention: %1 older calls evicted").arg(ctx.store.evictedCalls());
        p->setPen(th.deadline);
        p->setFont(ctx.font(11, true));
        const double at = std::clamp(x + 4, ax.left + 4, right - 320 * m.scale);
        p->drawText(QRectF(at, ruler.top(), 320 * m.scale, ruler.height() / 2),
                    Qt::AlignLeft | Qt::AlignVCenter, cut);
        p->setFont(ctx.font(12));
    }
    p->fillRect(QRectF(ruler.left(), ruler.top(), m.labelWidth, ruler.height() - 1), th.headerBand);
    p->setPen(th.muted);
    p->drawText(captionRect(ctx), Qt::AlignVCenter | Qt::AlignLeft, caption(ctx));
    double y = ruler.bottom() + 1;
    if (ctx.policyBand) {
        paintPolicyBand(p, ctx, QRectF(rect.left(), y, rect.width(), m.bandHeight - 2));
        y += m.bandHeight;
    }
    if (ctx.rates) {
        const int h = RateStripPass::height(ctx.rateScale);
        m_rates.paint(p, ctx, QRectF(rect.left(), y, rect.width(), h), ctx.rateScale);
        y += h;
    }
    if (ctx.overview) paintOverview(p, ctx, QRectF(rect.left(), y, rect.width(), m.overviewHeight - 1));
}

// The breaker's state over time as coloured spans (each at least BreakerBand::minWidth() wide) with a mark
// at every transition and each state's name where it fits, a red tick for every call that failed fast (those
// never reach the wire, so they have no lane), and policy markers of calls without a lane.
void RulerPass::paintPolicyBand(QPainter *p, const PaintContext &ctx, const QRectF &band)
{
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const double s = ctx.metrics.scale;
    p->fillRect(band, th.background);
    p->setFont(ctx.font(12, true));
    p->setPen(th.text);
    p->drawText(QRectF(band.left() + 10, band.top(), ctx.metrics.labelWidth - 14, band.height()),
                Qt::AlignVCenter | Qt::AlignLeft,
                ctx.index.hasBreaker() ? QStringLiteral("circuit breaker")
                                       : QStringLiteral("client policies"));
    auto color = [&](const QString &state) {
        switch (BreakerBand::legendUse(state)) {
        case kUseBreakerOpen:
            return th.breakerOpen;
        case kUseBreakerHalfOpen:
            return th.breakerHalfOpen;
        default:
            return th.breakerClosed;
        }
    };
    const double right = band.right();
    const BreakerBand states = BreakerBand::build(ctx, right);
    const double inset = 3 * s;
    // Widened states over the others, so a probe's half-open is never covered by the state after it.
    for (const bool widened : {false, true})
        for (const BreakerBand::Segment &seg : states.segments)
            if (seg.widened == widened) {
                p->fillRect(QRectF(seg.x1, band.top() + inset, seg.x2 - seg.x1, band.height() - 2 * inset),
                            color(seg.state));
                ctx.mark(BreakerBand::legendUse(seg.state));
            }
    // Names: inside a state where they fit, else just right of a narrow state on a tag of its colour where
    // that leaves the next state room for its own name. Scaled up (workshop mode), a name that does not fit
    // in the band's type steps down towards the normal one before it goes without: a name over the wrong
    // state, or one that takes the next state's place, would tell the audience the wrong story.
    const int sizes = s > 1 ? 3 : 1;
    const std::array<QFont, 3> fonts{ctx.font(11), PaintContext::scaledFont(11, (1 + s) / 2),
                                     PaintContext::scaledFont(11, 1)};
    const std::array<QFontMetricsF, 3> metrics{QFontMetricsF(fonts[0]), QFontMetricsF(fonts[1]),
                                               QFontMetricsF(fonts[2])};
    auto width = [&](const QString &text, int size) { return metrics[size_t(size)].horizontalAdvance(text); };
    double lastTextRight = -1e9;
    for (size_t i = 0; i < states.segments.size(); ++i) {
        const BreakerBand::Segment &seg = states.segments[i];
        const BreakerBand::Segment *next = i + 1 < states.segments.size() ? &states.segments[i + 1] : nullptr;
        double x = -1, tw = 0;
        int size = 0;
        for (int k = 0; k < sizes && x < 0; ++k) {
            tw = width(seg.state, k);
            const double inside = std::max(seg.x1 + 4, lastTextRight);
            if (inside + tw + 4 <= seg.x2) x = inside, size = k;
        }
        for (int k = 0; k < sizes && x < 0; ++k) {
            tw = width(seg.state, k);
            const double tag = seg.x2 + 3, end = tag + tw + 6;
            if (tag < lastTextRight || tag + tw >= right) continue;
            // A widened state is drawn over its neighbours: the tag stops before it. A wide one keeps room
            // for its name in the smallest type, unless that did not fit it anyway.
            const double nextName = next ? width(next->state, sizes - 1) : 0;
            const bool leavesRoom =
                !next ||
                (next->widened ? next->x1 > tag + tw
                               : end + nextName + 4 <= next->x2 ||
                                     std::max(next->x1 + 4, lastTextRight) + nextName + 4 > next->x2);
            if (leavesRoom) x = tag, size = k;
        }
        // At the view's right edge (a breaker that opened as the run ended), left of the state instead, over
        // the end of the one before where its name left room.
        const BreakerBand::Segment *prev = i > 0 ? &states.segments[i - 1] : nullptr;
        for (int k = 0; k < sizes && x < 0 && seg.x2 + 3 + width(seg.state, sizes - 1) >= right; ++k) {
            tw = width(seg.state, k);
            const double tag = seg.x1 - 3 - tw;
            if (tag - 2 >= std::max(lastTextRight, ax.left) &&
                (!prev || !prev->widened || prev->x2 + 2 < tag))
                x = tag, size = k;
        }
        if (x < 0) continue;
        p->setFont(fonts[size_t(size)]);
        const QRectF box(x, band.top() + inset, tw + 2, band.height() - 2 * inset);
        // Outside its state, on a tag of its state's colour.
        if (x >= seg.x2 || x + tw <= seg.x1) {
            p->setPen(color(seg.state).darker(130));
            p->setBrush(color(seg.state));
            p->drawRect(box.adjusted(-2, 2, 2, -2));
            p->setBrush(Qt::NoBrush);
        }
        p->setPen(th.text);
        p->drawText(box, Qt::AlignVCenter | Qt::AlignLeft, seg.state);
        lastTextRight = x + tw + 6;
    }
    // A mark at every transition, in the strips above and below the states, so a state shorter than a pixel
    // still shows that something happened there.
    if (!states.transitions.empty()) {
        p->setPen(QPen(th.text, std::max(1.0, 1.5 * s)));
        for (const BreakerBand::Transition &t : states.transitions) {
            const double x = std::round(t.x);
            p->drawLine(QPointF(x, band.top()), QPointF(x, band.top() + inset + 3 * s));
            p->drawLine(QPointF(x, band.bottom() - inset - 3 * s), QPointF(x, band.bottom()));
        }
        ctx.mark(kUseTransition);
    }
    p->setPen(QPen(th.deadline, 2 * s));
    for (const LabEventRecord *fastFail : ctx.index.fastFails()) {
        const LabEventRecord &e = *fastFail;
        const double x = ax.timeToX(e.tNs);
        if (x >= ax.left && x <= right) {
            p->drawLine(QPointF(x, band.bottom() - 9 * s), QPointF(x, band.bottom() - 1));
            ctx.mark(kUseFastFail);
        }
    }
    MarkersPass::paintBand(p, ctx, band);
}

// Every attempt of the trace as attempts in flight per pixel column, stacked by status: the shape of a
// 100,000-call capture at one glance, where the lanes show only the calls in view.
void RulerPass::paintOverview(QPainter *p, const PaintContext &ctx, const QRectF &band)
{
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    p->fillRect(band, th.background);
    const int width = std::max(1, int(band.right() - ax.left));
    const OverviewKey key{ctx.store.generation(), ctx.startNs(), ctx.endNs(), width};
    if (m_overviewKey != key) {
        // Difference arrays per colour group: +1 where an attempt starts, -1 after it ends, then a prefix
        // sum.
        std::vector<std::array<int, 6>> diff(size_t(width) + 1, std::array<int, 6>{});
        for (const TimelineIndex::Span &s : ctx.index.spans()) {
            if (s.end < ctx.startNs() || s.start > ctx.endNs()) continue;
            const int c1 = std::clamp(int((double(s.start - ctx.startNs())) / ax.nsPerPx), 0, width - 1);
            const int c2 = std::clamp(int((double(s.end - ctx.startNs())) / ax.nsPerPx), c1, width - 1);
            ++diff[size_t(c1)][s.group];
            --diff[size_t(c2) + 1][s.group];
        }
        m_overviewCounts.assign(size_t(width), std::array<int, 6>{});
        std::array<int, 6> run{};
        for (int x = 0; x < width; ++x) {
            for (int g = 0; g < 6; ++g)
                run[size_t(g)] += diff[size_t(x)][size_t(g)];
            m_overviewCounts[size_t(x)] = run;
        }
        m_overviewKey = key;
    }
    int peak = 1;
    for (const auto &c : m_overviewCounts) {
        int sum = 0;
        for (int v : c)
            sum += v;
        peak = std::max(peak, sum);
    }
    const double h = band.height() - 4;
    const double base = band.bottom() - 1;
    RunMerger runs;
    // Failures stacked lowest, on the baseline, so a burst of errors shows even under heavy OK traffic.
    static constexpr int kStackOrder[6] = {3, 2, 1, 4, 5, 0};
    for (int x = 0; x < int(m_overviewCounts.size()); ++x) {
        double y = base;
        for (int g : kStackOrder) {
            const int n = m_overviewCounts[size_t(x)][size_t(g)];
            if (n == 0) continue;
            ctx.mark(g);
            // At least 1 px for any non-zero count: a single failure among thousands must not vanish.
            const double seg = std::max(1.0, std::round(h * n / peak));
            runs.add(g, ax.left + x, ax.left + x + 1, y - seg, seg);
            y -= seg;
        }
    }
    runs.fill(p, kGroupColors);
    p->setPen(th.grid.darker(115));
    p->drawLine(QPointF(band.left(), band.bottom()), QPointF(band.right(), band.bottom()));
    // The labels fit the label column (a wide one in workshop mode is still narrower than the text): the
    // shorter wording first, then elided, never cut off mid-word.
    const double room = ctx.metrics.labelWidth - 14;
    auto fitted = [room](const QFont &font, std::initializer_list<QString> wordings) {
        const QFontMetricsF fm(font);
        for (const QString &w : wordings)
            if (fm.horizontalAdvance(w) <= room) return w;
        return fm.elidedText(*std::prev(wordings.end()), Qt::ElideRight, room);
    };
    p->setFont(ctx.font(12, true));
    p->setPen(th.text);
    p->drawText(QRectF(band.left() + 10, band.top(), room, band.height() / 2),
                Qt::AlignBottom | Qt::AlignLeft,
                fitted(p->font(), {QStringLiteral("all %1 calls").arg(ctx.store.calls().size())}));
    p->setFont(ctx.font(11));
    p->setPen(th.muted);
    p->drawText(QRectF(band.left() + 10, band.top() + band.height() / 2, room, band.height() / 2),
                Qt::AlignTop | Qt::AlignLeft,
                fitted(p->font(), {QStringLiteral("attempts in flight (peak %1)").arg(peak),
                                   QStringLiteral("in flight (peak %1)").arg(peak)}));
}

} // namespace rpcscope
