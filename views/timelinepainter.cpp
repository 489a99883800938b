#include "timelinepainter.h"

#include "connectionlanepass.h"
#include "gapenvelopes.h"
#include "grouplanepass.h"
#include "markerspass.h"
#include "paintkit.h"
#include "ratestrippass.h"
#include "stallprobe.h"
#include "timelinestyle.h"

#include <QPainter>
#include <algorithm>

namespace rpcscope {

namespace {
// Below this many calls every lane fits a screen or two and the overview would only repeat them.
constexpr size_t kOverviewMinCalls = 50;
} // namespace

TimelinePainter::TimelinePainter(const TimelineStore *store, ZoomControl *zoom)
    : m_store(store), m_ownZoom(zoom ? nullptr : std::make_unique<ZoomControl>()),
      m_zoom(zoom ? zoom : m_ownZoom.get()), m_metrics(LaneMetrics::scaled(1.0, m_options.density)),
      m_index(store)
{
    m_index.setLayoutOptions(m_options.grouping, m_options.filter, m_options.connectionLanes, m_metrics,
                             true);
}

QColor TimelinePainter::statusColor(const Attempt &a)
{
    return rpcscope::statusColor(a);
}

const TimelineTheme &TimelinePainter::theme() const
{
    return m_options.dark ? TimelineTheme::dark() : TimelineTheme::light();
}

void TimelinePainter::setOptions(const Options &o)
{
    const bool layoutChange = o.grouping != m_options.grouping || !(o.filter == m_options.filter) ||
                              o.workshop != m_options.workshop ||
                              o.connectionLanes != m_options.connectionLanes ||
                              o.density != m_options.density;
    m_options = o;
    m_metrics = LaneMetrics::scaled(o.workshop ? kWorkshopScale : 1.0, o.density, o.labelWidth);
    m_index.setLayoutOptions(o.grouping, o.filter, o.connectionLanes, m_metrics, layoutChange);
    m_index.setMaxConnectionLanes(maxConnectionLanes());
    m_index.setRatesEnabled(o.rates);
    m_imageKey.reset();
}

size_t TimelinePainter::maxConnectionLanes() const
{
    if (m_connectionLaneBudget <= 0) return kMaxSeparateConnections;
    const int lane = m_metrics.connectionHeight + m_metrics.callSpacing;
    return std::clamp<size_t>(size_t(std::max(0, m_connectionLaneBudget / std::max(1, lane))), 1,
                              kMaxSeparateConnections);
}

void TimelinePainter::setConnectionLaneBudget(int height)
{
    if (height == m_connectionLaneBudget) return;
    m_connectionLaneBudget = height;
    m_index.setMaxConnectionLanes(maxConnectionLanes());
    m_imageKey.reset();
}

void TimelinePainter::setGapEnvelopes(std::shared_ptr<const GapEnvelopes> envelopes)
{
    m_options.gapEnvelopes = std::move(envelopes);
    m_imageKey.reset();
}

void TimelinePainter::invalidate()
{
    m_index.invalidate();
    m_index.resetRates();
    m_ruler.invalidate();
    m_imageKey.reset();
}

void TimelinePainter::applyEviction(const std::vector<size_t> &evicted)
{
    m_index.applyEviction(evicted);
    m_imageKey.reset();
    m_ruler.invalidate();
}

const TimelineLayout &TimelinePainter::layout() const
{
    return m_index.layout();
}

std::pair<qint64, qint64> TimelinePainter::fullRange() const
{
    m_index.refresh();
    auto range = m_index.fullRange();
    // The ranges a config gives (the Policy check) are kept in view as a lab call's own are (TimelineIndex):
    // a retry that came early shows how early against the whole of its range.
    if (const GapEnvelopes *given = m_options.gapEnvelopes.get(); given && given->reachNs() > range.second)
        range.second = given->reachNs() + std::max<qint64>((given->reachNs() - range.first) / 25, 1'000'000);
    return range;
}

bool TimelinePainter::hasPolicyBand() const
{
    m_index.refresh();
    return m_index.hasBreaker() || !m_index.bandMarkers().empty();
}

bool TimelinePainter::hasOverview() const
{
    return m_store->calls().size() >= kOverviewMinCalls;
}

bool TimelinePainter::hasRates() const
{
    if (!m_options.rates) return false;
    m_index.refresh();
    return !m_index.rates().empty();
}

int TimelinePainter::headerHeight() const
{
    return m_metrics.rulerHeight + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) +
           (hasPolicyBand() ? m_metrics.bandHeight : 0) + (hasOverview() ? m_metrics.overviewHeight : 0) +
           (hasRates() ? RateStripPass::height(rateStripScale()) : 0);
}

