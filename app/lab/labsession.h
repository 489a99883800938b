#pragma once

#include "labserver.h"
#include "relay.h"
#include "scenario.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rpcscope::lab {

// The lab as one unit: the demo server, the capture relay in front of it, and scenario runs whose
// clients connect through the relay. Whoever owns it decides where the relay's events go.
class LabSession
{
public:
    LabSession() = default;
    ~LabSession();

    bool start(Relay::Sink sink, std::string *error);
    void stop();

    // Blocking: call it off the GUI thread.
    ScenarioResult run(const Scenario &scenario, const ScenarioParams &params);
    ScenarioResult run(const Scenario &scenario); // with the default parameters

    const LabServer &server() const { return m_server; }
    HostPort proxyAddress() const { return m_relay.listenAddress(); }
    HostPort serverAddress() const { return {"127.0.0.1", std::uint16_t(m_server.port())}; }

private:
    LabServer m_server;
    Relay m_relay;
    // Each scenario's calls are numbered from 1 in its first run and go on from there in the next (call ids
    // stay unique in the session, which a file of several runs needs), whatever ran before.
    std::mutex m_callsLock;
    std::map<std::string, std::shared_ptr<std::atomic<int>>> m_nextCall; // by scenario name
    Relay::Sink m_sink;                         // lab events go where the relay's events go
    std::vector<std::unique_ptr<Relay>> m_hops; // extra relays a scenario opened (ScenarioContext::openHop)
    bool m_running = false;
};

} // namespace rpcscope::lab
