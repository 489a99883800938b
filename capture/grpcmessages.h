#pragma once

#include "eventstamp.h"

#include <cstdint>
#include <string>
#include <unordered_map>

namespace rpcscope {

// The gRPC messages one direction sends: each stream's DATA bytes cut at the messages' 5-byte length
// prefixes, a Message event for each complete one with its first bytes kept for inspection.
class GrpcMessages
{
public:
    explicit GrpcMessages(size_t keepBytes) : m_keepBytes(keepBytes) {}

    // Message bytes of a DATA payload (padding removed); false when the stream was dropped on the way.
    bool feed(std::uint32_t stream, const std::uint8_t *p, std::uint32_t len, const EventStamp &stamp,
              EventBatch &out);
    // How many of the next `available` bytes of the stream are body of the current message past its kept
    // bytes, which need not be looked at.
    size_t skippable(std::uint32_t stream, size_t available) const;
    // Passes over n <= skippable() bytes; false when the stream was then dropped.
    bool skip(std::uint32_t stream, std::uint32_t n, const EventStamp &stamp, EventBatch &out);

    // The stream's DATA began (a frame without message bytes still opens it).
    void touch(std::uint32_t stream) { m_messages.try_emplace(stream); }
    // The stream ended or was reset by this side.
    void forget(std::uint32_t stream) { m_messages.erase(stream); }
    // The other side reset the stream.
    void peerReset(std::uint32_t stream);
    // What the streams' states hold, as the allocator counts it (O(streams)).
    size_t memoryBytes() const;

private:
    struct MessageState
    {
        std::uint8_t prefix[5];
        std::uint8_t prefixHave = 0;
        std::uint32_t remaining = 0;
        // The other side reset the stream while this side was mid-message: finish the message already on
        // the wire, then forget the stream.
        bool resetByPeer = false;
        std::string kept; // the message's first bytes, up to m_keepBytes
    };

    // The message's last byte has arrived; false when the stream was then dropped (reset by the peer).
    bool complete(std::uint32_t stream, MessageState &m, const EventStamp &stamp, EventBatch &out);

    size_t m_keepBytes;
    bool m_noticedLimit = false;
    std::unordered_map<std::uint32_t, MessageState> m_messages;
};

} // namespace rpcscope
