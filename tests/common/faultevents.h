#pragma once

// The events of an attempt the capturing proxy failed on purpose, as the relay emits them: the client's
// request, the injected Trailers-Only answer and the FaultInjection notice on the stream (events.h), for
// model, export and view tests.

#include "events.h"
#include "wireevents.h"

#include <cstdint>
#include <string>

namespace testev {

// A FaultInjection notice on `stream`, as the relay sends one for each failure a stream action injects.
inline rpcscope::WireEvent injectedNotice(std::uint32_t conn, std::uint32_t stream, std::int64_t t,
                                          std::uint32_t rule, std::string text)
{
    rpcscope::WireEvent e =
        event(rpcscope::EventKind::Notice, conn, stream, t, rpcscope::Direction::ServerToClient);
    e.reason = "fault: " + text + " (rule " + std::to_string(rule) + ")";
    e.about = rpcscope::FaultInjection{rule, std::move(text)};
    return e;
}

// The request HEADERS of attempt `previous` + 1 of call `callId`.
inline rpcscope::WireEvent faultRequest(std::uint32_t conn, std::uint32_t stream, std::int64_t t,
                                        const std::string &callId, int previous,
                                        const std::string &path = "/shop.Cart/Add")
{
    rpcscope::WireEvent e = event(rpcscope::EventKind::Headers, conn, stream, t);
    e.grpc.path = path;
    e.grpc.callId = callId;
    if (previous > 0) e.grpc.previousAttempts = previous;
    return e;
}

} // namespace testev
