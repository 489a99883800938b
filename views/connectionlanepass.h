#pragma once

#include <QString>
#include <cstddef>

class QFontMetricsF;
class QPainter;

namespace rpcscope {

struct Connection;
struct PaintContext;

// Connection lanes (a connection's lifetime, SETTINGS, PING round trips, RST_STREAM, GOAWAY and flow-control
// stalls, one mark per pixel column and kind) and the headers of lane groups.
class ConnectionLanePass
{
public:
    // The lane of connection connIndex (kAllConnections: every connection in one lane) at content y top.
    static void paint(QPainter *p, const PaintContext &ctx, size_t connIndex, double top);
    static void paintGroupHeader(QPainter *p, const PaintContext &ctx, size_t group, double top);
    // A lane's title as drawn: elided in the middle to the label column, so both the connection's id and the
    // end of its label stay (the tooltip has the whole name).
    static QString title(const PaintContext &ctx, size_t connIndex);
    // The line under the title, before eliding: what went wrong on the wire (then *warns), else the TLS the
    // connection carries ahead of its peers' addresses.
    static QString subtitle(const Connection &conn, bool *warns = nullptr);
    // The line under the title as drawn in `width`: elided at its end for a warning, a decode error or a TLS
    // line, else the peers, or only the server when both do not fit (null conn: the lane of every
    // connection).
    static QString shownSubtitle(const QFontMetricsF &fm, const Connection *conn, double width,
                                 bool *warns = nullptr);
};

} // namespace rpcscope
