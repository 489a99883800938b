// Seed 001 scenarios (governance): transparent retry, breaker and retry together, a retry budget, bulkheads,
// keepalive, channel pools, health checking, idempotency keys and hedging by hand. Registered by
// allScenarios() (scenariocatalog.cpp); their texts and parameters are in
// resources/scenarios/governance.json. Expected outcomes follow gRPC C-core 1.51
// (shared/reference/grpc-core-retry-behaviour.md).

#include "bulkhead.h"
#include "circuitbreaker.h"
#include "clock.h"
#include "events.h"
#include "faultfront.h"
#include "health.grpc.pb.h"
#include "hedger.h"
#include "lab.grpc.pb.h"
#include "labserver.h"
#include "retrybudget.h"
#include "scenario.h"
#include "scenariokit.h"
#include "serviceconfig.h"
#include "verdict.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <grpcpp/grpcpp.h>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

namespace {

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

// ---------------------------------------------------------------------------------------------------------
// transparent-retry

ScenarioResult runTransparentRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int maxAttempts = std::clamp(p.integer("max_attempts"), 2, 5);
    const int failFirst = p.integer("fail_first_n");
    FaultFront front;
    front.refuseFirstConnections(1);
    std::string problem;
    if (!front.start(std::uint16_t(ctx.server->port()), &problem)) return setupFailed(problem);
    const std::string address = openHop(ctx, "GOAWAY front", front.address(), &problem);
    if (address.empty()) return setupFailed(problem);
    LabClient client(address, ServiceConfig::retry(maxAttempts, 50));
    const std::string id = ctx.nextCallId();
    const CallResult r = client.call(labRequest(id, failFirst), std::chrono::seconds(5));
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
    s << id << ": " << grpcStatusName(r.code) << " in " << msText(r.endNs - r.startNs) << "; "
      << front.refused()
      << " stream refused by GOAWAY (last-stream-id 0) and retried transparently on a new connection; "
      << "the server saw " << arrivals.size() << " attempt" << (arrivals.size() == 1 ? "" : "s")
      << " with grpc-previous-rpc-attempts [" << previous << "] under maxAttempts " << maxAttempts;
    if (!held)
        s << " (expected 1 refused stream, " << grpcStatusName(wantCode) << " after " << wantArrivals
          << " server attempts numbered from 0)";
    Verdict verdict;
    verdict.add(r, {id, wantArrivals, wantCode});
    verdict.require(held);
    return verdict.result(s.str());
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
    BreakerLog log(ctx);
    CircuitBreaker breaker(options, log.listener());
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

    Verdict verdict;
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
            last = client.call(labRequest(id, 1'000'000), std::chrono::seconds(2));
            ++attempts;
            ++requests;
            breaker.record(last.code == kOk, steadyNowNs());
            if (last.code != kUnavailable || attempts >= maxAttempts) break;
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
        verdict.add(last, {id, attempts, kUnavailable});
    }
    const std::vector<std::string> transitions = log.transitions();
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
    verdict.require(held);
    return verdict.result(s.str());
}

