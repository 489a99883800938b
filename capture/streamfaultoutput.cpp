#include "streamfaultoutput.h"

#include <cstring>

namespace rpcscope {

RelayChunk copiedBytes(std::uint32_t conn, Direction dir, std::int64_t t, const void *data, size_t size)
{
    RelayChunk chunk = RelayChunk::bytes(conn, dir, t);
    if (size >= kPoolFromBytes && size <= kPooledChunkBytes)
        chunk.data = pooledChunkBytes();
    else
        chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size);
    chunk.size = size;
    std::memcpy(chunk.data.get(), data, size);
    return chunk;
}

bool takeStreamOutput(StreamFaults &s, std::uint32_t conn, std::int64_t t, std::string &toServer,
                      std::string &toClient, const std::function<void(RelayChunk &&)> &note,
                      const std::function<void(RelayChunk &&)> &decode)
{
    for (StreamFaults::Injection &i : s.injections) {
        RelayChunk chunk = RelayChunk::note(conn, t, std::move(i.what));
        chunk.dir = Direction::ServerToClient;
        chunk.stream = i.stream;
        chunk.faultRule = std::uint32_t(i.rule + 1);
        chunk.faultText = std::move(i.text);
        note(std::move(chunk));
    }
    s.injections.clear();
    if (!s.toClient.empty()) {
        if (decode)
            decode(copiedBytes(conn, Direction::ServerToClient, t, s.toClient.data(), s.toClient.size()));
        // Usually nothing waits for the peer: the buffers trade places instead of copying.
        if (toClient.empty())
            toClient.swap(s.toClient);
        else
            toClient += s.toClient;
        s.toClient.clear();
    }
    if (!s.toServer.empty()) {
        if (toServer.empty())
            toServer.swap(s.toServer);
        else
            toServer += s.toServer;
        s.toServer.clear();
    }
    return s.failure.empty();
}

} // namespace rpcscope
