#include "headerlog.h"

namespace rpcscope {

HeaderLog::Stream &HeaderLog::stream(std::uint64_t k)
{
    auto [it, added] = m_streams.try_emplace(k);
    if (added) {
        m_order.push_back(k);
        if (m_order.size() > m_maxStreams) {
            forgetOldest();
            it = m_streams.find(k);
        }
    }
    return it->second;
}

void HeaderLog::forgetOldest()
{
    auto it = m_streams.find(m_order.front());
    if (it != m_streams.end()) {
        m_messageBytes -= it->second.bytes;
        m_streams.erase(it);
    }
    m_order.pop_front();
}

void HeaderLog::record(EventSpan batch)
{
    for (const WireEvent &e : batch) {
        if (e.kind == EventKind::Headers) {
            stream(key(e.connection, e.stream))
                .blocks.push_back({e.tNs, e.dir, e.endStream, e.truncated, e.headers});
        } else if (e.kind == EventKind::Message) {
            const std::uint64_t k = key(e.connection, e.stream);
            Stream &s = stream(k);
            if (s.messages.size() >= kMaxMessagesPerStream) {
                ++s.notKept;
                continue;
            }
            s.messages.push_back({e.tNs, e.dir, e.length, e.compressed, e.truncated, e.payload});
            s.bytes += e.payload.size();
            m_messageBytes += e.payload.size();
            // Over the budget: the oldest streams go, never the one just recorded.
            while (m_messageBytes > m_messageBudget && m_order.size() > 1 && m_order.front() != k)
                forgetOldest();
        }
    }
}

void HeaderLog::clear()
{
    m_streams.clear();
    m_order.clear();
    m_messageBytes = 0;
}

const std::vector<HeaderLog::Block> *HeaderLog::blocks(std::uint32_t connection, std::uint32_t stream) const
{
    auto it = m_streams.find(key(connection, stream));
    return it == m_streams.end() || it->second.blocks.empty() ? nullptr : &it->second.blocks;
}

const std::vector<HeaderLog::Message> *HeaderLog::messages(std::uint32_t connection,
                                                           std::uint32_t stream) const
{
    auto it = m_streams.find(key(connection, stream));
    return it == m_streams.end() || it->second.messages.empty() ? nullptr : &it->second.messages;
}

size_t HeaderLog::messagesNotKept(std::uint32_t connection, std::uint32_t stream) const
{
    auto it = m_streams.find(key(connection, stream));
    return it == m_streams.end() ? 0 : it->second.notKept;
}

} // namespace rpcscope
