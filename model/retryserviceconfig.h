#pragma once

// The retry part of a gRPC service config: the JSON text users hand their channel (gRFC A6, A2), read the way
// the clients read it, so that a capture can be judged against what the client was told (retryjudge.h).
// Only what decides retries is kept: each methodConfig's names, retryPolicy and timeout, and retryThrottling.
// Anything else (loadBalancingConfig, waitForReady, hedgingPolicy ...) is ignored, as the clients ignore what
// they do not know. Field names match case-insensitively (grpc-go does; its own example writes
// "MaxAttempts"), and status codes are names ("UNAVAILABLE", any case) or numbers.

#include <QByteArray>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rpcscope {

struct MethodRetryPolicy
{
    std::string matchedBy; // which name matched: "/pkg.Service/Method", "pkg.Service" or "default"
    bool hasRetry = false; // a retryPolicy applies (without one the client makes one attempt)
    int maxAttempts = 0;   // as configured (the clients clamp it: ClientStack::maxAttemptsLimit)
    double initialBackoffMs = 0, maxBackoffMs = 0, backoffMultiplier = 0;
    std::set<int> retryableCodes;    // gRPC status codes
    std::optional<double> timeoutMs; // methodConfig.timeout: the deadline when the call sets none shorter
};

struct RetryThrottling
{
    double maxTokens = 0;
    double tokenRatio = 0;
};

class RetryServiceConfig
{
public:
    // Parses the service config JSON. On bad input, nullopt and one line naming the field:
    // "methodConfig[0].retryPolicy.initialBackoff: \"100ms\" is not a duration (seconds, e.g. \"0.1s\")".
    static std::optional<RetryServiceConfig> parse(const QByteArray &json, std::string *error);

    // The policy that applies to a call of `path` ("/pkg.Service/Method"), by gRPC's precedence: a name with
    // this service and method, else one with this service and no method, else the default (an empty name).
    // nullopt when no methodConfig names it: the client then makes one attempt (transparent retries aside).
    std::optional<MethodRetryPolicy> forMethod(const std::string &path) const;

    const std::optional<RetryThrottling> &throttling() const { return m_throttling; }
    size_t methodConfigs() const { return m_policies.size(); }

    // Whether a status code name or number is a gRPC status code: 0-16. -1 when not.
    static int statusCode(const std::string &nameOrNumber);
    // A protobuf JSON Duration ("0.1s", "1.5s", "3s") in ms; nullopt when malformed or negative.
    static std::optional<double> durationMs(const std::string &text);

private:
    struct Entry
    {
        std::string key; // "/svc/method", "svc/" or "" (default)
        size_t policy = 0;
    };
    std::vector<MethodRetryPolicy> m_policies; // one per methodConfig
    std::vector<Entry> m_names;
    std::optional<RetryThrottling> m_throttling;
};

} // namespace rpcscope
