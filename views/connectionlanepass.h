#pragma once

#include <cstddef>

class QPainter;

namespace rpcscope {

struct PaintContext;

// Connection lanes (a connection's lifetime, SETTINGS, PING round trips, RST_STREAM, GOAWAY and flow-control
// stalls, one mark per pixel column and kind) and the headers of lane groups.
class ConnectionLanePass
{
public:
    // The lane of connection connIndex (kAllConnections: every connection in one lane) at content y top.
    static void paint(QPainter *p, const PaintContext &ctx, size_t connIndex, double top);
    static void paintGroupHeader(QPainter *p, const PaintContext &ctx, size_t group, double top);
};

} // namespace rpcscope
