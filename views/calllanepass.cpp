#include "calllanepass.h"

#include "clientoutcome.h"
#include "markerspass.h"
#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"
#include "timelinestyle.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace rpcscope {

namespace {
constexpr qint64 kGapSlackNs = 5'000'000;
// Frames are appended in arrival order; batches of different relays (a chain's hops) interleave, so the
// time index is only nearly sorted. Searching a margin either side of an attempt absorbs that.
constexpr qint64 kFrameSearchMarginNs = 50'000'000;
// An attempt whose bar spans a busy stream (a long server stream) stops collecting frames here: phases then
// come from the attempt's own timestamps.
constexpr size_t kMaxFramesScanned = 20'000;
constexpr double kMinLabelledGapPx = 8;

// Whether a gap misses its expected range: by more than kGapSlackNs against the call's
// own policy; against one given for it (GapEnvelopes), by the Policy check's tolerance, so that the
// timeline and the check agree.
bool gapOutside(qint64 gap, const std::optional<std::pair<std::int64_t, std::int64_t>> &expected, bool given)
{
    if (!expected) return false;
    if (given) return GapEnvelopes::outside(*expected, gap);
    return gap < expected->first - kGapSlackNs || gap > expected->second + kGapSlackNs;
}

// What a backoff gap's label says: the wait, and what the policy or the server asked for.
QString gapText(const Call &call, size_t k, qint64 gap, bool transparent,
                const std::optional<std::pair<std::int64_t, std::int64_t>> &expected, bool outside)
{
    QString text = QStringLiteral("backoff %1").arg(formatDuration(gap));
    if (transparent)
        text = QStringLiteral("transparent retry after %1").arg(formatDuration(gap));
    else if (call.attempts[k - 1].pushbackMs && *call.attempts[k - 1].pushbackMs >= 0)
        text = QStringLiteral("pushback %1 ms → waited %2")
                   .arg(*call.attempts[k - 1].pushbackMs)
                   .arg(formatDuration(gap));
    else if (expected && expected->first == expected->second)
        text += QStringLiteral(" (expected %1)").arg(formatDuration(expected->first));
    else if (expected)
        text += QStringLiteral(" (expected %1–%2)")
                    .arg(formatDuration(expected->first), formatDuration(expected->second));
    if (outside) text += QStringLiteral(" — outside");
    return text;
}

// The range the client's policy allows for a gap starting at gapStart, shaded behind a bar row (at least 3 px
// wide); the legend names it when it is on screen.
void shadeExpected(QPainter *p, const PaintContext &ctx, qint64 gapStart,
                   const std::pair<std::int64_t, std::int64_t> &expected, double barTop, double barH,
                   double right)
{
    const TimeAxis &ax = ctx.axis;
    const double e1 = ax.timeToX(gapStart + expected.first);
    const double e2 = std::max(ax.timeToX(gapStart + expected.second), e1 + 3);
    p->fillRect(QRectF(e1, barTop - 2, e2 - e1, barH + 4), ctx.theme.expectedRange);
    if (e2 > ax.left && e1 < right) ctx.mark(kUseExpected);
}

// One line of text vertically centred in [top, top + h], starting at x: drawText at a point takes Qt's fast
// path (no text layout per call), which matters at 40 rows and more a screen.
void textAt(QPainter *p, double x, double top, double h, const QFontMetricsF &fm, const QString &text)
{
    p->drawText(QPointF(x, top + (h - fm.height()) / 2 + fm.ascent()), text);
}

// The label column's name of a call: a star when pinned.
QString callName(const Call &call)
{
    QString name = QString::fromStdString(call.key);
    if (call.pinned) name = QStringLiteral("★ ") + name;
    return name;
}
} // namespace

// A lane's name in `width`: cut at its start, behind its marks ("▸ ", "★ "), since lanes share their
// beginnings (a scenario's name, a service's) and differ at their ends: "…chain-2>B", "…ttempts-4-2" say
// which lane it is, "deadlin…ain-2>B" and "max-…ts-4-2" did not.
QString CallLanePass::fittedName(const QFontMetricsF &fm, const QString &name, double width)
{
    if (fm.horizontalAdvance(name) <= width) return name;
    qsizetype marks = 0;
    for (const QString &mark : {QStringLiteral("▾ "), QStringLiteral("▸ "), QStringLiteral("★ ")})
        if (name.mid(marks).startsWith(mark)) marks += mark.size();
    const QString head = name.left(marks);
    return head + fm.elidedText(name.mid(marks), Qt::ElideLeft, width - fm.horizontalAdvance(head));
}

CallLanePass::RowLabel CallLanePass::rowLabel(const QFontMetricsF &nameFm, const QFontMetricsF &smallFm,
                                              const Call &call, double nameWidth, double scale)
{
    const size_t n = call.attempts.size();
    QString name = callName(call);
    if (n > 1) name = QStringLiteral("▸ ") + name;
    const double room = nameWidth - nameFm.horizontalAdvance(name) - 8;
    QString side = QString::fromStdString(call.method);
    side = side.mid(side.lastIndexOf(QLatin1Char('/')) + 1);
    // The attempt count is never cut (an elided "…tempts" hid the number): in words where they fit, else
    // as ×N, else not at all.
    if (n > 1) {
        const QString words = QStringLiteral("%1 attempts").arg(n);
        side = smallFm.horizontalAdvance(words) <= room ? words : QStringLiteral("×%1").arg(n);
    }
    const double sideFull = smallFm.horizontalAdvance(side);
    double sideWidth = std::min(sideFull, room);
    // Only where a few letters of it fit beside the whole name.
    bool showSide = sideWidth >= std::min(sideFull, 40 * scale);
    // The attempt count before the name's start, which lanes share ("▸ …storm-12 ×4"): a storm's lanes with
    // longer names lost their count in workshop type, beside lanes that kept theirs.
    if (n > 1 && !showSide && nameWidth - sideFull - 8 >= 40 * scale) {
        sideWidth = sideFull;
        showSide = true;
    }
    RowLabel label;
    if (showSide) {
        nameWidth -= sideWidth + 8;
        label.side = sideFull <= sideWidth ? side : smallFm.elidedText(side, Qt::ElideLeft, sideWidth);
    }
    label.name = fittedName(nameFm, name, nameWidth);
    return label;
}

