#include "retryjudge.h"

#include "events.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace rpcscope {

namespace {

std::string ms(double v)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return buf;
}

std::string nsAsMs(std::int64_t ns)
{
    return ms(double(ns) / 1e6);
}

std::string statusText(int code)
{
    return std::string(grpcStatusName(code)) + " (" + std::to_string(code) + ")";
}

std::string codesText(const std::set<int> &codes)
{
    std::string s = "[";
    for (int c : codes) {
        if (s.size() > 1) s += ", ";
        s += grpcStatusName(c);
    }
    return s + "]";
}

std::string kib(std::uint64_t bytes)
{
    return std::to_string((bytes + 1023) / 1024) + " KiB";
}

RetryVerdict verdict(RetryVerdict::Kind kind, int attempt, std::string reason)
{
    return {kind, std::move(reason), attempt};
}

// The attempts the client counts, as indices into the call's: an attempt replayed transparently stands in
// for the one before it. Mostly all of them, and few: the first eight are kept inline, so judging a call
// (every call, on every change while the Policy check is live) allocates nothing for them.
class CountedAttempts
{
public:
    explicit CountedAttempts(const Call &call)
    {
        const auto &at = call.attempts;
        for (size_t i = 0; i < at.size(); ++i)
            if (!(i + 1 < at.size() && call.transparentRetry(i + 1))) push(i);
    }
    size_t size() const { return m_n; }
    size_t operator[](size_t k) const
    {
        return k < m_inline.size() ? m_inline[k] : m_more[k - m_inline.size()];
    }
    size_t back() const { return (*this)[m_n - 1]; }

private:
    void push(size_t i)
    {
        if (m_n < m_inline.size())
            m_inline[m_n] = i;
        else
            m_more.push_back(i);
        ++m_n;
    }
    std::array<size_t, 8> m_inline{};
    std::vector<size_t> m_more;
    size_t m_n = 0;
};

} // namespace

