// Seed 001 scenarios (governance): transparent retry, breaker and retry together, a retry budget, bulkheads,
// keepalive, channel pools, health checking, idempotency keys and hedging by hand. Registered by
// allScenarios() in scenarios.cpp. Expected outcomes follow gRPC C-core 1.51
// (shared/reference/grpc-core-retry-behaviour.md).

#include "circuitbreaker.h"
#include "clock.h"
#include "events.h"
#include "faultfront.h"
#include "health.grpc.pb.h"
#include "lab.grpc.pb.h"
#include "labserver.h"
#include "scenario.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <semaphore>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

namespace {

constexpr int kOk = grpc::StatusCode::OK;
constexpr int kCancelled = grpc::StatusCode::CANCELLED;
constexpr int kUnavailable = grpc::StatusCode::UNAVAILABLE;
constexpr std::int64_t kMs = 1'000'000;

std::string retryPolicy(int maxAttempts, int initialBackoffMs)
{
    std::ostringstream s;
    s << R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":)"
      << maxAttempts << R"(,"initialBackoff":")" << initialBackoffMs / 1000.0
      << R"(s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";
    return s.str();
}

std::string name(int code)
{
    return grpcStatusName(code);
}

std::string msText(std::int64_t ns)
{
    return std::to_string((ns + kMs / 2) / kMs) + " ms";
}

CallRequest request(const std::string &id, int failFirstN = 0, int delayMs = 0)
{
    CallRequest r;
    r.set_call_id(id);
    r.set_fail_first_n(failFirstN);
    r.set_fail_code(kUnavailable);
    r.set_delay_ms(delayMs);
    r.set_payload(std::string(100, 'q'));
    r.set_response_size(100);
    return r;
}

// A plain grpc++ unary call on a stub the scenario built itself (keepalive, pools, replicas).
CallResult unary(Lab::Stub &stub, const CallRequest &req, std::chrono::milliseconds timeout)
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

std::string serverAddress(const LabServer &server)
{
    return "127.0.0.1:" + std::to_string(server.port());
}

// Opens a capture hop or explains why not.
std::string hop(const ScenarioContext &ctx, const std::string &label, const std::string &target,
                std::string *problem)
{
    std::string error;
    const std::string address = ctx.openHop ? ctx.openHop(label, target, &error) : std::string();
    if (address.empty())
        *problem =
            "could not open the capture hop " + label + ": " + (error.empty() ? "no hops here" : error);
    return address;
}

ScenarioResult failed(std::string why)
{
    ScenarioResult r;
    r.summary = std::move(why);
    return r;
}

// Starts `server` with `options` and opens a capture hop labelled `label` in front of it; the address to dial,
// or empty with the reason in *problem.
std::string serveBehindHop(const ScenarioContext &ctx, LabServer &server, const LabServerOptions &options,
                           const std::string &label, std::string *problem)
{
    server.setOptions(options);
    if (!server.start(problem))
        return {};
    return hop(ctx, label, serverAddress(server), problem);
}

// A scenario whose calls each made one attempt and should end OK, checked as a whole by `held`.
ScenarioResult allOk(bool held, std::string summary, std::initializer_list<const std::vector<CallResult> *> runs)
{
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = std::move(summary);
    for (const auto *calls : runs)
        for (const CallResult &c : *calls) {
            r.calls.push_back(c);
            r.expected.push_back({c.callId, 1, kOk});
        }
    return r;
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t i = size_t(std::ceil(p * double(v.size()))) - (p > 0 ? 1 : 0);
    return v[std::min(i, v.size() - 1)];
}

std::string fixed(double v, int digits = 0)
{
    std::ostringstream s;
    s.precision(digits);
    s << std::fixed << v;
    return s.str();
}

// ---------------------------------------------------------------------------------------------------------
// transparent-retry

ScenarioResult runTransparentRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int maxAttempts = std::clamp(p.integer("max_attempts"), 2, 5);
    const int failFirst = p.integer("fail_first_n");
    FaultFront front;
    front.refuseFirstConnections(1);
    std::string problem;
    if (!front.start(std::uint16_t(ctx.server->port()), &problem))
        return failed(problem);
    const std::string address = hop(ctx, "GOAWAY front", front.address(), &problem);
    if (address.empty())
        return failed(problem);
    LabClient client(address, retryPolicy(maxAttempts, 50));
    const std::string id = ctx.nextCallId();
    const CallResult r = client.call(request(id, failFirst), std::chrono::seconds(5));
    front.stop();

    // The server never saw the refused stream: its first arrival is the transparent retry, which carries no
    // grpc-previous-rpc-attempts; the configured retries that follow count from there.
    const auto arrivals = ctx.server->arrivalsFor(id);
    const int wantArrivals = std::min(failFirst + 1, maxAttempts);
    const int wantCode = failFirst < maxAttempts ? kOk : kUnavailable;
    bool held = front.refused() == 1 && int(arrivals.size()) == wantArrivals && r.code == wantCode;
    std::string previous;
    for (size_t k = 0; k < arrivals.size(); ++k) {
        const int prev = arrivals[k].previousAttempts.value_or(0);
        held = held && prev == int(k);
        previous += (k ? "," : "") + (arrivals[k].previousAttempts ? std::to_string(prev) : std::string("-"));
    }
    std::ostringstream s;
    s << id << ": " << name(r.code) << " in " << msText(r.endNs - r.startNs) << "; " << front.refused()
      << " stream refused by GOAWAY (last-stream-id 0) and retried transparently on a new connection; "
      << "the server saw " << arrivals.size() << " attempt" << (arrivals.size() == 1 ? "" : "s")
      << " with grpc-previous-rpc-attempts [" << previous << "] under maxAttempts " << maxAttempts;
    if (!held)
        s << " (expected 1 refused stream, " << name(wantCode) << " after " << wantArrivals
          << " server attempts numbered from 0)";
    ScenarioResult result;
    result.expectationHeld = held;
    result.summary = s.str();
    result.calls = {r};
    result.expected = {{id, wantArrivals, wantCode}};
    return result;
}

// ---------------------------------------------------------------------------------------------------------
// breaker-retry

