// Seed 001 scenarios (governance): breaker and retry together, a retry budget, bulkheads, idempotency keys
// and hedging by hand; with those of scenarios_connection.cpp (transparent retry, keepalive, channel pools,
// health checking) they are registered here, in the order they are listed. Registered by allScenarios()
// (scenariocatalog.cpp); their texts and parameters are in resources/scenarios/governance.json. Expected
// outcomes follow gRPC C-core 1.51 (shared/reference/grpc-core-retry-behaviour.md).

#include "bulkhead.h"
#include "circuitbreaker.h"
#include "clock.h"
#include "events.h"
#include "hedger.h"
#include "lab.grpc.pb.h"
#include "labserver.h"
#include "retrybudget.h"
#include "scenario.h"
#include "scenariokit.h"
#include "scenarios_connection.h"
#include "serviceconfig.h"
#include "verdict.h"

#include <algorithm>
#include <cmath>
#include <grpcpp/grpcpp.h>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

namespace {

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
                    ctx.labEvent("retry-suppressed", why, id); // "retry budget spent: ..."
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
    // One phase alone is one side of the lab's built-in comparison of the two (labcomparison.h).
    const int phase = p.integer("phase");
    const bool runShared = phase != 2, runIsolated = phase != 1;
    const BulkheadRun shared = runShared ? runBulkheadPhase(ctx, address, p, false) : BulkheadRun{};
    const BulkheadRun isolated = runIsolated ? runBulkheadPhase(ctx, address, p, true) : BulkheadRun{};
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
    const bool sharedHeld = !runShared || (sharedP50 >= slowMs * 0.5 && shared.rejected == 0);
    const bool isolatedHeld = !runIsolated || (bulkP99 < slowMs * 0.25 && rejectionsHeld &&
                                               int(isolated.healthyMs.size()) == p.integer("healthy_calls"));
    const bool held = sharedHeld && isolatedHeld;
    std::ostringstream s;
    s << "healthy Call p50/p99:";
    if (runShared) s << " shared pool " << fixed(sharedP50) << "/" << fixed(sharedP99) << " ms";
    if (runShared && runIsolated) s << ",";
    if (runIsolated)
        s << " with bulkhead " << fixed(bulkP50, 1) << "/" << fixed(bulkP99, 1) << " ms; "
          << isolated.rejected << " Search calls bulkhead-rejected (" << isolated.slowSent << " sent)";
    if (!held) {
        s << " (expected";
        if (runShared) s << " the shared p50 at least " << slowMs / 2 << " ms";
        if (runShared && runIsolated) s << ",";
        if (runIsolated)
            s << " the bulkhead p99 below " << slowMs / 4 << " ms, and " << wantRejected << " rejections";
        s << ")";
    }
    Verdict verdict;
    verdict.addOk(shared.calls);
    verdict.addOk(isolated.calls);
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
    unaryCall(*a, labRequest(ctx.nextCallId()), std::chrono::seconds(2));
    unaryCall(*b, labRequest(ctx.nextCallId()), std::chrono::seconds(2));

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
