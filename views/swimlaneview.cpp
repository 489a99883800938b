#include "swimlaneview.h"

#include "stallprobe.h"
#include "timelinemodel.h"
#include "timelinetooltips.h"

#include <QCursor>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace rpcscope {

namespace {
// One wheel notch (120 units) zooms by this factor; 15% per notch keeps zooming smooth but quick.
constexpr double kZoomPerNotch = 1.15;
// A press that moves less than this is a click, not a drag.
constexpr int kClickSlopPx = 4;
} // namespace

SwimlaneView::SwimlaneView(TimelineModel *model, QWidget *parent)
    : QWidget(parent), m_model(model), m_painter(&model->store(), &m_zoom)
{
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setMinimumSize(640, 240);
    setAttribute(Qt::WA_OpaquePaintEvent);
    // No status tip: entering the view would wipe the status bar's messages (a refit, a save) and cover its
    // session line; the wheel and keys are in the first-start hint and Keys and mouse (F1).
    TimelinePainter::Options o;
    o.legend = true;
    o.rates = true;
    m_painter.setOptions(o);
    m_painter.setLegendRoomFromPaints(true);
    // A legend row nothing on screen has used for a second and a half goes back to the lanes.
    m_legendShrink = new QTimer(this);
    m_legendShrink->setSingleShot(true);
    m_legendShrink->setInterval(1500);
    connect(m_legendShrink, &QTimer::timeout, this, [this] {
        if (!m_painter.legendHasSpareRoom()) return;
        m_painter.shrinkLegendToDrawn();
        clampScroll();
        update();
    });
    m_vbar = new QScrollBar(Qt::Vertical, this);
    m_vbar->hide();
    connect(m_vbar, &QScrollBar::valueChanged, this, [this](int v) {
        if (v == m_zoom.scrollY()) return;
        m_zoom.setScrollY(v);
        clampScroll();
        update();
    });
    connect(&m_zoom, &ZoomControl::rangeChanged, this, &SwimlaneView::rangeChanged);
    connect(&m_zoom, &ZoomControl::followChanged, this, &SwimlaneView::followChanged);
    connect(&m_zoom, &ZoomControl::selectionChanged, this, &SwimlaneView::attemptSelected);
    // The model announces exactly which calls each batch touched; the painter updates its caches from those
    // (a full rebuild costs ~40 ms at 100,000 calls, far more than the 16 ms between batches).
    connect(m_model, &QAbstractItemModel::rowsInserted, this,
            [this](const QModelIndex &parent, int first, int last) {
                if (parent.isValid()) {
                    m_batchChanges.callsWithNewAttempts.push_back(size_t(parent.row()));
                    // Rows inserted before others: an attempt placed before attempts its call had.
                    if (const int rows = m_model->rowCount(parent); last + 1 < rows)
                        m_batchChanges.attemptsPlacedBefore.push_back(
                            {size_t(parent.row()), size_t(first), size_t(rows - (last - first + 1))});
                } else
                    m_batchChanges.firstNewCall = std::min(m_batchChanges.firstNewCall, size_t(first));
            });
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &from, const QModelIndex &to) {
                if (from.parent().isValid())
                    m_batchChanges.changedCalls.push_back(size_t(from.parent().row()));
                else
                    for (int r = from.row(); r <= to.row(); ++r)
                        m_batchChanges.changedCalls.push_back(size_t(r));
            });
    connect(m_model, &TimelineModel::timelineChanged, this, &SwimlaneView::onTimelineChanged);
    connect(m_model, &QAbstractItemModel::modelReset, this, &SwimlaneView::onModelReset);
    // Retention: the painter follows the eviction instead of rebuilding (which would cost a frame or more).
    connect(m_model, &TimelineModel::aboutToEvictCalls, this, [this](const std::vector<size_t> &evicted) {
        StallProbe probe("view: about to evict");
        flushBatchChanges();
        m_painter.prepareEviction(evicted);
    });
    connect(m_model, &TimelineModel::callsEvicted, this, &SwimlaneView::onCallsEvicted);
    fitAll();
}