QRectF TimelinePainter::rateStripRect(const QRectF &rect) const
{
    if (!hasRates()) return {};
    const double top = rect.top() + (m_options.title.isEmpty() ? 0 : m_metrics.titleHeight) +
                       m_metrics.rulerHeight + (hasPolicyBand() ? m_metrics.bandHeight : 0);
    return QRectF(rect.left(), top, rect.width(), RateStripPass::height(rateStripScale()));
}

double TimelinePainter::rateStripScale() const
{
    const double s = m_metrics.scale;
    if (m_legendBudget <= 0 || s <= 1) return s;
    return std::clamp(double(m_legendBudget) / RateStripPass::height(1.0), 1.0, s);
}

QString TimelinePainter::rateStripToolTip(double x, const QRectF &rect) const
{
    return hasRates() ? RateStripPass::toolTip(context(rect), x) : QString();
}

double TimelinePainter::legendScale(double width) const
{
    const double s = m_metrics.scale;
    if (m_legendBudget <= 0 || s <= 1) return s;
    const std::uint32_t use = legendRoom();
    const std::tuple key{width, s, use, m_legendBudget};
    if (m_legendScaleFor != key) {
        // Workshop type at the back of the room: a smaller legend, not a plain one, when the full size
        // would take more than its budget.
        double fit = 1.0;
        for (int tenths = int(s * 10 + 0.5); tenths > 10; --tenths)
            if (m_legend.height(width, tenths / 10.0, use) <= m_legendBudget) {
                fit = std::min(s, tenths / 10.0);
                break;
            }
        m_legendScale = fit;
        m_legendScaleFor = key;
    }
    return m_legendScale;
}

void TimelinePainter::setLegendRoomFromPaints(bool on)
{
    m_legendFromPaints = on;
    m_imageKey.reset();
}

std::uint32_t TimelinePainter::legendRoom() const
{
    if (m_legendRoomFor) return *m_legendRoomFor;
    if (!m_legendFromPaints) return m_index.legendUse();
    if (m_legendSeenSince != m_store->clearedAt()) {
        m_legendSeenSince = m_store->clearedAt();
        m_legendSeen = 0;
    }
    return m_legendSeen;
}

void TimelinePainter::shrinkLegendToDrawn()
{
    legendRoom(); // follows a clear first
    m_legendSeen = m_drawn;
    m_legendSpare = false;
    m_imageKey.reset();
}

int TimelinePainter::legendHeight(double width) const
{
    m_index.refresh();
    // Room for what a picture of the store may draw (the entries are what it did draw), or in the widget for
    // what it has drawn, so the lanes do not move when the entries change with the range or the scroll.
    return m_legend.height(width, legendScale(width), legendRoom());
}

int TimelinePainter::contentHeight(double width) const
{
    int h = headerHeight() + int(layout().height());
    if (m_options.legend) h += legendHeight(width);
    return h;
}

TimeAxis TimelinePainter::axis(const QRectF &rect) const
{
    const double width = std::max(10.0, rect.width() - m_metrics.labelWidth - 16);
    return {rangeStart(), double(rangeEnd() - rangeStart()) / width, rect.left() + m_metrics.labelWidth};
}

PaintContext TimelinePainter::context(const QRectF &rect) const
{
    const TimelineLayout &lay = m_index.layout();
    const double top = rect.top() + headerHeight();
    const double bottom = rect.bottom() - (m_options.legend ? legendHeight(rect.width()) : 0);
    PaintContext ctx{*m_store, m_index,    lay, m_options, m_metrics,       theme(),      *m_zoom,
                     rect,     axis(rect), top, bottom,    hasPolicyBand(), hasOverview()};
    ctx.rates = hasRates();
    ctx.rateScale = rateStripScale();
    ctx.envelopes = m_options.gapEnvelopes.get();
    return ctx;
}

double TimelinePainter::laneY(size_t call) const
{
    return layout().laneY(call);
}

QRectF TimelinePainter::attemptRect(size_t call, size_t attempt, const QRectF &rect) const
{
    return context(rect).attemptRect(call, attempt);
}

std::vector<qint64> TimelinePainter::rulerTicks(const QRectF &rect) const
{
    const PaintContext ctx = context(rect);
    return rpcscope::rulerTicks(ctx, rulerStepNs(ctx));
}

std::vector<QRectF> TimelinePainter::rulerLabelRects(const QRectF &rect) const
{
    const PaintContext ctx = context(rect);
    const double rulerTop = rect.top() + (ctx.options.title.isEmpty() ? 0 : ctx.metrics.titleHeight);
    std::vector<QRectF> out;
    for (const RulerPass::TickLabel &l : RulerPass::tickLabels(ctx, rulerTop))
        out.push_back(l.rect);
    return out;
}

