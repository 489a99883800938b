#pragma once

#include "timelinepainter.h"
#include "zoomcontrol.h"

#include <QPoint>
#include <QWidget>

class QScrollBar;
class QTimer;

#include <functional>
#include <limits>
#include <utility>

namespace rpcscope {

class TimelineModel;

// The live swimlane widget.
// - Wheel scrolls the lanes, Ctrl+wheel zooms at the cursor, Shift+wheel pans time, dragging pans, Shift+drag
//   or right-drag zooms to a span; so does a plain drag across the rates strip.
// - Keys: +/- and W/S zoom, arrows and A/D pan, F fits the whole trace and keeps fitting it as calls arrive,
// L follows live
//   (keeps the zoom and scrolls with the newest calls), Home/End jump to the start/end of the trace.
// - Hovering an attempt shows its details; clicking selects it (attemptSelected).
class SwimlaneView : public QWidget
{
    Q_OBJECT
public:
    explicit SwimlaneView(TimelineModel *model, QWidget *parent = nullptr);

    TimelinePainter &timelinePainter() { return m_painter; }
    // The range, follow and live modes, scroll, hover and selection the painter draws.
    ZoomControl &zoomControl() { return m_zoom; }
    // True while the view fits the trace (F) or follows it live (L) as calls arrive.
    bool followsLive() const { return m_zoom.followsLive(); }
    bool isLive() const { return m_zoom.isLive(); }
    std::optional<std::pair<size_t, size_t>> selectedAttempt() const { return m_zoom.selection(); }
    // The text shown in the tooltip over an attempt.
    QString attemptToolTip(size_t call, size_t attempt) const;
    QString connectionToolTip(size_t connection) const;
    QString labEventToolTip(const LabEventRecord &event) const;
    // The tooltip of whatever is under the pointer (every hit kind), empty for none.
    QString toolTipFor(const TimelinePainter::Hit &hit) const;
    // Where the painter draws: the widget minus the vertical scroll bar when there is one.
    QRectF canvas() const;

public slots:
    void fitAll();
    void setLive(bool on);
    void zoomBy(double factor, double anchorX);
    void setRange(qint64 startNs, qint64 endNs);
    void goToStart();
    void goToEnd();
    void selectAttempt(int call, int attempt);
    // Scrolls the lanes and, when none of it lies in the range shown, the time (keeping the zoom) so that
    // the selected attempt is in view. The view then stops following new calls, as after any jump.
    void revealSelection();
    void setFilterText(const QString &text);
    void setGrouping(rpcscope::LaneGrouping grouping);
    void setDark(bool on);
    void setWorkshop(bool on);
    void setWallClock(bool on);
    // The rates strip under the ruler (calls/s, failures/s, retries/s, in flight); on by default.
    void setRates(bool on);
    // A replay's playhead line (absolute steady ns); nullopt removes it.
    void setPlayhead(std::optional<qint64> ns);
    // Row height: compact (a call on one row) or comfortable (a header and a row per attempt).
    void setDensity(rpcscope::LaneDensity density);
    // The label column's width at scale 1, clamped to what a drag may choose; 0 restores the default.
    void setLabelWidth(int width);
    // Compact lanes: shows the selected call's attempts a row each, or folds them back onto one row.
    void toggleSelectedCallExpanded();
    // Grouped lanes: folds every group into its row of counts, or unfolds them all when all are folded.
    void toggleGroupsFolded();
    void toggleGroupFolded(const QString &title);
    void toggleCallExpanded(size_t call);

signals:
    void followChanged(bool following);
    // The visible time range changed (zoom, pan, fit, live follow), in absolute steady ns.
    void rangeChanged(qint64 startNs, qint64 endNs);
    // The user selected an attempt, or cleared the selection (call = attempt = -1).
    void attemptSelected(int call, int attempt);
    // The visible range held no calls (after new data, a zoom or a pan), so the view fitted the whole run.
    void refitted(const QString &why);

protected:
    void paintEvent(QPaintEvent *) override;
    void wheelEvent(QWheelEvent *) override;
    void mousePressEvent(QMouseEvent *) override;
    void mouseDoubleClickEvent(QMouseEvent *) override;
    void mouseMoveEvent(QMouseEvent *) override;
    void mouseReleaseEvent(QMouseEvent *) override;
    void leaveEvent(QEvent *) override;
    void keyPressEvent(QKeyEvent *) override;
    void resizeEvent(QResizeEvent *) override;
    bool event(QEvent *) override;

private:
    void onTimelineChanged();
    // Hands the changes gathered from the model's row signals to the painter (once per batch).
    void flushBatchChanges();
    void onCallsEvicted(const std::vector<size_t> &evicted);
    void onModelReset();
    void panPixels(double dx, double dy);
    void clampScroll();
    // Where the lanes show, between the fixed header and the legend (widget y, top and bottom).
    std::pair<int, int> lanesBand() const;
    // A view never shows nothing: fits when the store has calls and the range holds none.
    void fitIfNothingInRange();
    void updateOptions(const std::function<void(TimelinePainter::Options &)> &change);
    // The first call lane at or below the top of the lanes (its store index), and its top less the scroll:
    // what the user looks at, kept in place when lanes change above it.
    std::optional<std::pair<size_t, double>> topCallLane() const;
    // Remembered at each paint (by call serial, with the scroll it was seen at), so that a batch adding lanes
    // above it (a new connection's lane, a group's header) does not push it down: onTimelineChanged() puts it
    // back where it was, unless the scroll moved since.
    struct TopLane
    {
        std::uint64_t serial = 0;
        double offset = 0;
        int scrollY = 0;
    };
    std::optional<TopLane> m_topLane;

    TimelineModel *m_model;
    ZoomControl m_zoom; // before m_painter, which reads it
    TimelinePainter m_painter;
    enum class Drag
    {
        None,
        Pan,
        RubberBand,
        LabelColumn // dragging the divider between the labels and the time axis
    } m_drag = Drag::None;
    // Whether pos is on the divider between the label column and the time axis (lanes only).
    bool onLabelDivider(const QPointF &pos) const;
    QPoint m_pressPos;
    QPoint m_lastPos;
    bool m_moved = false;
    // A label column the user dragged is kept; until then it gives way on narrow windows (fitLabelColumn).
    bool m_labelWidthDragged = false;
    void fitLabelColumn();
    qint64 m_bandStart = 0;
    QScrollBar *m_vbar = nullptr;
    QTimer *m_legendShrink = nullptr; // shrinks the legend to what is drawn once a row has been spare a while
    StoreChanges m_batchChanges{std::numeric_limits<size_t>::max(), {}, {}, false, {}}; // from row signals
};

} // namespace rpcscope
