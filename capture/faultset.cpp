#include "faultset.h"

#include <algorithm>
#include <stdexcept>

namespace rpcscope {

FaultSet::FaultSet(std::vector<FaultRule> rules) : m_counters(std::make_unique<Counters[]>(kMaxRules))
{
    if (rules.size() > kMaxRules) throw std::length_error("more fault rules than FaultSet::kMaxRules");
    auto first = std::make_shared<Rules>();
    first->enabled.assign(rules.size(), 1);
    first->rules = std::move(rules);
    m_rules = std::move(first);
}

bool FaultSet::Rules::framesHop(const std::string &hop) const
{
    return std::any_of(rules.begin(), rules.end(), [&](const FaultRule &r) {
        return !isConnectionAction(r.action) && (r.hop.empty() || r.hop == hop);
    });
}

std::shared_ptr<const FaultSet::Rules> FaultSet::snapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_rules;
}

void FaultSet::publish(std::shared_ptr<Rules> next)
{
    next->version = m_rules->version + 1;
    m_rules = std::move(next);
    m_version.store(m_rules->version, std::memory_order_release);
}

std::optional<size_t> FaultSet::add(FaultRule rule)
{
    std::lock_guard lock(m_mutex);
    if (m_rules->rules.size() >= kMaxRules) return std::nullopt;
    auto next = std::make_shared<Rules>(*m_rules);
    next->rules.push_back(std::move(rule));
    next->enabled.push_back(1);
    const size_t index = next->rules.size() - 1;
    publish(std::move(next));
    return index;
}

void FaultSet::replace(size_t index, FaultRule rule)
{
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<Rules>(*m_rules);
    next->rules.at(index) = std::move(rule);
    m_counters[index].hits.store(0, std::memory_order_relaxed);
    m_counters[index].matched.store(0, std::memory_order_relaxed);
    publish(std::move(next));
}

void FaultSet::setEnabled(size_t index, bool on)
{
    std::lock_guard lock(m_mutex);
    if (m_rules->enabled.at(index) == char(on)) return;
    auto next = std::make_shared<Rules>(*m_rules);
    next->enabled[index] = on;
    publish(std::move(next));
}

} // namespace rpcscope
