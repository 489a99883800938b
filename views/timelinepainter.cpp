#include "timelinepainter.h"

#include <QFontMetricsF>
#include <QGuiApplication>
#include <QPainter>
#include <QPainterPath>
#include <QSvgGenerator>

#include <algorithm>

namespace rpcscope {

namespace {
const QColor kBackground(0xff, 0xff, 0xff);
const QColor kHeaderBand(0xec, 0xf0, 0xf5);
const QColor kGrid(0xe4, 0xe7, 0xeb);
const QColor kText(0x22, 0x26, 0x2b);
const QColor kMuted(0x6b, 0x72, 0x7b);
const QColor kGap(0x30, 0x3a, 0x46);
const QColor kDeadline(0xc6, 0x28, 0x28);
const QColor kExpectedRange(0x3b, 0x7d, 0xd8, 0x38);
const QColor kCommit(0x6a, 0x1b, 0x9a);
constexpr qint64 kGapSlackNs = 5'000'000;

const QColor kOk(0x2e, 0x9d, 0x4a);
const QColor kUnavailable(0xe8, 0x80, 0x1a);
const QColor kDeadlineExceeded(0x8e, 0x44, 0xad);
const QColor kCancelled(0x8a, 0x8f, 0x96);
const QColor kOtherError(0xd0, 0x35, 0x2b);
const QColor kInFlight(0x3b, 0x7d, 0xd8);

QFont sized(const QFont &base, double px, bool bold = false)
{
    QFont f = base;
    f.setPixelSize(int(px));
    f.setBold(bold);
    return f;
}
} // namespace

QString formatDuration(qint64 ns)
{
    const qint64 a = std::abs(ns);
    if (a >= 10'000'000'000)
        return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 1);
    if (a >= 1'000'000'000)
        return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 3);
    if (a >= 10'000'000)
        return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 1);
    if (a >= 1'000'000)
        return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 2);
    if (a >= 1'000)
        return QStringLiteral("%1 µs").arg(double(ns) / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 ns").arg(ns);
}

QString formatTick(qint64 ns, qint64 stepNs)
{
    // The unit follows the step, and decimals only as many as the step needs: "20 ms", "2.5 ms", "1.2 s".
    // A unit is used once the step is at least a fifth of it: 200 ms steps read "1.2 s", 100 ms steps "300 ms".
    const qint64 unit = stepNs * 5 >= 1'000'000'000 ? 1'000'000'000
                        : stepNs * 5 >= 1'000'000   ? 1'000'000
                        : stepNs * 5 >= 1'000       ? 1'000
                                                    : 1;
    const char *name = unit == 1'000'000'000 ? "s" : unit == 1'000'000 ? "ms" : unit == 1'000 ? "µs" : "ns";
    int decimals = 0;
    for (qint64 s = stepNs; s % unit != 0 && decimals < 3; s *= 10)
        ++decimals;
    return QStringLiteral("%1 %2").arg(double(ns) / double(unit), 0, 'f', decimals).arg(QString::fromUtf8(name));
}

QColor TimelinePainter::statusColor(const Attempt &a)
{
    if (!a.ended())
        return kInFlight;
    if (!a.status)
        return kCancelled;
    switch (*a.status) {
    case 0: return kOk;
    case 1: return kCancelled;
    case 4: return kDeadlineExceeded;
    case 14: return kUnavailable;
    default: return kOtherError;
    }
}

void TimelinePainter::setRange(qint64 startNs, qint64 endNs)
{
    m_startNs = startNs;
    m_endNs = std::max(endNs, startNs + 1000);
}

std::pair<qint64, qint64> TimelinePainter::fullRange() const
{
    const auto &calls = m_store->calls();
    if (calls.empty()) {
        const qint64 o = m_store->originNs();
        return {o, o + 1'000'000'000};
    }
    std::int64_t lo = calls.front().startNs();
    std::int64_t hi = lo;
    for (const Call &c : calls) {
        lo = std::min(lo, c.startNs());
        for (size_t k = 0; k < c.attempts.size(); ++k) {
            const Attempt &a = c.attempts[k];
            hi = std::max(hi, a.endNs.value_or(m_store->latestNs()));
            // Keep each expected backoff range in view, so a short gap shows how early it came.
            if (const auto range = c.expectedGapNs(k); range && a.endNs)
                hi = std::max(hi, *a.endNs + range->second);
        }
    }
    for (const LabEventRecord &e : m_store->labEvents()) {
        lo = std::min(lo, e.tNs);
        hi = std::max(hi, e.tNs);
    }
    // 4% on each side so the first and last bars do not touch the edges.
    const qint64 margin = std::max<qint64>((hi - lo) / 25, 1'000'000);
    return {lo - margin, hi + margin};
}

int TimelinePainter::contentHeight() const
{
    int h = headerHeight();
    for (const Call &c : m_store->calls())
        h += kCallHeaderHeight + int(c.attempts.size()) * kAttemptHeight + kCallSpacing;
    if (m_options.legend)
        h += kLegendHeight;
    return h;
}

TimeAxis TimelinePainter::axis(const QRectF &rect) const
{
    const double width = std::max(10.0, rect.width() - kLabelWidth - 16);
    return {m_startNs, double(m_endNs - m_startNs) / width, rect.left() + kLabelWidth};
}

void TimelinePainter::paint(QPainter *p, const QRectF &rect)
{
    m_gapLabels.clear();
    p->save();
    p->setRenderHint(QPainter::Antialiasing, false);
    p->fillRect(rect, kBackground);
    const TimeAxis ax = axis(rect);

    // Lanes first, clipped below the fixed header, then the header on top.
    const double lanesTop = rect.top() + headerHeight();
    const double lanesBottom = rect.bottom() - (m_options.legend ? kLegendHeight : 0);
    p->save();
    p->setClipRect(QRectF(rect.left(), lanesTop, rect.width(), lanesBottom - lanesTop));
    double y = lanesTop - m_scrollY;
    const auto &calls = m_store->calls();
    for (size_t i = 0; i < calls.size(); ++i) {
        const double h = kCallHeaderHeight + double(calls[i].attempts.size()) * kAttemptHeight + kCallSpacing;
        // Cull lanes outside the viewport before any per-attempt work.
        if (y + h >= lanesTop && y <= lanesBottom)
            paintCall(p, rect, ax, i, y);
        y += h;
    }
    if (calls.empty()) {
        p->setPen(kMuted);
        p->setFont(sized(p->font(), 15));
        p->drawText(QRectF(rect.left(), lanesTop, rect.width(), 80), Qt::AlignCenter,
                    QStringLiteral("No gRPC calls captured yet"));
    }
    p->restore();

    paintRuler(p, rect, ax);
    if (m_options.legend)
        paintLegend(p, QRectF(rect.left(), lanesBottom, rect.width(), kLegendHeight));
    p->restore();
}

void TimelinePainter::paintRuler(QPainter *p, const QRectF &rect, const TimeAxis &ax)
{
    double top = rect.top();
    if (!m_options.title.isEmpty()) {
        p->fillRect(QRectF(rect.left(), top, rect.width(), kTitleHeight), kBackground);
        p->setPen(kText);
        p->setFont(sized(p->font(), 16, true));
        p->drawText(QRectF(rect.left() + 10, top, rect.width() - 20, kTitleHeight),
                    Qt::AlignVCenter | Qt::AlignLeft, m_options.title);
        p->setFont(sized(p->font(), 12));
        p->setPen(kMuted);
        p->drawText(QRectF(rect.left() + 10, top, rect.width() - 20, kTitleHeight),
                    Qt::AlignVCenter | Qt::AlignRight,
                    QStringLiteral("%1 – %2 from capture start")
                        .arg(formatDuration(m_startNs - m_store->originNs()),
                             formatDuration(m_endNs - m_store->originNs())));
        top += kTitleHeight;
    }
    const QRectF ruler(rect.left(), top, rect.width(), kRulerHeight);
    p->fillRect(ruler, kHeaderBand);
    p->setPen(kGrid.darker(115));
    p->drawLine(QPointF(ruler.left(), ruler.bottom()), QPointF(ruler.right(), ruler.bottom()));
    p->setFont(sized(p->font(), 12));

    const qint64 step = ax.tickStepNs(110);
    const qint64 origin = m_store->originNs();
    // Ticks are multiples of the step counted from the capture origin, so labels are round numbers.
    qint64 rel = ((m_startNs - origin) / step) * step;
    if (origin + rel < m_startNs)
        rel += step;
    const double right = rect.right();
    for (qint64 t = origin + rel; ax.timeToX(t) <= right; t += step) {
        const double x = ax.timeToX(t);
        if (x < ax.left)
            continue;
        p->setPen(kGrid.darker(130));
        p->drawLine(QPointF(x, ruler.bottom() - 8), QPointF(x, ruler.bottom()));
        p->setPen(kText);
        p->drawText(QRectF(x + 3, ruler.top(), 120, ruler.height() - 6), Qt::AlignLeft | Qt::AlignBottom,
                    formatTick(t - origin, step));
    }
    p->setPen(kMuted);
    p->drawText(QRectF(ruler.left() + 10, ruler.top(), kLabelWidth - 20, ruler.height()),
                Qt::AlignVCenter | Qt::AlignLeft, QStringLiteral("time since capture start"));
    if (hasBreakerBand())
        paintBreakerBand(p, QRectF(rect.left(), ruler.bottom() + 1, rect.width(), kBandHeight - 2), ax);
}

bool TimelinePainter::hasBreakerBand() const
{
    refreshLabIndex();
    return m_hasBreakerBand;
}

void TimelinePainter::refreshLabIndex() const
{
    if (m_labIndexGeneration == m_store->generation())
        return;
    m_labIndexGeneration = m_store->generation();
    m_hasBreakerBand = false;
    m_suppressedByCall.clear();
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind == "breaker" || e.kind == "fast-fail")
            m_hasBreakerBand = true;
        else if (e.kind == "retry-suppressed" && !e.callId.empty())
            m_suppressedByCall[e.callId] = &e;
    }
}

