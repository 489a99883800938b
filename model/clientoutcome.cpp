#include "clientoutcome.h"

#include "timelinestore.h"

#include <algorithm>

namespace rpcscope {

namespace {
constexpr int kCancelled = 1, kDeadlineExceeded = 4, kUnavailable = 14;
constexpr std::uint32_t kCancel = 8;
// C-core clamps maxAttempts at 5: after the fifth attempt nothing is retried, whatever the policy.
constexpr size_t kMaxAttempts = 5;

std::string msText(std::int64_t ns)
{
    return std::to_string((ns + 500'000) / 1'000'000) + " ms";
}

ClientOutcome implied(int status, std::int64_t atNs, std::string why)
{
    return {ClientOutcome::Source::Implied, status, atNs, std::move(why)};
}

// Attempts that count against maxAttempts: transparent retries do not.
size_t countedAttempts(const Call &call)
{
    size_t n = 0;
    for (size_t i = 0; i < call.attempts.size(); ++i)
        n += !call.transparentRetry(i);
    return n;
}
} // namespace

std::string ClientOutcome::label() const
{
    if (status) return grpcStatusName(*status);
    return source == Source::InFlight ? "in flight" : "unknown";
}

std::int64_t deadlineToleranceNs(const Call &call)
{
    return 20'000'000 + call.budgetNs().value_or(0) / 100;
}

ClientOutcome clientOutcome(const Call &call, const TimelineStore &store)
{
    const Attempt *a = call.outcomeAttempt();
    if (!a) return {};
    const std::int64_t end = *a->endNs;
    const auto deadline = call.deadlineNs();

    if (!a->status) {
        const bool clientCancel = a->rstErrorCode && a->rstByClient && *a->rstErrorCode == kCancel;
        if (clientCancel && deadline && end >= *deadline - deadlineToleranceNs(call))
            return implied(kDeadlineExceeded, std::min(*deadline, end),
                           "the client reset the stream (CANCEL) when its deadline passed");
        // Keepalive: the client's PING got no ACK and the client closed the connection; C-core fails every
        // call on it with UNAVAILABLE, resetting their streams (REFUSED_STREAM) or just closing.
        const Connection *conn = store.findConnection(a->connection);
        const bool endedByClient =
            (a->rstErrorCode && a->rstByClient) || (!a->rstErrorCode && !a->goawayErrorCode);
        if (conn && endedByClient && conn->closedNs && conn->closeReason == "closed by client") {
            const auto &pings = conn->openPings;
            const auto ping = std::find_if(pings.begin(), pings.end(), [&](const Connection::OpenPing &p) {
                return p.dir == Direction::ClientToServer && p.sentNs <= end && conn->unanswered(p, end);
            });
            if (ping != pings.end())
                return implied(kUnavailable, end,
                               "keepalive: the client's PING went unanswered for " +
                                   msText(end - ping->sentNs) + ", and the client closed the connection");
        }
        if (clientCancel)
            return implied(kCancelled, end,
                           deadline ? "the client reset the stream (CANCEL) before its deadline"
                                    : "the client reset the stream (CANCEL)");
        std::string why = "no grpc-status on the wire: ";
        if (a->rstErrorCode)
            why += std::string("the ") + (a->rstByClient ? "client" : "server") + " reset the stream (" +
                   h2ErrorName(*a->rstErrorCode) + ")";
        else if (a->goawayErrorCode)
            why += "the server's GOAWAY refused the stream, and no retry was seen";
        else
            why += "the connection closed first";
        return {ClientOutcome::Source::Unknown, std::nullopt, std::nullopt, std::move(why)};
    }

    // The deadline passed in a retry's backoff: the client was retrying (it told us its policy), the call was
    // not committed, attempts remained, and the next attempt was due only after the deadline, which the
    // capture saw pass without another attempt. Only UNAVAILABLE is taken as retryable: the policy's codes
    // are not on the wire, and UNAVAILABLE is the one every policy lists. The capture "saw the deadline pass"
    // within the tolerance: the client's own deadline lies a little earlier than ours, and the client often
    // closes its connection at once, the capture's last event.
    if (*a->status == kUnavailable && deadline && end < *deadline && call.retryInitialMs > 0 &&
        !a->responseHeadersNs && !(a->pushbackMs && *a->pushbackMs < 0) &&
        countedAttempts(call) < kMaxAttempts && store.latestNs() >= *deadline - deadlineToleranceNs(call)) {
        const auto backoff = call.backoffNs(call.attempts.size() - 1);
        if (backoff && end + backoff->first >= *deadline)
            return implied(kDeadlineExceeded, *deadline,
                           "the deadline passed in the backoff, " + msText(*deadline - end) +
                               " after UNAVAILABLE, before the next retry was due (at least " +
                               msText(backoff->first) + ")");
    }
    return {ClientOutcome::Source::Wire, a->status, end, {}};
}

std::string outcomeWithClient(const Call &call, const ClientOutcome &client)
{
    const Attempt *a = call.outcomeAttempt();
    std::string wire = a ? a->outcomeLabel() : std::string("in flight");
    if (client.implied()) wire += " \u2192 client: " + client.label();
    return wire;
}

std::string attemptClientNote(const Call &call, size_t i)
{
    if (i + 1 < call.attempts.size() && call.transparentRetry(i + 1))
        return "retried transparently: no failure for the client";
    return {};
}

} // namespace rpcscope
