#pragma once

// The policy check of a whole timeline: every call judged (retryjudge.h) against the service config the
// user gave, per method a summary (calls, conforming, each kind of violation) and the calls that do not
// conform with their reasons. rpcscope-cli check prints it; the GUI's Policy check tab shows it.

#include "clientstack.h"
#include "retryserviceconfig.h"
#include "retryverdict.h"

#include <QJsonObject>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rpcscope {

class TimelineStore;
class UserAgentIndex;
class GapEnvelopes;

class PolicyCheck
{
public:
    struct MethodRow
    {
        std::string method;
        std::string policy;  // which name of the config matched ("pkg.Service"), or "none"
        std::string clients; // the implementations seen, comma-separated
        std::uint64_t calls = 0;
        std::array<std::uint64_t, RetryVerdict::kKinds> byKind{}; // indexed by RetryVerdict::Kind
        std::uint64_t count(RetryVerdict::Kind k) const { return byKind[size_t(k)]; }
        std::uint64_t violations() const;
    };
    struct Finding
    {
        std::string method;
        std::string call;     // the call's key (its call id when it had one)
        size_t callIndex = 0; // in the store judged
        std::string client;
        RetryVerdict verdict;
    };

    // With `envelopes`, also each call's backoff ranges as its client allows them (RetryJudge::envelopesNs),
    // for the timeline to shade.
    static PolicyCheck run(const TimelineStore &store, const RetryServiceConfig &config,
                           const UserAgentIndex &agents, GapEnvelopes *envelopes = nullptr);

    const std::vector<MethodRow> &rows() const { return m_rows; }
    const std::vector<Finding> &findings() const { return m_findings; } // the violations, in call order
    std::uint64_t calls() const;
    std::uint64_t violations() const { return m_findings.size(); }
    bool allConform() const { return m_findings.empty(); }

    // The summary table and the non-conforming calls, as the CLI prints them.
    std::string text() const;
    QJsonObject toJson() const;

private:
    friend class LivePolicyCheck;
    std::vector<MethodRow> m_rows;
    std::vector<Finding> m_findings;
};

// The same check kept up to date while calls come in (the window's Policy check follows a live capture with
// it, once a second). An update judges again only the calls added or changed since the one before
// (Call::revision), the calls whose verdict waited on time (in flight: the capture's end, a connection's
// close), and the calls of a connection whose client became known since; the rest keep their verdicts, by
// call serial, so evictions move nothing. check() then equals PolicyCheck::run over the same store.
class LivePolicyCheck
{
public:
    explicit LivePolicyCheck(RetryServiceConfig config) : m_config(std::move(config)) {}
    // `learned`: connections whose client `agents` tells since the last update (their calls are judged
    // again).
    void update(const TimelineStore &store, const UserAgentIndex &agents,
                const std::vector<std::uint32_t> &learned = {}, GapEnvelopes *envelopes = nullptr);
    const PolicyCheck &check() const { return m_check; }
    // Calls judged by the last update (not kept from before it): what it cost.
    size_t lastJudged() const { return m_lastJudged; }

private:
    struct Judged
    {
        std::uint64_t serial = 0, revision = 0;
        std::uint32_t method = 0, client = 0; // into m_methods, m_clients
        RetryVerdict verdict;
        std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>> gaps; // RetryJudge::envelopesNs
    };
    struct Method
    {
        std::string name, policy;
        std::optional<MethodRetryPolicy> retry; // the config's for it
    };
    RetryServiceConfig m_config;
    std::vector<Judged> m_judged; // by serial, as the store's calls
    std::vector<Method> m_methods;
    std::unordered_map<std::string, std::uint32_t> m_methodIds;
    std::vector<std::string> m_clients;
    std::unordered_map<std::string, std::uint32_t> m_clientIds;
    // By connection: its client as the user-agent tells it, and that client's id.
    std::unordered_map<std::uint32_t, std::pair<ClientStack, std::uint32_t>> m_stacks;
    PolicyCheck m_check;
    size_t m_lastJudged = 0;
};

} // namespace rpcscope
