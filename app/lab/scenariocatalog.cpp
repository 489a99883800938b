// The registry: every scenario's code, in the order they are listed, given its data from
// resources/scenarios/*.json.

#include "scenario.h"
#include "scenariodata.h"

#include <cstdio>
#include <cstdlib>

namespace rpcscope::lab {

const std::vector<Scenario> &allScenarios()
{
    static const std::vector<Scenario> scenarios = [] {
        std::vector<Scenario> list;
        appendRetryScenarios(list);
        appendChainScenarios(list);
        appendGovernanceScenarios(list);
        appendPolicyScenarios(list);
        std::vector<ScenarioText> texts;
        std::string error;
        // The data is compiled in, so a problem here is a broken build, not a user's mistake: stop at once
        // rather than show a scenario without its text or parameters.
        if (!loadScenarioData(&texts, &error) || !bindScenarioData(&list, texts, &error)) {
            std::fprintf(stderr, "rpcscope: the lab's scenario data is broken: %s\n", error.c_str());
            std::abort();
        }
        return list;
    }();
    return scenarios;
}

const Scenario *findScenario(const std::string &name)
{
    for (const Scenario &s : allScenarios())
        if (s.name == name) return &s;
    return nullptr;
}

} // namespace rpcscope::lab
