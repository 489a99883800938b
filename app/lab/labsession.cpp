#include "labsession.h"

#include "clock.h"

namespace rpcscope::lab {

LabSession::~LabSession()
{
    stop();
}

bool LabSession::start(Relay::Sink sink, std::string *error)
{
    if (!m_server.start(error))
        return false;
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
    if (!m_running)
        return;
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
    ctx.nextCallId = [this, name = scenario.name] { return name + "-" + std::to_string(m_nextCall++); };
    ctx.labEvent = [this](const std::string &kind, const std::string &detail, const std::string &callId) {
        if (!m_sink)
            return;
        WireEvent e;
        e.kind = EventKind::LabEvent;
        e.tNs = steadyNowNs();
        e.text = kind;
        e.text2 = detail;
        e.grpc.callId = callId;
        m_sink({std::move(e)});
    };
    return scenario.run(ctx, params);
}

} // namespace rpcscope::lab
