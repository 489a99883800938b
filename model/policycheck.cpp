#include "policycheck.h"

#include "clientstack.h"
#include "gapenvelopes.h"
#include "retryjudge.h"
#include "timelinestore.h"
#include "useragentindex.h"

#include <QJsonArray>
#include <algorithm>
#include <map>
#include <set>

namespace rpcscope {

namespace {

std::string pad(const std::string &s, size_t width, bool right = false)
{
    if (s.size() >= width) return s;
    return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// The violation columns, in the order the summary prints them.
constexpr RetryVerdict::Kind kViolationKinds[] = {
    RetryVerdict::Kind::Attempts, RetryVerdict::Kind::Gap,         RetryVerdict::Kind::NonRetryable,
    RetryVerdict::Kind::Pushback, RetryVerdict::Kind::AfterCommit, RetryVerdict::Kind::PastDeadline,
};

} // namespace

std::uint64_t PolicyCheck::MethodRow::violations() const
{
    std::uint64_t n = 0;
    for (RetryVerdict::Kind k : kViolationKinds)
        n += count(k);
    return n;
}

PolicyCheck PolicyCheck::run(const TimelineStore &store, const RetryServiceConfig &config,
                             const UserAgentIndex &agents, GapEnvelopes *envelopes)
{
    PolicyCheck check;
    std::map<std::string, size_t> rowOf;
    std::map<std::string, std::set<std::string>> clientsOf;
    RetryJudge::Options options;
    options.throttled = config.throttling().has_value();
    options.captureEndNs = store.latestNs();
    options.connectionOpenedNs = [&store](std::uint32_t id) -> std::optional<std::int64_t> {
        if (const Connection *c = store.findConnection(id)) return c->openedNs;
        return std::nullopt;
    };
    const auto &calls = store.calls();
    for (size_t i = 0; i < calls.size(); ++i) {
        const Call &call = calls[i];
        if (call.attempts.empty()) continue;
        const ClientStack stack =
            ClientStack::fromUserAgent(agents.forConnection(call.attempts.front().connection));
        const std::optional<MethodRetryPolicy> policy = config.forMethod(call.method);
        const Connection *conn = store.findConnection(call.attempts.back().connection);
        options.clientClosedNs =
            conn && conn->closeReason == "closed by client" ? conn->closedNs : std::nullopt;
        const RetryVerdict v = RetryJudge::judge(call, policy, stack, options);
        if (envelopes) envelopes->set(i, call.key, RetryJudge::envelopesNs(call, policy, stack));
        auto [it, added] = rowOf.emplace(call.method, check.m_rows.size());
        if (added) {
            MethodRow row;
            row.method = call.method;
            row.policy = !policy            ? "none"
                         : policy->hasRetry ? policy->matchedBy
                                            : policy->matchedBy + " (no retryPolicy)";
            check.m_rows.push_back(std::move(row));
        }
        MethodRow &row = check.m_rows[it->second];
        ++row.calls;
        ++row.byKind[size_t(v.kind)];
        clientsOf[call.method].insert(stack.name());
        if (v.violation()) check.m_findings.push_back({call.method, call.key, i, stack.name(), v});
    }
    for (MethodRow &row : check.m_rows) {
        for (const std::string &c : clientsOf[row.method])
            row.clients += (row.clients.empty() ? "" : ", ") + c;
    }
    std::sort(check.m_rows.begin(), check.m_rows.end(),
              [](const MethodRow &a, const MethodRow &b) { return a.method < b.method; });
    return check;
}

std::uint64_t PolicyCheck::calls() const
{
    std::uint64_t n = 0;
    for (const MethodRow &r : m_rows)
        n += r.calls;
    return n;
}

std::string PolicyCheck::text() const
{
    size_t methodWidth = 6, policyWidth = 6;
    for (const MethodRow &r : m_rows) {
        methodWidth = std::max(methodWidth, r.method.size());
        policyWidth = std::max(policyWidth, r.policy.size());
    }
    std::string out = pad("method", methodWidth) + "  " + pad("policy", policyWidth) + "  " +
                      pad("calls", 6, true) + "  " + pad("conforms", 8, true);
    for (RetryVerdict::Kind k : kViolationKinds)
        out += "  " + std::string(RetryVerdict::key(k));
    out += "  in-flight  client\n";
    for (const MethodRow &r : m_rows) {
        out += pad(r.method, methodWidth) + "  " + pad(r.policy, policyWidth) + "  " +
               pad(std::to_string(r.calls), 6, true) + "  " +
               pad(std::to_string(r.count(RetryVerdict::Kind::Conforms)), 8, true);
        for (RetryVerdict::Kind k : kViolationKinds)
            out += "  " + pad(std::to_string(r.count(k)), std::string(RetryVerdict::key(k)).size(), true);
        out += "  " + pad(std::to_string(r.count(RetryVerdict::Kind::InFlight)), 9, true) + "  " + r.clients +
               "\n";
    }
    if (m_findings.empty()) {
        out += "\nall " + std::to_string(calls()) + " calls conform\n";
        return out;
    }
    out += "\n" + std::to_string(m_findings.size()) + " of " + std::to_string(calls()) +
           " calls do not conform:\n";
    for (const Finding &f : m_findings)
        out += "  " + f.method + "  " + f.call + "  " + RetryVerdict::title(f.verdict.kind) + ": " +
               f.verdict.reason + "\n";
    return out;
}

QJsonObject PolicyCheck::toJson() const
{
    QJsonArray rows;
    for (const MethodRow &r : m_rows) {
        QJsonObject counts;
        for (RetryVerdict::Kind k : RetryVerdict::kinds())
            counts.insert(QLatin1String(RetryVerdict::key(k)), qint64(r.count(k)));
        rows.append(QJsonObject{{"method", QString::fromStdString(r.method)},
                                {"policy", QString::fromStdString(r.policy)},
                                {"clients", QString::fromStdString(r.clients)},
                                {"calls", qint64(r.calls)},
                                {"verdicts", counts}});
    }
    QJsonArray findings;
    for (const Finding &f : m_findings)
        findings.append(QJsonObject{{"method", QString::fromStdString(f.method)},
                                    {"call", QString::fromStdString(f.call)},
                                    {"client", QString::fromStdString(f.client)},
                                    {"verdict", QLatin1String(RetryVerdict::key(f.verdict.kind))},
                                    {"attempt", f.verdict.attempt},
                                    {"reason", QString::fromStdString(f.verdict.reason)}});
    return QJsonObject{{"calls", qint64(calls())},
                       {"conforming", allConform()},
                       {"methods", rows},
                       {"nonConforming", findings}};
}

} // namespace rpcscope
