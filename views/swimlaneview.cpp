#include "swimlaneview.h"

#include "timelinemodel.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

namespace rpcscope {

namespace {
// One wheel notch (120 units) zooms by this factor; 15% per notch keeps zooming smooth but quick.
constexpr double kZoomPerNotch = 1.15;
// Narrowest range allowed: 1 µs across the view, far below any frame spacing.
constexpr qint64 kMinRangeNs = 1'000;
} // namespace

SwimlaneView::SwimlaneView(TimelineModel *model, QWidget *parent)
    : QWidget(parent), m_model(model), m_painter(&model->store())
{
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setMinimumSize(640, 240);
    setAttribute(Qt::WA_OpaquePaintEvent);
    m_painter.setOptions({QString(), true});
    connect(m_model, &TimelineModel::timelineChanged, this, &SwimlaneView::onTimelineChanged);
    fitAll();
}

void SwimlaneView::onTimelineChanged()
{
    if (m_follow) {
        const auto [lo, hi] = m_painter.fullRange();
        m_painter.setRange(lo, hi);
    }
    clampScroll();
    update();
}

void SwimlaneView::setFollow(bool on)
{
    if (m_follow == on)
        return;
    m_follow = on;
    emit followChanged(on);
}

void SwimlaneView::fitAll()
{
    const auto [lo, hi] = m_painter.fullRange();
    m_painter.setRange(lo, hi);
    setFollow(true);
    update();
}

void SwimlaneView::zoomBy(double factor, double anchorX)
{
    const TimeAxis ax = m_painter.axis(rect());
    const qint64 anchor = ax.xToTime(std::max(anchorX, ax.left));
    const qint64 lo = m_painter.rangeStart();
    const qint64 hi = m_painter.rangeEnd();
    const qint64 newSpan = std::max<qint64>(kMinRangeNs, qint64(double(hi - lo) * factor));
    const double frac = double(anchor - lo) / double(hi - lo);
    const qint64 newLo = anchor - qint64(frac * double(newSpan));
    m_painter.setRange(newLo, newLo + newSpan);
    setFollow(false);
    update();
}

void SwimlaneView::panPixels(double dx, double dy)
{
    const TimeAxis ax = m_painter.axis(rect());
    const qint64 shift = qint64(dx * ax.nsPerPx);
    m_painter.setRange(m_painter.rangeStart() - shift, m_painter.rangeEnd() - shift);
    m_scrollY -= int(dy);
    clampScroll();
    if (dx != 0)
        setFollow(false);
    update();
}

void SwimlaneView::clampScroll()
{
    const int maxScroll = std::max(0, m_painter.contentHeight() - height());
    m_scrollY = std::clamp(m_scrollY, 0, maxScroll);
    m_painter.setScrollY(m_scrollY);
}

void SwimlaneView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    m_painter.paint(&p, rect());
}

void SwimlaneView::wheelEvent(QWheelEvent *e)
{
    const double notches = e->angleDelta().y() / 120.0;
    if (e->modifiers() & Qt::ShiftModifier) {
        panPixels(0, notches * 60);
    } else {
        zoomBy(std::pow(kZoomPerNotch, -notches), e->position().x());
    }
    e->accept();
}

void SwimlaneView::mousePressEvent(QMouseEvent *e)
{
    if (e->button() == Qt::LeftButton) {
        m_dragging = true;
        m_lastPos = e->position().toPoint();
        setCursor(Qt::ClosedHandCursor);
    }
}

void SwimlaneView::mouseMoveEvent(QMouseEvent *e)
{
    if (!m_dragging)
        return;
    const QPoint pos = e->position().toPoint();
    panPixels(pos.x() - m_lastPos.x(), pos.y() - m_lastPos.y());
    m_lastPos = pos;
}

void SwimlaneView::mouseReleaseEvent(QMouseEvent *e)
{
    if (e->button() == Qt::LeftButton) {
        m_dragging = false;
        unsetCursor();
    }
}

void SwimlaneView::keyPressEvent(QKeyEvent *e)
{
    const double centre = m_painter.axis(rect()).left + (width() - m_painter.labelWidth()) / 2.0;
    switch (e->key()) {
    case Qt::Key_F: fitAll(); break;
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1 / 1.5, centre); break;
    case Qt::Key_Minus: zoomBy(1.5, centre); break;
    case Qt::Key_Left: panPixels(width() / 8.0, 0); break;
    case Qt::Key_Right: panPixels(-width() / 8.0, 0); break;
    case Qt::Key_Up: panPixels(0, 60); break;
    case Qt::Key_Down: panPixels(0, -60); break;
    default: QWidget::keyPressEvent(e); return;
    }
    e->accept();
}

void SwimlaneView::resizeEvent(QResizeEvent *)
{
    clampScroll();
}

} // namespace rpcscope
