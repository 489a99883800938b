#pragma once

// What a call's retries show against the client's retry policy (retryjudge.h): it conforms, or the first
// thing that broke the policy, with a one-line reason that names the numbers.

#include <array>
#include <cstdint>
#include <string>

namespace rpcscope {

struct RetryVerdict
{
    enum class Kind : std::uint8_t
    {
        Conforms,
        InFlight,     // not ended (or the capture ended before the next retry was due): no verdict yet
        Attempts,     // more attempts than the policy and its clamp allow, or fewer than the failures imply
        Gap,          // a backoff outside the client's envelope
        NonRetryable, // a status not in retryableStatusCodes was retried
        Pushback,     // grpc-retry-pushback-ms not honoured: retried sooner, or at all when it said stop
        AfterCommit,  // retried after response headers, a response message or a full retry buffer
        PastDeadline, // an attempt began after the call's deadline
    };
    static constexpr int kKinds = 8;

    Kind kind = Kind::Conforms;
    std::string reason;
    int attempt = 0; // the 1-based attempt the reason is about (0: the call as a whole)

    bool violation() const { return kind != Kind::Conforms && kind != Kind::InFlight; }

    // "conforms", "attempts", "gap", "non-retryable", "pushback", "after-commit", "past-deadline",
    // "in-flight": for JSON and column keys.
    static const char *key(Kind kind);
    // "attempts differ", "gap outside envelope", ...: for people.
    static const char *title(Kind kind);
    static std::array<Kind, kKinds> kinds();
};

} // namespace rpcscope
