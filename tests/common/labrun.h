#pragma once

// One lab scenario run through its own LabSession (real grpc++ client and server behind the capture relays),
// with every event the relays decoded: shared by the integration tests that read a run's timeline.

#include "labsession.h"

#include <map>
#include <mutex>
#include <string>

namespace labrun {

struct Run
{
    rpcscope::lab::ScenarioResult result;
    rpcscope::EventBatch events;
};

// Runs `name` with its parameters' defaults, changed by `overrides`. A scenario that cannot start says why
// in result.summary (expectationHeld stays false).
inline Run runScenario(const std::string &name, const std::map<std::string, std::string> &overrides = {})
{
    using namespace rpcscope;
    Run run;
    const lab::Scenario *scenario = lab::findScenario(name);
    if (!scenario) {
        run.result.summary = "no scenario " + name;
        return run;
    }
    lab::ScenarioParams params;
    std::string error;
    if (!scenario->resolveParams(overrides, &params, &error)) {
        run.result.summary = error;
        return run;
    }
    std::mutex mu;
    lab::LabSession session;
    if (!session.start(
            [&](EventBatch &&b) {
                std::lock_guard lk(mu);
                run.events.insert(run.events.end(), b.begin(), b.end());
            },
            &error)) {
        run.result.summary = error;
        return run;
    }
    run.result = session.run(*scenario, params);
    session.stop(); // flushes every relay's events
    return run;
}

} // namespace labrun