void SwimlaneView::onCallsEvicted(const std::vector<size_t> &evicted)
{
    StallProbe probe("view: evicted");
    m_painter.applyEviction(evicted);
    // Hover and selection follow their call up, or go with it.
    m_zoom.followEviction(evicted);
    update();
}

void SwimlaneView::onModelReset()
{
    m_painter.invalidate();
    m_zoom.clearPicks();
}

void SwimlaneView::flushBatchChanges()
{
    StoreChanges ch = std::move(m_batchChanges);
    m_batchChanges = StoreChanges{std::numeric_limits<size_t>::max(), {}, {}, false, {}};
    ch.firstNewCall = std::min(ch.firstNewCall, m_model->store().calls().size());
    std::erase_if(ch.changedCalls, [&](size_t c) { return c >= ch.firstNewCall; });
    std::erase_if(ch.callsWithNewAttempts, [&](size_t c) { return c >= ch.firstNewCall; });
    for (auto *v : {&ch.changedCalls, &ch.callsWithNewAttempts}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    m_painter.noteChanges(m_model->store().generation() - 1, ch);
}

void SwimlaneView::onTimelineChanged()
{
    StallProbe probe("view: timeline changed");
    flushBatchChanges();
    if (m_zoom.isFollowing()) {
        const auto [lo, hi] = m_painter.fullRange();
        m_zoom.setVisibleRange(lo, hi);
    } else if (m_zoom.isLive()) {
        // Keep the zoom, slide the window so the newest event sits near the right edge, and show the newest
        // lanes.
        m_zoom.slideTo(m_model->store().latestNs());
        m_zoom.setScrollY(m_painter.contentHeight(width()));
    }
    if (!m_zoom.isLive() && m_topLane && m_topLane->scrollY == m_zoom.scrollY() && m_zoom.scrollY() > 0) {
        // Lanes that came in above what the user looks at (a new connection's lane, a group's header) do
        // not push it down.
        if (const auto index = m_model->store().indexOfSerial(m_topLane->serial))
            if (const double y = m_painter.laneY(*index); y >= 0) {
                m_zoom.setScrollY(std::max(0, int(std::lround(y - m_topLane->offset))));
                m_topLane->scrollY = m_zoom.scrollY(); // still the lane at the top, until a paint says
            }
    }
    if (!m_zoom.isFollowing()) fitIfNothingInRange();
    clampScroll();
    update();
}

void SwimlaneView::fitIfNothingInRange()
{
    const auto &calls = m_model->store().calls();
    if (calls.empty() || m_drag != Drag::None) return;
    const qint64 from = m_zoom.rangeStart(), to = m_zoom.rangeEnd(), latest = m_model->store().latestNs();
    // From the newest: a live or just-zoomed view usually holds one of the last calls, so this stops early.
    for (auto it = calls.rbegin(); it != calls.rend(); ++it)
        if (it->startNs() <= to && it->endNs().value_or(latest) >= from) return;
    // A connection's frames count too: zooming into a flood beside the calls is looking at something.
    // Frames arrive in time order closely enough for a bisection to find one in range.
    const auto &frames = m_model->store().frames();
    const auto first =
        std::partition_point(frames.begin(), frames.end(), [from](const auto &f) { return f.tNs < from; });
    if (first != frames.end() && first->firstNs() <= to) return;
    fitAll();
    emit refitted(QStringLiteral("Nothing in this range: fitted to the whole run"));
}

void SwimlaneView::setPlayhead(std::optional<qint64> ns)
{
    if (m_zoom.playheadNs() == ns) return;
    m_zoom.setPlayheadNs(ns);
    update();
}

void SwimlaneView::setLive(bool on)
{
    m_zoom.setLive(on);
    if (on) onTimelineChanged();
}

void SwimlaneView::setRange(qint64 startNs, qint64 endNs)
{
    m_zoom.setRange(startNs, endNs);
    update();
}

void SwimlaneView::fitAll()
{
    const auto [lo, hi] = m_painter.fullRange();
    m_zoom.fitTo(lo, hi);
    update();
}

void SwimlaneView::goToStart()
{
    const qint64 span = m_zoom.span();
    const qint64 lo = m_painter.fullRange().first;
    m_zoom.setScrollY(0);
    setRange(lo, lo + span);
    clampScroll();
}

void SwimlaneView::goToEnd()
{
    const qint64 span = m_zoom.span();
    const qint64 hi = m_painter.fullRange().second;
    m_zoom.setScrollY(m_painter.contentHeight(width()));
    setRange(hi - span, hi);
    clampScroll();
}

void SwimlaneView::zoomBy(double factor, double anchorX)
{
    const TimeAxis ax = m_painter.axis(canvas());
    m_zoom.zoomBy(factor, ax.xToTime(std::max(anchorX, ax.left)));
    fitIfNothingInRange();
    update();
}

void SwimlaneView::panPixels(double dx, double dy)
{
    if (dx != 0) {
        const TimeAxis ax = m_painter.axis(canvas());
        m_zoom.panBy(-qint64(dx * ax.nsPerPx));
        fitIfNothingInRange(); // not while dragging: the drag may be on its way back
    }
    m_zoom.setScrollY(m_zoom.scrollY() - int(dy));
    clampScroll();
    update();
}

std::pair<int, int> SwimlaneView::lanesBand() const
{
    return {m_painter.headerHeight(),
            height() - (m_painter.options().legend ? m_painter.legendHeight(width()) : 0)};
}

QRectF SwimlaneView::canvas() const
{
    return QRectF(0, 0, width() - (m_vbar->isVisible() ? m_vbar->width() : 0), height());
}

void SwimlaneView::clampScroll()
{
    const int maxScroll = std::max(0, m_painter.contentHeight(width()) - height());
    m_zoom.setScrollY(std::clamp(m_zoom.scrollY(), 0, maxScroll));
    // The scroll bar covers the lanes only, between the fixed header and the legend.
    const QSignalBlocker block(m_vbar);
    const auto [top, bottom] = lanesBand();
    const int lanes = std::max(1, bottom - top);
    m_vbar->setRange(0, maxScroll);
    m_vbar->setPageStep(lanes);
    m_vbar->setSingleStep(60);
    m_vbar->setValue(m_zoom.scrollY());
    m_vbar->setGeometry(width() - m_vbar->sizeHint().width(), top, m_vbar->sizeHint().width(), lanes);
    m_vbar->setVisible(maxScroll > 0);
}

void SwimlaneView::selectAttempt(int call, int attempt)
{
    std::optional<std::pair<size_t, size_t>> sel;
    const auto &calls = m_model->store().calls();
    if (call >= 0 && size_t(call) < calls.size() && attempt >= 0 &&
        size_t(attempt) < calls[call].attempts.size())
        sel = std::pair{size_t(call), size_t(attempt)};
    if (sel == m_zoom.selection()) return;
    m_zoom.setSelection(sel); // emits attemptSelected
    update();
}

void SwimlaneView::revealSelection()
{
    const auto sel = m_zoom.selection();
    if (!sel) return;
    const Call &call = m_model->store().calls()[sel->first];
    const Attempt &a = call.attempts[sel->second];
    const qint64 start = a.startNs, end = a.endNs.value_or(m_model->store().latestNs());
    if (end < m_zoom.rangeStart() || start > m_zoom.rangeEnd()) { // not in view at all
        const qint64 span = m_zoom.span();
        const qint64 from = end - start >= span ? start - span / 20 : (start + end) / 2 - span / 2;
        m_zoom.setRange(from, from + span);
    }
    const QRectF r = m_painter.attemptRect(sel->first, sel->second, canvas());
    if (!r.isEmpty()) {
        const auto [top, bottom] = lanesBand();
        const int margin = int(r.height());
        if (r.top() < top)
            m_zoom.setScrollY(m_zoom.scrollY() - int(top - r.top()) - margin);
        else if (r.bottom() > bottom)
            m_zoom.setScrollY(m_zoom.scrollY() + int(r.bottom() - bottom) + margin);
    }
    clampScroll();
    update();
}

void SwimlaneView::updateOptions(const std::function<void(TimelinePainter::Options &)> &change)
{
    // What the user was looking at stays in view when the lanes change size or place (workshop mode,
    // density, grouping, a filter): the selected attempt if it was in view, else the call lane at the top.
    const auto sel = m_zoom.selection();
    bool selectionShown = false;
    if (sel) {
        const auto [top, bottom] = lanesBand();
        const QRectF r = m_painter.attemptRect(sel->first, sel->second, canvas());
        selectionShown = !r.isEmpty() && r.bottom() > top && r.top() < bottom;
    }
    const auto top = topCallLane();
    TimelinePainter::Options o = m_painter.options();
    change(o);
    m_painter.setOptions(o);
    if (selectionShown) {
        revealSelection();
        return;
    }
    if (top && m_zoom.scrollY() > 0)
        if (const double y = m_painter.laneY(top->first); y >= 0)
            m_zoom.setScrollY(int(y - std::max(0.0, top->second)));
    clampScroll();
    update();
}

std::optional<std::pair<size_t, double>> SwimlaneView::topCallLane() const
{
    const TimelineLayout &layout = m_painter.layout();
    for (size_t b = layout.firstVisible(m_zoom.scrollY()); b < layout.blocks().size(); ++b)
        if (layout.blocks()[b].kind == LaneBlock::CallLane) {
            const size_t call = layout.blocks()[b].index;
            return std::pair(call, layout.laneY(call) - m_zoom.scrollY());
        }
    return std::nullopt;
}

void SwimlaneView::setFilterText(const QString &text)
{
    updateOptions([&](TimelinePainter::Options &o) { o.filter = LaneFilter::parse(text); });
}

// Nested by chain: double-clicking a call's header folds (or unfolds) the calls made while serving it.
void SwimlaneView::mouseDoubleClickEvent(QMouseEvent *e)
{
    const TimelinePainter::Hit hit = m_painter.hitTest(e->position(), canvas());
    if (hit.kind != TimelinePainter::Hit::CallHeader || hit.call >= m_model->store().calls().size())
        return QWidget::mouseDoubleClickEvent(e);
    const std::string key = m_model->store().calls()[hit.call].key;
    updateOptions([&](TimelinePainter::Options &o) {
        if (!o.filter.collapsed.erase(key)) o.filter.collapsed.insert(key);
    });
}

void SwimlaneView::setGrouping(LaneGrouping grouping)
{
    updateOptions([&](TimelinePainter::Options &o) { o.grouping = grouping; });
}

void SwimlaneView::setDark(bool on)
{
    updateOptions([&](TimelinePainter::Options &o) { o.dark = on; });
}

void SwimlaneView::setWorkshop(bool on)
{
    updateOptions([&](TimelinePainter::Options &o) { o.workshop = on; });
    fitLabelColumn();
}

void SwimlaneView::fitLabelColumn()
{
    // Workshop type on a projector's 1280 px would give the labels half the width; the time axis keeps at
    // least two thirds of it, and the labels elide.
    if (m_labelWidthDragged) return;
    const double scale = m_painter.options().workshop ? TimelinePainter::kWorkshopScale : 1.0;
    const int fits = int(canvas().width() / 3 / scale);
    const int w = fits >= LaneMetrics{}.labelWidth ? 0 : std::max(fits, TimelinePainter::kMinLabelWidth);
    if (w != m_painter.options().labelWidth)
        updateOptions([&](TimelinePainter::Options &o) { o.labelWidth = w; });
}

void SwimlaneView::setWallClock(bool on)
{
    updateOptions([&](TimelinePainter::Options &o) { o.wallClock = on; });
}

void SwimlaneView::setRates(bool on)
{
    updateOptions([&](TimelinePainter::Options &o) { o.rates = on; });
}

void SwimlaneView::setDensity(LaneDensity density)
{
    updateOptions([&](TimelinePainter::Options &o) { o.density = density; });
}

void SwimlaneView::setLabelWidth(int width)
{
    const int w =
        width <= 0 ? 0 : std::clamp(width, TimelinePainter::kMinLabelWidth, TimelinePainter::kMaxLabelWidth);
    if (w == m_painter.options().labelWidth) return;
    updateOptions([&](TimelinePainter::Options &o) { o.labelWidth = w; });
}

void SwimlaneView::toggleCallExpanded(size_t call)
{
    const auto &calls = m_model->store().calls();
    if (call >= calls.size() || m_painter.options().density != LaneDensity::Compact) return;
    const std::string key = calls[call].key;
    updateOptions([&](TimelinePainter::Options &o) {
        if (!o.filter.expanded.erase(key)) o.filter.expanded.insert(key);
    });
}

void SwimlaneView::toggleSelectedCallExpanded()
{
    if (const auto sel = m_zoom.selection()) toggleCallExpanded(sel->first);
}

void SwimlaneView::toggleGroupFolded(const QString &title)
{
    updateOptions([&](TimelinePainter::Options &o) {
        if (!o.filter.foldedGroups.erase(title)) o.filter.foldedGroups.insert(title);
    });
}

void SwimlaneView::toggleGroupsFolded()
{
    const auto &groups = m_painter.layout().groups();
    const bool allFolded =
        std::all_of(groups.begin(), groups.end(), [](const TimelineLayout::Group &g) { return g.folded; });
    updateOptions([&](TimelinePainter::Options &o) {
        if (allFolded)
            o.filter.foldedGroups.clear();
        else
            for (const TimelineLayout::Group &g : groups)
                o.filter.foldedGroups.insert(g.title);
    });
}

bool SwimlaneView::onLabelDivider(const QPointF &pos) const
{
    const double x = m_painter.axis(canvas()).left;
    return std::abs(pos.x() - x) <= 4 && pos.y() >= m_painter.headerHeight();
}

void SwimlaneView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    const int legend = m_painter.options().legend ? m_painter.legendHeight(width()) : 0;
    m_painter.paintCached(&p, canvas(), devicePixelRatioF());
    if (m_painter.options().legend && m_painter.legendHeight(width()) != legend)
        QTimer::singleShot(0, this, [this] { clampScroll(); }); // the lanes' room changed with the legend
    if (m_painter.legendHasSpareRoom() && !m_legendShrink->isActive()) m_legendShrink->start();
    m_topLane.reset();
    if (m_zoom.scrollY() > 0)
        if (const auto top = topCallLane(); top && top->first < m_model->store().calls().size())
            m_topLane = TopLane{m_model->store().calls()[top->first].serial, top->second, m_zoom.scrollY()};
    if (m_vbar->isVisible())
        p.fillRect(QRectF(canvas().right(), 0, width() - canvas().width(), height()),
                   m_painter.theme().background);
}

