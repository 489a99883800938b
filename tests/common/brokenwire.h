#pragma once

// Whether an event says one HTTP/2 peer found the other broken (a PROTOCOL, FLOW_CONTROL or COMPRESSION
// error, a decode error, a violation, a connection the fault rules had to give up): what stream fault rules
// must never cause, on a plain hop or a TLS-intercepted one.

#include "events.h"

#include <string>

namespace testev {

inline bool brokenWire(const rpcscope::WireEvent &e, std::string *why)
{
    using namespace rpcscope;
    auto bad = [](std::uint32_t code) {
        return code == 1 || code == 3 || code == 9;
    }; // PROTOCOL, FLOW, COMPRESSION
    if (e.kind == EventKind::DecodeError) {
        *why = "decode error: " + e.reason;
        return true;
    }
    if (e.kind == EventKind::Notice && e.violation()) {
        *why = "violation: " + e.reason;
        return true;
    }
    if (e.kind == EventKind::Frame && (e.frameType == FrameRstStream || e.frameType == FrameGoaway) &&
        bad(e.errorCode)) {
        *why = std::string(e.frameType == FrameGoaway ? "GOAWAY " : "RST_STREAM ") +
               h2ErrorName(e.errorCode) +
               (e.dir == Direction::ClientToServer ? " from the client" : " to the client");
        return true;
    }
    if (e.kind == EventKind::ConnectionClosed && e.reason.find("fault rules:") != std::string::npos) {
        *why = e.reason;
        return true;
    }
    return false;
}

// The first such event's description, or empty.
inline std::string firstBroken(const rpcscope::EventBatch &events)
{
    std::string why;
    for (const rpcscope::WireEvent &e : events)
        if (brokenWire(e, &why)) return why;
    return {};
}

} // namespace testev
