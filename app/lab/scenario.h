#pragma once

#include "labclient.h"

#include <functional>
#include <string>
#include <vector>

namespace rpcscope::lab {

class LabServer;

// What a scenario needs to run: where to send calls, the server to check against, fresh call ids.
struct ScenarioContext
{
    std::string target; // the capture proxy in front of the lab server
    const LabServer *server = nullptr;
    std::function<std::string()> nextCallId;
};

struct ScenarioResult
{
    bool expectationHeld = false;
    std::string summary; // one line: what happened, and what was expected when it did not hold
    std::vector<CallResult> calls;
};

struct Scenario
{
    std::string name;
    std::string title;
    std::string explanation; // what to look for on the timeline
    std::function<ScenarioResult(const ScenarioContext &)> run;
};

const std::vector<Scenario> &allScenarios();
const Scenario *findScenario(const std::string &name);

} // namespace rpcscope::lab
