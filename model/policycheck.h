#pragma once

// The policy check of a whole timeline: every call judged (retryjudge.h) against the service config the
// user gave, per method a summary (calls, conforming, each kind of violation) and the calls that do not
// conform with their reasons. rpcscope-cli check prints it; the GUI's Policy check tab shows it.

#include "retryserviceconfig.h"
#include "retryverdict.h"

#include <QJsonObject>
#include <array>
#include <cstdint>
#include <string>
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
    std::vector<MethodRow> m_rows;
    std::vector<Finding> m_findings;
};

} // namespace rpcscope
