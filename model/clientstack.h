#pragma once

// Which gRPC implementation made a call, from its user-agent, and how that implementation retries: the
// backoff each retry may wait, the cap on maxAttempts and the retry buffer past which a call commits. What
// each row says was read from the implementation's source and, for C-core 1.51 and grpc-js 1.14, measured
// (the reference notes on retry behaviour):
// - C-core 1.51 (grpc-c++, grpc-python, grpc-ruby ...: their user-agent carries "grpc-c/"): the first retry
//   waits exactly initialBackoff, retry n > 1 waits min(initial * multiplier^(n-1), max) x U[0.8, 1.2];
//   maxAttempts clamped to 5; 256 KiB per-call retry buffer.
// - grpc-js 1.14 (grpc-node-js): U[0.8, 1.2] from the first retry on; clamped to 5
//   (grpc-node.retry_max_attempts_limit); 1 MiB per call.
// - grpc-go (grpc-go): clientStream's shouldRetry in stream.go draws the wait as grpcrand.Int63n(cur), with
//   cur = min(initial * multiplier^n, max) and n the retries since the last pushback: full jitter, uniform in
//   [0, cur), the first retry included. service_config.go's convertRetryPolicy clamps maxAttempts to 5 (a
//   constant up to 1.6x, the dial option WithMaxCallAttempts's default later). callInfo's
//   maxRetryRPCBufferSize defaults to 256 KiB. A response that is not Trailers-Only is never retried, and a
//   pushback that is negative or not an integer stops retrying.
// - grpc-java: full jitter as gRFC A6 specifies, clamped to 5 (maxRetryAttempts), 16 MiB per channel and
//   1 MiB per call; from the gRFC and its documented defaults, not measured here.
// - anything else: a generic envelope that any of the above would satisfy, [0, 1.2] x the backoff, and the
//   usual clamp of 5; verdicts say the client is unknown.
// Pushback >= 0 replaces the backoff exactly and resets it, and a negative one stops retrying, in all of
// them.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace rpcscope {

class ClientStack
{
public:
    enum class Kind : std::uint8_t
    {
        CCore,
        Go,
        Node,
        Java,
        Unknown,
    };

    static ClientStack fromUserAgent(std::string_view userAgent);
    static ClientStack of(Kind kind, std::string version = {});

    Kind kind() const { return m_kind; }
    // "grpc-c++ 1.51.1 (C-core)", "grpc-go 1.33.3", "unknown client (curl/8.0)"; "unknown client" alone
    // when the calls carried no user-agent.
    std::string name() const;
    bool known() const { return m_kind != Kind::Unknown; }

    // The factor range applied to retry n's base backoff (n = 1 for the first retry since the call began or
    // since the last pushback): [lo, hi].
    std::pair<double, double> jitter(int retry) const;
    // What it waits before retry n, in ms: the base min(initial * multiplier^(n-1), max) times jitter(n).
    std::pair<double, double> backoffMs(int retry, double initialMs, double multiplier, double maxMs) const;
    // In words, for a verdict's reason: "waits exactly initialBackoff on the first retry".
    std::string describeBackoff(int retry) const;
    // The most attempts it makes whatever maxAttempts says.
    int maxAttemptsLimit() const { return 5; }
    // Request bytes per call it buffers for retries: past them the call commits. 0 when unknown.
    std::uint64_t retryBufferBytes() const;

private:
    Kind m_kind = Kind::Unknown;
    std::string m_product; // the user-agent's first product token ("grpc-c++"), or the whole unknown agent
    std::string m_version;
};

} // namespace rpcscope
