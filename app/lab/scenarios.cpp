// The seed-000 scenarios: what gRPC's own retries do. Expected outcomes follow what gRPC C-core 1.51 really
// does (measured, see shared/reference/grpc-core-retry-behaviour.md); where grpc-go behaves differently the
// explanation says so. Their texts and parameters are in resources/scenarios/retry.json.

#include "clock.h"
#include "events.h"
#include "labserver.h"
#include "scenario.h"
#include "scenariokit.h"
#include "serviceconfig.h"
#include "verdict.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

namespace {

// Gap between two server arrivals of one call, in ms.
double arrivalGapMs(const ScenarioContext &ctx, const std::string &callId, size_t first)
{
    const auto a = ctx.server->arrivalsFor(callId);
    if (a.size() <= first + 1) return -1;
    return double(a[first + 1].tNs - a[first].tNs) / 1e6;
}

ScenarioResult runRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int maxAttempts = p.integer("max_attempts");
    const int failFirst = p.integer("fail_first_n");
    LabClient client(ctx.target, ServiceConfig::retry(maxAttempts, p.integer("initial_backoff_ms")));
    const auto id = ctx.nextCallId();
    auto result = client.call(labRequest(id, failFirst), std::chrono::seconds(10));
    const int allowed = std::min(maxAttempts, 5);
    const int attempts = std::min(failFirst + 1, allowed);
    return verdictByArrivals(ctx, {result}, {{id, attempts, failFirst < allowed ? 0 : kUnavailable}});
}

// N clients, each with its own channel, make one call at once against a downstream that always fails.
ScenarioResult runStorm(const ScenarioContext &ctx, const ScenarioParams &p, const std::string &config,
                        bool throttled)
{
    const int clients = std::max(1, p.integer("clients"));
    const int maxAttempts = std::min(p.integer("max_attempts"), 5);
    std::vector<std::string> ids;
    for (int i = 0; i < clients; ++i)
        ids.push_back(ctx.nextCallId());
    std::vector<CallResult> results(static_cast<size_t>(clients));
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
            LabClient client(ctx.target, config);
            results[size_t(i)] = client.call(labRequest(ids[size_t(i)], 1'000'000), std::chrono::seconds(10));
        });
    for (auto &t : threads)
        t.join();

    std::int64_t first = INT64_MAX, last = 0;
    int requests = 0;
    Verdict verdict;
    for (int i = 0; i < clients; ++i) {
        const std::string &id = ids[size_t(i)];
        const auto arrivals = ctx.server->arrivalsFor(id);
        requests += int(arrivals.size());
        for (const Arrival &a : arrivals) {
            first = std::min(first, a.tNs);
            last = std::max(last, a.tNs);
        }
        // Unthrottled every call makes all its attempts; throttled, the count depends on the shared bucket.
        verdict.add(results[size_t(i)], {id, throttled ? int(arrivals.size()) : maxAttempts, kUnavailable});
    }
    const double amplification = double(requests) / clients;
    const double seconds = std::max(1e-3, double(last - first) / 1e9);
    std::ostringstream extra;
    extra.precision(2);
    extra << std::fixed << clients << " calls made " << requests << " requests: amplification "
          << amplification << "x, downstream load " << int(requests / seconds) << " requests/s over "
          << int(seconds * 1000) << " ms";
    // The per-call list is long; the storm is summed up instead.
    verdict.arrivals(*ctx.server);
    const bool held = throttled ? amplification < 1.5 : std::abs(amplification - maxAttempts) < 1e-9;
    verdict.require(held);
    return verdict.result(extra.str() + (held        ? ""
                                         : throttled ? " (expected below 1.5x)"
                                                     : " (expected " + std::to_string(maxAttempts) + "x)"));
}

ScenarioResult runNoRetryPolicy(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, {});
    const auto id = ctx.nextCallId();
    const int n = p.integer("fail_first_n");
    auto r = client.call(labRequest(id, n), std::chrono::seconds(5));
    return verdictByArrivals(ctx, {r}, {{id, 1, n > 0 ? kUnavailable : 0}});
}

ScenarioResult runNonRetryable(const ScenarioContext &ctx, const ScenarioParams &)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    const auto id = ctx.nextCallId();
    auto r = client.call(labRequest(id, 1, 0, grpc::StatusCode::INTERNAL), std::chrono::seconds(5));
    return verdictByArrivals(ctx, {r}, {{id, 1, grpc::StatusCode::INTERNAL}});
}

