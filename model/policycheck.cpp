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
    live.update(store, agents);
    if (envelopes) *envelopes = *live.envelopes();
    return live.check();
}

LivePolicyCheck::LivePolicyCheck(RetryServiceConfig config)
    : m_config(std::move(config)), m_envelopes(std::make_shared<GapEnvelopes>())
{
}

void LivePolicyCheck::reset()
{
    m_judged.clear();
    for (Method &m : m_methods) {
        m.calls = 0;
        m.byKind = {};
        m.byClient.clear();
    }
    m_inFlight.clear();
    m_violations = 0;
    m_envelopes->clear();
    m_changes.all = true;
}

void LivePolicyCheck::count(const Judged &e, int sign)
{
    Method &m = m_methods[e.method];
    const auto step = std::uint64_t(std::int64_t(sign));
    m.calls += step;
    m.byKind[size_t(e.verdict.kind)] += step;
    if (m.byClient.size() <= e.client) m.byClient.resize(e.client + 1, 0);
    m.byClient[e.client] += step;
    if (e.verdict.violation()) m_violations += step;
}

size_t LivePolicyCheck::find(std::uint64_t serial, size_t from) const
{
    const size_t n = m_judged.size();
    if (from >= n) return n;
    // Gallop from `from`: the serials asked for ascend, and most are near the end (the newest calls).
    size_t lo = from, step = 1, hi = from;
    while (hi < n && m_judged[hi].serial < serial) {
        lo = hi + 1;
        hi = std::min(n, hi + step);
        step *= 2;
    }
    auto it = std::lower_bound(m_judged.begin() + std::ptrdiff_t(lo), m_judged.begin() + std::ptrdiff_t(hi),
                               serial, [](const Judged &e, std::uint64_t s) { return e.serial < s; });
    const size_t at = size_t(it - m_judged.begin());
    return at < n && m_judged[at].serial == serial ? at : n;
}

namespace {
// Up to this many methods, a call's is looked up by comparing names rather than in m_methodIds.
constexpr size_t kMethodsScanned = 8;
} // namespace

