// Seed 001 scenarios (chain). Registered by allScenarios() in scenarios.cpp.

#include "scenario.h"

namespace rpcscope::lab {

void appendChainScenarios(std::vector<Scenario> &)
{
}

} // namespace rpcscope::lab
