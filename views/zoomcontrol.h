#pragma once

#include <QObject>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace rpcscope {

// What the swimlanes show and what is picked in them: the visible time range, whether it fits the trace
// (follow) or slides with the newest events (live), the vertical scroll, the hovered and selected attempt and
// the span being rubber-banded. The widget changes it, the painter reads it; neither keeps a copy. A plain
// QObject, so it is tested without a window.
class ZoomControl : public QObject
{
    Q_OBJECT
public:
    using AttemptRef = std::pair<size_t, size_t>; // (call, attempt) in the store
    // Narrowest range allowed: 1 µs across the view, far below any frame spacing.
    static constexpr qint64 kMinRangeNs = 1'000;

    explicit ZoomControl(QObject *parent = nullptr) : QObject(parent) {}

    qint64 rangeStart() const { return m_startNs; }
    qint64 rangeEnd() const { return m_endNs; }
    qint64 span() const { return m_endNs - m_startNs; }
    // Shows [startNs, endNs] (at least kMinRangeNs wide) without leaving follow or live: what fitting and
    // following do. Emits rangeChanged unless the range is the one shown.
    void setVisibleRange(qint64 startNs, qint64 endNs);
    // A range the user chose (zoom, pan, rubber band, a jump): the view stops following.
    void setRange(qint64 startNs, qint64 endNs);
    // Zooms by factor (< 1 zooms in) keeping the time under anchorNs where it is.
    void zoomBy(double factor, qint64 anchorNs);
    // Moves the range by shiftNs (negative: earlier).
    void panBy(qint64 shiftNs);
    // Fits [startNs, endNs] and keeps fitting the trace as it grows (F).
    void fitTo(qint64 startNs, qint64 endNs);
    // Keeps the zoom and puts latestNs near the right edge (live follow).
    void slideTo(qint64 latestNs);

    // F: fitting the trace as calls arrive; L: following the newest calls at the current zoom.
    bool isFollowing() const { return m_follow; }
    bool isLive() const { return m_live; }
    bool followsLive() const { return m_follow || m_live; }
    void setFollow(bool on);
    void setLive(bool on);

    int scrollY() const { return m_scrollY; }
    void setScrollY(int y) { m_scrollY = y; }

    std::optional<AttemptRef> hover() const { return m_hover; }
    void setHover(std::optional<AttemptRef> attempt) { m_hover = attempt; }
    std::optional<AttemptRef> selection() const { return m_selection; }
    // Emits selectionChanged when the selection changes.
    void setSelection(std::optional<AttemptRef> attempt);
    // The time span being rubber-banded, drawn over the lanes.
    std::optional<std::pair<qint64, qint64>> rubberBand() const { return m_rubberBand; }
    void setRubberBand(std::optional<std::pair<qint64, qint64>> span) { m_rubberBand = span; }
    // A replay's playhead (absolute steady ns), drawn as a line over the lanes; none outside a replay.
    std::optional<qint64> playheadNs() const { return m_playheadNs; }
    void setPlayheadNs(std::optional<qint64> ns) { m_playheadNs = ns; }

    // Retention evicted these calls (store indices before it, ascending): hover and selection follow their
    // call up the list, or go with it.
    void followEviction(const std::vector<size_t> &evicted);
    // The store was cleared: nothing is hovered or selected any more.
    void clearPicks();

signals:
    // The visible time range changed, in absolute steady ns.
    void rangeChanged(qint64 startNs, qint64 endNs);
    // followsLive() changed.
    void followChanged(bool following);
    // The selected attempt changed; call = attempt = -1 when cleared.
    void selectionChanged(int call, int attempt);

private:
    void setModes(bool follow, bool live);

    qint64 m_startNs = 0;
    qint64 m_endNs = 1'000'000'000;
    bool m_follow = true;
    bool m_live = false;
    int m_scrollY = 0;
    std::optional<AttemptRef> m_hover, m_selection;
    std::optional<std::pair<qint64, qint64>> m_rubberBand;
    std::optional<qint64> m_playheadNs;
};

} // namespace rpcscope