void LivePolicyCheck::judge(size_t index, const Call &call, RetryJudge::Options &options,
                            const UserAgentIndex &agents)
{
    Judged &e = m_judged[index];
    e.serial = call.serial;
    e.judgedIn = m_updates;
    const bool wasListed = e.counted && e.verdict.violation();
    if (e.counted) count(e, -1);
    if (call.attempts.empty()) { // not judged, as run() does not judge it
        e.counted = false;
        e.revision = ~std::uint64_t(0);
        e.verdict = {};
        if (wasListed) m_changes.gone.push_back(e.serial);
        if (e.hadGaps) m_envelopes->set(call, {});
        e.hadGaps = false;
        return;
    }
    // A method's policy and a connection's client are looked up once, not per call; calls in a row are
    // mostly of the method before.
    if (m_lastMethod >= m_methods.size() || m_methods[m_lastMethod].name != call.method) {
        // A service has a few methods: compared in turn they are found sooner than by hashing the name.
        size_t found = m_methods.size();
        if (m_methods.size() <= kMethodsScanned) {
            for (size_t k = 0; k < m_methods.size(); ++k)
                if (m_methods[k].name == call.method) {
                    found = k;
                    break;
                }
            if (found == m_methods.size()) m_methodIds.emplace(call.method, std::uint32_t(found));
        } else {
            auto method = m_methodIds.find(call.method);
            if (method == m_methodIds.end())
                method = m_methodIds.emplace(call.method, std::uint32_t(m_methods.size())).first;
            found = method->second;
        }
        m_lastMethod = found;
    }
    if (m_lastMethod == m_methods.size()) {
        std::optional<MethodRetryPolicy> policy = m_config.forMethod(call.method);
        Method m;
        m.name = call.method;
        m.policy = policyName(policy);
        m.retry = std::move(policy);
        m_methods.push_back(std::move(m));
    }
    const std::uint32_t conn = call.attempts.front().connection;
    auto stackIt = m_stacks.find(conn);
    if (stackIt == m_stacks.end()) {
        ClientStack stack = ClientStack::fromUserAgent(agents.forConnection(conn));
        const std::string name = stack.name();
        auto [client, newClient] = m_clientIds.emplace(name, std::uint32_t(m_clients.size()));
        if (newClient) m_clients.push_back(name);
        stackIt = m_stacks.emplace(conn, std::make_pair(std::move(stack), client->second)).first;
    }
    const Method &m = m_methods[m_lastMethod];
    const ClientStack &stack = stackIt->second.first;
    const Connection *last = m_store->findConnection(call.attempts.back().connection);
    options.clientClosedNs = last && last->closeReason == "closed by client" ? last->closedNs : std::nullopt;
    RetryVerdict verdict = RetryJudge::judge(call, m.retry, stack, options);
    const bool listed = verdict.violation();
    if (listed && (!wasListed || verdict.kind != e.verdict.kind || verdict.reason != e.verdict.reason ||
                   verdict.attempt != e.verdict.attempt))
        m_changes.changed.push_back(e.serial);
    else if (!listed && wasListed)
        m_changes.gone.push_back(e.serial);
    e.revision = call.revision;
    e.method = m_lastMethod;
    e.client = stackIt->second.second;
    e.verdict = std::move(verdict);
    e.counted = true;
    count(e, +1);
    if (e.verdict.kind == RetryVerdict::Kind::InFlight) m_inFlight.push_back(e.serial);
    // Most calls have one attempt, so no gap: nothing to work out, nothing to keep.
    if (call.attempts.size() >= 2)
        m_envelopes->set(call, RetryJudge::envelopesNs(call, m.retry, stack));
    else if (e.hadGaps)
        m_envelopes->set(call, {});
    e.hadGaps = call.attempts.size() >= 2;
    ++m_lastJudged;
}

void LivePolicyCheck::forget(const Judged &e)
{
    if (e.counted) {
        if (e.verdict.violation()) m_changes.gone.push_back(e.serial);
        count(e, -1);
    }
}

bool LivePolicyCheck::dropEvicted(const TimelineStore &store)
{
    const auto &calls = store.calls();
    size_t toFind = store.evictedCalls() - m_seenEvicted;
    std::vector<std::uint64_t> gone;
    // Retention evicts the oldest calls (never one in flight or pinned): walk the front of both until every
    // call evicted since is found, or m_judged ends (calls added and evicted between two updates were never
    // here).
    size_t i = 0, j = 0;
    std::vector<char> drop;
    while (toFind > 0 && j < m_judged.size()) {
        if (i < calls.size() && calls[i].serial == m_judged[j].serial) {
            ++i;
            ++j;
            drop.push_back(0);
            continue;
        }
        forget(m_judged[j]);
        gone.push_back(m_judged[j].serial);
        drop.push_back(1);
        --toFind;
        ++j;
    }
    if (!gone.empty()) {
        // The kept ones of the region move to its end, the region's front goes.
        size_t write = j;
        for (size_t k = j; k-- > 0;)
            if (!drop[k]) m_judged[--write] = std::move(m_judged[k]);
        m_judged.erase(m_judged.begin(), m_judged.begin() + std::ptrdiff_t(write));
        m_envelopes->erase(gone);
    }
    return m_judged.size() <= calls.size() &&
           (m_judged.empty() || (m_judged.front().serial == calls.front().serial &&
                                 m_judged.back().serial == calls[m_judged.size() - 1].serial));
}

