#include "labserver.h"
#include "scenario.h"

#include <grpcpp/support/status_code_enum.h>

namespace rpcscope::lab {

namespace {

std::string retryConfig(int maxAttempts, const std::string &initialBackoff)
{
    return R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":)" +
           std::to_string(maxAttempts) + R"(,"initialBackoff":")" + initialBackoff +
           R"(","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";
}

ScenarioResult runRetryBasic(const ScenarioContext &ctx)
{
    LabClient client(ctx.target, retryConfig(3, "0.05s"));
    CallRequest req;
    req.set_call_id(ctx.nextCallId());
    req.set_fail_first_n(2);
    req.set_fail_code(grpc::StatusCode::UNAVAILABLE);
    req.set_payload(std::string(100, 'q'));
    req.set_response_size(100);

    ScenarioResult r;
    r.calls.push_back(client.call(req, std::chrono::seconds(5)));
    const CallResult &c = r.calls.back();
    const auto arrivals = ctx.server->arrivalsFor(req.call_id());
    r.expectationHeld = c.code == grpc::StatusCode::OK && arrivals.size() == 3;
    r.summary = "call " + req.call_id() + ": " + (c.code == 0 ? "OK" : "status " + std::to_string(c.code)) +
                " after " + std::to_string(arrivals.size()) + " arrivals in " +
                std::to_string((c.endNs - c.startNs) / 1'000'000) + " ms";
    if (!r.expectationHeld)
        r.summary += " (expected OK after 3 arrivals)";
    return r;
}

} // namespace

const std::vector<Scenario> &allScenarios()
{
    static const std::vector<Scenario> scenarios = {
        {"retry-basic", "Retry with exponential backoff",
         "retryPolicy maxAttempts 3, initialBackoff 50 ms, multiplier 2, maxBackoff 1 s, UNAVAILABLE retryable. "
         "The server fails the first 2 arrivals. Look for: 3 attempts in one call, the first gap exactly 50 ms "
         "(C-core does not jitter the first retry), the second gap 80-120 ms, outcome OK.",
         runRetryBasic},
    };
    return scenarios;
}

const Scenario *findScenario(const std::string &name)
{
    for (const Scenario &s : allScenarios())
        if (s.name == name)
            return &s;
    return nullptr;
}

} // namespace rpcscope::lab
