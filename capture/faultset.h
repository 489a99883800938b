#pragma once

#include "faultrule.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

// The fault rules of one capture, numbered from 1 in the order added, with what they have done so far. Shared
// by every hop's relay: each takes the rules for its hop, counts the calls and connections they match and
// their hits from its own thread. Rules can be added, edited and switched on or off while the capture runs
// (the GUI's Faults dock), never removed, so a rule's number stays its own for the whole capture.
class FaultSet
{
public:
    static constexpr size_t kMaxRules = 256;

    // The rules at one moment. A relay thread holds one and takes a newer one when version() has moved, so
    // it never reads a rule while another thread edits it.
    struct Rules
    {
        std::vector<FaultRule> rules;
        std::vector<char> enabled; // one per rule
        std::uint64_t version = 0;
        // A stream rule, switched on or not, acts on the hop `hop`: its connections are to be framed (a rule
        // switched off now may be switched on while a channel keeps its connection).
        bool framesHop(const std::string &hop) const;
    };

    explicit FaultSet(std::vector<FaultRule> rules = {});
    FaultSet(const FaultSet &) = delete;
    FaultSet &operator=(const FaultSet &) = delete;

    std::shared_ptr<const Rules> snapshot() const;
    std::uint64_t version() const { return m_version.load(std::memory_order_acquire); }
    size_t size() const { return snapshot()->rules.size(); }
    bool empty() const { return size() == 0; }
    FaultRule rule(size_t index) const { return snapshot()->rules.at(index); }
    bool enabled(size_t index) const { return snapshot()->enabled.at(index) != 0; }

    // The new rule's index, or nothing when kMaxRules are already there.
    std::optional<size_t> add(FaultRule rule);
    // An edited rule is a new rule under the old number: its counts start again.
    void replace(size_t index, FaultRule rule);
    void setEnabled(size_t index, bool on);

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
    void publish(std::shared_ptr<Rules> next); // under m_mutex

    mutable std::mutex m_mutex;
    std::shared_ptr<const Rules> m_rules;
    std::atomic<std::uint64_t> m_version{0};
    std::unique_ptr<Counters[]> m_counters;
};

} // namespace rpcscope