void LivePolicyCheck::update(const TimelineStore &store, const UserAgentIndex &agents,
                             const std::vector<std::uint32_t> &learned)
{
    m_store = &store;
    m_changes = {};
    m_lastJudged = 0;
    m_findingsListed = false;
    ++m_updates;
    RetryJudge::Options options = judgeOptions(store, m_config);
    // A learned connection's client is told again on its calls' next judging.
    bool learnedJudged = false;
    for (std::uint32_t conn : learned)
        learnedJudged |= m_stacks.erase(conn) > 0;
    std::vector<std::uint64_t> changed;
    // The calls in flight after the last update, each judged again now (which lists it anew if it still is).
    std::vector<std::uint64_t> wereInFlight;
    wereInFlight.swap(m_inFlight);
    const bool cleared = store.evictedCalls() < m_seenEvicted;
    if (m_updates == 1 || cleared) reset();
    if (m_updates == 1 || cleared || !store.changedSince(m_seenGeneration, &changed) ||
        (store.evictedCalls() > m_seenEvicted && !dropEvicted(store)))
        readEveryCall(store, agents, learned, options);
    else
        readChanges(store, agents, learned, learnedJudged, changed, wereInFlight, options);
    m_seenGeneration = store.generation();
    m_seenEvicted = store.evictedCalls();
    std::sort(m_changes.gone.begin(), m_changes.gone.end());
    std::sort(m_changes.changed.begin(), m_changes.changed.end());
    summarise();
}

void LivePolicyCheck::readEveryCall(const TimelineStore &store, const UserAgentIndex &agents,
                                    const std::vector<std::uint32_t> &learned, RetryJudge::Options &options)
{
    // By serial: entries of evicted calls dropped, the others judged again if changed, in flight or of a
    // learned connection.
    const auto &calls = store.calls();
    const std::set<std::uint32_t> learnedSet(learned.begin(), learned.end());
    std::deque<Judged> before;
    before.swap(m_judged);
    std::vector<std::uint64_t> gone;
    size_t read = 0;
    auto evictedUpTo = [&](std::uint64_t serial) {
        for (; read < before.size() && before[read].serial < serial; ++read) {
            forget(before[read]);
            gone.push_back(before[read].serial);
        }
    };
    for (size_t i = 0; i < calls.size(); ++i) {
        const Call &call = calls[i];
        evictedUpTo(call.serial);
        const bool have = read < before.size() && before[read].serial == call.serial;
        m_judged.push_back(have ? std::move(before[read++]) : Judged{});
        const Judged &e = m_judged.back();
        if (!have || e.revision != call.revision || e.verdict.kind == RetryVerdict::Kind::InFlight ||
            (!call.attempts.empty() && learnedSet.count(call.attempts.front().connection)))
            judge(i, call, options, agents);
    }
    evictedUpTo(~std::uint64_t(0)); // none: the store keeps its newest calls
    m_envelopes->erase(gone);
}

void LivePolicyCheck::readChanges(const TimelineStore &store, const UserAgentIndex &agents,
                                  const std::vector<std::uint32_t> &learned, bool learnedJudged,
                                  const std::vector<std::uint64_t> &changed,
                                  const std::vector<std::uint64_t> &wereInFlight,
                                  RetryJudge::Options &options)
{
    // New calls, then the changed ones, those in flight and those of learned connections.
    const auto &calls = store.calls();
    const size_t known = m_judged.size();
    for (size_t i = known; i < calls.size(); ++i) {
        // Judging a call reads it, its attempts and its method's name, which the store made up to a second
        // ago and the cache has let go: all three are asked for some calls ahead, so that judging does not
        // wait for memory three times per call.
        if (i + 16 < calls.size()) { // a Call spans cache lines: its name's and its attempts' both
            __builtin_prefetch(&calls[i + 16].method);
            __builtin_prefetch(&calls[i + 16].attempts);
        }
        if (i + 8 < calls.size()) {
            const Call &ahead = calls[i + 8];
            __builtin_prefetch(ahead.method.data());
            if (!ahead.attempts.empty()) __builtin_prefetch(ahead.attempts.data());
        }
        m_judged.emplace_back();
        judge(i, calls[i], options, agents);
    }
    std::vector<std::uint64_t> again;
    again.reserve(changed.size() + wereInFlight.size());
    const std::uint64_t firstNew = known < calls.size() ? calls[known].serial : ~std::uint64_t(0);
    for (std::uint64_t serial : changed)
        if (serial < firstNew) again.push_back(serial);
    again.insert(again.end(), wereInFlight.begin(), wereInFlight.end());
    std::sort(again.begin(), again.end());
    again.erase(std::unique(again.begin(), again.end()), again.end());
    size_t at = 0;
    for (std::uint64_t serial : again) {
        const size_t i = find(serial, at);
        if (i >= known) continue; // evicted
        at = i;
        if (m_judged[i].judgedIn != m_updates) judge(i, calls[i], options, agents);
    }
    if (!learnedJudged) return;
    const std::set<std::uint32_t> learnedSet(learned.begin(), learned.end());
    for (size_t i = 0; i < known; ++i)
        if (!calls[i].attempts.empty() && learnedSet.count(calls[i].attempts.front().connection) &&
            m_judged[i].judgedIn != m_updates)
            judge(i, calls[i], options, agents);
}