void SwimlaneView::wheelEvent(QWheelEvent *e)
{
    // Plain wheel scrolls the lanes (as every list does), Ctrl+wheel zooms at the cursor, Shift+wheel or a
    // sideways swipe pans time.
    const QPoint delta = e->angleDelta();
    const double notches = delta.y() / 120.0;
    if (e->modifiers() & Qt::ControlModifier) {
        zoomBy(std::pow(kZoomPerNotch, -notches), e->position().x());
    } else if (e->modifiers() & Qt::ShiftModifier) {
        // Some platforms turn Shift+wheel into a horizontal delta.
        const double along = (delta.y() != 0 ? delta.y() : delta.x()) / 120.0;
        panPixels(along * width() / 10.0, 0);
    } else if (delta.x() != 0 && std::abs(delta.x()) > std::abs(delta.y())) {
        panPixels(delta.x() / 120.0 * width() / 10.0, 0);
    } else {
        panPixels(0, notches * 60);
    }
    e->accept();
}

void SwimlaneView::mousePressEvent(QMouseEvent *e)
{
    m_pressPos = m_lastPos = e->position().toPoint();
    m_moved = false;
    // A drag across the rates strip picks a range too, without Shift: the strip has nothing to pan.
    const bool onStrip = m_painter.rateStripRect(canvas()).contains(e->position()) &&
                         e->position().x() >= m_painter.axis(canvas()).left;
    const bool band = e->button() == Qt::RightButton ||
                      (e->button() == Qt::LeftButton && ((e->modifiers() & Qt::ShiftModifier) || onStrip));
    if (e->button() == Qt::LeftButton && !band && onLabelDivider(e->position())) {
        m_drag = Drag::LabelColumn;
        setCursor(Qt::SplitHCursor);
    } else if (band) {
        m_drag = Drag::RubberBand;
        m_bandStart =
            m_painter.axis(canvas()).xToTime(std::max<double>(m_pressPos.x(), m_painter.labelWidth()));
        setCursor(Qt::SizeHorCursor);
    } else if (e->button() == Qt::LeftButton) {
        m_drag = Drag::Pan;
    }
}

