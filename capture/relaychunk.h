#pragma once

#include "events.h"

#include <cstdint>
#include <memory>
#include <string>

namespace rpcscope {

// What the relay thread hands the decoder thread: a connection opened or closed, bytes read, or the end of
// decoding for a connection. Chunks are the only thing that crosses between the two threads.
struct RelayChunk
{
    enum Kind
    {
        Open,
        Data,
        Close,
        Error,
        Note // reason: a connection note that does not stop decoding (a fault rule acted, TLS interception)
    } kind;
    std::uint32_t conn;
    Direction dir;
    std::int64_t t;
    std::string clientPeer;                    // Open: the client's address
    std::string serverPeer;                    // Open: the target's address
    std::string reason;                        // Close: why it closed; Error: why decoding stops
    std::unique_ptr<std::uint8_t[]> data = {}; // Data: the bytes read (not zero-filled first)
    size_t size = 0;
    int pipe[2] = {-1, -1}; // Data: instead of data, a handoff pipe holding the size bytes
    // Note: a fault rule's stream action on this stream (nonzero), with the rule's 1-based number and text;
    // it becomes a FaultInjection Notice.
    std::uint32_t stream = 0;
    std::uint32_t faultRule = 0;
    std::string faultText = {};

    static RelayChunk open(std::uint32_t conn, std::int64_t t, std::string clientPeer, std::string serverPeer)
    {
        return {Open, conn, Direction::ClientToServer, t, std::move(clientPeer), std::move(serverPeer), {}};
    }
    // Bytes to come: data or pipe, and size, are filled in by the caller.
    static RelayChunk bytes(std::uint32_t conn, Direction dir, std::int64_t t)
    {
        return {Data, conn, dir, t, {}, {}, {}};
    }
    static RelayChunk close(std::uint32_t conn, std::int64_t t, std::string reason)
    {
        return {Close, conn, Direction::ClientToServer, t, {}, {}, std::move(reason)};
    }
    static RelayChunk note(std::uint32_t conn, std::int64_t t, std::string reason)
    {
        return {Note, conn, Direction::ClientToServer, t, {}, {}, std::move(reason)};
    }
    static RelayChunk error(std::uint32_t conn, Direction dir, std::int64_t t, std::string reason)
    {
        return {Error, conn, dir, t, {}, {}, std::move(reason)};
    }
};

} // namespace rpcscope