ScenarioResult runBreakerRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int calls = std::max(1, p.integer("calls"));
    const int maxAttempts = std::max(1, p.integer("max_attempts"));
    const int minRequests = std::max(1, p.integer("min_requests"));
    const int backoffMs = p.integer("backoff_ms");
    CircuitBreaker::Options options;
    options.window = std::max(10, minRequests);
    options.minRequests = minRequests;
    options.errorRate = 0.5;
    options.openNs = std::int64_t(p.integer("open_ms")) * kMs;
    std::vector<std::string> transitions;
    std::mutex mu;
    CircuitBreaker breaker(options, [&](CircuitBreaker::State from, CircuitBreaker::State to) {
        const std::string t = std::string(CircuitBreaker::name(from)) + " -> " + CircuitBreaker::name(to);
        {
            std::lock_guard lk(mu);
            transitions.push_back(t);
        }
        ctx.labEvent("breaker", t, {});
    });
    LabClient client(ctx.target, {});

    // What should happen against a downstream that is always down: every attempt fails until minRequests
    // failures open the breaker; the call that opened it stops at once, later calls never reach the wire.
    std::vector<int> wantAttempts;
    for (int i = 0, failures = 0; i < calls; ++i) {
        int a = 0;
        while (failures < minRequests && a < maxAttempts) {
            ++a;
            ++failures;
        }
        wantAttempts.push_back(a);
    }

    std::vector<CallResult> results;
    std::vector<ExpectedCall> expected;
    std::vector<int> attemptsMade;
    int suppressed = 0, fastFailed = 0, requests = 0;
    std::int64_t suppressedAfterNs = -1; // from the failure to giving up, for the call the breaker stopped
    for (int i = 0; i < calls; ++i) {
        const std::string id = ctx.nextCallId();
        CallResult last;
        last.callId = id;
        last.startNs = steadyNowNs();
        int attempts = 0;
        for (;;) {
            if (!breaker.allow(steadyNowNs())) {
                // Only a first attempt gets here: a retry asks the breaker before it backs off (below).
                ++fastFailed;
                ctx.labEvent("fast-fail", "breaker open: failed without a request", id);
                last.code = kUnavailable;
                last.message = "circuit breaker open";
                last.endNs = steadyNowNs();
                break;
            }
            last = client.call(request(id, 1'000'000), std::chrono::seconds(2));
            ++attempts;
            ++requests;
            breaker.record(last.code == kOk, steadyNowNs());
            if (last.code != kUnavailable || attempts >= maxAttempts)
                break;
            // The retry asks the breaker first: an open breaker fails the call now instead of backing off.
            if (breaker.state() == CircuitBreaker::State::Open) {
                ++suppressed;
                ctx.labEvent("retry-suppressed", "breaker open: failing fast instead of backing off", id);
                suppressedAfterNs = steadyNowNs() - last.endNs;
                break;
            }
            const double waitMs = backoffMs * std::pow(2.0, attempts - 1);
            std::this_thread::sleep_for(std::chrono::microseconds(std::int64_t(waitMs * 1000)));
        }
        last.startNs = std::min(last.startNs, last.endNs);
        attemptsMade.push_back(attempts);
        results.push_back(last);
        expected.push_back({id, attempts, kUnavailable});
    }
    const int withoutBreaker = calls * maxAttempts;
    const bool opened = !transitions.empty() && transitions.front() == "closed -> open";
    bool held = attemptsMade == wantAttempts && opened;
    // The call the breaker stopped mid-retry gave up at once (well under the backoff it would have waited).
    const bool stoppedMidRetry = std::find_if(wantAttempts.begin(), wantAttempts.end(), [&](int a) {
                                     return a > 0 && a < maxAttempts;
                                 }) != wantAttempts.end();
    if (stoppedMidRetry)
        held = held && suppressed == 1 && suppressedAfterNs >= 0 &&
               suppressedAfterNs < backoffMs * kMs / 2 + kMs;
    std::ostringstream s;
    s << calls << " calls made " << requests << " requests (" << withoutBreaker
      << " without the breaker): attempts";
    for (int a : attemptsMade)
        s << " " << a;
    s << "; breaker " << (transitions.empty() ? std::string("stayed closed") : transitions.front())
      << " after " << minRequests << " failures; " << suppressed << " retry suppressed by the open breaker";
    if (suppressedAfterNs >= 0)
        s << " (gave up " << fixed(double(suppressedAfterNs) / kMs, 1)
          << " ms after the failure instead of backing off " << backoffMs << " ms)";
    s << "; " << fastFailed << " calls failed fast without a request";
    if (!held) {
        s << " (expected attempts";
        for (int a : wantAttempts)
            s << " " << a;
        s << ", the breaker opening, and the retry of the call that opened it suppressed at once)";
    }
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = s.str();
    r.calls = std::move(results);
    r.expected = std::move(expected);
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// retry-budget

// A client-side retry budget shared by every call of one client, as in Finagle or Envoy: each request
// deposits `ratio` tokens, `minRetries` come free, and each retry spends one.
class RetryBudget
{
public:
    RetryBudget(double ratio, int minRetries) : m_ratio(ratio), m_min(minRetries) {}
    void deposit()
    {
        std::lock_guard lk(m_mu);
        ++m_requests;
    }
    // Spends a token if one is left; otherwise says why not.
    bool withdraw(std::string *why)
    {
        std::lock_guard lk(m_mu);
        const double tokens = m_min + m_ratio * m_requests - m_retries;
        if (tokens >= 1 - 1e-9) {
            ++m_retries;
            return true;
        }
        *why = "retry budget spent: " + std::to_string(m_retries) + " retries for " +
               std::to_string(m_requests) + " requests at " + fixed(m_ratio * 100) + "% (+" +
               std::to_string(m_min) + ")";
        return false;
    }

private:
    std::mutex m_mu;
    const double m_ratio;
    const int m_min;
    int m_requests = 0;
    int m_retries = 0;
};

