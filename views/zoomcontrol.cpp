#include "zoomcontrol.h"

#include "timelinestore.h"

#include <algorithm>

namespace rpcscope {

void ZoomControl::setVisibleRange(qint64 startNs, qint64 endNs)
{
    // Clamped before it is compared: a range narrower than the minimum asked again is no change.
    endNs = std::max(endNs, startNs + kMinRangeNs);
    if (startNs == m_startNs && endNs == m_endNs) return;
    m_startNs = startNs;
    m_endNs = endNs;
    emit rangeChanged(m_startNs, m_endNs);
}

void ZoomControl::setRange(qint64 startNs, qint64 endNs)
{
    if (endNs < startNs) std::swap(startNs, endNs);
    setVisibleRange(startNs, endNs);
    setModes(false, false);
}

void ZoomControl::zoomBy(double factor, qint64 anchorNs)
{
    const qint64 lo = m_startNs;
    const qint64 hi = m_endNs;
    const qint64 newSpan = std::max<qint64>(kMinRangeNs, qint64(double(hi - lo) * factor));
    const double frac = double(anchorNs - lo) / double(hi - lo);
    const qint64 newLo = anchorNs - qint64(frac * double(newSpan));
    setRange(newLo, newLo + newSpan);
}

void ZoomControl::panBy(qint64 shiftNs)
{
    setRange(m_startNs + shiftNs, m_endNs + shiftNs);
}

void ZoomControl::fitTo(qint64 startNs, qint64 endNs)
{
    setVisibleRange(startNs, endNs);
    setFollow(true);
}

void ZoomControl::slideTo(qint64 latestNs)
{
    const qint64 s = span();
    const qint64 latest = latestNs + s / 20;
    setVisibleRange(latest - s, latest);
}

void ZoomControl::setModes(bool follow, bool live)
{
    const bool before = followsLive();
    m_follow = follow;
    m_live = live;
    if (before != followsLive()) emit followChanged(followsLive());
}

void ZoomControl::setFollow(bool on)
{
    setModes(on, on ? false : m_live);
}

void ZoomControl::setLive(bool on)
{
    setModes(on ? false : m_follow, on);
}

void ZoomControl::setSelection(std::optional<AttemptRef> attempt)
{
    if (attempt == m_selection) return;
    m_selection = attempt;
    emit selectionChanged(attempt ? int(attempt->first) : -1, attempt ? int(attempt->second) : -1);
}

void ZoomControl::followEviction(const std::vector<size_t> &evicted)
{
    const EvictionShift shift(evicted);
    auto follow = [&](std::optional<AttemptRef> at) {
        if (at) {
            const size_t to = shift(at->first);
            if (to == SIZE_MAX)
                at.reset();
            else
                at->first = to;
        }
        return at;
    };
    m_hover = follow(m_hover);
    setSelection(follow(m_selection));
}

void ZoomControl::clearPicks()
{
    m_hover.reset();
    setSelection(std::nullopt);
}

} // namespace rpcscope
