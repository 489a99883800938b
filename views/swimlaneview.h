#pragma once

#include "timelinepainter.h"

#include <QPoint>
#include <QWidget>

namespace rpcscope {

class TimelineModel;

// The live swimlane widget. Wheel zooms at the cursor, dragging pans, F fits the whole trace. Until the user
// zooms or pans, the view keeps fitting the trace as calls arrive (follow mode).
class SwimlaneView : public QWidget
{
    Q_OBJECT
public:
    explicit SwimlaneView(TimelineModel *model, QWidget *parent = nullptr);

    TimelinePainter &timelinePainter() { return m_painter; }
    bool followsLive() const { return m_follow; }

public slots:
    void fitAll();
    void zoomBy(double factor, double anchorX);

signals:
    void followChanged(bool following);

protected:
    void paintEvent(QPaintEvent *) override;
    void wheelEvent(QWheelEvent *) override;
    void mousePressEvent(QMouseEvent *) override;
    void mouseMoveEvent(QMouseEvent *) override;
    void mouseReleaseEvent(QMouseEvent *) override;
    void keyPressEvent(QKeyEvent *) override;
    void resizeEvent(QResizeEvent *) override;

private:
    void onTimelineChanged();
    void setFollow(bool on);
    void panPixels(double dx, double dy);
    void clampScroll();

    TimelineModel *m_model;
    TimelinePainter m_painter;
    bool m_follow = true;
    bool m_dragging = false;
    QPoint m_lastPos;
    int m_scrollY = 0;
};

} // namespace rpcscope
