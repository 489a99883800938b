#include "verdict.h"

#include "events.h"
#include "labserver.h"

#include <sstream>

namespace rpcscope::lab {

void Verdict::add(CallResult call, ExpectedCall expected)
{
    m_calls.push_back(std::move(call));
    m_expected.push_back(std::move(expected));
}

void Verdict::addOk(const std::vector<CallResult> &calls)
{
    for (const CallResult &c : calls)
        add(c, {c.callId, 1, 0});
}

void Verdict::require(bool held)
{
    m_held = m_held && held;
}

void Verdict::expect(bool held, const std::string &what)
{
    require(held);
    if (!held) m_failed.push_back(what);
}

std::string Verdict::arrivals(const LabServer &server)
{
    std::ostringstream s;
    for (size_t i = 0; i < m_calls.size(); ++i) {
        const CallResult &c = m_calls[i];
        const ExpectedCall &e = m_expected[i];
        const int arrivals = int(server.arrivalsFor(c.callId).size());
        const bool held = arrivals == e.attempts && c.code == e.finalStatus;
        require(held);
        if (i) s << "; ";
        s << c.callId << ": " << grpcStatusName(c.code) << " after " << arrivals << " attempt"
          << (arrivals == 1 ? "" : "s") << " in " << (c.endNs - c.startNs) / 1'000'000 << " ms";
        if (!held) s << " (expected " << grpcStatusName(e.finalStatus) << " after " << e.attempts << ")";
    }
    return s.str();
}

ScenarioResult Verdict::result(std::string summary) const
{
    ScenarioResult r;
    r.expectationHeld = m_held;
    r.summary = std::move(summary);
    for (const std::string &f : m_failed)
        r.summary += "; expected " + f;
    r.calls = m_calls;
    r.expected = m_expected;
    return r;
}

ScenarioResult verdictByArrivals(const ScenarioContext &ctx, std::vector<CallResult> calls,
                                 std::vector<ExpectedCall> expected, const std::string &extraCheck)
{
    Verdict v;
    for (size_t i = 0; i < calls.size(); ++i)
        v.add(std::move(calls[i]), std::move(expected[i]));
    std::string summary = v.arrivals(*ctx.server);
    if (!extraCheck.empty()) {
        v.require(false);
        summary += "; " + extraCheck;
    }
    return v.result(std::move(summary));
}

} // namespace rpcscope::lab