// The breaker's state over time as coloured spans, transitions labelled, and a red tick for every call
// that failed fast (those never reach the wire, so they have no lane).
void TimelinePainter::paintBreakerBand(QPainter *p, const QRectF &band, const TimeAxis &ax)
{
    p->fillRect(band, kBackground);
    p->setFont(sized(p->font(), 12, true));
    p->setPen(kText);
    p->drawText(QRectF(band.left() + 10, band.top(), kLabelWidth - 14, band.height()),
                Qt::AlignVCenter | Qt::AlignLeft, QStringLiteral("circuit breaker"));
    auto color = [](const std::string &state) {
        if (state == "open")
            return QColor(0xf4, 0xc7, 0xc3);
        if (state == "half-open")
            return QColor(0xff, 0xe0, 0x9e);
        return QColor(0xd4, 0xed, 0xd9);
    };
    std::string state;
    qint64 from = m_startNs;
    const double right = band.right();
    p->setFont(sized(p->font(), 11));
    auto span = [&](qint64 to, const std::string &s) {
        const double x1 = std::max(ax.timeToX(from), ax.left);
        // A half-open state lasts one probe call: give it 3 px so it can be seen at all.
        const double x2 = std::min(std::max(ax.timeToX(to), x1 + 3), right);
        if (x2 <= x1)
            return;
        p->fillRect(QRectF(x1, band.top() + 3, x2 - x1, band.height() - 6), color(s));
        const QString label = QString::fromStdString(s);
        if (QFontMetricsF(p->font()).horizontalAdvance(label) + 8 < x2 - x1) {
            p->setPen(kText);
            p->drawText(QRectF(x1 + 4, band.top(), x2 - x1 - 8, band.height()), Qt::AlignVCenter | Qt::AlignLeft,
                        label);
        }
    };
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind != "breaker")
            continue;
        const auto arrow = e.detail.find(" -> ");
        if (arrow == std::string::npos)
            continue;
        if (state.empty())
            state = e.detail.substr(0, arrow);
        span(e.tNs, state);
        state = e.detail.substr(arrow + 4);
        from = e.tNs;
    }
    if (!state.empty())
        span(std::max<qint64>(m_store->latestNs(), m_endNs), state);
    p->setPen(QPen(kDeadline, 2));
    for (const LabEventRecord &e : m_store->labEvents()) {
        if (e.kind != "fast-fail")
            continue;
        const double x = ax.timeToX(e.tNs);
        if (x >= ax.left && x <= right)
            p->drawLine(QPointF(x, band.bottom() - 9), QPointF(x, band.bottom() - 1));
    }
}

