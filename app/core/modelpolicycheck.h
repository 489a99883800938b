#pragma once

#include "policycheck.h"

namespace rpcscope {

class TimelineModel;

// The Policy check of what a model holds: each call's client told from the user-agent its connection sent,
// read off the model's header log (the store keeps no headers; without a log every client is unknown).
// With `envelopes`, also each call's backoff ranges (PolicyCheck::run).
PolicyCheck policyCheckOf(const TimelineModel &model, const RetryServiceConfig &config,
                          GapEnvelopes *envelopes = nullptr);

} // namespace rpcscope
