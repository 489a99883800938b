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
} // namespace

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
    seg(a.startNs, reqDone, th.phaseRequest);
    seg(reqDone, respStart.value_or(end), th.phaseWait);
    if (respStart) seg(*respStart, trailers.value_or(respEnd.value_or(end)), th.phaseResponse);
    if (trailers) seg(*trailers, end, th.phaseTrailers);
    // Ticks for the frames themselves once there is room for them: requests above the bar, responses below.
    if (!ticks.empty() && bar.width() / double(ticks.size()) >= 3) {
        int last[2] = {-1, -1};
        p->setPen(QPen(th.frameTick, 1));
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
    const Call &call = ctx.store.calls()[index];
    const double laneBottom = top + m.callHeader + double(call.attempts.size()) * m.attemptHeight;
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
    QString name = QString::fromStdString(call.key);
    if (call.pinned) name = QStringLiteral("★ ") + name;
    p->drawText(QRectF(header.left() + 10 + indent, top, m.labelWidth - 14 - indent, m.callHeader),
                Qt::AlignVCenter | Qt::AlignLeft,
                QFontMetricsF(p->font()).elidedText(name, Qt::ElideMiddle, m.labelWidth - 14 - indent));
    QString summary = QStringLiteral("%1   →  %2 · %3 attempt%4")
                          .arg(QString::fromStdString(call.method), outcomeText)
                          .arg(call.attempts.size())
                          .arg(call.attempts.size() == 1 ? "" : "s");
    if (outcome && call.endNs())
        summary += QStringLiteral(" · %1").arg(formatDuration(*call.endNs() - call.startNs()));
    if (call.inferred) summary += QStringLiteral(" · grouped by inference");
    // In a chain: which hop carried it and the budget it was given, against what its caller had left.
    QString chain;
    if (!call.hop.empty()) chain = QStringLiteral("hop %1").arg(QString::fromStdString(call.hop));
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
    p->setFont(ctx.font(13));
    p->drawText(QRectF(ax.left, top, right - ax.left - 8, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft,
                summary);
    double summaryRight = ax.left + QFontMetricsF(p->font()).horizontalAdvance(summary) + 8;
    if (!warning.isEmpty()) {
        p->setFont(ctx.font(13, true));
        p->setPen(th.deadline);
        p->drawText(QRectF(summaryRight + 6, top, std::max(0.0, right - summaryRight - 14), m.callHeader),
                    Qt::AlignVCenter | Qt::AlignLeft, warning);
        summaryRight += 6 + QFontMetricsF(p->font()).horizontalAdvance(warning) + 8;
        p->setPen(th.text);
    }

    const QFont small = ctx.font(12);
    const QFont barFont = ctx.font(11, true);
    const QFontMetricsF smallFm(small), barFm(barFont);
    const std::optional<std::int64_t> deadline = call.deadlineNs();
    p->setFont(small);
    p->setPen(th.text);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double barTop = top + m.callHeader + double(k) * m.attemptHeight + m.attemptHeight * 0.44;
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
        const double rowTop = top + m.callHeader + double(k) * m.attemptHeight;
        const double barTop = rowTop + m.attemptHeight * 0.44;
        const double barH = m.barHeight;
        const bool transparent = call.transparentRetry(k);
        // The range the client's policy allows for the gap before this attempt, under everything else.
        std::optional<std::pair<std::int64_t, std::int64_t>> expected;
        if (k > 0 && call.attempts[k - 1].endNs && !transparent) {
            expected = call.expectedGapNs(k - 1);
            if (expected) {
                const qint64 gapStart = *call.attempts[k - 1].endNs;
                const double e1 = ax.timeToX(gapStart + expected->first);
                const double e2 = std::max(ax.timeToX(gapStart + expected->second), e1 + 3);
                p->fillRect(QRectF(e1, barTop - 2, e2 - e1, barH + 4), th.expectedRange);
            }
        }

        // The bar: every item gets at least 3 px so a sub-millisecond attempt stays visible and clickable
        // when the view spans seconds.
        const qint64 end = a.endNs.value_or(ctx.store.latestNs());
        double x1 = ax.timeToX(a.startNs);
        double x2 = std::max(ax.timeToX(end), x1 + 3);
        x1 = std::max(x1, ax.left);
        if (x2 > ax.left && x1 < right) {
            const QColor c = statusColor(a);
            const QRectF bar(x1, barTop, std::min(x2, right) - x1, barH);
            p->fillRect(bar, c);
            if (transparent) hatch(p, bar);
            if (bar.width() >= 12 && !ctx.store.frames().empty())
                paintPhases(p, ctx, a, bar);
            else if (bar.width() >= 12 && a.responseHeadersNs) {
                const double hx = ax.timeToX(*a.responseHeadersNs);
                p->fillRect(
                    QRectF(hx, bar.bottom() - barH * 0.3, std::max(1.0, bar.right() - hx), barH * 0.3),
                    th.phaseResponse);
            }
            QString text = statusText(a);
            if (transparent) text = QStringLiteral("transparent retry · ") + text;
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
            } else if (x2 + 6 + tw < right) {
                p->setPen(th.background.lightness() > 128 ? c.darker(130) : c.lighter(130));
                p->drawText(QRectF(x2 + 5, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft, text);
            } else if (x1 - 6 - tw > ax.left) {
                p->setPen(th.background.lightness() > 128 ? c.darker(130) : c.lighter(130));
                p->drawText(QRectF(x1 - 6 - tw, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft,
                            text);
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
            const bool outside =
                expected && (gap < expected->first - kGapSlackNs || gap > expected->second + kGapSlackNs);
            // A gap narrower than a few pixels gets its bracket but no words: zoomed out over thousands of
            // calls the labels would only cover each other.
            if (g2 >= ax.left && g1 <= right && g2 - g1 < kMinLabelledGapPx) {
                p->setPen(QPen(th.gap, 1));
                p->drawLine(QPointF(g1, cy), QPointF(std::max(g2, g1 + 1), cy));
            } else if (g2 >= ax.left && g1 <= right) {
                const QColor gapColor = outside ? th.deadline : th.gap;
                p->setPen(QPen(gapColor, m.scale > 1 ? 2 : 1));
                const double h5 = 5 * m.scale;
                p->drawLine(QPointF(g1, cy), QPointF(g2, cy));
                p->drawLine(QPointF(g1, cy - h5), QPointF(g1, cy + h5));
                p->drawLine(QPointF(g2, cy - h5), QPointF(g2, cy + h5));
                QString gapText = QStringLiteral("backoff %1").arg(formatDuration(gap));
                if (transparent)
                    gapText = QStringLiteral("transparent retry after %1").arg(formatDuration(gap));
                else if (call.attempts[k - 1].pushbackMs && *call.attempts[k - 1].pushbackMs >= 0)
                    gapText = QStringLiteral("pushback %1 ms → waited %2")
                                  .arg(*call.attempts[k - 1].pushbackMs)
                                  .arg(formatDuration(gap));
                else if (expected && expected->first == expected->second)
                    gapText += QStringLiteral(" (expected %1)").arg(formatDuration(expected->first));
                else if (expected)
                    gapText += QStringLiteral(" (expected %1–%2)")
                                   .arg(formatDuration(expected->first), formatDuration(expected->second));
                if (outside) gapText += QStringLiteral(" — outside");
                p->setFont(small);
                const double tw = smallFm.horizontalAdvance(gapText);
                QRectF labelRect((g1 + g2) / 2 - tw / 2 - 3, rowTop + 1, tw + 6, smallFm.height());
                if (labelRect.left() < ax.left) labelRect.moveLeft(ax.left);
                p->setPen(gapColor);
                p->drawText(labelRect, Qt::AlignCenter, gapText);
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
            p->drawText(QRectF(cx + 4, rowTop + 1, 300 * m.scale, smallFm.height()),
                        Qt::AlignLeft | Qt::AlignVCenter,
                        QStringLiteral("pushback %1: do not retry").arg(*a.pushbackMs));
        }
    }

    p->restore();

    MarkersPass::paintLane(p, ctx, call, top, laneBottom, small, smallFm);

    // Deadline: a dashed line where the call's budget runs out, or an arrow at the edge when it is off-range.
    if (deadline) {
        const double dx = ax.timeToX(*deadline);
        p->setFont(small);
        const QString text = QStringLiteral("deadline +%1").arg(formatDuration(*deadline - call.startNs()));
        if (dx >= ax.left && dx <= right) {
            p->setPen(QPen(th.deadline, 2 * m.scale, Qt::DashLine));
            // Through the header too, unless it would strike through the lane's summary.
            p->drawLine(QPointF(dx, dx < summaryRight ? top + m.callHeader : top), QPointF(dx, laneBottom));
            // The label goes left of the line, or right of it, wherever it does not cover the lane's summary.
            p->setPen(th.deadline);
            const double tw = smallFm.horizontalAdvance(text) + 2;
            if (dx - 4 - tw >= summaryRight)
                p->drawText(QRectF(dx - 4 - tw, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignRight,
                            text);
            else if (dx + 4 >= summaryRight && dx + 4 + tw <= right)
                p->drawText(QRectF(dx + 4, top, tw, m.callHeader), Qt::AlignVCenter | Qt::AlignLeft, text);
        } else if (dx > right) {
            // Beyond the view: an arrow at the edge, with as much of the label as fits after the summary.
            p->setPen(th.deadline);
            for (const QString &t :
                 {text + QStringLiteral("  ▶"), QStringLiteral("deadline ▶"), QStringLiteral("▶")}) {
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

} // namespace rpcscope