ScenarioResult runMaxAttempts4(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int max = p.integer("max_attempts");
    LabClient client(ctx.target, ServiceConfig::retry(max, 50));
    const auto id = ctx.nextCallId();
    auto r = client.call(labRequest(id, 1000), std::chrono::seconds(10));
    return verdictByArrivals(ctx, {r}, {{id, std::min(max, 5), kUnavailable}});
}

ScenarioResult runMaxAttemptsClamped(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::retry(p.integer("max_attempts"), 50));
    const auto id = ctx.nextCallId();
    auto r = client.call(labRequest(id, 1000), std::chrono::seconds(10));
    return verdictByArrivals(ctx, {r}, {{id, std::min(p.integer("max_attempts"), 5), kUnavailable}});
}

ScenarioResult runCommitted(const ScenarioContext &ctx, const ScenarioParams &)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    const auto id = ctx.nextCallId();
    CallRequest req = labRequest(id, 2);
    req.set_send_initial_metadata(true);
    auto r = client.call(req, std::chrono::seconds(5));
    return verdictByArrivals(ctx, {r}, {{id, 1, kUnavailable}});
}

ScenarioResult runDeadlineCutsRetries(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::retry(5, p.integer("initial_backoff_ms")));
    const auto id = ctx.nextCallId();
    const int deadline = p.integer("deadline_ms");
    auto r = client.call(labRequest(id, 1000), std::chrono::milliseconds(deadline));
    const double elapsed = double(r.endNs - r.startNs) / 1e6;
    // The wire's last word is the second attempt's UNAVAILABLE; what the application gets comes
    // later, from no frame at all: the deadline cancelling the backoff. Shown on the call's lane.
    if (ctx.labEvent)
        ctx.labEvent("client-outcome",
                     std::string(grpcStatusName(r.code)) + " after " +
                         std::to_string(int(std::lround(elapsed))) + " ms",
                     id);
    std::string extra;
    if (std::abs(elapsed - deadline) > 20)
        extra = "ended at " + std::to_string(int(elapsed)) + " ms, expected " + std::to_string(deadline) +
                " ms +-20";
    // Attempts start at 0, b, then every min(b * 2^(k-1), 1 s) x [0.8, 1.2] later; those starting
    // before the deadline reach the server. With the defaults: 0 and 100 ms, the next at 260-340 ms.
    const int b = p.integer("initial_backoff_ms");
    auto attemptsBefore = [&](double factor) {
        double t = 0;
        int n = 1;
        for (int k = 1; n < 5; ++k) {
            // Retry k waits b exactly for k = 1, then min(b * 2^(k-1), 1 s) times the jitter.
            t += k == 1 ? b : std::min(b * std::pow(2.0, k - 1), 1000.0) * factor;
            if (t >= deadline) break;
            ++n;
        }
        return n;
    };
    const int arrivals = int(ctx.server->arrivalsFor(id).size());
    const int lo = attemptsBefore(1.2), hi = attemptsBefore(0.8);
    return verdictByArrivals(
        ctx, {r},
        {{id, arrivals >= lo && arrivals <= hi ? arrivals : lo, grpc::StatusCode::DEADLINE_EXCEEDED}}, extra);
}

ScenarioResult runPushback(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    const auto id = ctx.nextCallId();
    CallRequest req = labRequest(id, 1);
    req.set_pushback_ms(p.integer("pushback_ms"));
    auto r = client.call(req, std::chrono::seconds(10));
    const double gap = arrivalGapMs(ctx, id, 0);
    std::string extra;
    if (gap >= 0 && std::abs(gap - p.integer("pushback_ms")) > 15)
        extra = "gap " + std::to_string(int(gap)) + " ms, expected " + p.text("pushback_ms") + " +-15";
    return verdictByArrivals(ctx, {r}, {{id, 2, 0}}, extra);
}

ScenarioResult runPushbackStop(const ScenarioContext &ctx, const ScenarioParams &)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    const auto id = ctx.nextCallId();
    CallRequest req = labRequest(id, 1);
    req.set_pushback_ms(-1);
    auto r = client.call(req, std::chrono::seconds(5));
    return verdictByArrivals(ctx, {r}, {{id, 1, kUnavailable}});
}

