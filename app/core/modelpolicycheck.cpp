#include "modelpolicycheck.h"

#include "headerlog.h"
#include "timelinemodel.h"
#include "useragentindex.h"

#include <algorithm>
#include <set>

namespace rpcscope {

namespace {

// Reads the user-agent of `call`'s connection off the log, once per connection: true when it did now.
bool readAgent(const HeaderLog &log, const Call &call, std::set<std::uint32_t> &seen, UserAgentIndex &agents)
{
    if (call.attempts.empty()) return false;
    const Attempt &a = call.attempts.front();
    if (seen.count(a.connection)) return false;
    const auto *blocks = log.blocks(a.connection, a.stream);
    if (!blocks) return false; // forgotten by the log: another call on it may still be there
    seen.insert(a.connection);
    EventBatch batch;
    for (const HeaderLog::Block &b : *blocks) {
        WireEvent e;
        e.kind = EventKind::Headers;
        e.connection = a.connection;
        e.dir = b.dir;
        e.headers = b.headers;
        batch.push_back(std::move(e));
    }
    agents.record(batch);
    return true;
}

} // namespace

PolicyCheck policyCheckOf(const TimelineModel &model, const RetryServiceConfig &config,
                          GapEnvelopes *envelopes)
{
    const TimelineStore &store = model.store();
    UserAgentIndex agents;
    if (const HeaderLog *log = model.headerLog()) {
        std::set<std::uint32_t> seen;
        for (const Call &call : store.calls())
            readAgent(*log, call, seen, agents);
    }
    return PolicyCheck::run(store, config, agents, envelopes);
}

void LiveModelPolicyCheck::update(const TimelineModel &model)
{
    const TimelineStore &store = model.store();
    const auto &calls = store.calls();
    std::vector<std::uint32_t> learned;
    if (const HeaderLog *log = model.headerLog()) {
        auto from = std::partition_point(calls.begin(), calls.end(),
                                         [this](const Call &c) { return c.serial <= m_readUpTo; });
        for (auto it = from; it != calls.end(); ++it)
            if (readAgent(*log, *it, m_seen, m_agents)) learned.push_back(it->attempts.front().connection);
    }
    if (!calls.empty()) m_readUpTo = std::max(m_readUpTo, calls.back().serial);
    m_live.update(store, m_agents, learned);
}

} // namespace rpcscope
