#include "gapenvelopes.h"

#include "retryjudge.h"

#include <algorithm>

namespace rpcscope {

void GapEnvelopes::set(const Call &call, std::vector<Range> perAttempt)
{
    auto bySerial = [](const Entry &e, std::uint64_t s) { return e.serial < s; };
    auto it = m_calls.empty() || m_calls.back().serial < call.serial
                  ? m_calls.end()
                  : std::lower_bound(m_calls.begin(), m_calls.end(), call.serial, bySerial);
    const bool found = it != m_calls.end() && it->serial == call.serial;
    if (found && it->reachNs >= m_reachNs) m_reachStale = true;
    if (perAttempt.size() < 2) { // no gap: nothing to keep, and nothing kept before stays
        if (found) m_calls.erase(it);
        return;
    }
    // Element k is the gap before attempt k: drawn between the end of attempt k - 1 and attempt k.
    std::int64_t reach = 0;
    for (size_t k = 1; k < perAttempt.size() && k < call.attempts.size(); ++k)
        if (perAttempt[k] && call.attempts[k - 1].endNs)
            reach = std::max(reach, *call.attempts[k - 1].endNs + perAttempt[k]->second);
    if (!m_reachStale) m_reachNs = std::max(m_reachNs, reach);
    if (found)
        *it = {call.serial, reach, std::move(perAttempt)};
    else
        m_calls.insert(it, {call.serial, reach, std::move(perAttempt)});
}

void GapEnvelopes::erase(const std::vector<std::uint64_t> &serials)
{
    if (serials.empty() || m_calls.empty()) return;
    auto next = serials.begin();
    auto gone = [&](const Entry &e) {
        while (next != serials.end() && *next < e.serial)
            ++next;
        if (next == serials.end() || *next != e.serial) return false;
        if (e.reachNs >= m_reachNs) m_reachStale = true;
        return true;
    };
    // Evictions take the oldest calls: only the entries up to the last serial given can go.
    const auto region = std::upper_bound(m_calls.begin(), m_calls.end(), serials.back(),
                                         [](std::uint64_t s, const Entry &e) { return s < e.serial; });
    const auto kept = std::remove_if(m_calls.begin(), region, gone);
    m_calls.erase(kept, region);
}

void GapEnvelopes::clear()
{
    m_calls.clear();
    m_reachNs = 0;
    m_reachStale = false;
}

std::int64_t GapEnvelopes::reachNs() const
{
    if (m_reachStale) {
        m_reachNs = 0;
        for (const Entry &e : m_calls)
            m_reachNs = std::max(m_reachNs, e.reachNs);
        m_reachStale = false;
    }
    return m_reachNs;
}

GapEnvelopes::Range GapEnvelopes::given(const Call &call, size_t k) const
{
    const auto it = std::lower_bound(m_calls.begin(), m_calls.end(), call.serial,
                                     [](const Entry &e, std::uint64_t s) { return e.serial < s; });
    if (it == m_calls.end() || it->serial != call.serial || k >= it->gaps.size()) return std::nullopt;
    return it->gaps[k];
}

bool GapEnvelopes::outside(const std::pair<std::int64_t, std::int64_t> &range, std::int64_t gapNs)
{
    const double lo = double(range.first) / 1e6, hi = double(range.second) / 1e6, gap = double(gapNs) / 1e6;
    return gap < lo - RetryJudge::kEarlyMs - lo * RetryJudge::kEarlyFraction ||
           gap > hi + RetryJudge::kLateMs + hi * RetryJudge::kLateFraction;
}

GapEnvelopes::Range GapEnvelopes::expected(const GapEnvelopes *given, const Call &call, size_t k,
                                           bool *fromGiven)
{
    if (fromGiven) *fromGiven = false;
    if (k == 0) return std::nullopt;
    if (Range own = call.expectedGapNs(k - 1)) return own;
    if (!given) return std::nullopt;
    Range range = given->given(call, k);
    if (fromGiven) *fromGiven = range.has_value();
    return range;
}

} // namespace rpcscope
