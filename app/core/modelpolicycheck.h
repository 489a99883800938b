#pragma once

#include "policycheck.h"

namespace rpcscope {

class TimelineModel;

// The Policy check of what a model holds: each call's client told from the user-agent its connection sent,
// read off the model's header log (the store keeps no headers; without a log every client is unknown).
PolicyCheck policyCheckOf(const TimelineModel &model, const RetryServiceConfig &config);

} // namespace rpcscope
