#pragma once

// Value types of the assembled timeline. Times are steady-clock ns (see clock.h).

#include "events.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

struct Connection
{
    std::uint32_t id = 0;
    std::string client;
    std::string server;
    std::string label; // the capturing relay's hop name; empty for the main proxy
    std::int64_t openedNs = 0;
    std::optional<std::int64_t> closedNs;
    std::string closeReason;        // how it ended: "closed", a reset, the target refusing, ...
    std::string decodeError;        // empty while decodable
    std::vector<std::string> notes; // limits hit, mid-connection attach, HPACK resets (bounded)
    std::optional<std::int64_t> lastPingRttNs;
    // PINGs sent on this connection and not ACKed (yet): a keepalive the peer never answered stays here after
    // the connection ends. The first few (kMaxOpenPings), oldest first.
    struct OpenPing
    {
        Direction dir = Direction::ClientToServer; // who sent it
        std::int64_t sentNs = 0;
        std::uint64_t data = 0; // the opaque data its ACK must echo
    };
    static constexpr size_t kMaxOpenPings = 8;
    std::vector<OpenPing> openPings;
    // The PING went unanswered for long enough to mean the peer stopped answering (by nowNs, while the
    // connection is open): a PING in flight when the connection closes, microseconds after it was sent, is a
    // race of the shutdown. Long enough is 1 ms, or three of this connection's round trips when it had one.
    bool unanswered(const OpenPing &p, std::int64_t nowNs) const
    {
        const std::int64_t wait = std::max<std::int64_t>(1'000'000, 3 * lastPingRttNs.value_or(0));
        return closedNs.value_or(nowNs) - p.sentNs >= wait;
    }
    // The first HTTP/2 rule a peer was seen breaking (its sentence is among the notes).
    std::optional<ProtocolViolation> firstViolation;

    const ProtocolViolation *protocolError() const { return firstViolation ? &*firstViolation : nullptr; }
};

// A sender whose flow-control window ran out while its stream still had data to send.
struct FlowStall
{
    std::uint32_t connection = 0;
    Direction dir = Direction::ClientToServer; // the stalled sender
    std::uint32_t stream = 0;                  // 0: the connection window
    std::int64_t startNs = 0;
    std::optional<std::int64_t> endNs;
};

// A client policy's decision (lab events): a breaker transition, a fast failure, a suppressed retry...
struct LabEventRecord
{
    std::int64_t tNs = 0;
    std::string kind;
    std::string detail;
    std::string callId;      // empty when it concerns no single call
    std::string traceparent; // as reported (ingestion endpoint); callId is filled in once that call is seen
};

struct PingRecord
{
    std::uint32_t connection = 0;
    Direction dir = Direction::ClientToServer; // who sent the PING
    std::int64_t tNs = 0;                      // the ACK's arrival
    std::int64_t rttNs = 0;
};

struct FrameRecord
{
    std::int64_t tNs = 0;
    std::uint32_t connection = 0;
    Direction dir = Direction::ClientToServer;
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::uint32_t stream = 0;
    std::uint32_t length = 0;
    std::uint32_t value = 0; // RST_STREAM/GOAWAY error code, WINDOW_UPDATE increment; a run's span in us
    // More than 1: a run of control frames of this kind recorded as one (a flood past the decoder's rate,
    // FrameRun): tNs is the last one's time, length their payload bytes together (capped), and value how
    // long before tNs the first one came, in microseconds. It fits in the record's padding: 32 bytes either
    // way.
    std::uint32_t count = 1;

    bool isRun() const { return count > 1; }
    // A run is a flood, but for WINDOW_UPDATEs: a busy connection sends two for each call it reads, and they
    // are folded past a rate ordinary traffic reaches (ControlFrameRate).
    bool isFlood() const { return isRun() && type != FrameWindowUpdate; }
    std::int64_t firstNs() const { return isRun() ? tNs - std::int64_t(value) * 1000 : tNs; }
};
static_assert(sizeof(FrameRecord) == 32);