void SwimlaneView::mouseMoveEvent(QMouseEvent *e)
{
    const QPoint pos = e->position().toPoint();
    if (m_drag == Drag::None) {
        const TimelinePainter::Hit hit = m_painter.hitTest(pos, canvas());
        // The strip's bucket under the pointer is outlined, so the tooltip's numbers have a place.
        std::optional<std::pair<qint64, qint64>> bucket;
        if (hit.kind == TimelinePainter::Hit::RateStrip && hit.toNs > hit.fromNs)
            bucket = std::pair{hit.fromNs, hit.toNs};
        if (bucket != m_painter.rateHover()) {
            m_painter.setRateHover(bucket);
            update();
        }
        std::optional<std::pair<size_t, size_t>> hover;
        if (hit.kind == TimelinePainter::Hit::Attempt) hover = std::pair{hit.call, hit.attempt};
        if (hover != m_zoom.hover()) {
            m_zoom.setHover(hover);
            setCursor(hover ? Qt::PointingHandCursor : Qt::ArrowCursor);
            update();
        }
        if (!hover)
            setCursor(onLabelDivider(pos) ? Qt::SplitHCursor
                      : hit.kind == TimelinePainter::Hit::RateStrip &&
                              pos.x() >= m_painter.axis(canvas()).left
                          ? Qt::CrossCursor
                          : Qt::ArrowCursor);
        return;
    }
    if (m_drag == Drag::LabelColumn) {
        m_labelWidthDragged = true;
        setLabelWidth(int(std::lround(pos.x() / m_painter.metrics().scale)));
        return;
    }
    if ((pos - m_pressPos).manhattanLength() >= kClickSlopPx) m_moved = true;
    if (m_drag == Drag::Pan && m_moved) {
        setCursor(Qt::ClosedHandCursor);
        panPixels(pos.x() - m_lastPos.x(), pos.y() - m_lastPos.y());
    } else if (m_drag == Drag::RubberBand) {
        const qint64 t = m_painter.axis(canvas()).xToTime(std::max<double>(pos.x(), m_painter.labelWidth()));
        m_zoom.setRubberBand(std::pair{m_bandStart, t});
        update();
    }
    m_lastPos = pos;
}

