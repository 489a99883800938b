#include "paintcontext.h"

#include <QGuiApplication>
#include <algorithm>

namespace rpcscope {

QFont PaintContext::scaledFont(double px, double scale, bool bold)
{
    QFont f = QGuiApplication::font();
    f.setPixelSize(std::max(6, int(px * scale + 0.5)));
    f.setBold(bold);
    return f;
}

double PaintContext::laneY(size_t call) const
{
    return layout.laneY(call);
}

QRectF PaintContext::attemptRect(size_t call, size_t attempt) const
{
    const double y = laneY(call);
    if (y < 0 || call >= store.calls().size() || attempt >= store.calls()[call].attempts.size()) return {};
    const bool one = layout.oneRow(call);
    const double top = lanesTop - scrollY() + y + metrics.attemptTop(one, attempt);
    const double barTop = top + metrics.barOffset(one);
    const auto [x1, x2] = attemptSpan(store.calls()[call], attempt);
    return QRectF(x1, barTop, x2 - x1, metrics.barSize(one));
}

bool PaintContext::widenedMark(const Attempt &a)
{
    return a.injected() || (a.endNs && *a.endNs <= a.startNs && a.status.value_or(-1) != 0);
}

std::pair<double, double> PaintContext::attemptSpan(const Call &call, size_t k) const
{
    const Attempt &a = call.attempts[k];
    const double x1 = axis.timeToX(a.startNs);
    const double x2 = std::max(axis.timeToX(a.endNs.value_or(store.latestNs())), x1 + 3);
    if (!widenedMark(a)) return {x1, x2};
    // Widened to the right, where the backoff gap after it starts, but never over the next attempt: 2 px
    // short of it, so two marks never read as one.
    double wide = x1 + kMinMarkPx * metrics.scale;
    if (k + 1 < call.attempts.size()) wide = std::min(wide, axis.timeToX(call.attempts[k + 1].startNs) - 2);
    return {x1, std::max(x2, wide)};
}

QRectF PaintContext::attemptRowRect(size_t call, size_t attempt) const
{
    const double y = laneY(call);
    if (y < 0) return {};
    const bool one = layout.oneRow(call);
    return QRectF(rect.left(), lanesTop - scrollY() + y + metrics.attemptTop(one, attempt), rect.width(),
                  metrics.attemptRowHeight(one));
}

} // namespace rpcscope
