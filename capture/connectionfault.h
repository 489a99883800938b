#pragma once

#include "faultrule.h"
#include "faultset.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rpcscope {

// A connection fault rule that chose a connection: when it starts, and what it keeps while it acts (bandwidth
// tokens, slow-close times). Shared by the plain relay and the TLS relay, which each apply its action to
// their own sockets; it touches no socket itself.
class ConnectionFault
{
public:
    // The hop's switched-on connection rules in `rules`, by index.
    static std::vector<size_t> rulesFor(const FaultSet::Rules &rules, const std::string &hop);
    // The first of `candidates` that chooses a connection opened at `now` (its window, nth and percent), or
    // null. `origin` is where the rules' time windows start.
    static std::unique_ptr<ConnectionFault> choose(FaultSet &faults, const FaultSet::Rules &rules,
                                                   const std::vector<size_t> &candidates, std::int64_t origin,
                                                   std::int64_t now, std::mt19937_64 &random);

    FaultAction action() const { return m_rule.action; }
    size_t ruleIndex() const { return m_index; }
    bool applied() const { return m_applied; }
    std::int64_t startsAt() const { return m_at; }
    // Starts the rule once its time has come (counting the hit); true when it starts now. `what` is the
    // note and close reason that say so ("fault: close (rule 2)").
    bool start(FaultSet &faults, std::int64_t now, std::string *what);

    // What to poll for: `clientIn`/`serverIn` (POLLIN wanted on each side) lose the sides a bandwidth limit
    // keeps from reading now, and `timeout` (ms, -1: none) is brought in to when the rule next has something
    // to do. A blackhole reads every open side (`clientOpen`, `serverOpen`) to drop what comes.
    void poll(std::int64_t now, bool &clientIn, bool &serverIn, bool clientOpen, bool serverOpen,
              int &timeout);
    // bandwidth: how many bytes the side may read now (SIZE_MAX: no limit), and what it did read.
    size_t readAllowance(bool fromClient, std::int64_t now);
    void spent(bool fromClient, size_t n);
    // slow-close: true while the side's EOF must wait.
    bool holdsClose(bool fromClient, std::int64_t now);

private:
    FaultRule m_rule;
    size_t m_index = 0; // into the FaultSet
    std::int64_t m_at = 0;
    bool m_applied = false;
    double m_tokens[2] = {0, 0}; // bandwidth: bytes that may be read now, client side [0], server side [1]
    std::int64_t m_refilledAt = 0;
    std::int64_t m_closeAt[2] = {0, 0}; // slow-close: when the side's EOF may be passed on (0: not seen)
};

} // namespace rpcscope