void SwimlaneView::mouseReleaseEvent(QMouseEvent *e)
{
    const QPoint pos = e->position().toPoint();
    if (m_drag == Drag::RubberBand) {
        m_zoom.setRubberBand(std::nullopt);
        if (m_moved) {
            const qint64 t =
                m_painter.axis(canvas()).xToTime(std::max<double>(pos.x(), m_painter.labelWidth()));
            setRange(std::min(m_bandStart, t), std::max(m_bandStart, t));
        }
        update();
    } else if (m_drag == Drag::Pan && !m_moved) {
        const TimelinePainter::Hit hit = m_painter.hitTest(pos, canvas());
        if (hit.kind == TimelinePainter::Hit::Attempt)
            selectAttempt(int(hit.call), int(hit.attempt));
        else if (hit.kind == TimelinePainter::Hit::CallHeader)
            selectAttempt(int(hit.call), int(m_model->store().calls()[hit.call].attempts.size()) - 1);
        else
            selectAttempt(-1, -1);
        // Compact lanes: a click on a call's name shows its attempts a row each, or folds them back; on a
        // group's header it folds the group into one row of counts, or shows its calls again.
        const bool overLabel = pos.x() < m_painter.axis(canvas()).left;
        if (hit.kind == TimelinePainter::Hit::CallHeader && overLabel) {
            const Call &call = m_model->store().calls()[hit.call];
            if ((m_painter.layout().oneRow(hit.call) && call.attempts.size() > 1) ||
                m_painter.options().filter.expanded.count(call.key))
                toggleCallExpanded(hit.call);
        } else if (hit.kind == TimelinePainter::Hit::GroupHeader &&
                   hit.group < m_painter.layout().groups().size()) {
            toggleGroupFolded(m_painter.layout().groups()[hit.group].title);
        } else if (hit.kind == TimelinePainter::Hit::Connection && overLabel &&
                   m_painter.options().grouping == LaneGrouping::Connection &&
                   hit.connection < m_model->store().connections().size()) {
            toggleGroupFolded(
                QStringLiteral("connection %1").arg(m_model->store().connections()[hit.connection].id));
        }
    }
    m_drag = Drag::None;
    unsetCursor();
}

