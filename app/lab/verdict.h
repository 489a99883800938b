#pragma once

#include "scenario.h"

#include <string>
#include <vector>

namespace rpcscope::lab {

class LabServer;

// Builds a scenario's result: the calls it made and what C-core should have done with each, whether every
// check held, and the one-line summary. Every scenario ends with one.
class Verdict
{
public:
    // A call and what was expected of it (checked by arrivals(), or by the scenario's own checks).
    void add(CallResult call, ExpectedCall expected);
    // The same apart, for scenarios whose expected calls are not the client's (the hops of a chain).
    void addCall(CallResult call) { m_calls.push_back(std::move(call)); }
    void addExpected(ExpectedCall expected) { m_expected.push_back(std::move(expected)); }
    // Calls that should each have made one attempt and ended OK.
    void addOk(const std::vector<CallResult> &calls);
    // A check whose failure the scenario's summary explains in its own words.
    void require(bool held);
    // A check whose failure result() lists after the summary as "; expected <what>".
    void expect(bool held, const std::string &what);
    // Checks every call added with add() so far against the attempts the lab server saw and the status the
    // client got, and says so, call by call: "ID: STATUS after N attempts in T ms", with what was expected
    // when it did not hold.
    std::string arrivals(const LabServer &server);

    bool held() const { return m_held; }
    ScenarioResult result(std::string summary) const;

private:
    bool m_held = true;
    std::vector<std::string> m_failed;
    std::vector<CallResult> m_calls;
    std::vector<ExpectedCall> m_expected;
};

// The common case: every call checked by its arrivals at ctx.server; a non-empty `extraCheck` is a failed
// check of the scenario's own, said after the calls.
ScenarioResult verdictByArrivals(const ScenarioContext &ctx, std::vector<CallResult> calls,
                                 std::vector<ExpectedCall> expected, const std::string &extraCheck = {});

} // namespace rpcscope::lab