void CallLanePass::paintPhases(QPainter *p, const PaintContext &ctx, const Attempt &a, const QRectF &bar)
{
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const auto &frames = ctx.store.frames();
    const qint64 end = a.endNs.value_or(ctx.store.latestNs());
    std::optional<qint64> reqEnd, respStart, respEnd, trailers;
    std::vector<std::pair<qint64, Direction>> ticks;
    auto it = std::partition_point(frames.begin(), frames.end(), [&](const FrameRecord &f) {
        return f.tNs < a.startNs - kFrameSearchMarginNs;
    });
    size_t scanned = 0;
    for (; it != frames.end() && it->tNs <= end + kFrameSearchMarginNs && scanned < kMaxFramesScanned;
         ++it, ++scanned) {
        if (it->connection != a.connection || it->stream != a.stream) continue;
        ticks.emplace_back(it->tNs, it->dir);
        if (it->dir == Direction::ClientToServer) {
            reqEnd = it->tNs;
        } else {
            if (!respStart) respStart = it->tNs;
            respEnd = it->tNs;
            if (it->type == FrameHeaders && (it->flags & FlagEndStream)) trailers = it->tNs;
        }
    }
    if (!respStart && a.responseHeadersNs) respStart = a.responseHeadersNs;
    // The strip along the bottom of the bar: request sent, server working, response, trailers.
    const double sh = std::max(3.0, bar.height() * 0.3);
    const double sy = bar.bottom() - sh;
    auto seg = [&](qint64 t1, qint64 t2, const QColor &c) {
        const double x1 = std::max(ax.timeToX(t1), bar.left());
        const double x2 = std::min(std::max(ax.timeToX(t2), x1 + 1), bar.right());
        if (x2 > x1) p->fillRect(QRectF(x1, sy, x2 - x1, sh), c);
    };
    const qint64 reqDone = reqEnd.value_or(a.startNs);
    ctx.mark(kUsePhases);
    seg(a.startNs, reqDone, th.phaseRequest);
    seg(reqDone, respStart.value_or(end), th.phaseWait);
    if (respStart) seg(*respStart, trailers.value_or(respEnd.value_or(end)), th.phaseResponse);
    if (trailers) {
        seg(*trailers, end, th.phaseTrailers);
        ctx.mark(kUseTrailers);
    }
    // Ticks for the frames themselves once there is room for them: requests above the bar, responses below.
    if (!ticks.empty() && bar.width() / double(ticks.size()) >= 3) {
        int last[2] = {-1, -1};
        p->setPen(QPen(th.frameTick, 1));
        ctx.mark(kUseFrameTicks);
        for (const auto &[t, dir] : ticks) {
            const int x = int(ax.timeToX(t));
            const int d = dir == Direction::ClientToServer ? 0 : 1;
            if (x == last[d] || x < bar.left() - 1 || x > bar.right() + 1) continue;
            last[d] = x;
            if (d == 0)
                p->drawLine(QPointF(x, bar.top() - 4 * ctx.metrics.scale), QPointF(x, bar.top() - 1));
            else
                p->drawLine(QPointF(x, bar.bottom() + 1), QPointF(x, bar.bottom() + 4 * ctx.metrics.scale));
        }
    }
}

