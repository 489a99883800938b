#include "labsession.h"

#include "clock.h"

namespace rpcscope::lab {

LabSession::~LabSession()
{
    stop();
}

bool LabSession::start(Relay::Sink sink, std::string *error)
{
    if (!m_server.start(error)) return false;
    m_sink = sink;
    if (!m_relay.start({"127.0.0.1", 0}, serverAddress(), std::move(sink), error)) {
        m_server.stop();
        return false;
    }
    m_running = true;
    return true;
}

void LabSession::stop()
{
    if (!m_running) return;
    m_relay.stop();
    m_server.stop();
    m_running = false;
}

ScenarioResult LabSession::run(const Scenario &scenario)
{
    ScenarioParams params;
    std::string unused;
    scenario.resolveParams({}, &params, &unused);
    return run(scenario, params);
}

ScenarioResult LabSession::run(const Scenario &scenario, const ScenarioParams &params)
{
    ScenarioContext ctx;
    ctx.target = m_relay.listenAddress().toString();
    ctx.server = &m_server;
    std::shared_ptr<std::atomic<int>> next;
    {
        const std::lock_guard lock(m_callsLock);
        auto &slot = m_nextCall[scenario.name];
        if (!slot) slot = std::make_shared<std::atomic<int>>(1);
        next = slot;
    }
    ctx.nextCallId = [next, name = scenario.name] { return name + "-" + std::to_string((*next)++); };
    ctx.labEvent = [this](const std::string &kind, const std::string &detail, const std::string &callId) {
        if (!m_sink) return;
        WireEvent e;
        e.kind = EventKind::LabEvent;
        e.tNs = steadyNowNs();
        e.about = LabDecision{kind, detail};
        e.grpc.callId = callId;
        m_sink({std::move(e)});
    };
    ctx.openFaultHop = [this](const std::string &label, const std::string &target,
                              std::shared_ptr<FaultSet> faults, std::string *error) -> std::string {
        HostPort to;
        if (!parseHostPort(target, &to, error)) return {};
        auto relay = std::make_unique<Relay>();
        relay->setLabel(label);
        relay->setFaults(std::move(faults));
        if (!relay->start({"127.0.0.1", 0}, to, m_sink, error)) return {};
        const std::string address = relay->listenAddress().toString();
        m_hops.push_back(std::move(relay));
        return address;
    };
    ctx.openHop = [open = ctx.openFaultHop](const std::string &label, const std::string &target,
                                            std::string *error) {
        return open(label, target, nullptr, error);
    };
    ScenarioResult result = scenario.run(ctx, params);
    for (auto &hop : m_hops)
        hop->stop(); // closes the hop's connections and flushes their events
    m_hops.clear();
    // The run is over when its events are: the decoder may still hold the last calls' frames (16 ms, or
    // longer on a busy machine), which would otherwise arrive after a next run has begun.
    m_relay.sync(std::chrono::seconds(5));
    return result;
}

} // namespace rpcscope::lab