// One HTTP/2 stream carrying a gRPC request.
struct Attempt
{
    std::uint32_t connection = 0;
    std::uint32_t stream = 0;
    std::int64_t startNs = 0;              // first request HEADERS
    std::optional<std::int64_t> endNs;     // trailers with END_STREAM, RST_STREAM, GOAWAY, connection close
    std::optional<int> previousAttempts;   // grpc-previous-rpc-attempts
    std::optional<std::int64_t> timeoutNs; // this attempt's own grpc-timeout
    std::optional<int> status;             // grpc-status
    std::optional<std::string> statusMessage; // grpc-message
    std::optional<std::int64_t> pushbackMs;
    std::optional<std::int64_t> responseHeadersNs; // response headers that were not Trailers-Only
    bool trailersOnly = false;                     // the response was a single HEADERS with END_STREAM
    std::string encoding;                          // grpc-encoding of the request
    std::optional<std::uint32_t> rstErrorCode;
    bool rstByClient = false; // the RST_STREAM that ended it came from the client
    // The server's GOAWAY named a last stream below this one: the server never processed it, and the client
    // may retry it elsewhere (RFC 9113 6.8). Its error code.
    std::optional<std::uint32_t> goawayErrorCode;
    std::uint64_t requestBytes = 0; // DATA payload (gRPC framing included, padding excluded)
    std::uint64_t responseBytes = 0;
    int requestMessages = 0;
    int responseMessages = 0;
    // The capturing proxy, not the server, made this attempt fail (a FaultInjection notice on its stream):
    // the rule's number (1-based; 0 when not injected) and its text in the compact syntax.
    std::uint32_t faultRule = 0;
    std::string faultRuleText;

    bool injected() const { return faultRule != 0; }
    bool ended() const { return endNs.has_value(); }
    // How it ended, in a few words: "in flight", the grpc-status name, "RST_STREAM CANCEL", "refused by
    // GOAWAY", or "no status" (the connection closed first).
    std::string outcomeLabel() const;
};

struct Call
{
    std::string key;        // call id, or a synthetic key for calls without one
    std::string method;     // :path
    std::string clientPeer; // client address of the first attempt's connection
    bool inferred = false;  // grouped without a call id
    bool pinned = false;    // never evicted by retention (TimelineStore::enforce)
    std::uint64_t serial =
        0; // unique in its store, rising with the index; stays when older calls are evicted
    // The store's generation() after the batch that last added or changed anything of it
    // (TimelineStore::apply): whoever keeps something per call looks again only at calls newer than what it
    // saw.
    std::uint64_t revision = 0;
    std::vector<Attempt> attempts;
    // The client's retryPolicy when it told us (rpcscope-retry-policy), in ms; 0 when unknown.
    double retryInitialMs = 0, retryMultiplier = 0, retryMaxMs = 0;

    // Chains (DESIGN.md): a call made while serving another nests under it. Set by TimelineStore from the
    // first attempt's traceparent; see TimelineStore for the nesting rule. Empty / nullopt outside a trace.
    std::string traceId; // W3C trace-id of the first attempt
    std::string spanId;  // its traceparent parent-id: the caller's span that made this call
    std::string hop;     // label of the first attempt's connection: the capturing relay's hop name
    // Index in TimelineStore::calls() of the call this one was made while serving; nullopt for a root.
    std::optional<size_t> parentCall;
    // The parent's deadline minus this call's start: what the serving hop had left when it made this call
    // (its incoming budget), beside budgetNs() (what it gave away). nullopt when the parent had no deadline.
    std::optional<std::int64_t> parentBudgetNs;
    // This call's deadline lies later than its parent's by more than the timeout's rounding and the capture's
    // timing explain (50 ms + 2 %): a hop started a fresh timeout instead of propagating, the budget grew.
    bool deadlineReset = false;
    // The parent carried grpc-timeout and this call carries none: a hop (a gateway, say) dropped it.
    bool deadlineDropped = false;

