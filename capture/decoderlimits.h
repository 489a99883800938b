#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rpcscope {

// Bounds on what one direction of one connection may make the decoder hold. Exceeding one marks the
// connection (a Notice, or a DecodeError when decoding cannot go on); relaying is never affected.
struct DecoderLimits
{
    // Decoded names + values kept per header block; the rest is cut (its timeline headers stay). gRPC itself
    // refuses lists over 8 KiB by default; a flood of in-flight streams holds this much per stream.
    size_t maxHeaderListBytes = 16 * 1024;
    size_t maxHeaderBlockBytes = 1 << 20;   // encoded HEADERS + CONTINUATION bytes of one block
    size_t maxFrameBytes = (1u << 24) - 1;  // largest frame buffered across reads (protocol maximum)
    size_t maxMessageKeepBytes = 64 * 1024; // leading bytes of each gRPC message kept for inspection
    // What one relay's decoder thread may hold that nothing can evict: bytes waiting to be decoded and the
    // batch waiting for the model. Past it the relay stops decoding the connection it is reading, with a
    // note, and relays on. A capture with a memory budget sets a share of it (CaptureSession).
    size_t maxDecoderHeldBytes = 256u << 20;
    // Not the decoder's, but what else a relay holds that nothing can evict, so a capture's budget sets it
    // beside the above: what the relay may queue for peers slower than their other side, all its connections
    // together (RelayLoop::setMaxQueuedBytes). Unlimited by default: each direction's own bound holds.
    size_t maxRelayQueuedBytes = SIZE_MAX;
};

// What several decoder threads hold together, weighed against one maxDecoderHeldBytes: a CONNECT proxy's
// targets each get a relay with a decoder of its own, and one limit each would let 64 targets hold 64 times
// the share a capture's budget gave the proxy. Each decoder adds what it holds here and takes it out again.
struct SharedDecoderHeld
{
    std::atomic<size_t> bytes{0};
};

} // namespace rpcscope
