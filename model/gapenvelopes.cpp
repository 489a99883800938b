#include "gapenvelopes.h"

#include "retryjudge.h"

#include <algorithm>

namespace rpcscope {

void GapEnvelopes::set(size_t index, std::string key, std::vector<Range> perAttempt)
{
    auto byIndex = [](const Entry &e, size_t i) { return e.index < i; };
    auto it = m_calls.empty() || m_calls.back().index < index
                  ? m_calls.end()
                  : std::lower_bound(m_calls.begin(), m_calls.end(), index, byIndex);
    const bool found = it != m_calls.end() && it->index == index;
    if (perAttempt.size() < 2) { // no gap: nothing to keep, and nothing kept before stays
        if (found) m_calls.erase(it);
        return;
    }
    if (found)
        *it = {index, std::move(key), std::move(perAttempt)};
    else
        m_calls.insert(it, {index, std::move(key), std::move(perAttempt)});
}

void GapEnvelopes::set(size_t index, const Call &call, std::vector<Range> perAttempt)
{
    // Element k is the gap before attempt k: drawn between the end of attempt k - 1 and attempt k.
    for (size_t k = 1; k < perAttempt.size() && k < call.attempts.size(); ++k)
        if (perAttempt[k] && call.attempts[k - 1].endNs)
            m_reachNs = std::max(m_reachNs, *call.attempts[k - 1].endNs + perAttempt[k]->second);
    set(index, call.key, std::move(perAttempt));
}

GapEnvelopes::Range GapEnvelopes::given(size_t index, const Call &call, size_t k) const
{
    const auto it = std::lower_bound(m_calls.begin(), m_calls.end(), index,
                                     [](const Entry &e, size_t i) { return e.index < i; });
    if (it == m_calls.end() || it->index != index) return std::nullopt;
    const Entry &e = *it;
    if (e.key.empty() || e.key != call.key || k >= e.gaps.size()) return std::nullopt;
    return e.gaps[k];
}

bool GapEnvelopes::outside(const std::pair<std::int64_t, std::int64_t> &range, std::int64_t gapNs)
{
    const double lo = double(range.first) / 1e6, hi = double(range.second) / 1e6, gap = double(gapNs) / 1e6;
    return gap < lo - RetryJudge::kEarlyMs - lo * RetryJudge::kEarlyFraction ||
           gap > hi + RetryJudge::kLateMs + hi * RetryJudge::kLateFraction;
}

GapEnvelopes::Range GapEnvelopes::expected(const GapEnvelopes *given, size_t index, const Call &call,
                                           size_t k, bool *fromGiven)
{
    if (fromGiven) *fromGiven = false;
    if (k == 0) return std::nullopt;
    if (Range own = call.expectedGapNs(k - 1)) return own;
    if (!given) return std::nullopt;
    Range range = given->given(index, call, k);
    if (fromGiven) *fromGiven = range.has_value();
    return range;
}

} // namespace rpcscope
