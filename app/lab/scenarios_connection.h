#pragma once

#include "scenario.h"

namespace rpcscope::lab {

// The connection scenarios' runs (scenarios_connection.cpp), for appendGovernanceScenarios(), which lists
// them among the governance ones.
ScenarioResult runTransparentRetry(const ScenarioContext &ctx, const ScenarioParams &p);
ScenarioResult runKeepaliveDrop(const ScenarioContext &ctx, const ScenarioParams &p);
ScenarioResult runChannelPool(const ScenarioContext &ctx, const ScenarioParams &p);
ScenarioResult runHealthCheck(const ScenarioContext &ctx, const ScenarioParams &p);

} // namespace rpcscope::lab
