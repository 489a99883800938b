// rpcscope-cli list: the lab scenarios and their parameters.

#include "commands.h"
#include "scenario.h"

#include <algorithm>
#include <cstdio>

namespace rpcscope {

int cmdList()
{
    int width = 0;
    for (const lab::Scenario &s : lab::allScenarios())
        width = std::max(width, int(s.name.size()));
    for (const lab::Scenario &s : lab::allScenarios()) {
        std::printf("%-*s  %s\n", width, s.name.c_str(), s.title.c_str());
        for (const lab::ScenarioParam &p : s.params)
            std::printf("%-*s    --set %s=%s  %s\n", width, "", p.key.c_str(), p.defaultValue.c_str(),
                        p.description.c_str());
    }
    return 0;
}

} // namespace rpcscope