void SwimlaneView::leaveEvent(QEvent *)
{
    if (m_painter.rateHover()) {
        m_painter.setRateHover(std::nullopt);
        update();
    }
    if (m_zoom.hover()) {
        m_zoom.setHover(std::nullopt);
        update();
    }
}

QString SwimlaneView::attemptToolTip(size_t call, size_t attempt) const
{
    return TimelineToolTips::attempt(m_model->store(), call, attempt);
}

QString SwimlaneView::labEventToolTip(const LabEventRecord &event) const
{
    return TimelineToolTips::labEvent(m_model->store(), event);
}

QString SwimlaneView::connectionToolTip(size_t connection) const
{
    return TimelineToolTips::connection(m_model->store(), connection);
}

QString SwimlaneView::toolTipFor(const TimelinePainter::Hit &hit) const
{
    const TimelineStore &store = m_model->store();
    switch (hit.kind) {
    case TimelinePainter::Hit::Attempt:
        return attemptToolTip(hit.call, hit.attempt);
    case TimelinePainter::Hit::LabEvent:
        return hit.labEvent ? labEventToolTip(*hit.labEvent) : QString();
    case TimelinePainter::Hit::Connection:
        return connectionToolTip(hit.connection);
    case TimelinePainter::Hit::CallHeader:
        return TimelineToolTips::call(store, hit.call);
    case TimelinePainter::Hit::Gap:
        return TimelineToolTips::gap(store, hit.call, hit.attempt, m_painter.gapEnvelopes());
    case TimelinePainter::Hit::Deadline:
        return TimelineToolTips::deadline(store, hit.call);
    case TimelinePainter::Hit::BandSegment:
        return TimelineToolTips::bandSegment(store, hit.state, hit.fromNs, hit.toNs, hit.current);
    case TimelinePainter::Hit::MarkerCluster:
        return TimelineToolTips::cluster(store, hit.events);
    case TimelinePainter::Hit::GroupHeader:
        if (hit.group < m_painter.layout().groups().size()) {
            const TimelineLayout::Group &g = m_painter.layout().groups()[hit.group];
            return QStringLiteral("%1\n%2 calls, %3 failed").arg(g.title).arg(g.calls).arg(g.failed);
        }
        break;
    case TimelinePainter::Hit::RateStrip:
        return m_painter.rateStripToolTip(hit.rect.center().x(), canvas());
    case TimelinePainter::Hit::None:
        break;
    }
    return {};
}

