// Issue 19's "verify your policy": the lab client retries under a service config the user edits, through a
// capture hop whose fault rules fail some of its attempts, and the Policy check (model/policycheck.h) judges
// every call against that same config. Its text and parameters are in resources/scenarios/policy.json.

#include "events.h"
#include "faultset.h"
#include "labserver.h"
#include "retryserviceconfig.h"
#include "scenario.h"
#include "scenariokit.h"
#include "verdict.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace rpcscope::lab {

namespace {

constexpr auto kCallTimeout = std::chrono::seconds(10);
// Calls start this far apart, so their lanes read one by one rather than as one block.
constexpr auto kStagger = std::chrono::milliseconds(40);

ScenarioResult runVerifyPolicy(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const std::string config = p.text("service_config");
    std::string error;
    std::vector<FaultRule> rules;
    // resolveParams() checked both already; a failure here is a scenario run without them (a test's context).
    if (!parseFaultRuleList(p.text("faults"), &rules, &error)) return setupFailed(error);
    const auto parsed = RetryServiceConfig::parse(QByteArray::fromStdString(config), &error);
    if (!parsed) return setupFailed("service_config: " + error);
    if (!ctx.openFaultHop) return setupFailed("this lab cannot open a hop with fault rules");

    auto faults = std::make_shared<FaultSet>(rules);
    const std::string hop = ctx.openFaultHop("faulty", serverAddress(*ctx.server), faults, &error);
    if (hop.empty()) return setupFailed("could not open the hop with fault rules: " + error);

    const int calls = std::max(1, p.integer("calls"));
    const int failFirst = p.integer("server_fails_first_n");
    LabClient client(hop, config);
    std::vector<std::string> ids;
    for (int i = 0; i < calls; ++i)
        ids.push_back(ctx.nextCallId());
    std::vector<CallResult> results(ids.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ids.size(); ++i) {
        threads.emplace_back(
            [&, i] { results[i] = client.call(labRequest(ids[i], failFirst), kCallTimeout); });
        std::this_thread::sleep_for(kStagger);
    }
    for (auto &t : threads)
        t.join();

    // What the scenario can tell on its own: the server's arrivals against each call's outcome. Attempts
    // the proxy failed before the server never arrive; whether the client retried them as its policy says
    // is the Policy check's verdict, judged on the wire.
    Verdict verdict;
    int ok = 0, arrived = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const CallResult &r = results[i];
        const int n = int(ctx.server->arrivalsFor(ids[i]).size());
        arrived += n;
        ok += r.code == kOk;
        const bool consistent = n <= failFirst + 1 && (r.code == kOk) == (n == failFirst + 1) &&
                                (r.code == kOk || r.code == kUnavailable);
        verdict.addCall(r);
        // The attempts on the wire, for whoever checks the timeline: an attempt the server answered says how
        // many went before it (grpc-previous-rpc-attempts, aborted ones included); a call that failed to the
        // end made all its policy allows, or one when it could not retry at all.
        const auto arrivals = ctx.server->arrivalsFor(ids[i]);
        const auto policy = parsed->forMethod("/rpcscope.lab.Lab/Call");
        const bool retries = policy && policy->hasRetry && policy->retryableCodes.count(r.code);
        if (r.code == kOk && !arrivals.empty())
            verdict.addExpected({ids[i], arrivals.back().previousAttempts.value_or(0) + 1, r.code});
        else if (r.code != kOk && r.code != kDeadlineExceeded)
            verdict.addExpected({ids[i], retries ? std::min(policy->maxAttempts, 5) : 1, r.code});
        verdict.expect(consistent, ids[i] + " to end OK exactly when arrival " +
                                       std::to_string(failFirst + 1) + " reached the server (it ended " +
                                       grpcStatusName(r.code) + " after " + std::to_string(n) + ")");
    }
    std::uint64_t aborted = 0;
    std::string perRule;
    for (size_t i = 0; i < faults->size(); ++i) {
        aborted += faults->hits(i);
        perRule += std::string(perRule.empty() ? "" : ", ") + "rule " + std::to_string(i + 1) + ": " +
                   std::to_string(faults->hits(i));
    }
    return verdict.result(std::to_string(calls) + " calls, " + std::to_string(ok) + " OK; " +
                          std::to_string(arrived) + " attempts reached the server, the proxy failed " +
                          std::to_string(aborted) + (perRule.empty() ? "" : " (" + perRule + ")") +
                          "; the Policy check judges each call against the service config");
}

} // namespace

void appendPolicyScenarios(std::vector<Scenario> &out)
{
    out.push_back({.name = "verify-policy", .run = runVerifyPolicy});
}

} // namespace rpcscope::lab