void TimelinePainter::paintCall(QPainter *p, const QRectF &rect, const TimeAxis &ax, size_t index, double top)
{
    const Call &call = m_store->calls()[index];
    const double laneBottom = top + kCallHeaderHeight + double(call.attempts.size()) * kAttemptHeight;

    // Vertical grid lines through the lane, aligned with the ruler ticks.
    const qint64 step = ax.tickStepNs(110);
    const qint64 origin = m_store->originNs();
    qint64 rel = ((m_startNs - origin) / step) * step;
    p->setPen(kGrid);
    for (qint64 t = origin + rel; ax.timeToX(t) <= rect.right(); t += step)
        if (ax.timeToX(t) >= ax.left)
            p->drawLine(QPointF(ax.timeToX(t), top + kCallHeaderHeight), QPointF(ax.timeToX(t), laneBottom));

    // Lane header: call id, method, outcome and attempt count.
    const QRectF header(rect.left(), top, rect.width(), kCallHeaderHeight);
    p->fillRect(header, kHeaderBand);
    const Attempt *outcome = call.outcomeAttempt();
    QString outcomeText = QStringLiteral("in flight");
    if (outcome)
        outcomeText = outcome->status ? QString::fromLatin1(grpcStatusName(*outcome->status))
                                      : QStringLiteral("no status");
    p->setPen(kText);
    p->setFont(sized(p->font(), 13, true));
    p->drawText(QRectF(header.left() + 10, top, kLabelWidth - 14, kCallHeaderHeight),
                Qt::AlignVCenter | Qt::AlignLeft,
                QFontMetricsF(p->font()).elidedText(QString::fromStdString(call.key), Qt::ElideMiddle,
                                                    kLabelWidth - 14));
    QString summary = QStringLiteral("%1   →  %2 · %3 attempt%4")
                          .arg(QString::fromStdString(call.method), outcomeText)
                          .arg(call.attempts.size())
                          .arg(call.attempts.size() == 1 ? "" : "s");
    if (outcome && call.endNs())
        summary += QStringLiteral(" · %1").arg(formatDuration(*call.endNs() - call.startNs()));
    if (call.inferred)
        summary += QStringLiteral(" · grouped by inference");
    p->setFont(sized(p->font(), 13));
    p->drawText(QRectF(ax.left, top, rect.right() - ax.left - 8, kCallHeaderHeight),
                Qt::AlignVCenter | Qt::AlignLeft, summary);

    QFont small = sized(p->font(), 12);
    QFont barFont = sized(p->font(), 11, true);
    for (size_t k = 0; k < call.attempts.size(); ++k) {
        const Attempt &a = call.attempts[k];
        const double rowTop = top + kCallHeaderHeight + double(k) * kAttemptHeight;
        const double barTop = rowTop + 15;
        const double barH = 15;

        p->setFont(small);
        p->setPen(kText);
        QString label = QStringLiteral("attempt %1").arg(k + 1);
        if (a.previousAttempts)
            label += QStringLiteral("  ·  prev %1").arg(*a.previousAttempts);
        p->drawText(QRectF(rect.left() + 22, barTop - 3, kLabelWidth - 26, barH + 6),
                    Qt::AlignVCenter | Qt::AlignLeft, label);

        // The bar: every item gets at least 3 px so a sub-millisecond attempt stays visible and clickable
        // when the view spans seconds.
        const qint64 end = a.endNs.value_or(m_store->latestNs());
        double x1 = ax.timeToX(a.startNs);
        double x2 = std::max(ax.timeToX(end), x1 + 3);
        x1 = std::max(x1, ax.left);
        if (x2 > ax.left && x1 < rect.right()) {
            const QColor c = statusColor(a);
            const QRectF bar(x1, barTop, std::min(x2, rect.right()) - x1, barH);
            p->fillRect(bar, c);
            QString text = a.ended() ? (a.status ? QString::fromLatin1(grpcStatusName(*a.status))
                                                 : QStringLiteral("no status"))
                                     : QStringLiteral("in flight");
            p->setFont(barFont);
            const double tw = QFontMetricsF(barFont).horizontalAdvance(text);
            if (tw + 8 <= bar.width()) {
                p->setPen(Qt::white);
                p->drawText(bar.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
            } else if (x2 + 6 + tw < rect.right()) {
                p->setPen(c.darker(130));
                p->drawText(QRectF(x2 + 5, barTop, tw + 4, barH), Qt::AlignVCenter | Qt::AlignLeft, text);
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
            const auto expected = call.expectedGapNs(k - 1);
            // A gap counts as outside when it misses the range by more than 5 ms: the wire adds the client's
            // reaction time, and C-core's timer wakes up to a few ms late.
            const bool outside = expected && (gap < expected->first - kGapSlackNs || gap > expected->second + kGapSlackNs);
            if (expected) {
                const double e1 = ax.timeToX(gapStart + expected->first);
                const double e2 = std::max(ax.timeToX(gapStart + expected->second), e1 + 3);
                p->fillRect(QRectF(e1, barTop - 2, e2 - e1, barH + 4), kExpectedRange);
            }
            if (g2 >= ax.left && g1 <= rect.right()) {
                const QColor gapColor = outside ? kDeadline : kGap;
                p->setPen(QPen(gapColor, 1));
                p->drawLine(QPointF(g1, cy), QPointF(g2, cy));
                p->drawLine(QPointF(g1, cy - 5), QPointF(g1, cy + 5));
                p->drawLine(QPointF(g2, cy - 5), QPointF(g2, cy + 5));
                QString gapText = QStringLiteral("backoff %1").arg(formatDuration(gap));
                if (call.attempts[k - 1].pushbackMs && *call.attempts[k - 1].pushbackMs >= 0)
                    gapText = QStringLiteral("pushback %1 ms → waited %2")
                                  .arg(*call.attempts[k - 1].pushbackMs)
                                  .arg(formatDuration(gap));
                else if (expected && expected->first == expected->second)
                    gapText += QStringLiteral(" (expected %1)").arg(formatDuration(expected->first));
                else if (expected)
                    gapText += QStringLiteral(" (expected %1–%2)")
                                   .arg(formatDuration(expected->first), formatDuration(expected->second));
                if (outside)
                    gapText += QStringLiteral(" — outside");
                p->setFont(small);
                const double tw = QFontMetricsF(small).horizontalAdvance(gapText);
                QRectF labelRect((g1 + g2) / 2 - tw / 2 - 3, rowTop + 1, tw + 6, 14);
                if (labelRect.left() < ax.left)
                    labelRect.moveLeft(ax.left);
                p->setPen(gapColor);
                p->drawText(labelRect, Qt::AlignCenter, gapText);
                m_gapLabels.push_back({labelRect, gap, index, k});
            }
        }

        // Annotations on the attempt: a failure after response headers shows where it committed (a success
        // always has headers, so it is not marked), and a pushback that stops retrying.
        if (a.responseHeadersNs && !a.trailersOnly && a.status.value_or(0) != 0) {
            const double cx = ax.timeToX(*a.responseHeadersNs);
            if (cx >= ax.left && cx <= rect.right()) {
                p->setPen(QPen(kCommit, 2));
                p->drawLine(QPointF(cx, barTop - 4), QPointF(cx, barTop + barH + 4));
                p->setFont(small);
                p->setPen(kCommit);
                p->drawText(QRectF(cx + 4, rowTop + 1, 220, 14), Qt::AlignLeft | Qt::AlignVCenter,
                            QStringLiteral("committed: response headers"));
            }
        }
        if (a.pushbackMs && *a.pushbackMs < 0 && a.endNs) {
            const double cx = ax.timeToX(*a.endNs);
            p->setFont(small);
            p->setPen(kDeadline);
            p->drawText(QRectF(cx + 4, rowTop + 1, 260, 14), Qt::AlignLeft | Qt::AlignVCenter,
                        QStringLiteral("pushback %1: do not retry").arg(*a.pushbackMs));
        }
    }

    // A retry the client chose not to make (lab events tied to this call), in the lane header, left of the
    // deadline label, so it never covers a gap label.
    refreshLabIndex();
    if (auto it = m_suppressedByCall.find(call.key); it != m_suppressedByCall.end()) {
        const QString text = QStringLiteral("✕ retry suppressed: %1").arg(QString::fromStdString(it->second->detail));
        p->setFont(small);
        const double tw = QFontMetricsF(small).horizontalAdvance(text);
        p->setPen(kDeadline);
        p->drawText(QRectF(rect.right() - 270 - tw, top, tw + 2, kCallHeaderHeight), Qt::AlignLeft | Qt::AlignVCenter,
                    text);
    }

    // Deadline: a dashed line where the call's budget runs out, or an arrow at the edge when it is off-range.
    if (const auto deadline = call.deadlineNs()) {
        const double dx = ax.timeToX(*deadline);
        p->setFont(small);
        const QString text = QStringLiteral("deadline +%1").arg(formatDuration(*deadline - call.startNs()));
        if (dx >= ax.left && dx <= rect.right()) {
            p->setPen(QPen(kDeadline, 2, Qt::DashLine));
            p->drawLine(QPointF(dx, top), QPointF(dx, laneBottom));
            p->setPen(kDeadline);
            p->drawText(QRectF(dx - 160, top, 156, kCallHeaderHeight), Qt::AlignVCenter | Qt::AlignRight, text);
        } else if (dx > rect.right()) {
            p->setPen(kDeadline);
            p->drawText(QRectF(rect.right() - 260, top, 252, kCallHeaderHeight), Qt::AlignVCenter | Qt::AlignRight,
                        text + QStringLiteral("  ▶"));
        }
    }
}

void TimelinePainter::paintLegend(QPainter *p, const QRectF &rect)
{
    p->fillRect(rect, kBackground);
    p->setFont(sized(p->font(), 12));
    double x = rect.left() + 10;
    const double cy = rect.center().y();
    const std::pair<QColor, QString> entries[] = {
        {kOk, "OK"},
        {kUnavailable, "UNAVAILABLE"},
        {kDeadlineExceeded, "DEADLINE_EXCEEDED"},
        {kOtherError, "other error"},
        {kCancelled, "cancelled / no status"},
        {kInFlight, "in flight"},
    };
    for (const auto &[color, name] : entries) {
        p->fillRect(QRectF(x, cy - 6, 18, 12), color);
        p->setPen(kText);
        const double w = QFontMetricsF(p->font()).horizontalAdvance(name);
        p->drawText(QRectF(x + 22, cy - 9, w + 4, 18), Qt::AlignVCenter | Qt::AlignLeft, name);
        x += 22 + w + 22;
    }
    p->setPen(QPen(kGap, 1));
    p->drawLine(QPointF(x, cy), QPointF(x + 24, cy));
    p->drawLine(QPointF(x, cy - 5), QPointF(x, cy + 5));
    p->drawLine(QPointF(x + 24, cy - 5), QPointF(x + 24, cy + 5));
    p->drawText(QRectF(x + 30, cy - 9, 120, 18), Qt::AlignVCenter | Qt::AlignLeft, QStringLiteral("backoff gap"));
    x += 30 + QFontMetricsF(p->font()).horizontalAdvance(QStringLiteral("backoff gap")) + 22;
    p->fillRect(QRectF(x, cy - 7, 24, 14), kExpectedRange);
    p->setPen(kText);
    const QString rangeText = QStringLiteral("expected backoff (policy)");
    p->drawText(QRectF(x + 30, cy - 9, 200, 18), Qt::AlignVCenter | Qt::AlignLeft, rangeText);
    x += 30 + QFontMetricsF(p->font()).horizontalAdvance(rangeText) + 22;
    p->setPen(QPen(kDeadline, 2, Qt::DashLine));
    p->drawLine(QPointF(x, cy - 8), QPointF(x, cy + 8));
    p->setPen(kDeadline);
    p->drawText(QRectF(x + 8, cy - 9, 120, 18), Qt::AlignVCenter | Qt::AlignLeft, QStringLiteral("deadline"));
}

QImage TimelinePainter::renderImage(const TimelineStore &store, int width, const Options &options, qreal dpr)
{
    TimelinePainter painter(&store);
    painter.setOptions(options);
    const auto [lo, hi] = painter.fullRange();
    painter.setRange(lo, hi);
    const int height = painter.contentHeight() + 8;
    QImage image(QSize(int(width * dpr), int(height * dpr)), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(dpr);
    image.fill(Qt::white);
    QPainter p(&image);
    painter.paint(&p, QRectF(0, 0, width, height));
    return image;
}

bool TimelinePainter::renderSvg(const TimelineStore &store, int width, const Options &options,
                                const QString &fileName)
{
    TimelinePainter painter(&store);
    painter.setOptions(options);
    const auto [lo, hi] = painter.fullRange();
    painter.setRange(lo, hi);
    const int height = painter.contentHeight() + 8;
    QSvgGenerator svg;
    svg.setFileName(fileName);
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle(options.title);
    svg.setDescription(QStringLiteral("rpcscope timeline"));
    QPainter p;
    if (!p.begin(&svg))
        return false;
    painter.paint(&p, QRectF(0, 0, width, height));
    return p.end();
}

} // namespace rpcscope
