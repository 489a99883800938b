#pragma once

// The user-agent each client connection announced, from its request headers: the store keeps only the
// gRPC fields it assembles calls from, and a channel sends one user-agent on every stream, so one entry per
// connection is enough to tell which implementation made a call (clientstack.h). Fed the same batches as
// the store.

#include "events.h"

#include <cstdint>
#include <string>
#include <unordered_map>

namespace rpcscope {

class UserAgentIndex
{
public:
    void record(const EventBatch &batch);
    void clear() { m_agents.clear(); }
    // Empty when the connection sent no user-agent (or was not seen).
    const std::string &forConnection(std::uint32_t connection) const;
    size_t size() const { return m_agents.size(); }

private:
    std::unordered_map<std::uint32_t, std::string> m_agents;
};

} // namespace rpcscope