bool SwimlaneView::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(e);
        const TimelinePainter::Hit hit = m_painter.hitTest(help->pos(), canvas());
        QString text = onLabelDivider(help->pos()) && hit.kind != TimelinePainter::Hit::Attempt
                           ? QStringLiteral("Drag to resize the label column")
                           : toolTipFor(hit);
        if (hit.kind == TimelinePainter::Hit::GroupHeader)
            text += QStringLiteral("\nClick to fold this group into one row of counts, or to show its calls "
                                   "again (G: every group)");
        else if (hit.kind == TimelinePainter::Hit::CallHeader && m_painter.layout().oneRow(hit.call) &&
                 m_model->store().calls()[hit.call].attempts.size() > 1)
            text += QStringLiteral("\nClick the name to show each attempt on its own row (E)");
        if (!text.isEmpty())
            QToolTip::showText(help->globalPos(), text.trimmed(), this, hit.rect.toAlignedRect());
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

void SwimlaneView::keyPressEvent(QKeyEvent *e)
{
    const double centre = m_painter.axis(canvas()).left + (width() - m_painter.labelWidth()) / 2.0;
    switch (e->key()) {
    case Qt::Key_F:
        fitAll();
        break;
    case Qt::Key_L:
        setLive(!m_zoom.isLive());
        break;
    case Qt::Key_Home:
        goToStart();
        break;
    case Qt::Key_End:
        goToEnd();
        break;
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoomBy(1 / 1.5, centre);
        break;
    case Qt::Key_Minus:
        zoomBy(1.5, centre);
        break;
    // W/S zoom and A/D pan as in Perfetto and chrome://tracing; zooming keeps the time under the mouse.
    case Qt::Key_W:
    case Qt::Key_S: {
        const QPoint mouse = mapFromGlobal(QCursor::pos());
        const double at = rect().contains(mouse) && mouse.x() > m_painter.labelWidth() ? mouse.x() : centre;
        zoomBy(e->key() == Qt::Key_W ? 1 / 1.5 : 1.5, at);
        break;
    }
    case Qt::Key_A:
        panPixels(width() / 8.0, 0);
        break;
    case Qt::Key_D:
        panPixels(-width() / 8.0, 0);
        break;
    case Qt::Key_Left:
        panPixels(width() / 8.0, 0);
        break;
    case Qt::Key_Right:
        panPixels(-width() / 8.0, 0);
        break;
    case Qt::Key_Up:
        panPixels(0, 60);
        break;
    case Qt::Key_Down:
        panPixels(0, -60);
        break;
    case Qt::Key_PageUp:
        panPixels(0, height() * 0.8);
        break;
    case Qt::Key_PageDown:
        panPixels(0, -height() * 0.8);
        break;
    case Qt::Key_Escape:
        selectAttempt(-1, -1);
        break;
    default:
        QWidget::keyPressEvent(e);
        return;
    }
    e->accept();
}

void SwimlaneView::resizeEvent(QResizeEvent *)
{
    // The legend may take a quarter of the view; beyond that it shrinks to its plain size.
    m_painter.setLegendBudget(height() / 4);
    // Connection lanes may take a third of it; more connections than fit share one lane.
    m_painter.setConnectionLaneBudget(height() / 3);
    fitLabelColumn();
    clampScroll();
}

} // namespace rpcscope
