#include "relaychunk.h"

#include <mutex>
#include <vector>

namespace rpcscope {

namespace {
std::mutex g_poolMutex;
std::vector<std::uint8_t *> &freeBuffers()
{
    // Never destroyed: chunks may outlive statics. Room for all it keeps, so a free never allocates.
    static auto *buffers = [] {
        auto *v = new std::vector<std::uint8_t *>;
        v->reserve(kMaxPooledChunks);
        return v;
    }();
    return *buffers;
}
} // namespace

void ChunkBytesFree::operator()(std::uint8_t *p) const
{
    if (!p) return;
    if (pooled) {
        std::lock_guard lk(g_poolMutex);
        auto &buffers = freeBuffers();
        if (buffers.size() < kMaxPooledChunks) {
            buffers.push_back(p);
            return;
        }
    }
    delete[] p;
}

ChunkBytes pooledChunkBytes()
{
    std::uint8_t *p = nullptr;
    {
        std::lock_guard lk(g_poolMutex);
        auto &buffers = freeBuffers();
        if (!buffers.empty()) {
            p = buffers.back();
            buffers.pop_back();
        }
    }
    if (!p) p = new std::uint8_t[kPooledChunkBytes];
    ChunkBytesFree pooled;
    pooled.pooled = true;
    return ChunkBytes(p, pooled);
}

size_t pooledChunksFree()
{
    std::lock_guard lk(g_poolMutex);
    return freeBuffers().size();
}

} // namespace rpcscope
