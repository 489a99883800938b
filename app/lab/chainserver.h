#pragma once

#include "labclient.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope::lab {

// How a hop hands its deadline to the next hop.
enum class DeadlinePassing
{
    Propagate, // ClientContext::FromServerContext: the same absolute deadline, and cancellation
    Reset,     // a fresh ClientContext with a timeout of its own (HopConfig::resetMs): the budget can grow
    Drop,      // a fresh ClientContext with no deadline at all, as a gateway that eats grpc-timeout forwards
};

struct HopConfig
{
    std::string name;     // "A"
    std::string next;     // "host:port" to reach the next hop (its capture relay); empty for the last hop
    std::string nextName; // "B", for call ids and messages
    int workMs = 0;       // time spent on each call before calling the next hop (or answering)
    DeadlinePassing passing = DeadlinePassing::Propagate;
    int resetMs = 1000;
    // Fail fast with DEADLINE_EXCEEDED, before doing any work, when less than this is left of the call's
    // deadline on arrival; 0 never fails fast. A call without a deadline always looks like it has time.
    int minBudgetMs = 0;
};

// What one hop saw and did for one call: the lab's ground truth, stamped with the capture's steady clock
// (model/events/clock.h) so it can be set against what the relays saw.
struct HopRecord
{
    std::string callId;          // rpcscope-call-id received
    std::string traceparent;     // received
    std::string sentTraceparent; // sent to the next hop (same trace, a new span)
    std::int64_t arrivedNs = 0;
    std::optional<std::int64_t> budgetNs; // the call's deadline minus the arrival; nullopt: no deadline
    bool calledNext = false;
    std::optional<std::int64_t> nextBudgetNs; // what the next hop was given when called; nullopt: no deadline
    bool failedFast = false;
    int code = 0; // grpc::StatusCode this hop answered with
    std::string message;
    std::int64_t doneNs = 0; // when it answered; 0 while serving
};

// One hop of the deadline chain: a grpc++ callback server for rpcscope.lab.Chain on 127.0.0.1 (a free port).
// Each call spends workMs on a worker thread (never a gRPC callback thread), then calls the next hop through
// its own channel, forwarding traceparent with a new span id, and answers with the next hop's status.
class ChainServer
{
public:
    explicit ChainServer(HopConfig config);
    ~ChainServer();

    bool start(std::string *error);
    // Cuts pending work short, shuts the server down and joins the workers.
    void stop();
    int port() const;
    std::string address() const;
    const HopConfig &config() const;

    std::vector<HopRecord> records() const;
    std::optional<HopRecord> recordFor(const std::string &callId) const;
    // Blocks until the call `callId` has arrived (and, with `answered`, been answered); false when the
    // timeout ends first.
    bool waitFor(const std::string &callId, bool answered, std::chrono::milliseconds timeout) const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

// A W3C traceparent for a new span: in `traceId` (32 hex digits), or in a new trace when empty.
std::string newTraceparent(const std::string &traceId = {});
// The trace id of a traceparent, or empty when it has none.
std::string traceIdOf(const std::string &traceparent);

// The chain's first call, made as a client would: a new trace (its traceparent in *traceparent when given),
// the call id as rpcscope-call-id metadata, and the deadline `timeout` from now when set.
CallResult callChain(const std::string &target, const std::string &callId,
                     std::optional<std::chrono::milliseconds> timeout, std::string *traceparent = nullptr);

} // namespace rpcscope::lab
