#include "legendpass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timelinestyle.h"

#include <QFontMetricsF>
#include <QPainter>
#include <iterator>

namespace rpcscope {

namespace {
enum class LegendSymbol
{
    Box,
    Hatched,
    Injected,
    Wait,
    Gap,
    Deadline,
    AttemptTimeout,
    Commit,
    Marker,
    Cluster,
    FastFail,
    Tick,
    Word,
    Frames,
    Line,
    OpenPing
};
struct LegendEntry
{
    const char *name;
    LegendSymbol symbol;
    int color; // LegendColor
    int use;   // the kUse bit that shows it
};
enum LegendColor
{
    LOk,
    LUnavailable,
    LDeadlineExceeded,
    LOther,
    LCancelled,
    LInFlight,
    LRequest,
    LResponse,
    LRange,
    LStall,
    LTrailers,
    LBreakerClosed,
    LBreakerOpen,
    LBreakerHalfOpen,
    LSettings,
    LPing,
    LRst,
    LGoaway,
    LText,
    LDeadline,
    LFrameTick,
    LConnLine
};
constexpr LegendEntry kLegend[] = {
    {"OK", LegendSymbol::Box, LOk, 0},
    {"UNAVAILABLE", LegendSymbol::Box, LUnavailable, 1},
    {"DEADLINE_EXCEEDED", LegendSymbol::Box, LDeadlineExceeded, 2},
    {"other error", LegendSymbol::Box, LOther, 3},
    {"cancelled / no status", LegendSymbol::Box, LCancelled, 4},
    {"in flight", LegendSymbol::Box, LInFlight, 5},
    {"transparent retry", LegendSymbol::Hatched, LUnavailable, kUseTransparent},
    {"injected by rpcscope (fault rule)", LegendSymbol::Injected, LUnavailable, kUseInjected},
    {"request sent", LegendSymbol::Box, LRequest, kUsePhases},
    {"server working", LegendSymbol::Wait, LOk, kUsePhases},
    {"response", LegendSymbol::Box, LResponse, kUsePhases},
    {"trailers", LegendSymbol::Box, LTrailers, kUseTrailers},
    {"frame sent (above) / received (below)", LegendSymbol::Frames, LFrameTick, kUseFrameTicks},
    {"backoff gap", LegendSymbol::Gap, 0, kUseGap},
    {"expected backoff (policy)", LegendSymbol::Box, LRange, kUseExpected},
    {"call deadline", LegendSymbol::Deadline, 0, kUseDeadline},
    {"attempt's own grpc-timeout", LegendSymbol::AttemptTimeout, 0, kUseAttemptTimeout},
    {"committed", LegendSymbol::Commit, 0, kUseCommit},
    {"pushback: do not retry", LegendSymbol::Word, LDeadline, kUsePushback},
    {"policy event", LegendSymbol::Marker, 0, kUseMarker},
    {"overlapping events (×N)", LegendSymbol::Cluster, 0, kUseCluster},
    {"flow-control stall", LegendSymbol::Box, LStall, kUseStall},
    {"connection open", LegendSymbol::Line, LConnLine, kUseConnection},
    {"SETTINGS", LegendSymbol::Tick, LSettings, kUseSettings},
    {"PING round trip", LegendSymbol::Tick, LPing, kUsePing},
    {"RST_STREAM", LegendSymbol::Tick, LRst, kUseRst},
    {"GOAWAY", LegendSymbol::Tick, LGoaway, kUseGoaway},
    {"PING without ACK (open until the connection ends)", LegendSymbol::OpenPing, LRst, kUseUnansweredPing},
    {"breaker closed", LegendSymbol::Box, LBreakerClosed, kUseBreakerClosed},
    {"breaker open", LegendSymbol::Box, LBreakerOpen, kUseBreakerOpen},
    {"breaker half-open", LegendSymbol::Box, LBreakerHalfOpen, kUseBreakerHalfOpen},
    {"breaker transition", LegendSymbol::Tick, LText, kUseTransition},
    {"failed fast (breaker open, never sent)", LegendSymbol::FastFail, 0, kUseFastFail},
};
} // namespace

bool LegendPass::shows(std::uint32_t legendUse, int use)
{
    return (legendUse >> use) & 1u;
}

QStringList LegendPass::entries(std::uint32_t drawn)
{
    QStringList names;
    for (const LegendEntry &e : kLegend)
        if (shows(drawn, e.use)) names << QString::fromUtf8(e.name);
    return names;
}

// A legend row: the tallest symbol (16 px) and the 12 px text with a little air, so the legend takes as few
// of the lanes' pixels as it can (in workshop mode every pixel of it is scaled by 2.2).
constexpr double kRowPitch = 20;

// The legend flows into as many rows as the width needs; each entry is a symbol and its name.
std::vector<QPointF> LegendPass::layout(double width, double s, std::uint32_t legendUse, int *rows)
{
    const QFontMetricsF fm(PaintContext::scaledFont(12, s));
    std::vector<QPointF> at;
    double x = 10;
    int row = 0;
    for (const LegendEntry &e : kLegend) {
        if (!shows(legendUse, e.use)) {
            at.emplace_back(-1, -1);
            continue;
        }
        const double w = 28 * s + fm.horizontalAdvance(QString::fromUtf8(e.name));
        if (x + w > width - 10 && x > 10) {
            x = 10;
            ++row;
        }
        at.emplace_back(x, row);
        x += w + 14 * s;
    }
    if (rows) *rows = row + 1;
    return at;
}

int LegendPass::height(double width, double scale, std::uint32_t legendUse)
{
    // Measured text, so cached: hit-testing asks on every mouse move.
    if (m_heightFor != std::tuple{width, scale, legendUse}) {
        int rows = 1;
        layout(width, scale, legendUse, &rows);
        m_height = int(rows * kRowPitch * scale + 6 * scale);
        m_heightFor = {width, scale, legendUse};
    }
    return m_height;
}

void LegendPass::paint(QPainter *p, const PaintContext &ctx, const QRectF &rect, std::uint32_t drawn,
                       double scale)
{
    const TimelineTheme &th = ctx.theme;
    const double s = scale;
    p->fillRect(rect, th.background);
    p->setFont(PaintContext::scaledFont(12, s));
    const QFontMetricsF fm(p->font());
    const QColor colors[] = {kOk,
                             kUnavailable,
                             kDeadlineExceeded,
                             kOtherError,
                             kCancelled,
                             kInFlight,
                             th.phaseRequest,
                             th.phaseResponse,
                             th.expectedRange,
                             th.stall,
                             th.phaseTrailers,
                             th.breakerClosed,
                             th.breakerOpen,
                             th.breakerHalfOpen,
                             th.settings,
                             th.ping,
                             th.rst,
                             th.goaway,
                             th.text,
                             th.deadline,
                             th.frameTick,
                             th.connLine};
    const std::vector<QPointF> at = layout(rect.width(), s, drawn, nullptr);
    for (size_t i = 0; i < std::size(kLegend); ++i) {
        const LegendEntry &e = kLegend[i];
        if (at[i].y() < 0) continue;
        const double x0 = rect.left() + at[i].x();
        const double y = rect.top() + 3 * s + (at[i].y() + 0.5) * kRowPitch * s;
        const QRectF box(x0, y - 6 * s, 22 * s, 12 * s);
        const double mx = x0 + 11 * s;
        switch (e.symbol) {
        case LegendSymbol::Box:
            p->fillRect(box, colors[e.color]);
            break;
        case LegendSymbol::Hatched:
            p->fillRect(box, colors[e.color]);
            hatch(p, box);
            break;
        case LegendSymbol::Injected:
            p->fillRect(box, colors[e.color]);
            injectedHatch(p, box, s);
            break;
        case LegendSymbol::Wait:
            p->fillRect(box, colors[e.color]);
            p->fillRect(box, th.phaseWait);
            break;
        case LegendSymbol::Gap:
            p->setPen(QPen(th.gap, s > 1 ? 2 : 1));
            p->drawLine(QPointF(x0, y), QPointF(x0 + 22 * s, y));
            p->drawLine(QPointF(x0, y - 5 * s), QPointF(x0, y + 5 * s));
            p->drawLine(QPointF(x0 + 22 * s, y - 5 * s), QPointF(x0 + 22 * s, y + 5 * s));
            break;
        case LegendSymbol::Deadline:
            p->setPen(QPen(th.deadline, 2 * s, Qt::DashLine));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            break;
        case LegendSymbol::AttemptTimeout:
            p->setPen(QPen(th.deadline, 1));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            p->fillRect(QRectF(mx, y - 8 * s, 6 * s, 4 * s), th.deadline);
            break;
        case LegendSymbol::FastFail:
            p->setPen(QPen(th.deadline, 2 * s));
            p->drawLine(QPointF(mx, y - 5 * s), QPointF(mx, y + 5 * s));
            break;
        case LegendSymbol::Commit:
            p->setPen(QPen(th.commit, 2 * s));
            p->drawLine(QPointF(mx, y - 8 * s), QPointF(mx, y + 8 * s));
            break;
        case LegendSymbol::Marker: {
            const double r = 5 * s;
            diamond(p, QPointF(mx, y), r, th.labMarker, false);
            break;
        }
        case LegendSymbol::Cluster:
            p->setPen(QPen(th.labMarker, std::max(1.0, s)));
            p->setBrush(Qt::NoBrush);
            p->drawEllipse(QPointF(mx, y), 7 * s, 7 * s);
            diamond(p, QPointF(mx, y), 4 * s, th.labMarker, false);
            break;
        case LegendSymbol::Tick:
            p->fillRect(QRectF(mx - s, y - 8 * s, 2 * s, 16 * s), colors[e.color]);
            break;
        case LegendSymbol::OpenPing:
            p->setPen(QPen(colors[e.color], 2 * std::max(1.0, s), Qt::DashLine, Qt::FlatCap));
            p->drawLine(QPointF(x0, y), QPointF(x0 + 22 * s, y));
            p->fillRect(QRectF(x0, y - 4 * s, 2 * s, 8 * s), colors[e.color]);
            break;
        case LegendSymbol::Frames:
            p->fillRect(box.adjusted(0, 3 * s, 0, -3 * s), kOk);
            p->setPen(QPen(colors[e.color], 1));
            for (const double fx : {x0 + 5 * s, x0 + 15 * s}) {
                p->drawLine(QPointF(fx, box.top()), QPointF(fx, box.top() + 2 * s));
                p->drawLine(QPointF(fx + 3 * s, box.bottom() - 2 * s), QPointF(fx + 3 * s, box.bottom()));
            }
            break;
        case LegendSymbol::Line:
            p->fillRect(QRectF(x0, y, 22 * s, std::max(1.0, s)), colors[e.color]);
            break;
        case LegendSymbol::Word:
            p->setPen(colors[e.color]);
            p->drawText(box.adjusted(-2, -4, 2, 4), Qt::AlignCenter, QStringLiteral("−1"));
            break;
        }
        const QString name = QString::fromUtf8(e.name);
        p->setPen(th.text);
        p->drawText(QRectF(x0 + 28 * s, y - fm.height() / 2, fm.horizontalAdvance(name) + 4, fm.height()),
                    Qt::AlignVCenter | Qt::AlignLeft, name);
    }
}

} // namespace rpcscope
