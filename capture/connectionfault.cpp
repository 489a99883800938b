#include "connectionfault.h"

#include <algorithm>

namespace rpcscope {

namespace {
// bandwidth: a side is read again once this much of a second's rate has built up (a 20th of a second's worth,
// at least a byte), so a slow rate is kept without a wake-up for every byte.
double bucketOf(std::uint64_t rate)
{
    return std::max(1.0, double(rate) / 20);
}

int msUntil(std::int64_t at, std::int64_t now)
{
    if (at <= now) return 0;
    return int(std::min<std::int64_t>((at - now + 999'999) / 1'000'000, 60'000));
}

void wakeBy(int &timeout, int ms)
{
    if (timeout < 0 || ms < timeout) timeout = ms;
}
} // namespace

std::vector<size_t> ConnectionFault::rulesFor(const FaultSet::Rules &rules, const std::string &hop)
{
    std::vector<size_t> out;
    for (size_t i = 0; i < rules.rules.size(); ++i) {
        const FaultRule &r = rules.rules[i];
        if (rules.enabled[i] && isConnectionAction(r.action) && (r.hop.empty() || r.hop == hop))
            out.push_back(i);
    }
    return out;
}

std::unique_ptr<ConnectionFault> ConnectionFault::choose(FaultSet &faults, const FaultSet::Rules &rules,
                                                         const std::vector<size_t> &candidates,
                                                         std::int64_t origin, std::int64_t now,
                                                         std::mt19937_64 &random)
{
    const std::int64_t since = now - origin;
    for (size_t i : candidates) {
        const FaultRule &r = rules.rules[i];
        // A connection open when the window opens is hit then: a channel keeps its connection for long.
        const std::int64_t at = std::max(now + r.afterNs, origin + r.windowFromNs);
        if (r.windowToNs && (since >= *r.windowToNs || at >= origin + *r.windowToNs)) continue;
        if (r.nth && !r.nth->contains(faults.nextMatch(i))) continue;
        if (r.percent < 100 && std::uniform_real_distribution<double>(0, 100)(random) >= r.percent) continue;
        auto f = std::make_unique<ConnectionFault>();
        f->m_rule = r;
        f->m_index = i;
        f->m_at = at;
        return f; // one rule a connection: the first that chooses it
    }
    return nullptr;
}

bool ConnectionFault::start(FaultSet &faults, std::int64_t now, std::string *what)
{
    if (m_applied || now < m_at) return false;
    m_applied = true;
    faults.hit(m_index);
    *what = std::string("fault: ") + faultActionName(m_rule.action) + " (rule " +
            std::to_string(m_index + 1) + ")";
    if (m_rule.action == FaultAction::Bandwidth) {
        m_refilledAt = now;
        m_tokens[0] = m_tokens[1] = bucketOf(m_rule.bytesPerSecond);
    }
    return true;
}

void ConnectionFault::poll(std::int64_t now, bool &clientIn, bool &serverIn, bool clientOpen, bool serverOpen,
                           int &timeout)
{
    if (!m_applied) {
        wakeBy(timeout, msUntil(m_at, now));
        return;
    }
    switch (m_rule.action) {
    case FaultAction::Blackhole:
        // Both sides are still read (and what they send dropped), so neither is held up by a full window.
        clientIn = clientOpen;
        serverIn = serverOpen;
        return;
    case FaultAction::Bandwidth: {
        const std::uint64_t rate = m_rule.bytesPerSecond;
        for (int side = 0; side < 2; ++side) {
            bool &in = side == 0 ? clientIn : serverIn;
            if (!in || readAllowance(side == 0, now) > 0) continue;
            in = false;
            const double missing = std::min(bucketOf(rate), 1.0 * double(rate)) - m_tokens[side];
            wakeBy(timeout, msUntil(now + std::int64_t(missing * 1e9 / double(rate)) + 1, now));
        }
        return;
    }
    case FaultAction::SlowClose:
        for (int side = 0; side < 2; ++side)
            if (m_closeAt[side] > now) wakeBy(timeout, msUntil(m_closeAt[side], now));
        return;
    default:
        return;
    }
}

size_t ConnectionFault::readAllowance(bool fromClient, std::int64_t now)
{
    if (!m_applied || m_rule.action != FaultAction::Bandwidth) return SIZE_MAX;
    if (!(fromClient ? m_rule.limitUp : m_rule.limitDown)) return SIZE_MAX;
    const double bucket = bucketOf(m_rule.bytesPerSecond);
    if (now > m_refilledAt) {
        const double added = double(now - m_refilledAt) * double(m_rule.bytesPerSecond) / 1e9;
        for (double &t : m_tokens)
            t = std::min(bucket, t + added);
        m_refilledAt = now;
    }
    const double tokens = m_tokens[fromClient ? 0 : 1];
    // Wait for a whole bucket (or a second's rate, when that is less) rather than read a byte at a time.
    if (tokens < std::min(bucket, double(m_rule.bytesPerSecond))) return 0;
    return size_t(tokens);
}

void ConnectionFault::spent(bool fromClient, size_t n)
{
    if (m_rule.action == FaultAction::Bandwidth) m_tokens[fromClient ? 0 : 1] -= double(n);
}

bool ConnectionFault::holdsClose(bool fromClient, std::int64_t now)
{
    if (!m_applied || m_rule.action != FaultAction::SlowClose) return false;
    std::int64_t &at = m_closeAt[fromClient ? 0 : 1];
    if (at == 0) at = now + m_rule.byNs;
    return now < at;
}

} // namespace rpcscope
