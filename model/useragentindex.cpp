#include "useragentindex.h"

namespace rpcscope {

void UserAgentIndex::record(const EventBatch &batch)
{
    for (const WireEvent &e : batch) {
        if (e.kind != EventKind::Headers || e.dir != Direction::ClientToServer) continue;
        if (m_agents.count(e.connection)) continue;
        for (const Header &h : e.headers)
            if (h.name == "user-agent") {
                m_agents.emplace(e.connection, h.value.substr(0, 256));
                break;
            }
    }
}

const std::string &UserAgentIndex::forConnection(std::uint32_t connection) const
{
    static const std::string none;
    const auto it = m_agents.find(connection);
    return it == m_agents.end() ? none : it->second;
}

} // namespace rpcscope
