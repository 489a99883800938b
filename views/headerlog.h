#pragma once

#include "events.h"

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace rpcscope {

// The decoded header blocks of recent streams, for the inspector: the store keeps only the gRPC fields it
// assembles calls from. Fed the same batches as the model, on the model's thread. Bounded: the oldest streams
// are forgotten first, so a long capture cannot grow it without limit.
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

    // A unary call's three blocks hold ~15 headers, ~1.5 KB with their strings: 5,000 streams stay under ~8
    // MB.
    explicit HeaderLog(size_t maxStreams = 5'000) : m_maxStreams(maxStreams) {}

    void record(const EventBatch &batch);
    void clear();
    // The blocks of one stream in arrival order; null when never seen or already forgotten.
    const std::vector<Block> *blocks(std::uint32_t connection, std::uint32_t stream) const;
    size_t streams() const { return m_blocks.size(); }

private:
    static std::uint64_t key(std::uint32_t c, std::uint32_t s) { return (std::uint64_t(c) << 32) | s; }

    size_t m_maxStreams;
    std::unordered_map<std::uint64_t, std::vector<Block>> m_blocks;
    std::deque<std::uint64_t> m_order;
};

} // namespace rpcscope
