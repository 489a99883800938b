#pragma once

#include <cstddef>

class QPainter;

namespace rpcscope {

struct PaintContext;

// A folded group of lanes (grouped by method or connection) on one row: its title, how many calls ended
// how (a stacked bar and the counts in words), and when its calls ran, coloured by outcome.
class GroupLanePass
{
public:
    static void paint(QPainter *p, const PaintContext &ctx, size_t group, double top);
};

} // namespace rpcscope