ScenarioResult runRetryBuffer(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    std::vector<CallResult> results;
    std::vector<ExpectedCall> expected;
    for (const char *key : {"small_kib", "large_kib"}) {
        const auto id = ctx.nextCallId();
        CallRequest req = labRequest(id, 2);
        const int kib = p.integer(key);
        req.set_payload(std::string(size_t(kib) * 1024, 'b'));
        results.push_back(client.call(req, std::chrono::seconds(10)));
        const bool fits = kib * 1024 + 64 <= 256 * 1024;
        expected.push_back({id, fits ? 3 : 1, fits ? 0 : kUnavailable});
    }
    return verdictByArrivals(ctx, results, expected);
}

ScenarioResult runHedgingIgnored(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::hedging(3, 200));
    const auto id = ctx.nextCallId();
    CallRequest req = labRequest(id, 0);
    req.set_delay_ms(p.integer("delay_ms"));
    auto r = client.call(req, std::chrono::seconds(10));
    return verdictByArrivals(ctx, {r}, {{id, 1, 0}});
}

ScenarioResult runServerStreamingRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, ServiceConfig::retry(3, 50));
    std::vector<CallResult> results;
    std::vector<ExpectedCall> expected;
    std::string extra;
    for (int failAfter : {0, 2}) {
        StreamRequest req;
        req.set_call_id(ctx.nextCallId());
        req.set_count(p.integer("messages"));
        req.set_message_size(100);
        req.set_fail_after(failAfter);
        req.set_fail_code(kUnavailable);
        req.set_fail_first_n(1);
        const StreamResult s = client.serverStream(req, std::chrono::seconds(10));
        results.push_back({s.callId, s.code, s.message, s.startNs, s.endNs});
        expected.push_back({req.call_id(), failAfter == 0 ? 2 : 1, failAfter == 0 ? 0 : kUnavailable});
        const int wantMessages = failAfter == 0 ? req.count() : failAfter;
        if (s.messages != wantMessages)
            extra += req.call_id() + " received " + std::to_string(s.messages) + " messages, expected " +
                     std::to_string(wantMessages) + " ";
    }
    return verdictByArrivals(ctx, results, expected, extra);
}

ScenarioResult runRetryStorm(const ScenarioContext &ctx, const ScenarioParams &p)
{
    return runStorm(ctx, p, ServiceConfig::retry(p.integer("max_attempts"), 50), false);
}

ScenarioResult runRetryThrottling(const ScenarioContext &ctx, const ScenarioParams &p)
{
    return runStorm(ctx, p, ServiceConfig::throttledRetry(p.integer("max_attempts"), 50, 10, 0.1), true);
}

ScenarioResult runCircuitBreaker(const ScenarioContext &ctx, const ScenarioParams &p)
{
    BreakerLog log(ctx);
    CircuitBreaker breaker({}, log.listener());
    LabClient client(ctx.target, {});
    const std::int64_t start = steadyNowNs();
    const std::int64_t interval = std::int64_t(p.integer("interval_ms")) * 1'000'000;
    const std::int64_t down = std::int64_t(p.integer("down_ms")) * 1'000'000;
    Verdict verdict;
    int sent = 0, fastFailed = 0;
    for (int i = 0; i < p.integer("calls"); ++i) {
        const std::int64_t due = start + i * interval;
        while (steadyNowNs() < due)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        const auto id = ctx.nextCallId();
        const std::int64_t now = steadyNowNs();
        if (!breaker.allow(now)) {
            ++fastFailed;
            ctx.labEvent("fast-fail", "breaker open: failed without a request", id);
            continue;
        }
        const bool isDown = now - start < down;
        auto r = client.call(labRequest(id, isDown ? 1 : 0), std::chrono::seconds(5));
        breaker.record(r.code == 0, steadyNowNs());
        verdict.add(r, {id, 1, isDown ? kUnavailable : 0});
        ++sent;
    }
    const std::vector<std::string> transitions = log.transitions();
    const std::vector<std::string> want = {"closed -> open", "open -> half-open", "half-open -> open",
                                           "open -> half-open", "half-open -> closed"};
    std::string seq;
    for (const auto &t : transitions)
        seq += (seq.empty() ? "" : ", ") + t;
    verdict.arrivals(*ctx.server);
    const bool held = transitions == want && fastFailed > 0;
    verdict.require(held);
    return verdict.result(std::to_string(sent) + " calls sent, " + std::to_string(fastFailed) +
                          " failed fast; breaker: " + seq +
                          (held ? ""
                                : " (expected closed -> open -> half-open -> open -> half-open -> closed, "
                                  "with fast failures)"));
}

