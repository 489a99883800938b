#pragma once

#include "events.h"

#include <string>

namespace rpcscope {

// What every event one direction's decoder makes from one read has in common: the connection, the direction
// and the time of the read that delivered the bytes. The decoder's rooms make their events from it.
struct EventStamp
{
    std::uint32_t connection = 0;
    Direction dir = Direction::ClientToServer;
    std::int64_t tNs = 0;

    WireEvent make(EventKind kind) const
    {
        WireEvent e;
        e.kind = kind;
        e.connection = connection;
        e.dir = dir;
        e.tNs = tNs;
        return e;
    }

    void notice(std::string reason, std::uint32_t stream, EventBatch &out) const
    {
        WireEvent e = make(EventKind::Notice);
        e.stream = stream;
        e.reason = std::move(reason);
        out.push_back(std::move(e));
    }

    // A broken HTTP/2 rule: the structured value, and its sentence as the notice's reason.
    void violation(ProtocolViolation v, std::uint32_t stream, EventBatch &out) const
    {
        WireEvent e = make(EventKind::Notice);
        e.stream = stream;
        e.reason = describe(v);
        e.about = std::move(v);
        out.push_back(std::move(e));
    }
};

} // namespace rpcscope
