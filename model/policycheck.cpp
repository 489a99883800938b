#include "policycheck.h"

#include "clientstack.h"
#include "gapenvelopes.h"
#include "retryjudge.h"
#include "timelinestore.h"
#include "useragentindex.h"

#include <QJsonArray>
#include <algorithm>
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

namespace {

RetryJudge::Options judgeOptions(const TimelineStore &store, const RetryServiceConfig &config)
{
    RetryJudge::Options options;
    options.throttled = config.throttling().has_value();
    options.captureEndNs = store.latestNs();
    options.connectionOpenedNs = [&store](std::uint32_t id) -> std::optional<std::int64_t> {
        if (const Connection *c = store.findConnection(id)) return c->openedNs;
        return std::nullopt;
    };
    return options;
}

std::string policyName(const std::optional<MethodRetryPolicy> &policy)
{
    return !policy ? "none" : policy->hasRetry ? policy->matchedBy : policy->matchedBy + " (no retryPolicy)";
}

} // namespace

PolicyCheck PolicyCheck::run(const TimelineStore &store, const RetryServiceConfig &config,
                             const UserAgentIndex &agents, GapEnvelopes *envelopes)
{
    // The whole check is the live one's first update: every call judged, nothing kept from before.
    LivePolicyCheck live(config);
    live.update(store, agents, {}, envelopes);
    return live.check();
}

void LivePolicyCheck::update(const TimelineStore &store, const UserAgentIndex &agents,
                             const std::vector<std::uint32_t> &learned, GapEnvelopes *envelopes)
{
    RetryJudge::Options options = judgeOptions(store, m_config);
    const std::set<std::uint32_t> learnedSet(learned.begin(), learned.end());
    const auto &calls = store.calls();
    m_lastJudged = 0;
    PolicyCheck check;
    std::vector<int> rowOf(m_methods.size(), -1); // by method id
    std::vector<std::vector<char>> clientsOf;     // by row: which client ids it saw
    // m_judged holds an entry per call of the store, by serial: kept in place, those of evicted calls
    // dropped, those of new calls (the highest serials) added at the end.
    const size_t cached = m_judged.size();
    size_t read = 0, write = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
        const Call &call = calls[i];
        while (read < cached && m_judged[read].serial < call.serial)
            ++read; // evicted since
        const bool have = read < cached && m_judged[read].serial == call.serial;
        if (have) {
            if (write != read) m_judged[write] = std::move(m_judged[read]);
            ++read;
        } else if (write < cached) {
            m_judged[write] = Judged{};
        } else {
            m_judged.emplace_back();
        }
        Judged &e = m_judged[write++];
        if (call.attempts.empty()) { // not judged, as run() does not judge it
            e.serial = call.serial;
            e.revision = ~std::uint64_t(0);
            continue;
        }
        const bool again = !have || e.revision != call.revision ||
                           e.verdict.kind == RetryVerdict::Kind::InFlight ||
                           (!learnedSet.empty() && learnedSet.count(call.attempts.front().connection));
        if (again) {
            // A method's policy and a connection's client are looked up once, not per call.
            auto [method, newMethod] = m_methodIds.emplace(call.method, std::uint32_t(m_methods.size()));
            if (newMethod) {
                std::optional<MethodRetryPolicy> policy = m_config.forMethod(call.method);
                m_methods.push_back({call.method, policyName(policy), std::move(policy)});
                rowOf.push_back(-1);
            }
            const std::uint32_t conn = call.attempts.front().connection;
            auto stackIt = m_stacks.find(conn);
            if (stackIt == m_stacks.end() || learnedSet.count(conn)) {
                ClientStack stack = ClientStack::fromUserAgent(agents.forConnection(conn));
                const std::string name = stack.name();
                auto [client, newClient] = m_clientIds.emplace(name, std::uint32_t(m_clients.size()));
                if (newClient) m_clients.push_back(name);
                stackIt =
                    m_stacks.insert_or_assign(conn, std::make_pair(std::move(stack), client->second)).first;
            }
            const Method &m = m_methods[method->second];
            const ClientStack &stack = stackIt->second.first;
            const Connection *last = store.findConnection(call.attempts.back().connection);
            options.clientClosedNs =
                last && last->closeReason == "closed by client" ? last->closedNs : std::nullopt;
            e.serial = call.serial;
            e.revision = call.revision;
            e.method = method->second;
            e.client = stackIt->second.second;
            e.verdict = RetryJudge::judge(call, m.retry, stack, options);
            e.gaps = RetryJudge::envelopesNs(call, m.retry, stack);
            ++m_lastJudged;
        }
        if (envelopes && e.gaps.size() >= 2) envelopes->set(i, call, e.gaps);
        int &row = rowOf[e.method];
        if (row < 0) {
            row = int(check.m_rows.size());
            PolicyCheck::MethodRow r;
            r.method = m_methods[e.method].name;
            r.policy = m_methods[e.method].policy;
            check.m_rows.push_back(std::move(r));
            clientsOf.emplace_back();
        }
        PolicyCheck::MethodRow &r = check.m_rows[size_t(row)];
        ++r.calls;
        ++r.byKind[size_t(e.verdict.kind)];
        std::vector<char> &seen = clientsOf[size_t(row)];
        if (seen.size() <= e.client) seen.resize(e.client + 1, 0);
        seen[e.client] = 1;
        if (e.verdict.violation())
            check.m_findings.push_back(
                {m_methods[e.method].name, call.key, i, m_clients[e.client], e.verdict});
    }
    m_judged.resize(write);
    // The clients in name order, as run() lists them.
    for (size_t row = 0; row < check.m_rows.size(); ++row) {
        std::set<std::string> names;
        for (size_t c = 0; c < clientsOf[row].size(); ++c)
            if (clientsOf[row][c]) names.insert(m_clients[c]);
        for (const std::string &c : names)
            check.m_rows[row].clients += (check.m_rows[row].clients.empty() ? "" : ", ") + c;
    }
    std::sort(
        check.m_rows.begin(), check.m_rows.end(),
        [](const PolicyCheck::MethodRow &a, const PolicyCheck::MethodRow &b) { return a.method < b.method; });
    m_check = std::move(check);
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