ScenarioResult runAppRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    LabClient client(ctx.target, {});
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<double> jitter(0.7, 1.3);
    const double base = p.integer("base_ms");
    const std::int64_t budget = std::int64_t(p.integer("deadline_ms")) * 1'000'000;
    std::vector<CallResult> results;
    std::vector<ExpectedCall> expected;
    std::string problem;
    // An attempt needs a few milliseconds to reach the server; with less left the app gives up, as apps do.
    constexpr std::int64_t kShortestAttemptNs = 5'000'000;
    for (int code : {kUnavailable, int(grpc::StatusCode::INVALID_ARGUMENT)}) {
        const auto id = ctx.nextCallId();
        const std::int64_t start = steadyNowNs();
        int attempts = 0;
        CallResult last;
        std::string why;
        bool budgetSpent = false; // the loop ended because the budget did
        for (int k = 0;; ++k) {
            const std::int64_t remaining = budget - (steadyNowNs() - start);
            if (attempts > 0 && remaining < kShortestAttemptNs) {
                why = "only " + msText(remaining) + " left, too short for an attempt";
                budgetSpent = true;
                break;
            }
            last =
                client.call(labRequest(id, 1000, 0, code), std::chrono::milliseconds(remaining / 1'000'000));
            ++attempts;
            if (last.code == 0) break;
            if (last.code == kDeadlineExceeded) {
                why = "the budget ran out during attempt " + std::to_string(attempts);
                budgetSpent = true;
                break;
            }
            if (last.code != kUnavailable) {
                why = std::string(grpcStatusName(last.code)) + " is not retryable";
                break;
            }
            const double waitMs = base * std::pow(2.0, k) * jitter(rng);
            const double left = double(budget - (steadyNowNs() - start)) / 1e6;
            if (waitMs >= left) {
                why = "next wait " + fixed(waitMs) + " ms exceeds the remaining " + fixed(left) + " ms";
                budgetSpent = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(std::int64_t(waitMs * 1000)));
        }
        if (!why.empty()) ctx.labEvent("retry-suppressed", why, id);
        last.startNs = start;
        // An attempt cut by the budget may end before its headers reach the server: it is then not an
        // arrival.
        int onTheWire = attempts;
        if (last.code == kDeadlineExceeded && int(ctx.server->arrivalsFor(id).size()) == attempts - 1)
            onTheWire = attempts - 1;
        results.push_back(last);
        expected.push_back({id, onTheWire, last.code});
        if (code == kUnavailable && (attempts < 2 || !budgetSpent))
            problem += id + " should retry until the budget runs out ";
        if (code != kUnavailable && attempts != 1) problem += id + " retried a status that is not retryable ";
    }
    return verdictByArrivals(ctx, results, expected, problem);
}

} // namespace

void appendRetryScenarios(std::vector<Scenario> &out)
{
    out.push_back({.name = "retry-basic", .run = runRetry});
    out.push_back({.name = "no-retry-policy", .run = runNoRetryPolicy});
    out.push_back({.name = "non-retryable", .run = runNonRetryable});
    out.push_back({.name = "max-attempts-4", .run = runMaxAttempts4});
    out.push_back({.name = "max-attempts-clamped", .run = runMaxAttemptsClamped});
    out.push_back({.name = "committed", .run = runCommitted});
    out.push_back({.name = "deadline-cuts-retries", .run = runDeadlineCutsRetries});
    out.push_back({.name = "pushback", .run = runPushback});
    out.push_back({.name = "pushback-stop", .run = runPushbackStop});
    out.push_back({.name = "retry-buffer", .run = runRetryBuffer});
    out.push_back({.name = "hedging-ignored", .run = runHedgingIgnored});
    out.push_back({.name = "server-streaming-retry", .run = runServerStreamingRetry});
    out.push_back({.name = "retry-storm", .run = runRetryStorm});
    out.push_back({.name = "retry-throttling", .run = runRetryThrottling});
    out.push_back({.name = "circuit-breaker", .run = runCircuitBreaker});
    out.push_back({.name = "app-retry", .run = runAppRetry});
}

} // namespace rpcscope::lab