void LivePolicyCheck::summarise()
{
    PolicyCheck check;
    for (const Method &m : m_methods) {
        if (m.calls == 0) continue;
        PolicyCheck::MethodRow r;
        r.method = m.name;
        r.policy = m.policy;
        r.calls = m.calls;
        r.byKind = m.byKind;
        // The clients in name order, as run() lists them.
        std::set<std::string> names;
        for (size_t c = 0; c < m.byClient.size(); ++c)
            if (m.byClient[c]) names.insert(m_clients[c]);
        for (const std::string &c : names)
            r.clients += (r.clients.empty() ? "" : ", ") + c;
        check.m_rows.push_back(std::move(r));
    }
    std::sort(
        check.m_rows.begin(), check.m_rows.end(),
        [](const PolicyCheck::MethodRow &a, const PolicyCheck::MethodRow &b) { return a.method < b.method; });
    check.m_violations = m_violations;
    m_summary = std::move(check);
}

std::optional<PolicyCheck::Finding> LivePolicyCheck::finding(std::uint64_t serial) const
{
    // Serials rise by one per call, so a call's entry is where its serial says unless calls were evicted
    // from between (pinned ones stay): tried first, as the list asks for the newest calls, for which a
    // search from the front walked the whole deque's length in cold memory.
    size_t i = m_judged.size();
    if (!m_judged.empty() && serial >= m_judged.front().serial) {
        const std::uint64_t guess = serial - m_judged.front().serial;
        if (guess < m_judged.size() && m_judged[size_t(guess)].serial == serial) i = size_t(guess);
    }
    if (i == m_judged.size()) i = find(serial, 0);
    if (i >= m_judged.size() || !m_store || i >= m_store->calls().size()) return std::nullopt;
    const Judged &e = m_judged[i];
    if (!e.counted || !e.verdict.violation()) return std::nullopt;
    const Call &call = m_store->calls()[i];
    return PolicyCheck::Finding{m_methods[e.method].name, call.key, i, e.serial,
                                m_clients[e.client],      e.verdict};
}

const PolicyCheck &LivePolicyCheck::check() const
{
    if (!m_findingsListed) {
        m_findingsListed = true;
        m_check = m_summary;
        m_check.m_findings.clear();
        m_check.m_findings.reserve(size_t(m_violations));
        const auto *calls = m_store ? &m_store->calls() : nullptr;
        for (size_t i = 0; calls && i < m_judged.size() && i < calls->size(); ++i) {
            const Judged &e = m_judged[i];
            if (e.counted && e.verdict.violation())
                m_check.m_findings.push_back(
                    {m_methods[e.method].name, (*calls)[i].key, i, e.serial, m_clients[e.client], e.verdict});
        }
    }
    return m_check;
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