RetryVerdict RetryJudge::judge(const Call &call, const std::optional<MethodRetryPolicy> &policy,
                               const ClientStack &stack, const Options &options)
{
    using Kind = RetryVerdict::Kind;
    const auto &at = call.attempts;
    if (at.empty()) return verdict(Kind::InFlight, 0, "no attempt on the wire");
    const CountedAttempts eff(call);

    const bool retries = policy && policy->hasRetry;
    const int limit = retries ? std::min(policy->maxAttempts, stack.maxAttemptsLimit()) : 1;
    // The deadline: the first attempt's grpc-timeout (the client sends its methodConfig timeout there too),
    // else the methodConfig's.
    std::optional<std::int64_t> deadline = call.deadlineNs();
    if (!deadline && policy && policy->timeoutMs)
        deadline = call.startNs() + std::int64_t(*policy->timeoutMs * 1e6);
    const std::uint64_t buffer = stack.retryBufferBytes();
    // "5 are allowed (maxAttempts 10, clamped to 5 by grpc-c++ 1.51.1 (C-core))".
    auto allowed = [&]() -> std::string {
        std::string head = std::to_string(limit) + (limit == 1 ? " is allowed (" : " are allowed (");
        if (!retries)
            return head +
                   (policy ? "its methodConfig has no retryPolicy)" : "no methodConfig names the method)");
        head += "maxAttempts " + std::to_string(policy->maxAttempts);
        if (policy->maxAttempts > stack.maxAttemptsLimit())
            head += ", clamped to " + std::to_string(stack.maxAttemptsLimit()) + " by " + stack.name();
        return head + ")";
    };
    // Why attempt `a` committed the call, or empty.
    auto committed = [&](const Attempt &a) -> std::string {
        if (a.responseHeadersNs) return "got response headers";
        if (a.responseMessages > 0)
            return "got " + std::to_string(a.responseMessages) + " response message(s)";
        if (buffer && a.requestBytes > buffer)
            return "sent " + kib(a.requestBytes) + ", over " + stack.name() + "'s " + kib(buffer) +
                   " retry buffer";
        return {};
    };

    int sincePushback = 0; // retries since the call began or since the last pushback
    for (size_t k = 0; k + 1 < eff.size(); ++k) {
        const Attempt &a = at[eff[k]];
        const size_t nextRaw = eff[k] + 1; // the next attempt on the wire (maybe the start of a replay)
        const Attempt &next = at[nextRaw];
        const int n = int(k) + 2; // the 1-based attempt that follows
        const std::string which = "attempt " + std::to_string(n);
        if (!retries)
            return verdict(Kind::Attempts, n, std::to_string(eff.size()) + " attempts where " + allowed());
        if (const std::string why = committed(a); !why.empty())
            return verdict(Kind::AfterCommit, n,
                           "attempt " + std::to_string(n - 1) + " " + why + ", which commits the call, yet " +
                               which + " followed");
        if (a.status && !policy->retryableCodes.count(*a.status))
            return verdict(Kind::NonRetryable, n,
                           "attempt " + std::to_string(n - 1) + " ended " + statusText(*a.status) +
                               ", not in retryableStatusCodes " + codesText(policy->retryableCodes) +
                               ", yet " + which + " followed");
        if (a.pushbackMs && *a.pushbackMs < 0)
            return verdict(Kind::Pushback, n,
                           "attempt " + std::to_string(n - 1) + " carried grpc-retry-pushback-ms " +
                               std::to_string(*a.pushbackMs) + " (stop retrying), yet " + which +
                               " followed");
        if (deadline && next.startNs > *deadline + std::int64_t(kDeadlineSlackMs * 1e6))
            return verdict(Kind::PastDeadline, n,
                           which + " began " + nsAsMs(next.startNs - call.startNs()) +
                               " after the call started, past its deadline of " +
                               nsAsMs(*deadline - call.startNs()));
        if (n > limit)
            return verdict(Kind::Attempts, n, std::to_string(eff.size()) + " attempts where " + allowed());
        if (!a.endNs) continue; // a gap needs the attempt's end
        const double gapMs = double(next.startNs - *a.endNs) / 1e6;
        if (a.pushbackMs) {
            const double want = double(*a.pushbackMs);
            sincePushback = 0;
            if (gapMs < want - kEarlyMs - want * kEarlyFraction)
                return verdict(Kind::Pushback, n,
                               which + " began " + ms(gapMs) + " after attempt " + std::to_string(n - 1) +
                                   " ended, before its grpc-retry-pushback-ms " +
                                   std::to_string(*a.pushbackMs));
            continue; // a pushback replaces the backoff: no later bound beyond the usual slack
        }
        ++sincePushback;
        const auto [lo, hi] = stack.backoffMs(sincePushback, policy->initialBackoffMs,
                                              policy->backoffMultiplier, policy->maxBackoffMs);
        const double minOk = lo - kEarlyMs - lo * kEarlyFraction;
        const double maxOk = hi + kLateMs + hi * kLateFraction;
        // The retry's connection opened after the attempt ended: the retry waited for it, and goes out once
        // both its backoff and the connection are done.
        std::optional<double> reconnectMs;
        if (gapMs > maxOk && next.connection != a.connection && options.connectionOpenedNs)
            if (const auto opened = options.connectionOpenedNs(next.connection);
                opened && *opened >= *a.endNs)
                reconnectMs = double(*opened - *a.endNs) / 1e6;
        if (reconnectMs && gapMs <= std::max(hi, *reconnectMs) + kLateMs + hi * kLateFraction) continue;
        if (gapMs < minOk || gapMs > maxOk)
            return verdict(Kind::Gap, n,
                           "the gap before " + which + " was " + ms(gapMs) + "; " + stack.name() + " " +
                               stack.describeBackoff(sincePushback) + ": " +
                               (lo == hi ? ms(lo) : ms(lo) + " to " + ms(hi)) + " (" +
                               (gapMs < minOk ? "at least " + ms(minOk) : "at most " + ms(maxOk)) +
                               " with the proxy's tolerance" +
                               (reconnectMs ? "; its new connection opened " + ms(*reconnectMs) +
                                                  " after attempt " + std::to_string(n - 1) + " ended"
                                            : std::string()) +
                               ")");
    }

    // The last attempt the client counts: should another have followed?
    const Attempt &last = at[eff.back()];
    const int count = int(eff.size());
    if (!last.endNs)
        return verdict(Kind::InFlight, count, "attempt " + std::to_string(count) + " is in flight");
    const std::string summary = std::to_string(count) + (count == 1 ? " attempt" : " attempts");
    if (!retries || !last.status || *last.status == 0 || !policy->retryableCodes.count(*last.status) ||
        last.rstByClient)
        return verdict(Kind::Conforms, 0, summary);
    if (!committed(last).empty()) return verdict(Kind::Conforms, 0, summary + ", the last committed");
    if (last.pushbackMs && *last.pushbackMs < 0)
        return verdict(Kind::Conforms, 0, summary + ", stopped by pushback");
    if (count >= limit) return verdict(Kind::Conforms, 0, summary + ", as many as " + allowed());
    double waitLo = 0, waitHi = 0;
    if (last.pushbackMs) {
        waitLo = waitHi = double(*last.pushbackMs);
    } else {
        const auto [lo, hi] = stack.backoffMs(sincePushback + 1, policy->initialBackoffMs,
                                              policy->backoffMultiplier, policy->maxBackoffMs);
        waitLo = lo;
        waitHi = hi;
    }
    const std::int64_t earliest = *last.endNs + std::int64_t(waitLo * 1e6);
    if (deadline && earliest >= *deadline - std::int64_t(kDeadlineSlackMs * 1e6))
        return verdict(Kind::Conforms, 0, summary + ", the next retry would pass the deadline");
    const std::int64_t latest = *last.endNs + std::int64_t((waitHi + kLateMs + waitHi * kLateFraction) * 1e6);
    if (options.throttled)
        return verdict(Kind::Conforms, 0, summary + ", retryThrottling may have stopped the next");
    const bool clientDone = options.clientClosedNs && *options.clientClosedNs < latest;
    if (options.captureEndNs && latest > *options.captureEndNs && !clientDone)
        return verdict(Kind::InFlight, count,
                       "the capture ended before attempt " + std::to_string(count + 1) + " was due");
    return verdict(Kind::Attempts, count + 1,
                   "stopped after " + summary + " on " + statusText(*last.status) +
                       ", which is retryable, where " + allowed());
}