// ---------------------------------------------------------------------------------------------------------
// retry-budget

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
                last = client.call(labRequest(id, 1'000'000), std::chrono::seconds(2));
                ++attempts[size_t(i)];
                if (last.code != kUnavailable || k + 1 >= maxAttempts) break;
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
    Verdict verdict;
    for (int i = 0; i < clients; ++i) {
        const int arrivals = int(ctx.server->arrivalsFor(ids[size_t(i)]).size());
        requests += arrivals;
        verdict.add(results[size_t(i)], {ids[size_t(i)], attempts[size_t(i)], kUnavailable});
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
    if (!held) s << " (expected " << clients + allowed << " requests and " << wantRefused << " refusals)";
    verdict.require(held);
    return verdict.result(s.str());
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
    // Per-method bulkheads: Search may hold only some of the server's workers; Call keeps its own.
    Bulkhead searchBulkhead(searchPermits), callBulkhead(std::max(1, p.integer("pool") / 2));
    LabClient client(address, {});
    BulkheadRun run;
    std::mutex mu;
    std::vector<std::thread> threads;
    auto launch = [&](bool slow) {
        const std::string id = ctx.nextCallId();
        threads.emplace_back([&, id, slow] {
            Bulkhead &permit = slow ? searchBulkhead : callBulkhead;
            if (bulkhead && !permit.tryAcquire(acquireTimeout)) {
                ctx.labEvent("bulkhead-rejected",
                             std::string(slow ? "Search" : "Call") + ": no permit within " +
                                 std::to_string(acquireTimeout.count()) + " ms, failed without a request",
                             id);
                std::lock_guard lk(mu);
                ++run.rejected;
                return;
            }
            const CallResult r = client.call(labRequest(id, 0, slow ? slowMs : 2), std::chrono::seconds(5),
                                             {}, /*search=*/slow);
            if (bulkhead) permit.release();
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
    if (address.empty()) return setupFailed(problem);
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
    Verdict verdict;
    verdict.addOk(shared.calls);
    verdict.addOk(isolated.calls);
    verdict.require(held);
    return verdict.result(s.str());
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
    if (!server.start(&problem)) return setupFailed(problem);
    FaultFront front;
    if (!front.start(std::uint16_t(server.port()), &problem)) return setupFailed(problem);
    const std::string address = openHop(ctx, "keepalive", front.address(), &problem);
    if (address.empty()) return setupFailed(problem);

    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, timeMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, timeoutMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    // Without this C-core spaces pings without data by 5 minutes, whatever keepalive_time says.
    args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 0);
    auto stub = Lab::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));

    std::vector<CallResult> calls;
    calls.push_back(unary(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(p.integer("idle_ms"))); // idle: only PINGs
    // A call the server holds, so the drop hits a call in flight; the deadline is a backstop far beyond what
    // keepalive needs.
    const std::string heldId = ctx.nextCallId();
    const auto backstop = std::chrono::milliseconds(timeMs + timeoutMs + 5000);
    CallResult held;
    std::thread inFlight([&] { held = unary(*stub, labRequest(heldId, 0, 60'000), backstop); });
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
    calls.push_back(unary(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2)));
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
    s << "connection blackholed with " << heldId << " in flight: " << grpcStatusName(held.code) << " after "
      << msText(detectNs) << " (a PING at most every " << pingEveryMs << " ms + timeout " << timeoutMs
      << " ms";
    if (noticed)
        s << "; the client closed the dead connection " << msText(*noticed - dropNs) << " after the drop";
    s << "); the next call " << grpcStatusName(calls[2].code) << " on a new connection";
    if (calls[2].code != kOk) s << " (" << calls[2].message << ")";
    if (!ok)
        s << " (expected UNAVAILABLE between " << timeoutMs << " and " << pingEveryMs + timeoutMs + 400
          << " ms after the drop, then OK)";
    Verdict verdict;
    verdict.add(calls[0], {calls[0].callId, 1, kOk});
    verdict.add(calls[1], {heldId, 1, kUnavailable});
    verdict.add(calls[2], {calls[2].callId, 1, kOk});
    verdict.require(ok);
    return verdict.result(s.str());
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
        c->req = labRequest(ctx.nextCallId(), 0, delayMs);
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
    if (address.empty()) return setupFailed(problem);

    // Channels with equal arguments share one subchannel, so one connection, in C-core's global subchannel
    // pool: only a distinct argument per channel makes a pool.
    auto channels = [&](int n, bool distinct) {
        std::vector<std::unique_ptr<Lab::Stub>> stubs;
        for (int i = 0; i < n; ++i) {
            grpc::ChannelArguments args;
            if (distinct) args.SetInt("rpcscope.pool_channel", i);
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
            unary(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2));
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
    Verdict verdict;
    for (const Wave *w : {&one, &same, &many})
        verdict.addOk(w->calls);
    verdict.require(held);
    return verdict.result(s.str());
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
    if (address.empty()) return setupFailed(problem);

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
            if (!seen.empty() && seen.back().first == status) continue;
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
        if (i >= 1 && i - 1 < flips.size()) maxLagNs = std::max(maxLagNs, seen[i].second - flips[i - 1]);
    }
    const std::vector<std::string> want = {"SERVING", "NOT_SERVING", "SERVING"};
    // Each change reaches the watcher before the next one is made.
    const bool held = statuses == want && maxLagNs < flipMs * kMs;
    std::ostringstream s;
    s << "Watch(" << Lab::service_full_name() << ") saw";
    for (const auto &st : statuses)
        s << " " << st;
    s << ", each change at most " << fixed(double(maxLagNs) / kMs, 1)
      << " ms after the server's flip; the watch ended " << grpcStatusName(result.code);
    if (!held) s << " (expected SERVING NOT_SERVING SERVING, each within " << flipMs << " ms)";
    Verdict verdict;
    verdict.add(result, {id, 1, kCancelled});
    verdict.require(held);
    return verdict.result(s.str());
}

// ---------------------------------------------------------------------------------------------------------
// idempotency-key

ScenarioResult runIdempotencyKey(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabServer server;
    std::string problem;
    if (!server.start(&problem)) return setupFailed(problem);
    server.setDeduplicationListener([&](const std::string &callId, const std::string &key) {
        ctx.labEvent("deduplicated",
                     "idempotency-key " + key + ": answered from the cache, side effect not repeated",
                     callId);
    });
    const std::string address = openHop(ctx, "payments", serverAddress(server), &problem);
    if (address.empty()) return setupFailed(problem);
    LabClient client(address, ServiceConfig::retry(3, p.integer("initial_backoff_ms")));
    std::vector<CallResult> results;
    std::vector<int> effects, dedups, arrivals;
    for (bool keyed : {false, true}) {
        const std::string id = ctx.nextCallId();
        CallRequest req = labRequest(id, 1); // the first arrival does the work, then its response is lost
        req.set_fail_message("lab: response lost after the side effect");
        req.set_side_effect(true);
        LabClient::Metadata md;
        if (keyed) md.push_back({"idempotency-key", "pay-" + id});
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
    s << "without a key: " << grpcStatusName(results[0].code) << " after " << arrivals[0]
      << " attempts, side effect applied " << effects[0]
      << "x; with an idempotency-key: " << grpcStatusName(results[1].code) << " after " << arrivals[1]
      << " attempts, side effect applied " << effects[1] << "x, " << dedups[1] << " deduplicated";
    if (!held) s << " (expected OK after 2 attempts each, side effects 2 and 1, 1 deduplicated)";
    Verdict verdict;
    for (const CallResult &c : results)
        verdict.add(c, {c.callId, 2, kOk});
    verdict.require(held);
    return verdict.result(s.str());
}

// ---------------------------------------------------------------------------------------------------------
// hedging-by-hand

ScenarioResult runHedgingByHand(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int slowMs = p.integer("slow_ms"), fastMs = p.integer("fast_ms");
    const int delayMs = p.integer("hedge_delay_ms");
    std::string problem;
    const std::string server = serverAddress(*ctx.server);
    const std::string toA = openHop(ctx, "replica A", server, &problem);
    const std::string toB = toA.empty() ? std::string() : openHop(ctx, "replica B", server, &problem);
    if (toB.empty()) return setupFailed(problem);
    auto a = Lab::NewStub(grpc::CreateChannel(toA, grpc::InsecureChannelCredentials()));
    auto b = Lab::NewStub(grpc::CreateChannel(toB, grpc::InsecureChannelCredentials()));
    // Connect both replicas first so the hedge's latency is the replica's, not a handshake.
    unary(*a, labRequest(ctx.nextCallId()), std::chrono::seconds(2));
    unary(*b, labRequest(ctx.nextCallId()), std::chrono::seconds(2));

    // Replica A is slow for the first call and fast for the second; B is always fast.
    const std::string slowId = ctx.nextCallId(), fastId = ctx.nextCallId();
    Hedger hedger(*a, *b, std::chrono::milliseconds(delayMs), ctx.labEvent);
    const Hedger::Outcome slow = hedger.call(labRequest(slowId, 0, slowMs), labRequest(slowId, 0, fastMs));
    const Hedger::Outcome fast = hedger.call(labRequest(fastId, 0, fastMs), labRequest(fastId, 0, fastMs));

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
      << (slow.loserCode >= 0 ? std::string(grpcStatusName(slow.loserCode)) : std::string("not cancelled"))
      << "; " << fastId << ": A answered in " << msText(fastLatency) << ", no hedge";
    if (!held)
        s << " (expected the hedge to win within " << delayMs + fastMs << "-" << limit / kMs
          << " ms with A cancelled, and no hedge for the fast call)";
    Verdict verdict;
    verdict.add(slow.result, {slowId, 2, kOk});
    verdict.add(fast.result, {fastId, 1, kOk});
    verdict.require(held);
    return verdict.result(s.str());
}

} // namespace

void appendGovernanceScenarios(std::vector<Scenario> &out)
{
    out.push_back({.name = "transparent-retry", .run = runTransparentRetry});
    out.push_back({.name = "breaker-retry", .run = runBreakerRetry});
    out.push_back({.name = "retry-budget", .run = runRetryBudget});
    out.push_back({.name = "bulkhead", .run = runBulkhead});
    out.push_back({.name = "keepalive-drop", .run = runKeepaliveDrop});
    out.push_back({.name = "channel-pool", .run = runChannelPool});
    out.push_back({.name = "health-check", .run = runHealthCheck});
    out.push_back({.name = "idempotency-key", .run = runIdempotencyKey});
    out.push_back({.name = "hedging-by-hand", .run = runHedgingByHand});
}

} // namespace rpcscope::lab
