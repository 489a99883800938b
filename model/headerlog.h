#pragma once

#include "events.h"

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace rpcscope {

// The decoded header blocks and the gRPC messages (their kept first bytes) of recent streams, for the
// inspector: the store keeps only the gRPC fields it assembles calls from. Fed the same batches as the model,
// on the model's thread. Bounded: the oldest streams are forgotten first, so a long capture cannot grow it
// without limit, and so are they once the messages kept exceed their byte budget.
class HeaderLog
{
public:
    struct Block
    {
        std::int64_t tNs = 0;
        Direction dir = Direction::ClientToServer;
        bool endStream = false;
        bool truncated = false;
        std::vector<Header> headers;
    };
    struct Message
    {
        std::int64_t tNs = 0;
        Direction dir = Direction::ClientToServer;
        std::uint32_t length = 0; // the whole message, without the 5-byte prefix
        bool compressed = false;
        bool truncated = false; // payload holds only its first bytes
        std::string payload;
    };
    // Per stream, messages beyond this many are counted but not kept (a long server stream).
    static constexpr size_t kMaxMessagesPerStream = 64;

    // A unary call's three blocks hold ~15 headers, ~1.5 KB with their strings: 5,000 streams stay under ~8
    // MB.
    // Messages: up to 64 per stream of up to --max-message-keep bytes each (64 KiB); the byte budget forgets
    // whole old streams before the kept payloads exceed it.
    explicit HeaderLog(size_t maxStreams = 5'000, size_t messageBudgetBytes = size_t(32) << 20)
        : m_maxStreams(maxStreams), m_messageBudget(messageBudgetBytes)
    {
    }

    void record(EventSpan batch);
    void record(const EventBatch &batch) { record(EventSpan(batch)); }
    void clear();
    // The blocks of one stream in arrival order; null when never seen or already forgotten.
    const std::vector<Block> *blocks(std::uint32_t connection, std::uint32_t stream) const;
    // The kept messages of one stream in arrival order; null when none were seen or they are forgotten.
    const std::vector<Message> *messages(std::uint32_t connection, std::uint32_t stream) const;
    // Messages of the stream seen beyond kMaxMessagesPerStream.
    size_t messagesNotKept(std::uint32_t connection, std::uint32_t stream) const;
    size_t streams() const { return m_streams.size(); }
    size_t messageBytes() const { return m_messageBytes; }

private:
    static std::uint64_t key(std::uint32_t c, std::uint32_t s) { return (std::uint64_t(c) << 32) | s; }
    struct Stream
    {
        std::vector<Block> blocks;
        std::vector<Message> messages;
        size_t notKept = 0;
        size_t bytes = 0; // payload bytes of its messages
    };
    Stream &stream(std::uint64_t k);
    void forgetOldest();

    size_t m_maxStreams;
    size_t m_messageBudget;
    size_t m_messageBytes = 0;
    std::unordered_map<std::uint64_t, Stream> m_streams;
    std::deque<std::uint64_t> m_order;
};

} // namespace rpcscope
