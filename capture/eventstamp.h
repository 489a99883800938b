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

    void notice(std::string text, std::uint32_t stream, EventBatch &out) const
    {
        WireEvent e = make(EventKind::Notice);
        e.stream = stream;
        e.text = std::move(text);
        out.push_back(std::move(e));
    }
};

} // namespace rpcscope
