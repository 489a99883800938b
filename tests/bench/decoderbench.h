#pragma once

#include "events.h"
#include "plainproxy.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace rpcscope::bench {

// What one decode of a recording produced.
struct DecodeCounts
{
    std::uint64_t bytes = 0;
    std::uint64_t frames = 0;
    std::uint64_t headerBlocks = 0;
    std::uint64_t messages = 0;
    std::uint64_t decodeErrors = 0;
};

DecodeCounts countEvents(const std::vector<Chunk> &chunks);
// Every event of one decode, ConnectionOpened/Closed around them, as the relay would hand them on.
EventBatch decodeAll(const std::vector<Chunk> &chunks, std::uint32_t connection);

// Single-threaded passes over a recording, to be timed:
// - decode: rpcscope::ConnectionDecoder::feed over every chunk, in recorded order, with the batch cleared
//   every 4096 events the way the relay flushes it;
// - frameWalk: only delimiting frames, carry-over copies of split frames included (the floor for any
// decoder);
// - hpack: only nghttp2_hd_inflate_hd2 over the recording's header blocks;
// - hpackStrings: the same, plus copying every header into a std::vector<Header> as the decoder does.
struct DecoderPasses
{
    std::function<void()> decode;
    std::function<void()> frameWalk;
    std::function<void()> hpack;
    std::function<void()> hpackStrings;
};
// The passes keep references to chunks, which must outlive them.
DecoderPasses decoderPasses(const std::vector<Chunk> &chunks);

// Seconds per pass of each, best of `rounds`. Each round runs every pass in turn for at least minSeconds, so
// a burst of load on the shared machine hits all of them alike instead of skewing one.
std::vector<double> bestSecondsPerPass(const std::vector<std::function<void()>> &passes, double minSeconds,
                                       int rounds);

} // namespace rpcscope::bench