std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>>
RetryJudge::envelopesNs(const Call &call, const std::optional<MethodRetryPolicy> &policy,
                        const ClientStack &stack)
{
    const auto &at = call.attempts;
    std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>> out(at.size());
    if (!policy || !policy->hasRetry) return out;
    // As judge() walks them: the attempts the client counts.
    const CountedAttempts eff(call);
    // Off the wire unchecked (a pushback): clamped as Call::backoffNs clamps, so it adds to a time safely.
    auto ns = [](double ms) {
        const double v = ms * 1e6;
        return !(v > 0) ? std::int64_t(0) : v >= double(kMaxTimeoutNs) ? kMaxTimeoutNs : std::int64_t(v);
    };
    int sincePushback = 0;
    for (size_t k = 0; k + 1 < eff.size(); ++k) {
        const Attempt &a = at[eff[k]];
        if (a.pushbackMs && *a.pushbackMs < 0) break;
        if (!a.endNs) continue;
        if (a.pushbackMs) {
            sincePushback = 0;
            out[eff[k] + 1] = std::pair{ns(double(*a.pushbackMs)), ns(double(*a.pushbackMs))};
            continue;
        }
        ++sincePushback;
        const auto [lo, hi] = stack.backoffMs(sincePushback, policy->initialBackoffMs,
                                              policy->backoffMultiplier, policy->maxBackoffMs);
        out[eff[k] + 1] = std::pair{ns(lo), ns(hi)};
    }
    return out;
}

} // namespace rpcscope
