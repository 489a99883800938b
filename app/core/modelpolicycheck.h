#pragma once

#include "policycheck.h"
#include "useragentindex.h"

#include <cstdint>
#include <set>

namespace rpcscope {

class TimelineModel;

// The Policy check of what a model holds: each call's client told from the user-agent its connection sent,
// read off the model's header log (the store keeps no headers; without a log every client is unknown).
// With `envelopes`, also each call's backoff ranges (PolicyCheck::run).
PolicyCheck policyCheckOf(const TimelineModel &model, const RetryServiceConfig &config,
                          GapEnvelopes *envelopes = nullptr);

// The same, kept up to date as calls come in (LivePolicyCheck): each update reads the user-agents of the new
// calls' connections only, and judges again only what changed, the ranges (envelopes()) kept in place. For
// one model from a reset on: after the model is reset (a file opened into it), start a new one.
class LiveModelPolicyCheck
{
public:
    explicit LiveModelPolicyCheck(RetryServiceConfig config) : m_live(std::move(config)) {}
    void update(const TimelineModel &model);
    const PolicyCheck &check() const { return m_live.check(); }
    const PolicyCheck &summary() const { return m_live.summary(); }
    size_t lastJudged() const { return m_live.lastJudged(); }
    std::shared_ptr<const GapEnvelopes> envelopes() const { return m_live.envelopes(); }
    const LivePolicyCheck::FindingChanges &findingChanges() const { return m_live.findingChanges(); }
    std::optional<PolicyCheck::Finding> finding(std::uint64_t serial) const { return m_live.finding(serial); }

private:
    LivePolicyCheck m_live;
    UserAgentIndex m_agents;
    std::set<std::uint32_t> m_seen; // connections whose first call's headers were read
    std::uint64_t m_readUpTo = 0;   // calls up to this serial were looked at
};

} // namespace rpcscope
