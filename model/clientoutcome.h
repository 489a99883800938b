#pragma once

// What the client's application got for a call, beside what the wire shows. The wire does not always carry
// it: a client gives up on its own (deadline, keepalive) and tells the server only with a RST_STREAM, or
// nothing at all. The rules follow what gRPC C-core 1.51 does (docs: the reference notes):
// - the client resets the stream with CANCEL once the call's deadline passed: DEADLINE_EXCEEDED at the
//   deadline (C-core sends CANCEL for DEADLINE_EXCEEDED and CANCELLED alike; before the deadline it is the
//   application cancelling: CANCELLED);
// - a keepalive PING the client sent went unanswered and the client closed the connection: UNAVAILABLE for
//   the calls it ended;
// - the deadline passed in a retry's backoff, before the next attempt was due: DEADLINE_EXCEEDED at the
//   deadline (C-core does not check the deadline before backing off; the deadline cancels the call);
// - a refused stream retried transparently is no failure: the call's outcome is its last attempt's;
// - otherwise the grpc-status on the wire, or unknown when the wire has none.

#include "timeline.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rpcscope {

class TimelineStore;

struct ClientOutcome
{
    enum class Source : std::uint8_t
    {
        InFlight, // the call has not ended
        Wire,     // the grpc-status on the wire
        Implied,  // the wire implies a status it does not carry; `why` says how
        Unknown,  // the wire does not say; `why` says what it shows instead
    };
    Source source = Source::InFlight;
    std::optional<int> status;        // the gRPC status code the client got (Wire and Implied)
    std::optional<std::int64_t> atNs; // when the client got it
    std::string why;                  // empty for Wire and InFlight

    bool implied() const { return source == Source::Implied; }
    bool known() const { return status.has_value(); }
    // "DEADLINE_EXCEEDED", "unknown" or "in flight".
    std::string label() const;
};

ClientOutcome clientOutcome(const Call &call, const TimelineStore &store);

// The call's deadline is the relay's stamp of its first HEADERS plus grpc-timeout, which the client rounded
// up (at most 1 %) and stamped a little before the relay did (up to 20 ms measured under heavy load): the
// client's own deadline can lie this much earlier than Call::deadlineNs().
std::int64_t deadlineToleranceNs(const Call &call);

// The wire's label of the call's last attempt, followed by the client's outcome when the wire only implies
// it: "RST_STREAM CANCEL → client: DEADLINE_EXCEEDED". Just the wire label otherwise.
std::string outcomeWithClient(const Call &call, const ClientOutcome &client);

// Why attempt i is no failure the client saw, when it is not (a transparent retry followed); empty otherwise.
std::string attemptClientNote(const Call &call, size_t i);

} // namespace rpcscope