    // The range C-core 1.51 allows for gap i (before attempt i+1), in ns, when the policy is known.
    // Pushback >= 0 replaces the backoff exactly and resets it; the first retry (after a reset too) waits
    // initialBackoff exactly; later ones min(initial * multiplier^n, max) times a uniform factor in
    // [0.8, 1.2].
    std::optional<std::pair<std::int64_t, std::int64_t>> expectedGapNs(size_t i) const
    {
        if (i + 1 >= attempts.size() || transparentRetry(i + 1))
            return std::nullopt; // a transparent retry follows at once, without backoff
        return backoffNs(i);
    }
    // The backoff C-core 1.51 would wait after attempt i before retrying, whether or not a retry followed.
    std::optional<std::pair<std::int64_t, std::int64_t>> backoffNs(size_t i) const
    {
        if (i >= attempts.size()) return std::nullopt;
        // The pushback and the policy come off the wire (or a file) unchecked: a gap is clamped to
        // [0, kMaxTimeoutNs], so that it converts, and adds to a time, without overflow.
        auto toNs = [](double ms) {
            const double ns = ms * 1e6;
            return !(ns > 0)                     ? std::int64_t(0)
                   : ns >= double(kMaxTimeoutNs) ? kMaxTimeoutNs
                                                 : std::int64_t(ns);
        };
        if (const auto &p = attempts[i].pushbackMs; p && *p >= 0) {
            const std::int64_t ns = *p >= kMaxTimeoutNs / 1'000'000 ? kMaxTimeoutNs : *p * 1'000'000;
            return std::pair{ns, ns};
        }
        if (retryInitialMs <= 0) return std::nullopt;
        // A pushback also resets the backoff: count retries since the last one.
        size_t since = 0;
        for (size_t k = 0; k < i; ++k)
            if (attempts[k].pushbackMs && *attempts[k].pushbackMs >= 0) since = k + 1;
        // Transparent retries are not counted (C-core: they never bump grpc-previous-rpc-attempts).
        size_t retries = 0;
        for (size_t k = since; k < i; ++k)
            retries += !transparentRetry(k + 1);
        double base = retryInitialMs;
        for (size_t k = 0; k < retries; ++k)
            base *= retryMultiplier;
        base = std::min(base, retryMaxMs);
        if (retries == 0) return std::pair{toNs(base), toNs(base)};
        return std::pair{toNs(base * 0.8), toNs(base * 1.2)};
    }

    // Attempt i replays attempt i-1 transparently (C-core: a stream the server never saw). It carries no
    // higher grpc-previous-rpc-attempts, and the previous attempt got no response at all: refused (RST_STREAM
    // REFUSED_STREAM), or beyond a GOAWAY's last-stream-id (C-core then resets it with NO_ERROR, or its
    // connection just closes, often after this attempt started). A hedged sibling ends with a status or is
    // cancelled (RST_STREAM CANCEL), so it is never taken for one.
    bool transparentRetry(size_t i) const
    {
        if (i == 0 || i >= attempts.size()) return false;
        const Attempt &a = attempts[i], &p = attempts[i - 1];
        constexpr std::uint32_t kNoError = 0, kRefusedStream = 7;
        if (a.previousAttempts.value_or(0) > p.previousAttempts.value_or(0) || !p.endNs ||
            p.startNs > a.startNs)
            return false;
        const bool noReset = !p.rstErrorCode || *p.rstErrorCode == kNoError;
        return (p.rstErrorCode && *p.rstErrorCode == kRefusedStream) ||
               (!p.status && !p.responseHeadersNs && noReset);
    }

    std::int64_t startNs() const { return attempts.empty() ? 0 : attempts.front().startNs; }
    std::optional<std::int64_t> endNs() const
    {
        return attempts.empty() ? std::nullopt : attempts.back().endNs;
    }
    // The budget this call was given: its first attempt's grpc-timeout.
    std::optional<std::int64_t> budgetNs() const
    {
        return attempts.empty() ? std::nullopt : attempts.front().timeoutNs;
    }
    // The deadline flags by name ("reset", "dropped"), as the JSON export and the item model give them.
    std::vector<std::string> deadlineFlags() const
    {
        std::vector<std::string> flags;
        if (deadlineReset) flags.emplace_back("reset");
        if (deadlineDropped) flags.emplace_back("dropped");
        return flags;
    }
    // Absolute deadline: first attempt's start plus its grpc-timeout.
    std::optional<std::int64_t> deadlineNs() const
    {
        if (attempts.empty() || !attempts.front().timeoutNs) return std::nullopt;
        return attempts.front().startNs + *attempts.front().timeoutNs;
    }
    // Gap i is from the end of attempt i to the start of attempt i+1; unknown while attempt i is open.
    std::vector<std::optional<std::int64_t>> gapsNs() const
    {
        std::vector<std::optional<std::int64_t>> gaps;
        for (size_t i = 1; i < attempts.size(); ++i) {
            const auto &prev = attempts[i - 1];
            gaps.push_back(prev.endNs ? std::optional(attempts[i].startNs - *prev.endNs) : std::nullopt);
        }
        return gaps;
    }
    // The outcome is the last attempt's status once it has ended.
    const Attempt *outcomeAttempt() const
    {
        return (!attempts.empty() && attempts.back().ended()) ? &attempts.back() : nullptr;
    }
};

} // namespace rpcscope
