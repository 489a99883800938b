#pragma once

#include "circuitbreaker.h"
#include "lab.grpc.pb.h"
#include "labclient.h"
#include "scenario.h"

#include <chrono>
#include <cstdint>
#include <grpcpp/support/status_code_enum.h>
#include <mutex>
#include <string>
#include <vector>

namespace rpcscope::lab {

class LabServer;
struct LabServerOptions;

// What the scenarios share: status codes, requests to the lab server, capture hops, and how numbers read in a
// summary. The verdict (verdict.h) and the service configs (serviceconfig.h) have files of their own.
inline constexpr int kOk = grpc::StatusCode::OK;
inline constexpr int kCancelled = grpc::StatusCode::CANCELLED;
inline constexpr int kDeadlineExceeded = grpc::StatusCode::DEADLINE_EXCEEDED;
inline constexpr int kUnavailable = grpc::StatusCode::UNAVAILABLE;
inline constexpr std::int64_t kMs = 1'000'000;

// A unary request to the lab server: 100 bytes each way; the first `failFirstN` arrivals fail with
// `failCode`, every arrival takes `delayMs`.
CallRequest labRequest(const std::string &id, int failFirstN = 0, int delayMs = 0,
                       int failCode = kUnavailable);

// A plain grpc++ unary call on a stub the scenario built itself (keepalive, pools, replicas).
CallResult unaryCall(Lab::Stub &stub, const CallRequest &req, std::chrono::milliseconds timeout);

// A result for a scenario that could not run; `why` is its summary.
ScenarioResult setupFailed(std::string why);
// Opens a capture hop labelled `label` in front of `target`; the address to dial, or empty with the reason in
// *problem.
std::string openHop(const ScenarioContext &ctx, const std::string &label, const std::string &target,
                    std::string *problem);
// Starts `server` with `options` and opens a capture hop labelled `label` in front of it; the address to
// dial, or empty with the reason in *problem.
std::string serveBehindHop(const ScenarioContext &ctx, LabServer &server, const LabServerOptions &options,
                           const std::string &label, std::string *problem);
std::string serverAddress(const LabServer &server); // "127.0.0.1:PORT"

// A circuit breaker's transitions as "closed -> open", each also a "breaker" lab event.
class BreakerLog
{
public:
    explicit BreakerLog(const ScenarioContext &ctx) : m_ctx(ctx) {}
    CircuitBreaker::Listener listener();
    std::vector<std::string> transitions() const;

private:
    const ScenarioContext &m_ctx;
    mutable std::mutex m_mu;
    std::vector<std::string> m_transitions;
};

std::string msText(std::int64_t ns);                // "12 ms", rounded
std::string fixed(double v, int digits = 0);        // fixed-point, `digits` after the point
double percentile(std::vector<double> v, double p); // nearest rank; 0 for none

} // namespace rpcscope::lab
