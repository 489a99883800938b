#include "grpcmessages.h"

#include "h2wire.h"
#include "heapbytes.h"

#include <algorithm>
#include <cstring>

namespace rpcscope {

size_t GrpcMessages::memoryBytes() const
{
    size_t n = heapbytes::hashMap<std::uint32_t, MessageState>(m_messages.size(), m_messages.bucket_count());
    for (const auto &[stream, m] : m_messages)
        n += heapbytes::string(m.kept);
    return n;
}

bool GrpcMessages::feed(std::uint32_t stream, const std::uint8_t *p, std::uint32_t len,
                        const EventStamp &stamp, EventBatch &out)
{
    MessageState &m = m_messages[stream];
    while (len > 0) {
        if (m.prefixHave < 5) {
            const std::uint32_t n = std::min<std::uint32_t>(len, 5 - m.prefixHave);
            std::memcpy(m.prefix + m.prefixHave, p, n);
            m.prefixHave += n;
            p += n;
            len -= n;
            if (m.prefixHave < 5) break;
            m.remaining = be32(m.prefix + 1);
        }
        const std::uint32_t n = std::min(len, m.remaining);
        if (m.kept.size() < m_keepBytes)
            m.kept.append(reinterpret_cast<const char *>(p),
                          std::min<size_t>(n, m_keepBytes - m.kept.size()));
        p += n;
        len -= n;
        m.remaining -= n;
        if (m.remaining == 0 && !complete(stream, m, stamp, out)) return false;
    }
    return true;
}

size_t GrpcMessages::skippable(std::uint32_t stream, size_t available) const
{
    const auto it = m_messages.find(stream);
    if (it == m_messages.end() || it->second.prefixHave < 5 || it->second.kept.size() < m_keepBytes) return 0;
    return std::min<size_t>(it->second.remaining, available); // the body past what is kept
}

bool GrpcMessages::skip(std::uint32_t stream, std::uint32_t n, const EventStamp &stamp, EventBatch &out)
{
    MessageState &m = m_messages[stream];
    m.remaining -= n;
    return m.remaining != 0 || complete(stream, m, stamp, out);
}

void GrpcMessages::peerReset(std::uint32_t stream)
{
    const auto it = m_messages.find(stream);
    if (it == m_messages.end()) return;
    if (it->second.prefixHave == 0)
        m_messages.erase(it);
    else
        it->second.resetByPeer = true;
}

bool GrpcMessages::complete(std::uint32_t stream, MessageState &m, const EventStamp &stamp, EventBatch &out)
{
    WireEvent e = stamp.make(EventKind::Message);
    e.stream = stream;
    e.length = be32(m.prefix + 1);
    e.compressed = m.prefix[0] & 1;
    e.truncated = e.length > m.kept.size();
    if (e.truncated && !m_noticedLimit) {
        m_noticedLimit = true;
        stamp.notice("messages over " + std::to_string(m_keepBytes) +
                         " bytes are kept truncated for inspection",
                     stream, out);
    }
    e.payload = std::move(m.kept);
    m.kept = std::string();
    out.push_back(std::move(e));
    m.prefixHave = 0;
    if (m.resetByPeer) {
        m_messages.erase(stream);
        return false;
    }
    return true;
}

} // namespace rpcscope
