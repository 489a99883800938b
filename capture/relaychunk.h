#pragma once

#include "events.h"

#include <cstdint>
#include <memory>
#include <string>

namespace rpcscope {

// Frees a chunk's bytes: back to the pool of record-sized buffers they were taken from (pooledChunkBytes), or
// to the heap.
struct ChunkBytesFree
{
    bool pooled = false;
    ChunkBytesFree() = default;
    ChunkBytesFree(std::default_delete<std::uint8_t[]>) {} // bytes from make_unique: the heap's
    void operator()(std::uint8_t *p) const;
};
using ChunkBytes = std::unique_ptr<std::uint8_t[], ChunkBytesFree>;

// The size of a pooled buffer: a TLS record's largest plaintext.
constexpr size_t kPooledChunkBytes = 16 * 1024;
// Copies of this size or more take a pooled buffer (up to kPooledChunkBytes).
constexpr size_t kPoolFromBytes = 4 * 1024;
// A buffer of kPooledChunkBytes, reused. An intercepting relay copies each decrypted record for the decoder,
// which frees it on its own thread; from the heap, a stream's 16 KB copies made the relay thread's arena
// give its top back to the kernel and fault it in again and again (11% of the relay's CPU while
// streaming). The pool keeps at most kMaxPooledChunks free buffers (1 MiB); thread-safe.
ChunkBytes pooledChunkBytes();
constexpr size_t kMaxPooledChunks = 64;
// Free buffers the pool holds now.
size_t pooledChunksFree();

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
    std::string clientPeer; // Open: the client's address
    std::string serverPeer; // Open: the target's address
    std::string reason;     // Close: why it closed; Error: why decoding stops
    ChunkBytes data = {};   // Data: the bytes read (not zero-filled first)
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