ScenarioResult runRetryBudget(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int clients = std::max(1, p.integer("clients"));
    const int maxAttempts = std::max(1, p.integer("max_attempts"));
    const double ratio = p.number("budget_percent") / 100.0;
    const int minRetries = p.integer("min_retries");
    RetryBudget budget(ratio, minRetries);
    std::vector<std::string> ids;
    for (int i = 0; i < clients; ++i)
        ids.push_back(ctx.nextCallId());
    std::vector<CallResult> results(size_t(clients), CallResult{});
    std::vector<int> attempts(size_t(clients), 0);
    std::atomic<int> refused{0};
    std::latch deposited(clients);
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
            LabClient client(ctx.target, {});
            const std::string &id = ids[size_t(i)];
            // Every call is a request before any of them retries, so the budget's verdicts do not depend on
            // thread timing.
            budget.deposit();
            deposited.arrive_and_wait();
            const std::int64_t start = steadyNowNs();
            CallResult last;
            for (int k = 0;; ++k) {
                last = client.call(request(id, 1'000'000), std::chrono::seconds(2));
                ++attempts[size_t(i)];
                if (last.code != kUnavailable || k + 1 >= maxAttempts)
                    break;
                std::string why;
                if (!budget.withdraw(&why)) {
                    ++refused;
                    ctx.labEvent("budget-check-failed", why, id);
                    ctx.labEvent("retry-suppressed", "retry budget: " + why, id);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20 << k));
            }
            last.startNs = start;
            results[size_t(i)] = last;
        });
    for (auto &t : threads)
        t.join();

    int requests = 0;
    std::vector<ExpectedCall> expected;
    for (int i = 0; i < clients; ++i) {
        const int arrivals = int(ctx.server->arrivalsFor(ids[size_t(i)]).size());
        requests += arrivals;
        expected.push_back({ids[size_t(i)], attempts[size_t(i)], kUnavailable});
    }
    const int wanted = clients * (maxAttempts - 1);
    const int allowed = std::min(wanted, int(std::floor(minRetries + ratio * clients + 1e-9)));
    // Each call that stopped before maxAttempts hit the empty budget exactly once (which calls got the
    // retries depends on timing, how many does not).
    const int wantRefused =
        int(std::count_if(attempts.begin(), attempts.end(), [&](int a) { return a < maxAttempts; }));
    const bool held = requests == clients + allowed && refused == wantRefused;
    std::ostringstream s;
    s << clients << " calls made " << requests << " requests: amplification "
      << fixed(double(requests) / clients, 2) << "x (" << fixed(double(maxAttempts), 2)
      << "x without a budget); " << refused << " retries refused by the budget (" << fixed(ratio * 100)
      << "% of requests + " << minRetries << ")";
    if (!held)
        s << " (expected " << clients + allowed << " requests and " << wantRefused << " refusals)";
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = s.str();
    r.calls = std::move(results);
    r.expected = std::move(expected);
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// bulkhead

struct BulkheadRun
{
    std::vector<double> healthyMs;
    int rejected = 0;
    int slowSent = 0;
    std::vector<CallResult> calls;
};

BulkheadRun runBulkheadPhase(const ScenarioContext &ctx, const std::string &address, const ScenarioParams &p,
                             bool bulkhead)
{
    const int slowCalls = p.integer("slow_calls");
    const int healthyCalls = p.integer("healthy_calls");
    const int slowMs = p.integer("slow_ms");
    const int searchPermits = std::max(1, p.integer("search_permits"));
    const auto acquireTimeout = std::chrono::milliseconds(p.integer("acquire_timeout_ms"));
    // Per-method semaphores: Search may hold only some of the server's workers; Call keeps its own.
    std::counting_semaphore<1024> searchPermit(searchPermits), callPermit(std::max(1, p.integer("pool") / 2));
    LabClient client(address, {});
    BulkheadRun run;
    std::mutex mu;
    std::vector<std::thread> threads;
    auto launch = [&](bool slow) {
        const std::string id = ctx.nextCallId();
        threads.emplace_back([&, id, slow] {
            std::counting_semaphore<1024> &permit = slow ? searchPermit : callPermit;
            if (bulkhead && !permit.try_acquire_for(acquireTimeout)) {
                ctx.labEvent("bulkhead-rejected",
                             std::string(slow ? "Search" : "Call") + ": no permit within " +
                                 std::to_string(acquireTimeout.count()) + " ms, failed without a request",
                             id);
                std::lock_guard lk(mu);
                ++run.rejected;
                return;
            }
            const CallResult r =
                client.call(request(id, 0, slow ? slowMs : 2), std::chrono::seconds(5), {}, /*search=*/slow);
            if (bulkhead)
                permit.release();
            std::lock_guard lk(mu);
            run.calls.push_back(r);
            if (slow)
                ++run.slowSent;
            else
                run.healthyMs.push_back(double(r.endNs - r.startNs) / kMs);
        });
    };
    // The slow method's burst first, then the healthy method at a steady pace behind it.
    for (int i = 0; i < slowCalls; ++i)
        launch(true);
    for (int i = 0; i < healthyCalls; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        launch(false);
    }
    for (auto &t : threads)
        t.join();
    return run;
}

ScenarioResult runBulkhead(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabServer server;
    LabServerOptions options;
    options.handlerPool = std::max(1, p.integer("pool"));
    std::string problem;
    const std::string address = serveBehindHop(
        ctx, server, options, "pool of " + std::to_string(options.handlerPool) + " workers", &problem);
    if (address.empty())
        return failed(problem);
    const BulkheadRun shared = runBulkheadPhase(ctx, address, p, false);
    const BulkheadRun isolated = runBulkheadPhase(ctx, address, p, true);
    server.stop();

    const double sharedP50 = percentile(shared.healthyMs, 0.5),
                 sharedP99 = percentile(shared.healthyMs, 0.99);
    const double bulkP50 = percentile(isolated.healthyMs, 0.5),
                 bulkP99 = percentile(isolated.healthyMs, 0.99);
    const int slowMs = p.integer("slow_ms");
    const int wantRejected = std::max(0, p.integer("slow_calls") - std::max(1, p.integer("search_permits")));
    // Every Search call beyond the permits is rejected when the permits stay busy past the acquire timeout;
    // with a shorter service time some of them get a permit in time.
    const bool rejectionsHeld = slowMs > 2 * p.integer("acquire_timeout_ms")
                                    ? isolated.rejected == wantRejected
                                    : isolated.rejected <= wantRejected;
    // Shared, the healthy calls wait behind the slow ones for at least one slow call's time; with the
    // bulkhead they keep the latency of an idle server.
    const bool held = sharedP50 >= slowMs * 0.5 && bulkP99 < slowMs * 0.25 && rejectionsHeld &&
                      shared.rejected == 0 && int(isolated.healthyMs.size()) == p.integer("healthy_calls");
    std::ostringstream s;
    s << "healthy Call p50/p99: shared pool " << fixed(sharedP50) << "/" << fixed(sharedP99)
      << " ms, with bulkhead " << fixed(bulkP50, 1) << "/" << fixed(bulkP99, 1) << " ms; "
      << isolated.rejected << " Search calls bulkhead-rejected (" << isolated.slowSent << " sent)";
    if (!held)
        s << " (expected the shared p50 at least " << slowMs / 2 << " ms, the bulkhead p99 below "
          << slowMs / 4 << " ms, and " << wantRejected << " rejections)";
    return allOk(held, s.str(), {&shared.calls, &isolated.calls});
}

