#pragma once

// Judges one call's attempts against the retry policy its client was given (retryserviceconfig.h) and the
// way its implementation retries (clientstack.h). The rules, in the order a call is checked, attempt by
// attempt (transparent retries, Call::transparentRetry, are the client's own and stand for the attempt
// they replay):
// - a retry needs a retryPolicy, and the attempt before it must not have committed the call: response
//   headers that were not Trailers-Only, a response message, or more request bytes than the client
//   buffers for retries;
// - its status must be in retryableStatusCodes (an attempt without a status, reset or cut off, is not
//   judged on its code);
// - a grpc-retry-pushback-ms below 0 forbids the retry, one >= 0 sets its earliest start;
// - it must begin before the call's deadline (the first attempt's grpc-timeout, else the methodConfig's
//   timeout);
// - attempts may not exceed min(maxAttempts, the client's clamp);
// - the gap must lie in the client's backoff envelope (ClientStack::backoffMs, counted since the last
//   pushback);
// - and once the last attempt failed with a retryable code, uncommitted, without a stopping pushback, a
//   client below its attempt limit whose next backoff ends before the deadline must have retried.

#include "clientstack.h"
#include "retryserviceconfig.h"
#include "retryverdict.h"
#include "timeline.h"

#include <cstdint>
#include <optional>

namespace rpcscope {

class RetryJudge
{
public:
    // Gaps are measured at the proxy: from the trailers passing it to the next attempt's HEADERS passing
    // it. The client's timer starts only once it has read those trailers, one relay hop later, and the new
    // HEADERS need a hop back, so the proxy sees every backoff longer than the client waited: by the two
    // loopback hops, the client's scheduling and its timer's slack. Measured on loopback, C-core's exact 50
    // ms first retry reads 50-51 ms and grpc-js's gaps 2-5 ms over; on a loaded 2-core CI machine timer
    // wake-ups come tens of ms late. Nothing makes a gap read shorter than the wait but the clients' ms
    // timers rounding down and the stamps' own resolution. Hence a tight early and a loose late tolerance.
    static constexpr double kEarlyMs = 1.0, kEarlyFraction = 0.02;
    static constexpr double kLateMs = 25.0, kLateFraction = 0.10;
    // How late after the deadline an attempt may still start: the client's own timer and the stamp.
    static constexpr double kDeadlineSlackMs = 5.0;

    struct Options
    {
        // retryThrottling is configured: a retry that did not come may have been throttled (the token bucket
        // is shared by every channel of the client process, which the capture cannot see whole).
        bool throttled = false;
        // When the capture ended: a failed last attempt whose retry would come after it has no verdict yet.
        std::optional<std::int64_t> captureEndNs;
    };

    // `policy` is nullopt when no methodConfig names the call's method.
    static RetryVerdict judge(const Call &call, const std::optional<MethodRetryPolicy> &policy,
                              const ClientStack &stack, const Options &options);
};

} // namespace rpcscope
