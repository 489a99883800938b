#pragma once

#include <QPointF>
#include <QRectF>
#include <QStringList>
#include <cstdint>
#include <tuple>
#include <vector>

class QPainter;

namespace rpcscope {

struct PaintContext;

// The colour legend below the lanes: exactly what the picture drew (the LegendUse bits the passes set in
// PaintContext::drawn), flowed into as many rows as the width needs.
class LegendPass
{
public:
    // Height of the legend at this width, scale and content (TimelineIndex::legendUse()).
    int height(double width, double scale, std::uint32_t legendUse);
    // The entries of what `drawn` says the picture holds.
    // At `scale` (the metrics' unless the widget's budget for the legend asked for less).
    static void paint(QPainter *p, const PaintContext &ctx, const QRectF &rect, std::uint32_t drawn,
                      double scale);
    // The names of the entries shown for these bits, in legend order.
    static QStringList entries(std::uint32_t drawn);

private:
    static bool shows(std::uint32_t legendUse, int use);
    // Each entry's x and row (-1, -1 when it is not shown).
    static std::vector<QPointF> layout(double width, double scale, std::uint32_t legendUse, int *rows);

    std::tuple<double, double, std::uint32_t> m_heightFor{-1, -1, 0}; // (width, scale, use)
    int m_height = 0;
};

} // namespace rpcscope
