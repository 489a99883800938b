#pragma once

// The policy check of a whole timeline: every call judged (retryjudge.h) against the service config the
// user gave, per method a summary (calls, conforming, each kind of violation) and the calls that do not
// conform with their reasons. rpcscope-cli check prints it; the GUI's Policy check tab shows it.

#include "clientstack.h"
#include "retryjudge.h"
#include "retryserviceconfig.h"
#include "retryverdict.h"

#include <QJsonObject>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
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
        std::string call;         // the call's key (its call id when it had one)
        size_t callIndex = 0;     // in the store judged
        std::uint64_t serial = 0; // the call's (Call::serial)
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
    std::uint64_t violations() const { return m_violations; }
    bool allConform() const { return m_violations == 0; }

    // The summary table and the non-conforming calls, as the CLI prints them.
    std::string text() const;
    QJsonObject toJson() const;

private:
    friend class LivePolicyCheck;
    std::vector<MethodRow> m_rows;
    std::vector<Finding> m_findings;
    std::uint64_t m_violations = 0;
};

// The same check kept up to date while calls come in (the window's Policy check follows a live capture with
// it, once a second). An update judges again only the calls added or changed since the one before (the
// store's change log, TimelineStore::changedSince), the calls whose verdict waited on time (in flight: the
// capture's end, a connection's close), and the calls of a connection whose client became known since; the
// rest keep their verdicts, by call serial, so evictions move nothing. The summary's counts, the findings and
// the backoff ranges are kept the same way, a call's share taken out and put back as it is judged again, so
// an update costs what changed, not what the store holds. check() then equals PolicyCheck::run over the same
// store.
class LivePolicyCheck
{
public:
    explicit LivePolicyCheck(RetryServiceConfig config);
    // `learned`: connections whose client `agents` tells since the last update (their calls are judged
    // again). For one store, cleared or not, from the first update on.
    void update(const TimelineStore &store, const UserAgentIndex &agents,
                const std::vector<std::uint32_t> &learned = {});
    // The whole check. Its findings are listed when first asked for after an update (O(calls)), from the
    // store of that update, which must not have changed since.
    const PolicyCheck &check() const;
    // Without the findings (findings() is empty, violations() counts them): what each update keeps, O(1).
    const PolicyCheck &summary() const { return m_summary; }
    // Calls judged by the last update (not kept from before it): what it cost.
    size_t lastJudged() const { return m_lastJudged; }
    // Each judged call's backoff ranges as its client allows them (RetryJudge::envelopesNs), for the timeline
    // to shade: kept up to date by every update, in place.
    std::shared_ptr<const GapEnvelopes> envelopes() const { return m_envelopes; }

    // What the last update changed among the findings, for a list that follows them row by row.
    struct FindingChanges
    {
        bool all = false;                   // read them all (the first update, or the store was cleared)
        std::vector<std::uint64_t> gone;    // serials of calls no longer listed: conforming now, or evicted
        std::vector<std::uint64_t> changed; // serials of calls listed now: new findings, or another verdict
    };
    const FindingChanges &findingChanges() const { return m_changes; }
    // The finding of the call with this serial in the store of the last update (nullopt: it has none).
    std::optional<PolicyCheck::Finding> finding(std::uint64_t serial) const;

private:
    struct Judged
    {
        std::uint64_t serial = 0, revision = 0;
        std::uint64_t judgedIn = 0;           // the update that last judged it
        std::uint32_t method = 0, client = 0; // into m_methods, m_clients
        bool counted = false;                 // in the counts (judged: it has attempts)
        bool hadGaps = false;                 // its ranges are in m_envelopes (two attempts or more)
        RetryVerdict verdict;
    };
    struct Method
    {
        std::string name, policy;
        std::optional<MethodRetryPolicy> retry; // the config's for it
        std::uint64_t calls = 0;                // the counts of its calls judged now
        std::array<std::uint64_t, RetryVerdict::kKinds> byKind{};
        std::vector<std::uint64_t> byClient; // by client id
    };
    RetryServiceConfig m_config;
    std::deque<Judged> m_judged; // one per call of the store, in its order (by serial)
    std::vector<Method> m_methods;
    std::unordered_map<std::string, std::uint32_t> m_methodIds;
    size_t m_lastMethod = ~size_t(0); // the method of the call judged last
    std::vector<std::string> m_clients;
    std::unordered_map<std::string, std::uint32_t> m_clientIds;
    // By connection: its client as the user-agent tells it, and that client's id.
    std::unordered_map<std::uint32_t, std::pair<ClientStack, std::uint32_t>> m_stacks;
    // Serials of the calls judged in flight, in the order judged. Every call in flight is judged again at
    // each update (they are what may change without a store change: the capture's end), so the list is
    // made anew by each: no insert and erase in a tree for every call as it starts and ends.
    std::vector<std::uint64_t> m_inFlight;
    std::uint64_t m_violations = 0;
    std::shared_ptr<GapEnvelopes> m_envelopes;
    const TimelineStore *m_store = nullptr;
    std::uint64_t m_updates = 0, m_seenGeneration = 0;
    size_t m_seenEvicted = 0;
    PolicyCheck m_summary;
    mutable PolicyCheck m_check; // m_summary and the findings, once asked for
    mutable bool m_findingsListed = false;
    FindingChanges m_changes;
    size_t m_lastJudged = 0;

    void reset();
    void count(const Judged &e, int sign);
    // Judges the call at `index` again (its entry exists), its counts, finding and ranges with it.
    void judge(size_t index, const Call &call, RetryJudge::Options &options, const UserAgentIndex &agents);
    // Takes out the entries of calls the store no longer holds; false when m_judged then does not mirror
    // the store's first calls (read every call instead).
    bool dropEvicted(const TimelineStore &store);
    // Takes an entry's share out of the counts and the in-flight set (its call was evicted).
    void forget(const Judged &e);
    // update() when the store's change log does not serve (the first update, a clear, a log that no longer
    // reaches back): every call read.
    void readEveryCall(const TimelineStore &store, const UserAgentIndex &agents,
                       const std::vector<std::uint32_t> &learned, RetryJudge::Options &options);
    // update() from the change log: the new calls, the changed ones, those in flight (`wereInFlight`), those
    // of connections whose client was learned (`learnedJudged`: some of their calls were judged before).
    void readChanges(const TimelineStore &store, const UserAgentIndex &agents,
                     const std::vector<std::uint32_t> &learned, bool learnedJudged,
                     const std::vector<std::uint64_t> &changed,
                     const std::vector<std::uint64_t> &wereInFlight, RetryJudge::Options &options);
    // The position of `serial` in m_judged at or after `from`, by galloping search; m_judged.size() if
    // absent.
    size_t find(std::uint64_t serial, size_t from) const;
    void summarise();
};

} // namespace rpcscope
