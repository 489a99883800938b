#pragma once

// WireEvents made by hand for model and view tests: the fields every such event sets, and the kinds that need
// nothing test-specific (a connection, a frame, a grpc-status in trailers). Each test builds its own requests
// and messages on top of these.

#include "events.h"

#include <cstdint>
#include <string>

namespace testev {

inline rpcscope::WireEvent event(rpcscope::EventKind kind, std::uint32_t conn, std::uint32_t stream,
                                 std::int64_t t,
                                 rpcscope::Direction dir = rpcscope::Direction::ClientToServer)
{
    rpcscope::WireEvent e;
    e.kind = kind;
    e.connection = conn;
    e.stream = stream;
    e.tNs = t;
    e.dir = dir;
    return e;
}

// A connection from `client` to `server`; `label` names the capturing relay's hop (empty: the main proxy).
inline rpcscope::WireEvent opened(std::uint32_t conn, std::int64_t t, std::string client = "127.0.0.1:5000",
                                  std::string server = "127.0.0.1:9000", std::string label = {})
{
    rpcscope::WireEvent e = event(rpcscope::EventKind::ConnectionOpened, conn, 0, t);
    e.about = rpcscope::PeerNames{std::move(client), std::move(server)};
    e.label = std::move(label);
    return e;
}

// An HTTP/2 frame; `code` is the RST_STREAM or GOAWAY error code.
inline rpcscope::WireEvent frame(std::uint32_t conn, std::uint32_t stream, std::int64_t t,
                                 rpcscope::Direction dir, std::uint8_t type, std::uint32_t code = 0,
                                 std::uint32_t length = 0)
{
    rpcscope::WireEvent e = event(rpcscope::EventKind::Frame, conn, stream, t, dir);
    e.frameType = type;
    e.errorCode = code;
    e.length = length;
    return e;
}

// The server's trailers ending `stream` with a grpc-status (END_STREAM, nothing else).
inline rpcscope::WireEvent trailers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, int status)
{
    rpcscope::WireEvent e =
        event(rpcscope::EventKind::Headers, conn, stream, t, rpcscope::Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

} // namespace testev
