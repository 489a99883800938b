#include "scenariokit.h"

#include "clock.h"
#include "labserver.h"

#include <algorithm>
#include <cmath>
#include <grpcpp/grpcpp.h>
#include <sstream>

namespace rpcscope::lab {

CallRequest labRequest(const std::string &id, int failFirstN, int delayMs, int failCode)
{
    CallRequest r;
    r.set_call_id(id);
    r.set_fail_first_n(failFirstN);
    r.set_fail_code(failCode);
    r.set_delay_ms(delayMs);
    r.set_payload(std::string(100, 'q'));
    r.set_response_size(100);
    return r;
}

CallResult unaryCall(Lab::Stub &stub, const CallRequest &req, std::chrono::milliseconds timeout)
{
    grpc::ClientContext ctx;
    ctx.AddMetadata("rpcscope-call-id", req.call_id());
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    CallReply reply;
    CallResult r;
    r.callId = req.call_id();
    r.startNs = steadyNowNs();
    const grpc::Status status = stub.Call(&ctx, req, &reply);
    r.endNs = steadyNowNs();
    r.code = status.error_code();
    r.message = status.error_message();
    return r;
}

ScenarioResult setupFailed(std::string why)
{
    ScenarioResult r;
    r.summary = std::move(why);
    return r;
}

std::string openHop(const ScenarioContext &ctx, const std::string &label, const std::string &target,
                    std::string *problem)
{
    std::string error;
    const std::string address = ctx.openHop ? ctx.openHop(label, target, &error) : std::string();
    if (address.empty())
        *problem =
            "could not open the capture hop " + label + ": " + (error.empty() ? "no hops here" : error);
    return address;
}

std::string serveBehindHop(const ScenarioContext &ctx, LabServer &server, const LabServerOptions &options,
                           const std::string &label, std::string *problem)
{
    server.setOptions(options);
    if (!server.start(problem)) return {};
    return openHop(ctx, label, serverAddress(server), problem);
}

std::string serverAddress(const LabServer &server)
{
    return "127.0.0.1:" + std::to_string(server.port());
}

CircuitBreaker::Listener BreakerLog::listener()
{
    return [this](CircuitBreaker::State from, CircuitBreaker::State to) {
        const std::string t = std::string(CircuitBreaker::name(from)) + " -> " + CircuitBreaker::name(to);
        {
            std::lock_guard lk(m_mu);
            m_transitions.push_back(t);
        }
        m_ctx.labEvent("breaker", t, {});
    };
}

std::vector<std::string> BreakerLog::transitions() const
{
    std::lock_guard lk(m_mu);
    return m_transitions;
}

std::string msText(std::int64_t ns)
{
    return std::to_string((ns + kMs / 2) / kMs) + " ms";
}

std::string fixed(double v, int digits)
{
    std::ostringstream s;
    s.precision(digits);
    s << std::fixed << v;
    return s.str();
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t i = size_t(std::ceil(p * double(v.size()))) - (p > 0 ? 1 : 0);
    return v[std::min(i, v.size() - 1)];
}

} // namespace rpcscope::lab