void CallLanePass::paint(QPainter *p, const PaintContext &ctx, size_t index, double top)
{
    const QRectF &rect = ctx.rect;
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    if (ctx.layout.oneRow(index)) return paintRow(p, ctx, index, top);
    const Call &call = ctx.store.calls()[index];
    const double laneBottom = top + m.callLaneHeight(false, ctx.layout.laneRows(call));
    const double right = rect.right();
    paintGrid(p, ctx, top + m.callHeader, laneBottom);

    // Lane header: call id, method, outcome and attempt count.
    const QRectF header(rect.left(), top, rect.width(), m.callHeader);
    p->fillRect(header, th.headerBand);
    const Attempt *outcome = call.outcomeAttempt();
    // What the client got, beside the wire's status when the wire only implies it.
    const ClientOutcome client = clientOutcome(call, ctx.store);
    QString outcomeText = outcome ? statusText(*outcome) : QStringLiteral("in flight");
    if (client.implied())
        outcomeText += QStringLiteral(" → client: ") + QString::fromStdString(client.label());
    // A call made while serving another is indented under it, with a hook to show the nesting.
    const int depth = std::min(ctx.store.nestingDepth(index), 6);
    const double indent = depth * 14 * m.scale;
    if (depth > 0) {
        p->setPen(QPen(th.text, 1));
        const double x = header.left() + 4 + indent - 8 * m.scale;
        p->drawLine(QPointF(x, top + 2), QPointF(x, top + m.callHeader / 2));
        p->drawLine(QPointF(x, top + m.callHeader / 2), QPointF(x + 6 * m.scale, top + m.callHeader / 2));
    }
    p->setPen(th.text);
    p->setFont(ctx.font(13, true));
    QString name = callName(call);
    // Compact lanes: a call shown expanded although it fits one row folds back with a click.
    if (m.compact && ctx.options.filter.expanded.count(call.key)) name = QStringLiteral("▾ ") + name;
    p->drawText(QRectF(header.left() + 10 + indent, top, m.labelWidth - 14 - indent, m.callHeader),
                Qt::AlignVCenter | Qt::AlignLeft,
                fittedName(QFontMetricsF(p->font()), name, m.labelWidth - 14 - indent));
    QString summary = QStringLiteral("%1   →  %2 · %3 attempt%4")
                          .arg(QString::fromStdString(call.method), outcomeText)
                          .arg(call.attempts.size())
                          .arg(call.attempts.size() == 1 ? "" : "s");
    // A length of zero says nothing (an answer injected at once, stamped with the request's read): none.
    if (outcome && call.endNs() && *call.endNs() > call.startNs())
        summary += QStringLiteral(" · %1").arg(formatDuration(*call.endNs() - call.startNs()));
    if (call.inferred) summary += QStringLiteral(" · grouped by inference");
    // In a chain: which hop carried it and the budget it was given, against what its caller had left.
    QString chain;
    if (!call.hop.empty()) chain = hopText(call.hop);
    if (call.parentCall || call.budgetNs()) {
        if (const auto budget = call.budgetNs())
            chain += (chain.isEmpty() ? QString() : QStringLiteral(" · ")) +
                     QStringLiteral("budget %1").arg(formatDuration(*budget));
        else if (call.parentCall)
            chain += (chain.isEmpty() ? QString() : QStringLiteral(" · ")) + QStringLiteral("no deadline");
        if (call.parentBudgetNs)
            chain += QStringLiteral(" (caller had %1 left)").arg(formatDuration(*call.parentBudgetNs));
    }
    QString warning;
    if (call.deadlineReset)
        warning = QStringLiteral("⚠ deadline reset: the budget grew");
    else if (call.deadlineDropped)
        warning = QStringLiteral("⚠ deadline dropped by this hop");
    if (!chain.isEmpty() && (call.parentCall || !call.hop.empty())) summary += QStringLiteral(" · ") + chain;
    if (ctx.options.grouping == LaneGrouping::Chain && ctx.options.filter.collapsed.count(call.key))
        summary += QStringLiteral(" · ▸ nested calls folded (double-click)");
    const QFont small = ctx.font(12);
    const QFont barFont = ctx.font(11, true);
    const QFontMetricsF smallFm(small), barFm(barFont);
    const std::optional<std::int64_t> deadline = call.deadlineNs();
    // The deadline's label and its width, beside its line in the header (below).
    const QString deadlineText =
        deadline ? QStringLiteral("deadline +%1").arg(formatDuration(*deadline - call.startNs())) : QString();
    const double deadlineTw = deadline ? smallFm.horizontalAdvance(deadlineText) + 2 : 0;
    p->setFont(ctx.font(13));
    const QFontMetricsF summaryFm(p->font());
    // The deadline's line and label in view matter more than the summary's tail, which the edge would cut
    // anyway: the summary ends before the label (elided, while some eight characters of it are left), so the
    // label goes left of the line, where the story is ("the deadline simply cancels the call").
    if (deadline && warning.isEmpty()) {
        const double dx = ax.timeToX(*deadline);
        const double labelLeft = dx - 4 - deadlineTw;
        if (dx >= ax.left && dx <= right && labelLeft - ax.left - 16 >= 8 * summaryFm.averageCharWidth() &&
            ax.left + summaryFm.horizontalAdvance(summary) + 8 > labelLeft)
            summary = summaryFm.elidedText(summary, Qt::ElideRight, labelLeft - ax.left - 16);
        // A deadline beyond the view is an arrow at its edge (below): a summary that would run under it
        // ends, elided, before it.
        if (dx > right) {
            const double arrowLeft = right - 8 - (smallFm.horizontalAdvance(QStringLiteral("▶")) + 2);
            if (ax.left + summaryFm.horizontalAdvance(summary) + 8 > arrowLeft)
                summary =
                    summaryFm.elidedText(summary, Qt::ElideRight, std::max(0.0, arrowLeft - ax.left - 16));
        }
    }
    // Whatever is left too long ends in an ellipsis at the view's edge, not cut off mid-word by it.
    if (const double room = right - ax.left - 8; summaryFm.horizontalAdvance(summary) > room)
        summary = summaryFm.elidedText(summary, Qt::ElideRight, std::max(0.0, room));
    p->drawText(QRectF(ax.left, top, right - ax.left - 8, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft,
                summary);
    double summaryRight = ax.left + summaryFm.horizontalAdvance(summary) + 8;
    if (!warning.isEmpty()) {
        p->setFont(ctx.font(13, true));
        p->setPen(th.deadline);
        p->drawText(QRectF(summaryRight + 6, top, std::max(0.0, right - summaryRight - 14), m.callHeader),
                    Qt::AlignVCenter | Qt::AlignLeft, warning);
        summaryRight += 6 + QFontMetricsF(p->font()).horizontalAdvance(warning) + 8;
        p->setPen(th.text);
    }

    p->setFont(small);
    p->setPen(th.text);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double barTop = top + m.attemptTop(false, k) + m.barOffset(false);
        QString label = QStringLiteral("attempt %1").arg(k + 1);
        if (call.transparentRetry(k))
            label += QStringLiteral("  ·  transparent");
        else if (a.previousAttempts)
            label += QStringLiteral("  ·  prev %1").arg(*a.previousAttempts);
        p->drawText(
            QRectF(rect.left() + 22 * m.scale, barTop - 3, m.labelWidth - 26 * m.scale, m.barHeight + 6),
            Qt::AlignVCenter | Qt::AlignLeft, label);
    }
    // Everything placed in time stays right of the label column.
    p->save();
    p->setClipRect(QRectF(ax.left, top, right - ax.left, laneBottom - top), Qt::IntersectClip);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double rowTop = top + m.attemptTop(false, k);
        const double barTop = rowTop + m.barOffset(false);
        const double barH = m.barHeight;
        const bool transparent = call.transparentRetry(k);
        // The range the client's policy allows for the gap before this attempt, under everything else.
        std::optional<std::pair<std::int64_t, std::int64_t>> expected;
        bool given = false; // the range came from a config the user gave, not from the call
        if (k > 0 && call.attempts[k - 1].endNs && !transparent) {
            expected = ctx.expectedGap(call, k, &given);
            if (expected) shadeExpected(p, ctx, *call.attempts[k - 1].endNs, *expected, barTop, barH, right);
        }

        // The bar: every item gets at least 3 px so a sub-millisecond attempt stays visible and clickable
        // when the view spans seconds; an injected or instant failure more, so its hatch shows.
        auto [x1, x2] = ctx.attemptSpan(call, k);
        const bool widened = PaintContext::widenedMark(a);
        x1 = std::max(x1, ax.left);
        if (x2 > ax.left && x1 < right) {
            const QColor c = statusColor(a);
            const QRectF bar(x1, barTop, std::min(x2, right) - x1, barH);
            p->fillRect(bar, c);
            ctx.mark(statusGroup(a));
            if (transparent) {
                hatch(p, bar);
                ctx.mark(kUseTransparent);
            }
            if (a.injected()) {
                injectedHatch(p, bar, m.scale);
                ctx.mark(kUseInjected);
            }
            // A widened mark's width is not its duration: no phases on it.
            if (bar.width() >= 12 && !widened && !ctx.store.frames().empty())
                paintPhases(p, ctx, a, bar);
            else if (bar.width() >= 12 && !widened && a.responseHeadersNs) {
                const double hx = ax.timeToX(*a.responseHeadersNs);
                p->fillRect(
                    QRectF(hx, bar.bottom() - barH * 0.3, std::max(1.0, bar.right() - hx), barH * 0.3),
                    th.phaseResponse);
                ctx.mark(kUsePhases);
            }
            QString text = statusText(a);
            if (transparent) text = QStringLiteral("transparent retry · ") + text;
            if (a.injected()) text = QStringLiteral("injected · ") + text;
            if (client.implied() && k + 1 == call.attempts.size()) {
                const QString got = QStringLiteral("client: ") + QString::fromStdString(client.label());
                text += QStringLiteral(" → ") + got;
                // Where the whole text has no room, what the client got is the part worth keeping.
                const double w = barFm.horizontalAdvance(text);
                if (w + 8 > bar.width() && x2 + 6 + w >= right && x1 - 6 - w <= ax.left) text = got;
            }
            p->setFont(barFont);
            const double tw = barFm.horizontalAdvance(text);
            const QRectF textBar(bar.left(), bar.top(), bar.width(), barH * 0.7);
            if (tw + 8 <= bar.width()) {
                p->setPen(Qt::white);
                p->drawText(textBar.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
            } else {
                // Beside the bar: after it, or before it, or (room on neither side: large workshop text near
                // the edge) as much as fits after it, elided, rather than nothing where the story ends.
                p->setPen(th.background.lightness() > 128 ? c.darker(130) : c.lighter(130));
                const double room = right - x2 - 10;
                if (x2 + 6 + tw < right)
                    p->drawText(QRectF(x2 + 5, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft, text);
                else if (x1 - 6 - tw > ax.left)
                    p->drawText(QRectF(x1 - 6 - tw, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft,
                                text);
                else if (room >= 6 * barFm.averageCharWidth())
                    p->drawText(QRectF(x2 + 5, barTop, room + 4, barH), Qt::AlignVCenter | Qt::AlignLeft,
                                barFm.elidedText(text, Qt::ElideRight, room));
            }
        }

        // This attempt's own grpc-timeout, where it differs from the call's deadline (a retry resending the
        // remaining budget ends exactly on it): a thin line with a small flag.
        if (a.timeoutNs) {
            const qint64 t = a.startNs + *a.timeoutNs;
            const double tx = ax.timeToX(t);
            const bool onDeadline =
                deadline && (std::abs(ax.timeToX(*deadline) - tx) < 2 ||
                             std::abs(t - *deadline) <= attemptTimeoutSlack(*a.timeoutNs));
            if (!onDeadline && tx >= ax.left && tx <= right) {
                p->setPen(QPen(th.deadline, 1));
                p->drawLine(QPointF(tx, barTop - 5), QPointF(tx, barTop + barH + 3));
                p->fillRect(QRectF(tx, barTop - 5, 6 * m.scale, 4 * m.scale), th.deadline);
                ctx.mark(kUseAttemptTimeout);
            }
        }

        // Backoff gap: from the end of the previous attempt to the start of this one, over the range the
        // client's policy allows (shaded) when the call told us its policy.
        if (k > 0 && call.attempts[k - 1].endNs) {
            const qint64 gapStart = *call.attempts[k - 1].endNs;
            const qint64 gap = a.startNs - gapStart;
            const double g1 = ax.timeToX(gapStart);
            const double g2 = ax.timeToX(a.startNs);
            const double cy = barTop + barH / 2;
            // A gap counts as outside when it misses the range by more than 5 ms: the wire adds the client's
            // reaction time, and C-core's timer wakes up to a few ms late.
            const bool outside = gapOutside(gap, expected, given);
            // A gap narrower than a few pixels gets its bracket but no words: zoomed out over thousands of
            // calls the labels would only cover each other.
            if (g2 >= ax.left && g1 <= right && g2 - g1 < kMinLabelledGapPx) {
                ctx.mark(kUseGap);
                p->setPen(QPen(th.gap, 1));
                p->drawLine(QPointF(g1, cy), QPointF(std::max(g2, g1 + 1), cy));
            } else if (g2 >= ax.left && g1 <= right) {
                ctx.mark(kUseGap);
                const QColor gapColor = outside ? th.deadline : th.gap;
                p->setPen(QPen(gapColor, m.scale > 1 ? 2 : 1));
                const double h5 = 5 * m.scale;
                p->drawLine(QPointF(g1, cy), QPointF(g2, cy));
                p->drawLine(QPointF(g1, cy - h5), QPointF(g1, cy + h5));
                p->drawLine(QPointF(g2, cy - h5), QPointF(g2, cy + h5));
                const QString text = gapText(call, k, gap, transparent, expected, outside);
                p->setFont(small);
                const double tw = smallFm.horizontalAdvance(text);
                // Over the part of the gap in view, and within the view: a gap running off an edge keeps its
                // words whole.
                const double v1 = std::max(g1, ax.left), v2 = std::min(g2, right);
                QRectF labelRect((v1 + v2) / 2 - tw / 2 - 3, rowTop + 1, tw + 6, smallFm.height());
                if (labelRect.right() > right) labelRect.moveRight(right);
                if (labelRect.left() < ax.left) labelRect.moveLeft(ax.left);
                p->setPen(gapColor);
                p->drawText(labelRect, Qt::AlignCenter, text);
                m_gapLabels.push_back({labelRect, gap, index, k});
            }
        }

        // Annotations on the attempt: a failure after response headers shows where it committed (a success
        // always has headers, so it is not marked), and a pushback that stops retrying.
        if (a.responseHeadersNs && !a.trailersOnly && a.status.value_or(0) != 0) {
            const double cx = ax.timeToX(*a.responseHeadersNs);
            if (cx >= ax.left && cx <= right) {
                p->setPen(QPen(th.commit, 2 * m.scale));
                p->drawLine(QPointF(cx, barTop - 4), QPointF(cx, barTop + barH + 4));
                ctx.mark(kUseCommit);
                p->setFont(small);
                p->setPen(th.commit);
                p->drawText(QRectF(cx + 4, rowTop + 1, 260 * m.scale, smallFm.height()),
                            Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("committed: response headers"));
            }
        }
        if (a.pushbackMs && *a.pushbackMs < 0 && a.endNs) {
            const double cx = ax.timeToX(*a.endNs);
            p->setFont(small);
            p->setPen(th.deadline);
            const QRectF words(cx + 4, rowTop + 1, 300 * m.scale, smallFm.height());
            if (words.left() < right && words.right() > ax.left) ctx.mark(kUsePushback);
            p->drawText(words, Qt::AlignLeft | Qt::AlignVCenter,
                        QStringLiteral("pushback %1: do not retry").arg(*a.pushbackMs));
        }
    }

    p->restore();

    MarkersPass::paintLane(p, ctx, call, top, laneBottom, small, smallFm);
    if (ctx.layout.hasSuppressedRow(call))
        MarkersPass::paintSuppressed(p, ctx, call, top + m.attemptTop(false, call.attempts.size()), smallFm);

    // Deadline: a dashed line where the call's budget runs out, or an arrow at the edge when it is off-range.
    if (deadline) {
        const double dx = ax.timeToX(*deadline);
        p->setFont(small);
        if (dx >= ax.left && dx <= right) {
            ctx.mark(kUseDeadline);
            p->setPen(QPen(th.deadline, 2 * m.scale, Qt::DashLine));
            // Through the header too, unless it would strike through the lane's summary.
            p->drawLine(QPointF(dx, dx < summaryRight ? top + m.callHeader : top), QPointF(dx, laneBottom));
            // The label goes left of the line, or right of it, wherever it does not cover the lane's summary.
            p->setPen(th.deadline);
            const double tw = deadlineTw;
            if (dx - 4 - tw >= summaryRight)
                p->drawText(QRectF(dx - 4 - tw, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignRight,
                            deadlineText);
            else if (dx + 4 >= summaryRight && dx + 4 + tw <= right)
                p->drawText(QRectF(dx + 4, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft,
                            deadlineText);
        } else if (dx > right) {
            ctx.mark(kUseDeadline);
            // Beyond the view: an arrow at the edge, with as much of the label as fits after the summary.
            p->setPen(th.deadline);
            for (const QString &t :
                 {deadlineText + QStringLiteral("  ▶"), QStringLiteral("deadline ▶"), QStringLiteral("▶")}) {
                const double tw = smallFm.horizontalAdvance(t) + 2;
                if (right - 8 - tw >= summaryRight || t.size() == 1) {
                    p->drawText(QRectF(right - 8 - tw, top, tw, m.callHeader),
                                Qt::AlignVCenter | Qt::AlignRight, t);
                    break;
                }
            }
        }
    }
}

const CallLanePass::RowFonts &CallLanePass::rowFonts(const PaintContext &ctx)
{
    const QFont base = PaintContext::scaledFont(12, ctx.metrics.scale);
    if (m_rowFonts.scale != ctx.metrics.scale || m_rowFonts.small != base) {
        m_rowFonts.scale = ctx.metrics.scale;
        m_rowFonts.name = ctx.font(13, true);
        m_rowFonts.small = base;
        m_rowFonts.bar = ctx.font(11, true);
        m_rowFonts.nameFm.emplace(m_rowFonts.name);
        m_rowFonts.smallFm.emplace(m_rowFonts.small);
        m_rowFonts.arrowWidth = m_rowFonts.smallFm->horizontalAdvance(QStringLiteral("▶"));
        m_rowFonts.barFm.emplace(m_rowFonts.bar);
    }
    return m_rowFonts;
}

void CallLanePass::paintRow(QPainter *p, const PaintContext &ctx, size_t index, double top)
{
    const QRectF &rect = ctx.rect;
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    const Call &call = ctx.store.calls()[index];
    const double h = m.rowHeight;
    const double bottom = top + h;
    const double right = rect.right();
    const bool light = th.background.lightness() > 128;
    // The label column reads as the lane's header; the time area keeps the grid.
    p->fillRect(QRectF(rect.left(), top, m.labelWidth, h), th.headerBand);
    p->fillRect(QRectF(ax.left, top, right - ax.left, h), th.headerBand.lighter(light ? 101 : 110));
    paintGrid(p, ctx, top, bottom);

    const int depth = std::min(ctx.store.nestingDepth(index), 6);
    const double indent = depth * 14 * m.scale;
    if (depth > 0) {
        p->setPen(QPen(th.text, 1));
        const double x = rect.left() + 4 + indent - 8 * m.scale;
        p->drawLine(QPointF(x, top + 1), QPointF(x, top + h / 2));
        p->drawLine(QPointF(x, top + h / 2), QPointF(x + 6 * m.scale, top + h / 2));
    }
    // Name on the left; the attempt count (a click shows a row each) and the method at the column's end.
    const RowFonts &f = rowFonts(ctx);
    const QFont &small = f.small;
    const QFontMetricsF &smallFm = *f.smallFm;
    const size_t n = call.attempts.size();
    const double columnRight = rect.left() + m.labelWidth - 6;
    const double nameWidth = m.labelWidth - 14 - indent;
    p->setFont(f.name);
    const QFontMetricsF &nameFm = *f.nameFm;
    const RowLabel label = rowLabel(nameFm, smallFm, call, nameWidth, m.scale);
    p->setPen(th.text);
    textAt(p, rect.left() + 10 + indent, top, h, nameFm, label.name);
    if (!label.side.isEmpty()) {
        p->setFont(small);
        p->setPen(th.muted);
        textAt(p, columnRight - smallFm.horizontalAdvance(label.side), top, h, smallFm, label.side);
    }

    const QFont &barFont = f.bar;
    const QFontMetricsF &barFm = *f.barFm;
    const double barH = m.barSize(true);
    const double barTop = top + m.barOffset(true);
    const double cy = barTop + barH / 2;
    const std::optional<std::int64_t> deadline = call.deadlineNs();
    double textRight = ax.left; // right of the last text drawn on the row, so later text does not cover it
    // A deadline beyond the view is an arrow at the right edge (below): gap labels keep clear of it.
    const double labelsRight = deadline && ax.timeToX(*deadline) > right ? right - 12 - f.arrowWidth : right;
    // Text drawn over a line (a gap's, the grid's) first clears the row's ground under it, so it does not
    // read as struck through.
    const QColor ground = th.headerBand.lighter(light ? 101 : 110);
    auto clearUnder = [&](const QRectF &text) {
        p->fillRect(QRectF(text.left() - 2, cy - smallFm.height() / 2, text.width() + 4, smallFm.height()),
                    ground);
    };
    // Where the call's outcome goes after its last bar: clear of a deadline's arrow at the edge, and not
    // across the deadline's line in view (it was struck through: "DEADLINE_EXCEEDED" just before the
    // deadline it names): whole before the line, else whole after it, else as much as fits before it, else
    // after it. False where not even a few characters fit.
    double outcomeFrom = 0, outcomeRoom = 0;
    const double fewChars = 6 * f.barFm->averageCharWidth();
    auto placeOutcome = [&](double barEnd, double textWidth, double *from, double *room) {
        *from = barEnd + 5;
        *room = labelsRight - barEnd - 6;
        if (deadline) {
            const double dx = ax.timeToX(*deadline);
            if (dx >= ax.left && dx <= right && dx > *from - 2 &&
                dx < *from + std::min(textWidth, *room) + 2) {
                const double before = dx - 4 - *from, after = labelsRight - dx - 6;
                if (textWidth < after || before < fewChars) {
                    *from = dx + 5;
                    *room = after;
                } else {
                    *room = before;
                }
            }
        }
        return textWidth < *room || *room >= fewChars;
    };
    p->save();
    p->setClipRect(QRectF(ax.left, top, right - ax.left, h), Qt::IntersectClip);
    for (size_t k = 0; k < n; ++k) {
        const Attempt &a = call.attempts[k];
        const bool transparent = call.transparentRetry(k);
        std::optional<std::pair<std::int64_t, std::int64_t>> expected;
        bool given = false; // the range came from a config the user gave, not from the call
        if (k > 0 && call.attempts[k - 1].endNs && !transparent) expected = ctx.expectedGap(call, k, &given);
        // The gap before this attempt, on the bars' centre line: the policy's range shaded under it, its
        // length written inside it where it fits.
        if (k > 0 && call.attempts[k - 1].endNs) {
            const qint64 gapStart = *call.attempts[k - 1].endNs;
            const qint64 gap = a.startNs - gapStart;
            if (expected) shadeExpected(p, ctx, gapStart, *expected, barTop, barH, right);
            double g1 = ax.timeToX(gapStart);
            const double g2 = ax.timeToX(a.startNs);
            // After a widened mark the bracket starts where the mark ends, not under it.
            if (PaintContext::widenedMark(call.attempts[k - 1]))
                g1 = std::max(g1, ctx.attemptSpan(call, k - 1).second);
            const bool outside = gapOutside(gap, expected, given);
            const QColor gapColor = outside ? th.deadline : th.gap;
            if (g2 >= ax.left && g1 <= right) {
                ctx.mark(kUseGap);
                p->setPen(QPen(gapColor, m.scale > 1 ? 2 : 1));
                if (g2 - g1 < kMinLabelledGapPx) {
                    p->drawLine(QPointF(g1, cy), QPointF(std::max(g2, g1 + 1), cy));
                } else {
                    const double h3 = 3 * m.scale;
                    p->drawLine(QPointF(g1, cy - h3), QPointF(g1, cy + h3));
                    p->drawLine(QPointF(g2, cy - h3), QPointF(g2, cy + h3));
                    // The wait (the policy's range is the shading under it), or just its length, or nothing:
                    // whichever fits between the bars.
                    QString text = gapText(call, k, gap, transparent, std::nullopt, false);
                    if (outside) text += QStringLiteral(" — outside");
                    // Written in the part of the gap in view (a gap running off either edge would have
                    // its label cut there), clear of a deadline's arrow at the right edge.
                    const double v1 = std::max(g1, ax.left), v2 = std::min(g2, labelsRight);
                    if (smallFm.horizontalAdvance(text) + 12 > v2 - v1) text = formatDuration(gap);
                    const double tw = smallFm.horizontalAdvance(text);
                    if (tw + 12 <= v2 - v1) {
                        const QRectF labelRect((v1 + v2) / 2 - tw / 2 - 3, top, tw + 6, h);
                        p->drawLine(QPointF(g1, cy), QPointF(labelRect.left(), cy));
                        p->drawLine(QPointF(labelRect.right(), cy), QPointF(g2, cy));
                        p->setFont(small);
                        p->setPen(gapColor);
                        textAt(p, labelRect.left() + 3, top, h, smallFm, text);
                        m_gapLabels.push_back({labelRect, gap, index, k});
                        // The deadline's label and the tail after it keep clear of this one.
                        textRight = std::max(textRight, labelRect.right());
                    } else {
                        p->drawLine(QPointF(g1, cy), QPointF(g2, cy));
                    }
                }
            }
        }

        auto [x1, x2] = ctx.attemptSpan(call, k);
        const bool widened = PaintContext::widenedMark(a);
        x1 = std::max(x1, ax.left);
        if (x2 > ax.left && x1 < right) {
            const QColor c = statusColor(a);
            const QRectF bar(x1, barTop, std::min(x2, right) - x1, barH);
            p->fillRect(bar, c);
            ctx.mark(statusGroup(a));
            if (transparent) {
                hatch(p, bar);
                ctx.mark(kUseTransparent);
            }
            if (a.injected()) {
                injectedHatch(p, bar, m.scale);
                ctx.mark(kUseInjected);
            }
            if (bar.width() >= 12 && !widened && !ctx.store.frames().empty()) paintPhases(p, ctx, a, bar);
            // A failure after response headers: where the call committed.
            if (a.responseHeadersNs && !a.trailersOnly && a.status.value_or(0) != 0) {
                const double hx = ax.timeToX(*a.responseHeadersNs);
                p->setPen(QPen(th.commit, 2 * m.scale));
                p->drawLine(QPointF(hx, top + 1), QPointF(hx, bottom - 1));
                ctx.mark(kUseCommit);
            }
            // Status in the bar where it fits; the call's outcome (its last attempt's) otherwise after it.
            QString text = statusText(a);
            if (transparent) text = QStringLiteral("transparent retry · ") + text;
            if (a.injected()) text = QStringLiteral("injected · ") + text;
            if (k + 1 == n) {
                // What the client got, where the wire only implies it; alone where the whole has no room.
                if (const ClientOutcome client = clientOutcome(call, ctx.store); client.implied()) {
                    const QString got = QStringLiteral("client: ") + QString::fromStdString(client.label());
                    text += QStringLiteral(" → ") + got;
                    const double w = barFm.horizontalAdvance(text);
                    if (w + 8 > bar.width() && x2 + 6 + w >= labelsRight) text = got;
                }
            }
            const double tw = barFm.horizontalAdvance(text);
            p->setFont(barFont);
            if (tw + 8 <= bar.width()) {
                p->setPen(Qt::white);
                textAt(p, bar.left() + 4, top, h, barFm, text);
                textRight = std::max(textRight, bar.right());
            } else if (k + 1 == n && placeOutcome(x2, tw, &outcomeFrom, &outcomeRoom)) {
                // After the bar: whole, or as much as fits there.
                const QString shown =
                    tw < outcomeRoom ? text : barFm.elidedText(text, Qt::ElideRight, outcomeRoom);
                p->setPen(light ? c.darker(130) : c.lighter(130));
                textAt(p, outcomeFrom, top, h, barFm, shown);
                textRight = outcomeFrom + barFm.horizontalAdvance(shown) + 4;
            } else {
                textRight = std::max(textRight, x2);
            }
            if (a.pushbackMs && *a.pushbackMs < 0 && k + 1 == n) {
                ctx.mark(kUsePushback);
                const QString stop = QStringLiteral("pushback %1: do not retry").arg(*a.pushbackMs);
                p->setFont(small);
                p->setPen(th.deadline);
                textAt(p, textRight + 6, top, h, smallFm, stop);
                textRight += 6 + smallFm.horizontalAdvance(stop) + 4;
            }
        }
        // This attempt's own grpc-timeout where it is not the call's deadline: a thin line with a flag.
        if (a.timeoutNs) {
            const qint64 t = a.startNs + *a.timeoutNs;
            const double tx = ax.timeToX(t);
            const bool onDeadline =
                deadline && (std::abs(ax.timeToX(*deadline) - tx) < 2 ||
                             std::abs(t - *deadline) <= attemptTimeoutSlack(*a.timeoutNs));
            if (!onDeadline && tx >= ax.left && tx <= right) {
                p->setPen(QPen(th.deadline, 1));
                p->drawLine(QPointF(tx, top + 1), QPointF(tx, bottom - 1));
                p->fillRect(QRectF(tx, top + 1, 6 * m.scale, 4 * m.scale), th.deadline);
                ctx.mark(kUseAttemptTimeout);
            }
        }
    }
    p->restore();

    // The deadline: a dashed line through the row, labelled beside it where the label clears the statuses;
    // an arrow at the edge when it is beyond the view. Then how long the call took and what went wrong with
    // its deadline in a chain, wherever they clear both.
    p->setFont(small);
    QRectF deadlineLabel;
    std::optional<double> deadlineX;
    if (deadline) {
        const double dx = ax.timeToX(*deadline);
        const QString text = QStringLiteral("deadline +%1").arg(formatDuration(*deadline - call.startNs()));
        const double tw = smallFm.horizontalAdvance(text) + 2;
        p->setPen(th.deadline);
        if (dx >= ax.left && dx <= right) {
            ctx.mark(kUseDeadline);
            deadlineX = dx;
            p->setPen(QPen(th.deadline, 2 * m.scale, Qt::DashLine));
            p->drawLine(QPointF(dx, top), QPointF(dx, bottom));
            p->setPen(th.deadline);
            if (dx - 4 - tw >= textRight) {
                deadlineLabel = QRectF(dx - 4 - tw, top, tw, h);
                clearUnder(deadlineLabel);
                textAt(p, deadlineLabel.right() - tw, top, h, smallFm, text);
            } else if (dx + 4 >= textRight && dx + 4 + tw <= right) {
                deadlineLabel = QRectF(dx + 4, top, tw, h);
                clearUnder(deadlineLabel);
                textAt(p, deadlineLabel.left(), top, h, smallFm, text);
            }
        } else if (dx > right) {
            ctx.mark(kUseDeadline);
            for (const QString &t :
                 {text + QStringLiteral("  ▶"), QStringLiteral("deadline ▶"), QStringLiteral("▶")}) {
                const double w = smallFm.horizontalAdvance(t) + 2;
                if (right - 8 - w >= textRight || t.size() == 1) {
                    deadlineLabel = QRectF(right - 8 - w, top, w, h);
                    clearUnder(deadlineLabel);
                    textAt(p, deadlineLabel.right() - w, top, h, smallFm, t);
                    break;
                }
            }
        }
    }
    auto clear = [&](double x1, double x2) {
        if (x2 > right) return false;
        if (!deadlineLabel.isNull() && x2 > deadlineLabel.left() - 4 && x1 < deadlineLabel.right() + 4)
            return false;
        return !deadlineX || x2 + 2 < *deadlineX || x1 - 2 > *deadlineX;
    };
    // Right after the statuses, or else after the deadline's label.
    auto place = [&](const QString &text, const QColor &color) {
        const double tw = smallFm.horizontalAdvance(text) + 4;
        double x = textRight + 8;
        if (!clear(x, x + tw) && !deadlineLabel.isNull()) x = std::max(x, deadlineLabel.right() + 8);
        if (!clear(x, x + tw)) return;
        clearUnder(QRectF(x, top, tw, h));
        p->setPen(color);
        textAt(p, x, top, h, smallFm, text);
        textRight = x + tw;
    };
    // The call's length only where its end is in view: with its last attempt beyond the view it would sit
    // inside a gap, as if it were the gap's. None of zero (as in the header).
    QStringList tail;
    if (call.endNs() && *call.endNs() > call.startNs() && n > 0 && ax.timeToX(*call.endNs()) <= right)
        tail << formatDuration(*call.endNs() - call.startNs());
    if (call.inferred) tail << QStringLiteral("grouped by inference");
    if (!call.hop.empty()) tail << hopText(call.hop);
    if (!tail.isEmpty()) place(tail.join(QStringLiteral(" · ")), th.muted);
    if (call.deadlineReset)
        place(QStringLiteral("⚠ deadline reset: the budget grew"), th.deadline);
    else if (call.deadlineDropped)
        place(QStringLiteral("⚠ deadline dropped by this hop"), th.deadline);
}

} // namespace rpcscope
