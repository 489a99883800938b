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
    const Attempt &a = store.calls()[call].attempts[attempt];
    const bool one = layout.oneRow(call);
    const double top = lanesTop - scrollY() + y + metrics.attemptTop(one, attempt);
    const double barTop = top + metrics.barOffset(one);
    const double x1 = axis.timeToX(a.startNs);
    const double x2 = std::max(axis.timeToX(a.endNs.value_or(store.latestNs())), x1 + 3);
    return QRectF(x1, barTop, x2 - x1, metrics.barSize(one));
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
