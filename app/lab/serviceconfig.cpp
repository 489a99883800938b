#include "serviceconfig.h"

#include <sstream>

namespace rpcscope::lab {

namespace {

// Durations are protobuf Duration strings: seconds with a fraction ("0.05s").
std::string seconds(int ms)
{
    std::ostringstream s;
    s << ms / 1000.0 << "s";
    return s.str();
}

std::string retryPolicy(int maxAttempts, int initialBackoffMs)
{
    std::ostringstream s;
    s << R"("retryPolicy":{"maxAttempts":)" << maxAttempts << R"(,"initialBackoff":")"
      << seconds(initialBackoffMs)
      << R"(","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]})";
    return s.str();
}

std::string methodConfig(const std::string &policy)
{
    return R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],)" + policy + "}]";
}

} // namespace

std::string ServiceConfig::retry(int maxAttempts, int initialBackoffMs)
{
    return methodConfig(retryPolicy(maxAttempts, initialBackoffMs)) + "}";
}

std::string ServiceConfig::throttledRetry(int maxAttempts, int initialBackoffMs, int maxTokens,
                                          double tokenRatio)
{
    std::ostringstream s;
    s << methodConfig(retryPolicy(maxAttempts, initialBackoffMs)) << R"(,"retryThrottling":{"maxTokens":)"
      << maxTokens << R"(,"tokenRatio":)" << tokenRatio << "}}";
    return s.str();
}

std::string ServiceConfig::hedging(int maxAttempts, int hedgingDelayMs)
{
    std::ostringstream s;
    s << R"("hedgingPolicy":{"maxAttempts":)" << maxAttempts << R"(,"hedgingDelay":")"
      << seconds(hedgingDelayMs) << R"(","nonFatalStatusCodes":["UNAVAILABLE"]})";
    return methodConfig(s.str()) + "}";
}

} // namespace rpcscope::lab
