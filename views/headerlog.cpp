#include "headerlog.h"

namespace rpcscope {

void HeaderLog::record(const EventBatch &batch)
{
    for (const WireEvent &e : batch) {
        if (e.kind != EventKind::Headers) continue;
        const std::uint64_t k = key(e.connection, e.stream);
        auto [it, added] = m_blocks.try_emplace(k);
        if (added) {
            m_order.push_back(k);
            if (m_order.size() > m_maxStreams) {
                m_blocks.erase(m_order.front());
                m_order.pop_front();
                it = m_blocks.find(k);
            }
        }
        it->second.push_back({e.tNs, e.dir, e.endStream, e.truncated, e.headers});
    }
}

void HeaderLog::clear()
{
    m_blocks.clear();
    m_order.clear();
}

const std::vector<HeaderLog::Block> *HeaderLog::blocks(std::uint32_t connection, std::uint32_t stream) const
{
    auto it = m_blocks.find(key(connection, stream));
    return it == m_blocks.end() ? nullptr : &it->second;
}

} // namespace rpcscope