QString TimelinePainter::rulerCaption(const QRectF &rect, QRectF *box) const
{
    const PaintContext ctx = context(rect);
    if (box) *box = RulerPass::captionRect(ctx);
    return RulerPass::caption(ctx);
}

void TimelinePainter::paint(QPainter *p, const QRectF &rect)
{
    PaintContext ctx = context(rect);
    std::uint32_t drawn = 0;
    ctx.drawn = &drawn;
    m_callLanes.begin();
    p->save();
    p->setRenderHint(QPainter::Antialiasing, false);
    p->fillRect(rect, ctx.theme.background);
    // Lanes first, clipped below the fixed header, then the header on top.
    paintLanes(p, ctx);
    m_ruler.paint(p, ctx);
    m_drawn = drawn;
    if (m_options.legend)
        LegendPass::paint(p, ctx,
                          QRectF(rect.left(), ctx.lanesBottom, rect.width(), rect.bottom() - ctx.lanesBottom),
                          drawn, legendScale(rect.width()));
    p->restore();
}

void TimelinePainter::paintLanes(QPainter *p, const PaintContext &ctx)
{
    const QRectF &rect = ctx.rect;
    const double top = ctx.lanesTop;
    const double bottom = ctx.lanesBottom;
    const int scrollY = ctx.scrollY();
    p->save();
    p->setClipRect(QRectF(rect.left(), top, rect.width(), bottom - top));
    const auto &blocks = ctx.layout.blocks();
    // Cull: binary-search the first lane in view, stop at the first one below it.
    for (size_t i = ctx.layout.firstVisible(scrollY); i < blocks.size(); ++i) {
        const LaneBlock &b = blocks[i];
        const double y = top - scrollY + b.y;
        if (y > bottom) break;
        switch (b.kind) {
        case LaneBlock::GroupHeader:
            ConnectionLanePass::paintGroupHeader(p, ctx, b.index, y);
            break;
        case LaneBlock::ConnectionLane:
            ConnectionLanePass::paint(p, ctx, b.index, y);
            break;
        case LaneBlock::CallLane:
            m_callLanes.paint(p, ctx, b.index, y);
            break;
        case LaneBlock::GroupAggregate:
            GroupLanePass::paint(p, ctx, b.index, y);
            break;
        }
    }
    const auto &groups = ctx.layout.groups();
    if (ctx.layout.callLanes() == 0 &&
        std::none_of(groups.begin(), groups.end(), [](const TimelineLayout::Group &g) { return g.folded; })) {
        p->setPen(ctx.theme.muted);
        p->setFont(ctx.font(15));
        const double y = top - scrollY + ctx.layout.height();
        p->drawText(QRectF(rect.left(), y, rect.width(), 80), Qt::AlignCenter,
                    m_store->calls().empty() ? QStringLiteral("No gRPC calls captured yet")
                                             : QStringLiteral("No call matches the filter"));
    }
    p->restore();
}

void TimelinePainter::paintCached(QPainter *p, const QRectF &rect, qreal dpr)
{
    {
        StallProbe probe("paint: index refresh");
        m_index.refresh();
    }
    const ImageKey key{m_store->generation(), rangeStart(), rangeEnd(), scrollY(), rect.size().toSize(), dpr};
    if (m_imageKey != key || m_index.layoutDirty()) {
        const QSize px = (rect.size() * dpr).toSize();
        if (m_image.size() != px) m_image = QImage(px, QImage::Format_ARGB32_Premultiplied);
        m_image.setDevicePixelRatio(dpr);
        QPainter ip(&m_image);
        ip.setFont(p->font());
        StallProbe probe("paint: image");
        paint(&ip, QRectF(QPointF(0, 0), rect.size()));
        if (m_options.legend && m_legendFromPaints && (m_drawn & ~legendRoom())) {
            // An entry the legend had no room for: the room grows and this picture is painted again.
            m_legendSeen |= m_drawn;
            paint(&ip, QRectF(QPointF(0, 0), rect.size()));
        }
        if (m_options.legend && m_legendFromPaints) m_legendSpare = (legendRoom() & ~m_drawn) != 0;
        m_imageKey = key;
    }
    p->drawImage(rect.topLeft(), m_image);
    StallProbe probe("paint: overlay");
    MarkersPass::paintOverlay(p, context(rect));
    if (m_rateHover)
        if (const QRectF strip = rateStripRect(rect); !strip.isEmpty())
            RateStripPass::paintHover(p, context(rect), strip, *m_rateHover);
}

} // namespace rpcscope
