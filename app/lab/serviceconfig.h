#pragma once

#include <string>

namespace rpcscope::lab {

// The service configs the scenarios hand to their channels (gRPC's service config JSON), for the lab service
// rpcscope.lab.Lab. One place, so every scenario retries under the same policy apart from what it varies.
class ServiceConfig
{
public:
    // retryPolicy: maxAttempts, initialBackoff, maxBackoff 1 s, multiplier 2, only UNAVAILABLE retryable.
    static std::string retry(int maxAttempts, int initialBackoffMs);
    // The same retryPolicy under retryThrottling {maxTokens, tokenRatio}.
    static std::string throttledRetry(int maxAttempts, int initialBackoffMs, int maxTokens,
                                      double tokenRatio);
    // hedgingPolicy (which C-core 1.51 ignores) and no retryPolicy; only UNAVAILABLE non-fatal.
    static std::string hedging(int maxAttempts, int hedgingDelayMs);
};

} // namespace rpcscope::lab
