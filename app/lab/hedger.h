#pragma once

#include "lab.grpc.pb.h"
#include "labclient.h"

#include <chrono>
#include <functional>
#include <string>

namespace rpcscope::lab {

// Application-level hedging (C-core 1.51 ignores gRPC's hedgingPolicy): the first request goes to the primary
// replica; if no reply came within the hedge delay a second one (same call id, rpcscope-hedge metadata) goes
// to the other replica; the first reply wins and the other request is cancelled.
class Hedger
{
public:
    // Records the hedger's decisions on the timeline: (kind, detail, call id).
    using Listener = std::function<void(const std::string &, const std::string &, const std::string &)>;

    struct Outcome
    {
        CallResult result; // the winner's status, the call's latency
        bool hedged = false;
        int loser = -1; // index of the cancelled request (0 primary, 1 hedge), -1 when none
        int loserCode = -1;
    };

    Hedger(Lab::Stub &primary, Lab::Stub &hedge, std::chrono::milliseconds hedgeDelay, Listener listener)
        : m_primary(primary), m_hedge(hedge), m_delay(hedgeDelay), m_listener(std::move(listener))
    {
    }

    // Blocking. Both requests carry the same call id; they may differ in what they ask of their replica.
    Outcome call(const CallRequest &primary, const CallRequest &hedge);

private:
    Lab::Stub &m_primary;
    Lab::Stub &m_hedge;
    const std::chrono::milliseconds m_delay;
    const Listener m_listener;
};

} // namespace rpcscope::lab
