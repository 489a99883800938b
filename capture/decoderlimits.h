#pragma once

#include <cstddef>

namespace rpcscope {

// Bounds on what one direction of one connection may make the decoder hold. Exceeding one marks the
// connection (a Notice, or a DecodeError when decoding cannot go on); relaying is never affected.
struct DecoderLimits
{
    size_t maxHeaderListBytes = 64 * 1024;  // decoded names + values kept per header block; the rest is cut
    size_t maxHeaderBlockBytes = 1 << 20;   // encoded HEADERS + CONTINUATION bytes of one block
    size_t maxFrameBytes = (1u << 24) - 1;  // largest frame buffered across reads (protocol maximum)
    size_t maxMessageKeepBytes = 64 * 1024; // leading bytes of each gRPC message kept for inspection
};

} // namespace rpcscope