// ---------------------------------------------------------------------------------------------------------
// keepalive-drop

ScenarioResult runKeepaliveDrop(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int timeMs = std::max(1, p.integer("keepalive_time_ms"));
    const int timeoutMs = std::max(1, p.integer("keepalive_timeout_ms"));
    LabServer server;
    LabServerOptions options;
    options.permitIdlePings = true;
    server.setOptions(options);
    std::string problem;
    if (!server.start(&problem))
        return failed(problem);
    FaultFront front;
    if (!front.start(std::uint16_t(server.port()), &problem))
        return failed(problem);
    const std::string address = hop(ctx, "keepalive", front.address(), &problem);
    if (address.empty())
        return failed(problem);

    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, timeMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, timeoutMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    // Without this C-core spaces pings without data by 5 minutes, whatever keepalive_time says.
    args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 0);
    auto stub = Lab::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));

    std::vector<CallResult> calls;
    calls.push_back(unary(*stub, request(ctx.nextCallId()), std::chrono::seconds(2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(p.integer("idle_ms"))); // idle: only PINGs
    // A call the server holds, so the drop hits a call in flight; the deadline is a backstop far beyond what
    // keepalive needs.
    const std::string heldId = ctx.nextCallId();
    const auto backstop = std::chrono::milliseconds(timeMs + timeoutMs + 5000);
    CallResult held;
    std::thread inFlight([&] { held = unary(*stub, request(heldId, 0, 60'000), backstop); });
    const std::int64_t waitUntil = steadyNowNs() + 2'000 * kMs;
    while (server.arrivalsFor(heldId).empty() && steadyNowNs() < waitUntil)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const std::int64_t dropNs = steadyNowNs();
    front.blackhole();
    inFlight.join();
    calls.push_back(held);
    // The transport reports the call's failure a moment before its socket is closed.
    const std::int64_t closeBy = steadyNowNs() + 2'000 * kMs;
    while (!front.blackholeNoticedNs() && steadyNowNs() < closeBy)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto noticed = front.blackholeNoticedNs();
    // The channel connects again at once, through the front, which forwards new connections.
    calls.push_back(unary(*stub, request(ctx.nextCallId()), std::chrono::seconds(2)));
    stub.reset();
    server.stop();
    front.stop();

    // The next PING goes out at most keepalive_time after the last ACK, but C-core's client sends a PING at
    // most once a second (a second after the previous one), whatever keepalive_time says.
    const int pingEveryMs = std::max(timeMs, 1000);
    const std::int64_t detectNs = held.endNs - dropNs;
    const std::int64_t boundNs = std::int64_t(pingEveryMs + timeoutMs) * kMs + 400 * kMs;
    const bool ok = calls[0].code == kOk && held.code == kUnavailable && detectNs <= boundNs &&
                    detectNs >= std::int64_t(timeoutMs) * kMs && noticed.has_value() && calls[2].code == kOk;
    std::ostringstream s;
    s << "connection blackholed with " << heldId << " in flight: " << name(held.code) << " after "
      << msText(detectNs) << " (a PING at most every " << pingEveryMs << " ms + timeout " << timeoutMs
      << " ms";
    if (noticed)
        s << "; the client closed the dead connection " << msText(*noticed - dropNs) << " after the drop";
    s << "); the next call " << name(calls[2].code) << " on a new connection";
    if (calls[2].code != kOk)
        s << " (" << calls[2].message << ")";
    if (!ok)
        s << " (expected UNAVAILABLE between " << timeoutMs << " and " << pingEveryMs + timeoutMs + 400
          << " ms after the drop, then OK)";
    ScenarioResult r;
    r.expectationHeld = ok;
    r.summary = s.str();
    r.expected = {{calls[0].callId, 1, kOk}, {heldId, 1, kUnavailable}, {calls[2].callId, 1, kOk}};
    r.calls = std::move(calls);
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// channel-pool

struct Wave
{
    std::int64_t totalNs = 0;
    std::vector<double> latencyMs;
    int maxInFlight = 0; // at the server, from its arrivals and the fixed service time
    int failures = 0;
    std::vector<CallResult> calls;
};

Wave runWave(const ScenarioContext &ctx, const LabServer &server,
             std::vector<std::unique_ptr<Lab::Stub>> &stubs, int calls, int delayMs)
{
    struct Pending
    {
        grpc::ClientContext context;
        CallRequest req;
        CallReply reply;
        CallResult result;
    };
    std::vector<std::unique_ptr<Pending>> pending;
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    const std::int64_t start = steadyNowNs();
    for (int i = 0; i < calls; ++i) {
        auto c = std::make_unique<Pending>();
        c->req = request(ctx.nextCallId(), 0, delayMs);
        c->context.AddMetadata("rpcscope-call-id", c->req.call_id());
        c->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        c->result.callId = c->req.call_id();
        c->result.startNs = steadyNowNs();
        Pending *raw = c.get();
        pending.push_back(std::move(c));
        stubs[size_t(i) % stubs.size()]->async()->Call(&raw->context, &raw->req, &raw->reply,
                                                       [&, raw](grpc::Status status) {
                                                           raw->result.endNs = steadyNowNs();
                                                           raw->result.code = status.error_code();
                                                           raw->result.message = status.error_message();
                                                           std::lock_guard lk(mu);
                                                           ++done;
                                                           cv.notify_one();
                                                       });
    }
    {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return done == calls; });
    }
    Wave w;
    w.totalNs = steadyNowNs() - start;
    std::vector<std::pair<std::int64_t, int>> edges; // +1 at an arrival, -1 when its reply is due
    for (const auto &c : pending) {
        w.latencyMs.push_back(double(c->result.endNs - c->result.startNs) / kMs);
        w.failures += c->result.code != kOk;
        w.calls.push_back(c->result);
        for (const Arrival &a : server.arrivalsFor(c->req.call_id())) {
            edges.push_back({a.tNs, 1});
            edges.push_back({a.tNs + std::int64_t(delayMs) * kMs, -1});
        }
    }
    std::sort(edges.begin(), edges.end(),
              [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
    int inFlight = 0;
    for (const auto &[t, delta] : edges)
        w.maxInFlight = std::max(w.maxInFlight, inFlight += delta);
    return w;
}

ScenarioResult runChannelPool(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int streams = std::max(1, p.integer("max_streams"));
    const int calls = std::max(1, p.integer("calls"));
    const int poolSize = std::max(1, p.integer("pool"));
    const int delayMs = p.integer("delay_ms");
    LabServer server;
    LabServerOptions options;
    options.maxConcurrentStreams = streams;
    std::string problem;
    const std::string address =
        serveBehindHop(ctx, server, options, "MAX_CONCURRENT_STREAMS " + std::to_string(streams), &problem);
    if (address.empty())
        return failed(problem);

    // Channels with equal arguments share one subchannel, so one connection, in C-core's global subchannel
    // pool: only a distinct argument per channel makes a pool.
    auto channels = [&](int n, bool distinct) {
        std::vector<std::unique_ptr<Lab::Stub>> stubs;
        for (int i = 0; i < n; ++i) {
            grpc::ChannelArguments args;
            if (distinct)
                args.SetInt("rpcscope.pool_channel", i);
            stubs.push_back(
                Lab::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
        }
        return stubs;
    };
    auto single = channels(1, false);
    auto naive = channels(poolSize, false);
    auto pool = channels(poolSize, true);
    // Connect every channel first, so the waves measure streams, not connection set-up.
    for (auto *set : {&single, &naive, &pool})
        for (auto &stub : *set)
            unary(*stub, request(ctx.nextCallId()), std::chrono::seconds(2));
    const Wave one = runWave(ctx, server, single, calls, delayMs);
    const Wave same = runWave(ctx, server, naive, calls, delayMs);
    const Wave many = runWave(ctx, server, pool, calls, delayMs);
    single.clear();
    naive.clear();
    pool.clear();
    server.stop();

    const int waves = (calls + streams - 1) / streams;
    const int poolWaves = (calls + streams * poolSize - 1) / (streams * poolSize);
    const bool held = one.failures == 0 && same.failures == 0 && many.failures == 0 &&
                      one.maxInFlight <= streams && same.maxInFlight <= streams &&
                      many.maxInFlight > streams && poolWaves < waves &&
                      double(many.totalNs) < double(one.totalNs) * (poolWaves + 0.5) / waves;
    std::ostringstream s;
    auto describe = [&](const Wave &w) {
        s << msText(w.totalNs) << " (p50 " << fixed(percentile(w.latencyMs, 0.5)) << " ms, max "
          << fixed(percentile(w.latencyMs, 1.0)) << " ms, at most " << w.maxInFlight << " in flight)";
    };
    s << calls << " calls of " << delayMs << " ms: one channel ";
    describe(one);
    s << "; " << poolSize << " channels with equal arguments ";
    describe(same);
    s << "; a pool of " << poolSize << " with distinct arguments ";
    describe(many);
    if (!held)
        s << " (expected one channel and the equal-argument channels capped at " << streams << " streams in "
          << waves << " waves, the pool above it in " << poolWaves << ")";
    return allOk(held, s.str(), {&one.calls, &same.calls, &many.calls});
}

// ---------------------------------------------------------------------------------------------------------
// health-check

ScenarioResult runHealthCheck(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int flipMs = std::max(1, p.integer("flip_ms"));
    LabServer server;
    LabServerOptions options;
    options.healthService = true;
    std::string problem;
    const std::string address = serveBehindHop(ctx, server, options, "health", &problem);
    if (address.empty())
        return failed(problem);

    auto stub =
        grpc::health::v1::Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    const std::string id = ctx.nextCallId();
    grpc::ClientContext watch;
    watch.AddMetadata("rpcscope-call-id", id);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(Lab::service_full_name());
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<std::string, std::int64_t>> seen; // status, when the client saw it
    CallResult result;
    result.callId = id;
    result.startNs = steadyNowNs();
    auto reader = stub->Watch(&watch, req);
    std::thread watcher([&] {
        grpc::health::v1::HealthCheckResponse response;
        while (reader->Read(&response)) {
            const std::string status =
                grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
            std::lock_guard lk(mu);
            if (!seen.empty() && seen.back().first == status)
                continue;
            seen.push_back({status, steadyNowNs()});
            ctx.labEvent("health", status, id);
            cv.notify_all();
        }
    });
    auto waitFor = [&](size_t n) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, std::chrono::seconds(2), [&] { return seen.size() >= n; });
    };
    std::vector<std::int64_t> flips;
    waitFor(1);
    for (bool serving : {false, true}) {
        std::this_thread::sleep_for(std::chrono::milliseconds(flipMs));
        flips.push_back(steadyNowNs());
        server.setServing(serving);
        waitFor(flips.size() + 1);
    }
    watch.TryCancel();
    watcher.join();
    const grpc::Status status = reader->Finish();
    result.endNs = steadyNowNs();
    result.code = status.error_code();
    result.message = status.error_message();
    server.stop();

    std::vector<std::string> statuses;
    std::int64_t maxLagNs = 0;
    for (size_t i = 0; i < seen.size(); ++i) {
        statuses.push_back(seen[i].first);
        if (i >= 1 && i - 1 < flips.size())
            maxLagNs = std::max(maxLagNs, seen[i].second - flips[i - 1]);
    }
    const std::vector<std::string> want = {"SERVING", "NOT_SERVING", "SERVING"};
    // Each change reaches the watcher before the next one is made.
    const bool held = statuses == want && maxLagNs < flipMs * kMs;
    std::ostringstream s;
    s << "Watch(" << Lab::service_full_name() << ") saw";
    for (const auto &st : statuses)
        s << " " << st;
    s << ", each change at most " << fixed(double(maxLagNs) / kMs, 1)
      << " ms after the server's flip; the watch ended " << name(result.code);
    if (!held)
        s << " (expected SERVING NOT_SERVING SERVING, each within " << flipMs << " ms)";
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = s.str();
    r.calls = {result};
    r.expected = {{id, 1, kCancelled}};
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// idempotency-key

ScenarioResult runIdempotencyKey(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabServer server;
    std::string problem;
    if (!server.start(&problem))
        return failed(problem);
    server.setDeduplicationListener([&](const std::string &callId, const std::string &key) {
        ctx.labEvent("deduplicated",
                     "idempotency-key " + key + ": answered from the cache, side effect not repeated",
                     callId);
    });
    const std::string address = hop(ctx, "payments", serverAddress(server), &problem);
    if (address.empty())
        return failed(problem);
    LabClient client(address, retryPolicy(3, p.integer("initial_backoff_ms")));
    std::vector<CallResult> results;
    std::vector<int> effects, dedups, arrivals;
    for (bool keyed : {false, true}) {
        const std::string id = ctx.nextCallId();
        CallRequest req = request(id, 1); // the first arrival does the work, then its response is lost
        req.set_fail_message("lab: response lost after the side effect");
        req.set_side_effect(true);
        LabClient::Metadata md;
        if (keyed)
            md.push_back({"idempotency-key", "pay-" + id});
        results.push_back(client.call(req, std::chrono::seconds(5), md));
        effects.push_back(server.sideEffectsFor(id));
        dedups.push_back(server.deduplicatedFor(id));
        arrivals.push_back(int(server.arrivalsFor(id).size()));
    }
    server.setDeduplicationListener({});
    server.stop();

    const bool held = results[0].code == kOk && results[1].code == kOk &&
                      arrivals == std::vector<int>{2, 2} && effects == std::vector<int>{2, 1} &&
                      dedups == std::vector<int>{0, 1};
    std::ostringstream s;
    s << "without a key: " << name(results[0].code) << " after " << arrivals[0]
      << " attempts, side effect applied " << effects[0]
      << "x; with an idempotency-key: " << name(results[1].code) << " after " << arrivals[1]
      << " attempts, side effect applied " << effects[1] << "x, " << dedups[1] << " deduplicated";
    if (!held)
        s << " (expected OK after 2 attempts each, side effects 2 and 1, 1 deduplicated)";
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = s.str();
    r.expected = {{results[0].callId, 2, kOk}, {results[1].callId, 2, kOk}};
    r.calls = std::move(results);
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// hedging-by-hand

struct HedgeOutcome
{
    CallResult result; // the winner's status, the call's latency
    bool hedged = false;
    int loser = -1; // index of the cancelled request, -1 when none
    int loserCode = -1;
};

// Application-level hedging: the first request goes to replica A; if no reply came within hedgeDelay a second
// one (same call id, rpcscope-hedge metadata) goes to replica B; the first reply wins and the other request
// is cancelled.
HedgeOutcome hedgedCall(const ScenarioContext &ctx, Lab::Stub &a, Lab::Stub &b, const std::string &id,
                        int primaryMs, int hedgeMs, std::chrono::milliseconds hedgeDelay)
{
    struct Leg
    {
        grpc::ClientContext context;
        CallRequest req;
        CallReply reply;
        std::optional<grpc::Status> status;
    };
    Leg legs[2];
    std::mutex mu;
    std::condition_variable cv;
    int winner = -1;
    auto send = [&](int i, Lab::Stub &stub, int delayMs) {
        Leg &leg = legs[i];
        leg.req = request(id, 0, delayMs);
        leg.context.AddMetadata("rpcscope-call-id", id);
        leg.context.AddMetadata("rpcscope-hedge", std::to_string(i));
        leg.context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        stub.async()->Call(&leg.context, &leg.req, &leg.reply, [&, i](grpc::Status status) {
            std::lock_guard lk(mu);
            legs[i].status = status;
            if (winner < 0 && status.ok())
                winner = i;
            cv.notify_all();
        });
    };
    HedgeOutcome out;
    out.result.callId = id;
    out.result.startNs = steadyNowNs();
    send(0, a, primaryMs);
    std::unique_lock lk(mu);
    if (!cv.wait_for(lk, hedgeDelay, [&] { return legs[0].status.has_value(); })) {
        lk.unlock();
        ctx.labEvent("hedge-fired",
                     "application-level hedge: no reply after " + std::to_string(hedgeDelay.count()) +
                         " ms, second request to replica B",
                     id);
        send(1, b, hedgeMs);
        out.hedged = true;
        lk.lock();
    }
    const int legsSent = out.hedged ? 2 : 1;
    cv.wait(lk, [&] { return winner >= 0 || (legs[0].status && (legsSent == 1 || legs[1].status)); });
    out.result.endNs = steadyNowNs();
    const int decided = winner >= 0 ? winner : 0;
    if (legs[decided].status) {
        out.result.code = legs[decided].status->error_code();
        out.result.message = legs[decided].status->error_message();
    }
    for (int i = 0; i < legsSent; ++i) {
        if (i == decided || legs[i].status)
            continue;
        out.loser = i;
        lk.unlock();
        // The decision first, then the cancellation it causes on the wire.
        ctx.labEvent("hedge-cancelled",
                     std::string("replica ") + (i ? "B" : "A") + " lost to replica " + (decided ? "B" : "A") +
                         ": request cancelled",
                     id);
        legs[i].context.TryCancel();
        lk.lock();
    }
    // Every callback has run before the legs go out of scope.
    cv.wait(lk, [&] { return legs[0].status && (legsSent == 1 || legs[1].status); });
    if (out.loser >= 0)
        out.loserCode = legs[out.loser].status->error_code();
    return out;
}

ScenarioResult runHedgingByHand(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int slowMs = p.integer("slow_ms"), fastMs = p.integer("fast_ms");
    const int delayMs = p.integer("hedge_delay_ms");
    std::string problem;
    const std::string server = serverAddress(*ctx.server);
    const std::string toA = hop(ctx, "replica A", server, &problem);
    const std::string toB = toA.empty() ? std::string() : hop(ctx, "replica B", server, &problem);
    if (toB.empty())
        return failed(problem);
    auto a = Lab::NewStub(grpc::CreateChannel(toA, grpc::InsecureChannelCredentials()));
    auto b = Lab::NewStub(grpc::CreateChannel(toB, grpc::InsecureChannelCredentials()));
    // Connect both replicas first so the hedge's latency is the replica's, not a handshake.
    unary(*a, request(ctx.nextCallId()), std::chrono::seconds(2));
    unary(*b, request(ctx.nextCallId()), std::chrono::seconds(2));

    // Replica A is slow for the first call and fast for the second; B is always fast.
    const std::string slowId = ctx.nextCallId(), fastId = ctx.nextCallId();
    const HedgeOutcome slow =
        hedgedCall(ctx, *a, *b, slowId, slowMs, fastMs, std::chrono::milliseconds(delayMs));
    const HedgeOutcome fast =
        hedgedCall(ctx, *a, *b, fastId, fastMs, fastMs, std::chrono::milliseconds(delayMs));

    const std::int64_t slowLatency = slow.result.endNs - slow.result.startNs;
    const std::int64_t fastLatency = fast.result.endNs - fast.result.startNs;
    // Close to hedge delay + the fast replica: at least that, and nearer to it than to replica A alone.
    const std::int64_t want = std::int64_t(delayMs + fastMs) * kMs;
    const std::int64_t limit = want + std::max<std::int64_t>(60 * kMs, (slowMs * kMs - want) / 2);
    const bool held = slow.hedged && slow.result.code == kOk && slow.loser == 0 &&
                      slow.loserCode == kCancelled && slowLatency >= want && slowLatency < limit &&
                      !fast.hedged && fast.result.code == kOk && fast.loser < 0;
    std::ostringstream s;
    s << slowId << ": hedge fired after " << delayMs << " ms, replica B won in " << msText(slowLatency)
      << " (A alone: " << slowMs << " ms; hedge delay + fast replica: " << delayMs + fastMs << " ms), A "
      << (slow.loserCode >= 0 ? name(slow.loserCode) : std::string("not cancelled")) << "; " << fastId
      << ": A answered in " << msText(fastLatency) << ", no hedge";
    if (!held)
        s << " (expected the hedge to win within " << delayMs + fastMs << "-" << limit / kMs
          << " ms with A cancelled, and no hedge for the fast call)";
    ScenarioResult r;
    r.expectationHeld = held;
    r.summary = s.str();
    r.calls = {slow.result, fast.result};
    r.expected = {{slowId, 2, kOk}, {fastId, 1, kOk}};
    return r;
}

} // namespace

void appendGovernanceScenarios(std::vector<Scenario> &out)
{
    out.push_back(
        {"transparent-retry", "Transparent retry: a stream the server never saw",
         "A lab front answers the client's first connection with a server SETTINGS and a GOAWAY whose "
         "last-stream-id is 0 (\"I processed none of your streams\"), then closes it; later connections "
         "reach the lab server, which fails the first arrival with UNAVAILABLE. retryPolicy maxAttempts 2. "
         "C-core retries a stream the server never saw transparently, on the next connection, without "
         "counting it against maxAttempts or bumping grpc-previous-rpc-attempts (the reference: a stream "
         "never written is retried without limit, one beyond a GOAWAY's last-stream-id once). grpc-go also "
         "retries such an unprocessed stream transparently. Look for: a first attempt on its own connection "
         "ended by the GOAWAY, then two attempts on a new connection: the transparent one (no "
         "previous-attempts) and the configured retry (previous-attempts 1); outcome OK although maxAttempts "
         "is only 2.",
         {{"max_attempts", "2", "retryPolicy.maxAttempts (2-5)"},
          {"fail_first_n", "1", "the lab server fails this many arrivals with UNAVAILABLE"}},
         runTransparentRetry});

    out.push_back(
        {"breaker-retry", "Breaker and retry in one client",
         "Application-level retries (maxAttempts 3, backoff 50 ms doubling) through a circuit breaker (opens "
         "at 50% errors once 4 calls were seen, stays open 1 s), against a downstream that is always down. "
         "Every retry asks the breaker first: once it is open the call fails at once instead of backing off, "
         "and later calls fail fast without a request. The seed-001 GuardedRetryingClient; C-core's own "
         "retryPolicy knows no breaker (nor does grpc-go's). Look for: 3 attempts in the first call, 1 in "
         "the second followed by the breaker opening and a retry-suppressed lab event at the same instant, "
         "then fast-fail ticks that never reach the wire.",
         {{"calls", "4", "calls, one after the other"},
          {"max_attempts", "3", "attempts per call"},
          {"backoff_ms", "50", "first backoff, doubling"},
          {"min_requests", "4", "breaker: failures seen before it may open"},
          {"open_ms", "1000", "breaker: how long it stays open"}},
         runBreakerRetry});

    out.push_back(
        {"retry-budget", "A client-side retry budget curbs the storm",
         "N clients at once against a dead downstream, each allowed 3 attempts, sharing one retry budget (as "
         "in Finagle or Envoy): retries may be at most 20% of requests. Every retry checks the budget first; "
         "when it is spent the check fails and the call gives up. C-core's retryThrottling is the built-in "
         "cousin (see retry-throttling), but it is per server name, process-wide and silent; this budget "
         "reports each refusal. Look for: a couple of calls with a retry, every other call a single attempt "
         "with budget-check-failed and retry-suppressed lab events; amplification 1.2x instead of 3x.",
         {{"clients", "10", "concurrent calls"},
          {"max_attempts", "3", "attempts per call"},
          {"budget_percent", "20", "retries allowed per 100 requests"},
          {"min_retries", "0", "retries allowed on top of the percentage"}},
         runRetryBudget});

    out.push_back(
        {"bulkhead", "Bulkhead: a slow method starves a healthy one on a shared pool",
         "The server handles requests with a shared pool of 4 workers. 8 slow Search calls (300 ms each) "
         "arrive at once, then a healthy Call every 20 ms. Without isolation the healthy calls queue behind "
         "the slow ones. Then the same load with per-method semaphores in the client (Search at most 2 at a "
         "time, an acquire timeout of 50 ms): surplus Search calls are rejected without a request and the "
         "healthy calls keep the pool's free workers. Neither C-core nor grpc-go has a per-method bulkhead "
         "(a server's MAX_CONCURRENT_STREAMS limits a connection, not a method). Look for: long healthy "
         "Call lanes in the first half, short ones in the second, and bulkhead-rejected lab events.",
         {{"pool", "4", "server workers shared by both methods"},
          {"slow_calls", "8", "Search calls in the burst"},
          {"slow_ms", "300", "Search service time"},
          {"healthy_calls", "10", "Call calls, one every 20 ms"},
          {"search_permits", "2", "bulkhead: Search calls at once"},
          {"acquire_timeout_ms", "50", "bulkhead: how long a call waits for a permit"}},
         runBulkhead});

    out.push_back(
        {"keepalive-drop", "Keepalive detects a silently dropped connection",
         "keepalive_time 1 s, keepalive_timeout 300 ms, pings allowed without calls (and "
         "GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS 0: C-core otherwise spaces pings without "
         "data by 5 minutes). After one call the connection idles: a PING and its ACK. Then, with a call in "
         "flight, a lab front between client and server silently stops forwarding (a middlebox that dropped "
         "the connection). The next PING gets no ACK and after keepalive_timeout C-core closes the "
         "transport: the call fails UNAVAILABLE instead of waiting for its deadline, and the next call "
         "connects again. C-core's client sends a PING at most once a second whatever keepalive_time says (a "
         "keepalive_time below 1 s gains little); grpc-go raises keepalive time below 10 s to 10 s. Look "
         "for: a PING with its RTT during the idle time, a last PING with no ACK, 300 ms later the client's "
         "RST_STREAM and the connection closed by the client.",
         {{"keepalive_time_ms", "1000", "GRPC_ARG_KEEPALIVE_TIME_MS"},
          {"keepalive_timeout_ms", "300", "GRPC_ARG_KEEPALIVE_TIMEOUT_MS"},
          {"idle_ms", "1200", "idle time with only PINGs before the drop"}},
         runKeepaliveDrop});

    out.push_back(
        {"channel-pool", "Channel pool: MAX_CONCURRENT_STREAMS queues streams on one channel",
         "A server that allows 100 concurrent streams per connection; 300 calls of 200 ms at once, three "
         "times. On one channel C-core holds every stream beyond 100 back in the client until one ends, so "
         "the calls go out in 3 waves (the queueing is in the client: on the wire a stream simply starts "
         "late). Then 3 channels created with equal arguments, as a naive pool would: C-core's global "
         "subchannel pool gives them the same connection, so nothing changes. Then a pool of 3 channels that "
         "each get a distinct channel argument: 3 connections, one wave. grpc-go's ClientConns never share "
         "connections, so there the naive pool works. Look for: staircase starts on one connection twice, "
         "then one block spread over three connections.",
         {{"max_streams", "100", "server's SETTINGS_MAX_CONCURRENT_STREAMS"},
          {"calls", "300", "calls sent at once, per wave"},
          {"pool", "3", "channels in the pool"},
          {"delay_ms", "200", "server time per call"}},
         runChannelPool});

    out.push_back(
        {"health-check", "Health checking: grpc.health.v1 flips SERVING / NOT_SERVING",
         "A lab server with the standard health service; the client watches rpcscope.lab.Lab with "
         "Health/Watch (one long server stream, a message per change) while the server flips to NOT_SERVING "
         "and back. Each change the client sees is a health lab event on the watch's lane. C-core's own "
         "client-side health checking (healthCheckConfig in the service config) uses the same Watch stream "
         "to take a backend out of rotation. Look for: one stream with three messages, health events "
         "SERVING, NOT_SERVING, SERVING.",
         {{"flip_ms", "300", "time between status changes"}}, runHealthCheck});

    out.push_back(
        {"idempotency-key", "Idempotency key: the server de-duplicates a retried call",
         "A non-idempotent call (say, a payment) whose first arrival does its work and then loses its "
         "response (UNAVAILABLE); the retryPolicy retries it. Without a key the retry does the work again: "
         "charged twice. With an idempotency-key metadata entry the server remembers the first result and "
         "answers the retry from its cache. gRPC retries the same way in C-core and grpc-go; only the server "
         "can make them safe. Look for: two calls of 2 attempts each, the second with a deduplicated lab "
         "event at its retry.",
         {{"initial_backoff_ms", "50", "retryPolicy.initialBackoff"}}, runIdempotencyKey});

    out.push_back(
        {"hedging-by-hand", "Hedging by hand (application-level, not gRPC's hedgingPolicy)",
         "C-core 1.51 ignores hedgingPolicy (see hedging-ignored), so this lab client hedges by itself: it "
         "sends the request to replica A, and if no reply came within 80 ms a second copy (same call id, "
         "rpcscope-hedge metadata) to replica B; the first reply wins and the other request is cancelled "
         "(RST_STREAM CANCEL). The second call's replica A is fast, so no hedge is sent. Look for: two "
         "overlapping attempts in the first call, hedge-fired and hedge-cancelled lab events, a latency of "
         "about 80 + 30 ms instead of 400.",
         {{"slow_ms", "400", "replica A's time for the first call"},
          {"fast_ms", "30", "the fast replica's time"},
          {"hedge_delay_ms", "80", "wait before the hedge"}},
         runHedgingByHand});
}

} // namespace rpcscope::lab
