// Seed 001 scenarios (governance). Registered by allScenarios() in scenarios.cpp.

#include "scenario.h"

namespace rpcscope::lab {

void appendGovernanceScenarios(std::vector<Scenario> &)
{
}

} // namespace rpcscope::lab
