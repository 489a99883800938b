#pragma once

#include "faultrule.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace rpcscope {

// The fault rules of one capture, numbered from 1 in the order given, with what they have done so far. Shared
// by every hop's relay: each takes the rules for its hop, counts the calls and connections they match and
// their hits from its own thread.
class FaultSet
{
public:
    explicit FaultSet(std::vector<FaultRule> rules);
    FaultSet(const FaultSet &) = delete;
    FaultSet &operator=(const FaultSet &) = delete;

    const std::vector<FaultRule> &rules() const { return m_rules; }
    size_t size() const { return m_rules.size(); }
    bool empty() const { return m_rules.empty(); }

    // How often rule `index` (0-based) was applied.
    std::uint64_t hits(size_t index) const { return m_counters[index].hits.load(std::memory_order_relaxed); }
    void hit(size_t index) { m_counters[index].hits.fetch_add(1, std::memory_order_relaxed); }
    // The next of the calls or connections the rule's other settings matched: 1 for the first.
    std::uint64_t nextMatch(size_t index)
    {
        return m_counters[index].matched.fetch_add(1, std::memory_order_relaxed) + 1;
    }

private:
    struct Counters
    {
        std::atomic<std::uint64_t> hits{0};
        std::atomic<std::uint64_t> matched{0};
    };
    std::vector<FaultRule> m_rules;
    std::unique_ptr<Counters[]> m_counters;
};

} // namespace rpcscope
