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
//   pushback), or, for a retry that waited for a new connection after its attempt's connection was lost,
//   follow that connection's opening promptly;
// - and once the last attempt failed with a retryable code, uncommitted, without a stopping pushback, a
//   client below its attempt limit whose next backoff ends before the deadline must have retried.

#include "clientstack.h"
#include "retryserviceconfig.h"
#include "retryverdict.h"
#include "timeline.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace rpcscope {

class RetryJudge
{
public:
    // Gaps are measured at the proxy: from the trailers passing it to the next attempt's HEADERS passing
    // it. The client's timer starts only once it has read those trailers, one relay hop later, and the new
    // HEADERS need a hop back, so the proxy sees a backoff longer than the client waited: by the two
    // loopback hops, the client's scheduling and its timer's slack. On a loaded 2-core CI machine timer
    // wake-ups come tens of ms late: a loose late tolerance.
    // A gap can also read shorter than the wait: C-core computes the retry time from its ExecCtx's cached
    // clock (BackOff::NextAttemptTime returns ExecCtx::Get()->Now() + backoff), which can be ms older than
    // the moment the trailers were read. Its exact 50 ms first retry measured 42.2-55.7 ms at the proxy (end
    // of one attempt to the start of the next) on a loaded 2-core machine. Hence 10 ms + 2 % early. The
    // noise is absolute and jitter proportional: a first retry jittered by C-core's own later factor
    // [0.8, 1.2] stands out from a backoff of a few hundred ms up; at 50 ms one call cannot show it.
    static constexpr double kEarlyMs = 10.0, kEarlyFraction = 0.02;
    static constexpr double kLateMs = 25.0, kLateFraction = 0.10;
    // How late after the deadline an attempt may still start: the client's own timer and the stamp.
    static constexpr double kDeadlineSlackMs = 5.0;

    struct Options
    {
        // retryThrottling is configured: a retry that did not come may have been throttled (the token bucket
        // is shared by every channel of the client process, which the capture cannot see whole).
        bool throttled = false;
        // When the capture ended: a failed last attempt whose retry would come after it has no verdict yet...
        std::optional<std::int64_t> captureEndNs;
        // ...unless the client closed the last attempt's connection before that retry was due: it shut the
        // channel down, done with the call (the lab client does, right after its last call).
        std::optional<std::int64_t> clientClosedNs;
        // When a connection opened (the capture's connection ids), if known. A retry that had to wait for a
        // new connection (its attempt's connection was lost) goes out once that connection is up: its gap
        // may run past the backoff by the reconnect, which is the client's channel, not its retry policy.
        std::function<std::optional<std::int64_t>(std::uint32_t)> connectionOpenedNs;
    };

    // `policy` is nullopt when no methodConfig names the call's method.
    static RetryVerdict judge(const Call &call, const std::optional<MethodRetryPolicy> &policy,
                              const ClientStack &stack, const Options &options);

    // The wait the client allows before each retry, in ns, as judge() counts it before its tolerance: element
    // k is the gap before attempt k; a pushback >= 0 exactly, otherwise stack.backoffMs counted since the
    // call began or the last pushback. Nullopt for the first attempt, a transparent retry, an attempt after a
    // stopping pushback or one whose attempt before has no end, and for every attempt without a retryPolicy.
    static std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>>
    envelopesNs(const Call &call, const std::optional<MethodRetryPolicy> &policy, const ClientStack &stack);
};

} // namespace rpcscope
