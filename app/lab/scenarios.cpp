// The built-in scenarios. Expected outcomes follow what gRPC C-core 1.51 really does (measured, see
// shared/reference/grpc-core-retry-behaviour.md); where grpc-go behaves differently the explanation says so.

#include <algorithm>
#include "circuitbreaker.h"
#include "clock.h"
#include "labserver.h"
#include "scenario.h"

#include <grpcpp/support/status_code_enum.h>

#include <cmath>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

namespace {

constexpr int kUnavailable = grpc::StatusCode::UNAVAILABLE;

std::string retryConfig(int maxAttempts, int initialBackoffMs, const std::string &method = "")
{
    std::ostringstream s;
    s << R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab")"
      << (method.empty() ? "" : R"(,"method":")" + method + "\"")
      << R"(}],"retryPolicy":{"maxAttempts":)" << maxAttempts << R"(,"initialBackoff":")"
      << initialBackoffMs / 1000.0 << R"(s","maxBackoff":"1s","backoffMultiplier":2,)"
      << R"("retryableStatusCodes":["UNAVAILABLE"]}}]})";
    return s.str();
}

std::string statusName(int code)
{
    static const char *const names[] = {"OK",       "CANCELLED",          "UNKNOWN",          "INVALID_ARGUMENT",
                                        "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",   "PERMISSION_DENIED",
                                        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    return code >= 0 && code < 17 ? names[code] : std::to_string(code);
}

// Checks every call against its expectation and writes the one-line summary.
ScenarioResult finish(const ScenarioContext &ctx, std::vector<CallResult> calls, std::vector<ExpectedCall> expected,
                      std::string extraCheck = {})
{
    ScenarioResult r;
    r.expectationHeld = extraCheck.empty();
    std::ostringstream s;
    for (size_t i = 0; i < calls.size(); ++i) {
        const CallResult &c = calls[i];
        const ExpectedCall &e = expected[i];
        const int arrivals = int(ctx.server->arrivalsFor(c.callId).size());
        const bool held = arrivals == e.attempts && c.code == e.finalStatus;
        r.expectationHeld = r.expectationHeld && held;
        if (i)
            s << "; ";
        s << c.callId << ": " << statusName(c.code) << " after " << arrivals << " attempt" << (arrivals == 1 ? "" : "s")
          << " in " << (c.endNs - c.startNs) / 1'000'000 << " ms";
        if (!held)
            s << " (expected " << statusName(e.finalStatus) << " after " << e.attempts << ")";
    }
    if (!extraCheck.empty())
        s << "; " << extraCheck;
    r.summary = s.str();
    r.calls = std::move(calls);
    r.expected = std::move(expected);
    return r;
}

// Gap between two server arrivals of one call, in ms.
double arrivalGapMs(const ScenarioContext &ctx, const std::string &callId, size_t first)
{
    const auto a = ctx.server->arrivalsFor(callId);
    if (a.size() <= first + 1)
        return -1;
    return double(a[first + 1].tNs - a[first].tNs) / 1e6;
}

CallRequest failing(const std::string &id, int failFirstN, int code = kUnavailable)
{
    CallRequest r;
    r.set_call_id(id);
    r.set_fail_first_n(failFirstN);
    r.set_fail_code(code);
    r.set_payload(std::string(100, 'q'));
    r.set_response_size(100);
    return r;
}

const std::vector<ScenarioParam> kRetryParams = {
    {"max_attempts", "3", "retryPolicy.maxAttempts (C-core clamps it to 5; below 2 is a config error)"},
    {"initial_backoff_ms", "50", "retryPolicy.initialBackoff in milliseconds"},
    {"fail_first_n", "2", "the server fails this many arrivals with UNAVAILABLE"},
};

ScenarioResult runRetry(const ScenarioContext &ctx, const ScenarioParams &p)
{
    const int maxAttempts = p.integer("max_attempts");
    const int failFirst = p.integer("fail_first_n");
    LabClient client(ctx.target, retryConfig(maxAttempts, p.integer("initial_backoff_ms")));
    const auto id = ctx.nextCallId();
    auto result = client.call(failing(id, failFirst), std::chrono::seconds(10));
    const int allowed = std::min(maxAttempts, 5);
    const int attempts = std::min(failFirst + 1, allowed);
    return finish(ctx, {result}, {{id, attempts, failFirst < allowed ? 0 : kUnavailable}});
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
            results[size_t(i)] = client.call(failing(ids[size_t(i)], 1'000'000), std::chrono::seconds(10));
        });
    for (auto &t : threads)
        t.join();

    std::int64_t first = INT64_MAX, last = 0;
    int requests = 0;
    std::vector<ExpectedCall> expected;
    for (const auto &id : ids) {
        const auto arrivals = ctx.server->arrivalsFor(id);
        requests += int(arrivals.size());
        for (const Arrival &a : arrivals) {
            first = std::min(first, a.tNs);
            last = std::max(last, a.tNs);
        }
        // Unthrottled every call makes all its attempts; throttled, the count depends on the shared bucket.
        expected.push_back({id, throttled ? int(arrivals.size()) : maxAttempts, kUnavailable});
    }
    const double amplification = double(requests) / clients;
    const double seconds = std::max(1e-3, double(last - first) / 1e9);
    std::ostringstream extra;
    extra.precision(2);
    extra << std::fixed << clients << " calls made " << requests << " requests: amplification " << amplification
          << "x, downstream load " << int(requests / seconds) << " requests/s over " << int(seconds * 1000)
          << " ms";
    ScenarioResult r = finish(ctx, std::move(results), std::move(expected));
    const bool held = throttled ? amplification < 1.5 : std::abs(amplification - maxAttempts) < 1e-9;
    r.expectationHeld = r.expectationHeld && held;
    // The per-call list is long; the storm is summed up instead.
    r.summary = extra.str() + (held ? "" : throttled ? " (expected below 1.5x)" : " (expected " +
                                                                               std::to_string(maxAttempts) + "x)");
    return r;
}

} // namespace

int ScenarioParams::integer(const std::string &key) const
{
    return std::stoi(text(key));
}

double ScenarioParams::number(const std::string &key) const
{
    return std::stod(text(key));
}

const std::string &ScenarioParams::text(const std::string &key) const
{
    static const std::string empty;
    auto it = m_values.find(key);
    return it == m_values.end() ? empty : it->second;
}

bool Scenario::resolveParams(const std::map<std::string, std::string> &overrides, ScenarioParams *out,
                             std::string *error) const
{
    std::map<std::string, std::string> values;
    for (const ScenarioParam &p : params)
        values[p.key] = p.defaultValue;
    for (const auto &[key, value] : overrides) {
        auto it = values.find(key);
        if (it == values.end()) {
            std::string known;
            for (const ScenarioParam &p : params)
                known += (known.empty() ? "" : ", ") + p.key;
            *error = "scenario " + name + " has no parameter '" + key + "'" +
                     (known.empty() ? std::string(" (it takes none)") : " (it takes: " + known + ")");
            return false;
        }
        // Every parameter is a number; reject text early rather than fail mid-run. Percentages may have a
        // fraction; everything else is a whole number (read with integer()), so "1e3" or "1.5" is refused
        // rather than read as 1. The bounds keep a run within what one machine can do (a storm of 100,000
        // clients runs out of threads) and within what gRPC takes as a duration.
        const bool percent = key.ends_with("_percent");
        const bool millis = key.ends_with("_ms");
        const double most = percent ? 100 : millis ? 600'000 : 5'000;
        const bool digitsOnly = !value.empty() &&
                                std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        std::istringstream in(value);
        double d = 0;
        const bool parsed = percent ? (in >> d) && in.eof() && std::isfinite(d) && d >= 0
                                    : digitsOnly && (in >> d);
        if (!parsed) {
            *error = "parameter " + key + " needs a non-negative " + (percent ? "number" : "whole number") +
                     ", got '" + value + "'";
            return false;
        }
        if (d > most) {
            *error = "parameter " + key + " is at most " + (millis ? "600000 (10 minutes)" : percent ? "100" : "5000") +
                     ", got '" + value + "'";
            return false;
        }
        it->second = value;
    }
    *out = ScenarioParams(std::move(values));
    return true;
}

const std::vector<Scenario> &allScenarios()
{
    static const std::vector<Scenario> scenarios = [] {
    std::vector<Scenario> list = {
        {"retry-basic", "Retry with exponential backoff",
         "retryPolicy maxAttempts 3, initialBackoff 50 ms, multiplier 2, maxBackoff 1 s, UNAVAILABLE retryable. "
         "The server fails the first 2 arrivals. Look for: 3 attempts in one call, the first gap exactly 50 ms "
         "(C-core does not jitter the first retry; grpc-go of the same era used full jitter), the second gap "
         "80-120 ms (100 ms x 0.8-1.2), outcome OK.",
         kRetryParams, runRetry},

        {"no-retry-policy", "No retry policy: one attempt",
         "No service config at all. The server fails the first 2 arrivals: without a retryPolicy gRPC does not "
         "retry, so the call fails with UNAVAILABLE after a single attempt.",
         {{"fail_first_n", "2", "the server fails this many arrivals"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, {});
             const auto id = ctx.nextCallId();
             const int n = p.integer("fail_first_n");
             auto r = client.call(failing(id, n), std::chrono::seconds(5));
             return finish(ctx, {r}, {{id, 1, n > 0 ? kUnavailable : 0}});
         }},

        {"non-retryable", "A status that is not retryable",
         "The retryPolicy lists only UNAVAILABLE; the server fails with INTERNAL. Look for: one attempt, no "
         "backoff, outcome INTERNAL.",
         {},
         [](const ScenarioContext &ctx, const ScenarioParams &) {
             LabClient client(ctx.target, retryConfig(3, 50));
             const auto id = ctx.nextCallId();
             auto r = client.call(failing(id, 1, grpc::StatusCode::INTERNAL), std::chrono::seconds(5));
             return finish(ctx, {r}, {{id, 1, grpc::StatusCode::INTERNAL}});
         }},

        {"max-attempts-4", "maxAttempts 4 against a server that is always down",
         "Every arrival fails with UNAVAILABLE and maxAttempts is 4. Look for: 4 attempts with growing gaps "
         "(50, ~100, ~200 ms, each but the first jittered 0.8-1.2), outcome UNAVAILABLE.",
         {{"max_attempts", "4", "retryPolicy.maxAttempts"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             const int max = p.integer("max_attempts");
             LabClient client(ctx.target, retryConfig(max, 50));
             const auto id = ctx.nextCallId();
             auto r = client.call(failing(id, 1000), std::chrono::seconds(10));
             return finish(ctx, {r}, {{id, std::min(max, 5), kUnavailable}});
         }},

        {"max-attempts-clamped", "maxAttempts 10 is clamped to 5",
         "maxAttempts 10 against a server that is always down. C-core clamps maxAttempts to 5 (it logs "
         "\"clamped retryPolicy.maxAttempts at 5\") and no channel argument raises it; grpc-go also stops at 5 "
         "unless WithMaxCallAttempts is set. Look for: exactly 5 attempts.",
         {{"max_attempts", "10", "retryPolicy.maxAttempts as configured"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, retryConfig(p.integer("max_attempts"), 50));
             const auto id = ctx.nextCallId();
             auto r = client.call(failing(id, 1000), std::chrono::seconds(10));
             return finish(ctx, {r}, {{id, std::min(p.integer("max_attempts"), 5), kUnavailable}});
         }},

        {"committed", "Response headers before the failure commit the call",
         "The server sends its response headers, then fails with UNAVAILABLE. Headers that are not Trailers-Only "
         "commit the call, so gRPC never retries it. Look for: one attempt whose response has headers and "
         "trailers (not Trailers-Only), outcome UNAVAILABLE.",
         {},
         [](const ScenarioContext &ctx, const ScenarioParams &) {
             LabClient client(ctx.target, retryConfig(3, 50));
             const auto id = ctx.nextCallId();
             CallRequest req = failing(id, 2);
             req.set_send_initial_metadata(true);
             auto r = client.call(req, std::chrono::seconds(5));
             return finish(ctx, {r}, {{id, 1, kUnavailable}});
         }},

        {"deadline-cuts-retries", "The deadline cuts the retries short",
         "initialBackoff 100 ms, a server that is always down, and a 250 ms call deadline. One deadline covers "
         "every attempt; C-core does not check it before backing off, the deadline simply cancels the call. "
         "Look for: 2 attempts, then DEADLINE_EXCEEDED at about 250 ms, on the deadline line.",
         {{"deadline_ms", "250", "the call's deadline"}, {"initial_backoff_ms", "100", "retryPolicy.initialBackoff"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, retryConfig(5, p.integer("initial_backoff_ms")));
             const auto id = ctx.nextCallId();
             const int deadline = p.integer("deadline_ms");
             auto r = client.call(failing(id, 1000), std::chrono::milliseconds(deadline));
             const double elapsed = double(r.endNs - r.startNs) / 1e6;
             // The wire's last word is the second attempt's UNAVAILABLE; what the application gets comes
             // later, from no frame at all: the deadline cancelling the backoff. Shown on the call's lane.
             if (ctx.labEvent)
                 ctx.labEvent("client-outcome",
                              statusName(r.code) + " after " +
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
                     if (t >= deadline)
                         break;
                     ++n;
                 }
                 return n;
             };
             const int arrivals = int(ctx.server->arrivalsFor(id).size());
             const int lo = attemptsBefore(1.2), hi = attemptsBefore(0.8);
             return finish(ctx, {r}, {{id, arrivals >= lo && arrivals <= hi ? arrivals : lo,
                                       grpc::StatusCode::DEADLINE_EXCEEDED}},
                           extra);
         }},

        {"pushback", "Server pushback replaces the backoff",
         "The first arrival fails with a grpc-retry-pushback-ms: 300 trailer. A pushback of 0 or more replaces "
         "the computed backoff. Look for: 2 attempts, a gap of about 300 ms instead of 50, outcome OK.",
         {{"pushback_ms", "300", "grpc-retry-pushback-ms on the failure"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, retryConfig(3, 50));
             const auto id = ctx.nextCallId();
             CallRequest req = failing(id, 1);
             req.set_pushback_ms(p.integer("pushback_ms"));
             auto r = client.call(req, std::chrono::seconds(10));
             const double gap = arrivalGapMs(ctx, id, 0);
             std::string extra;
             if (gap >= 0 && std::abs(gap - p.integer("pushback_ms")) > 15)
                 extra = "gap " + std::to_string(int(gap)) + " ms, expected " + p.text("pushback_ms") + " +-15";
             return finish(ctx, {r}, {{id, 2, 0}}, extra);
         }},

        {"pushback-stop", "A negative pushback stops retrying",
         "The first arrival fails with grpc-retry-pushback-ms: -1. A negative (or malformed) pushback tells the "
         "client not to retry. Look for: one attempt, outcome UNAVAILABLE, the pushback marked on it.",
         {},
         [](const ScenarioContext &ctx, const ScenarioParams &) {
             LabClient client(ctx.target, retryConfig(3, 50));
             const auto id = ctx.nextCallId();
             CallRequest req = failing(id, 1);
             req.set_pushback_ms(-1);
             auto r = client.call(req, std::chrono::seconds(5));
             return finish(ctx, {r}, {{id, 1, kUnavailable}});
         }},

        {"retry-buffer", "The 256 KiB retry buffer",
         "Two calls whose first 2 arrivals fail: one with a 100 KiB request, one with 300 KiB. A retry resends "
         "the request, so the client buffers it; over 256 KiB (GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE) the call "
         "commits. Look for: 3 attempts and OK for 100 KiB, a single attempt and UNAVAILABLE for 300 KiB.",
         {{"small_kib", "100", "request size of the first call"}, {"large_kib", "300", "request size of the second"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, retryConfig(3, 50));
             std::vector<CallResult> results;
             std::vector<ExpectedCall> expected;
             for (const char *key : {"small_kib", "large_kib"}) {
                 const auto id = ctx.nextCallId();
                 CallRequest req = failing(id, 2);
                 const int kib = p.integer(key);
                 req.set_payload(std::string(size_t(kib) * 1024, 'b'));
                 results.push_back(client.call(req, std::chrono::seconds(10)));
                 const bool fits = kib * 1024 + 64 <= 256 * 1024;
                 expected.push_back({id, fits ? 3 : 1, fits ? 0 : kUnavailable});
             }
             return finish(ctx, results, expected);
         }},

        {"hedging-ignored", "hedgingPolicy is silently ignored",
         "The service config has hedgingPolicy {maxAttempts 3, hedgingDelay 0.2s} and no retryPolicy; the server "
         "takes 600 ms. C-core 1.51 (like grpc-go) does not implement hedging and ignores it without a word. "
         "Look for: a single attempt that simply takes 600 ms; no hedge at 200 or 400 ms.",
         {{"delay_ms", "600", "server processing time"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target,
                              R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"hedgingPolicy":)"
                              R"({"maxAttempts":3,"hedgingDelay":"0.2s","nonFatalStatusCodes":["UNAVAILABLE"]}}]})");
             const auto id = ctx.nextCallId();
             CallRequest req = failing(id, 0);
             req.set_delay_ms(p.integer("delay_ms"));
             auto r = client.call(req, std::chrono::seconds(10));
             return finish(ctx, {r}, {{id, 1, 0}});
         }},

        {"server-streaming-retry", "Server streaming: retried before the first message, never after",
         "Two server-streaming calls under a retryPolicy, each failing on its first arrival. The first fails "
         "before sending any message (Trailers-Only), so it is retried and then streams all messages. The second "
         "fails after 2 messages: a received message commits the call, so it is not retried. Look for: 2 "
         "attempts then OK; 1 attempt with 2 messages then UNAVAILABLE.",
         {{"messages", "5", "messages the server streams"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, retryConfig(3, 50));
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
             return finish(ctx, results, expected, extra);
         }},

        {"retry-storm", "Retry storm: every client retries a dead downstream",
         "The downstream is down (every arrival fails UNAVAILABLE) and N clients each make one call with "
         "maxAttempts 4. Every call becomes 4 requests: the downstream sees about 4x its normal load exactly when "
         "it is least able to take it. Look for: N lanes of 4 attempts each; the summary gives the amplification "
         "factor and the downstream's requests per second.",
         {{"clients", "20", "concurrent clients, one call each"}, {"max_attempts", "4", "retryPolicy.maxAttempts"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             return runStorm(ctx, p, retryConfig(p.integer("max_attempts"), 50), false);
         }},

        {"retry-throttling", "retryThrottling curbs the storm",
         "The same storm, with retryThrottling {maxTokens 10, tokenRatio 0.1} in the service config. Each failure "
         "costs a token; retries are allowed only while more than half the tokens are left, and the bucket is "
         "shared by every channel to the same server in the process. Look for: a few early calls still retry, "
         "then every call makes a single attempt; amplification close to 1.",
         {{"clients", "20", "concurrent clients, one call each"}, {"max_attempts", "4", "retryPolicy.maxAttempts"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             std::string config = retryConfig(p.integer("max_attempts"), 50);
             config.insert(config.size() - 1, R"(,"retryThrottling":{"maxTokens":10,"tokenRatio":0.1})");
             return runStorm(ctx, p, config, true);
         }},

        {"circuit-breaker", "Circuit breaker: closed, open, half-open",
         "One client calls every 25 ms through a circuit breaker (window 10, at least 5 calls, opens at 50% errors, "
         "stays open 200 ms, then lets one probe through). The downstream is down for the first 400 ms. Look for: "
         "five failures open the breaker; calls while it is open fail fast and never reach the wire (red ticks on "
         "the breaker band); the first probe fails and re-opens it; the second succeeds and closes it.",
         {{"calls", "40", "calls, one every interval"},
          {"interval_ms", "25", "time between calls"},
          {"down_ms", "400", "how long the downstream fails"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             std::vector<std::string> transitions;
             std::mutex mu;
             CircuitBreaker breaker({}, [&](CircuitBreaker::State from, CircuitBreaker::State to) {
                 const std::string t = std::string(CircuitBreaker::name(from)) + " -> " + CircuitBreaker::name(to);
                 {
                     std::lock_guard lk(mu);
                     transitions.push_back(t);
                 }
                 ctx.labEvent("breaker", t, {});
             });
             LabClient client(ctx.target, {});
             const std::int64_t start = steadyNowNs();
             const std::int64_t interval = std::int64_t(p.integer("interval_ms")) * 1'000'000;
             const std::int64_t down = std::int64_t(p.integer("down_ms")) * 1'000'000;
             std::vector<CallResult> results;
             std::vector<ExpectedCall> expected;
             int fastFailed = 0;
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
                 auto r = client.call(failing(id, isDown ? 1 : 0), std::chrono::seconds(5));
                 breaker.record(r.code == 0, steadyNowNs());
                 expected.push_back({id, 1, isDown ? kUnavailable : 0});
                 results.push_back(r);
             }
             const std::vector<std::string> want = {"closed -> open", "open -> half-open", "half-open -> open",
                                                    "open -> half-open", "half-open -> closed"};
             std::string seq;
             for (const auto &t : transitions)
                 seq += (seq.empty() ? "" : ", ") + t;
             ScenarioResult r = finish(ctx, results, expected);
             const bool held = transitions == want && fastFailed > 0;
             r.expectationHeld = r.expectationHeld && held;
             r.summary = std::to_string(results.size()) + " calls sent, " + std::to_string(fastFailed) +
                         " failed fast; breaker: " + seq +
                         (held ? "" : " (expected closed -> open -> half-open -> open -> half-open -> closed, "
                                      "with fast failures)");
             return r;
         }},

        {"app-retry", "Application-level retry with jitter and a deadline budget",
         "No retryPolicy: the client retries by itself, as the seed-001 story recommends. Backoff 50 ms doubling, "
         "with symmetric jitter (x 0.7-1.3); before each wait it checks the remaining deadline (400 ms) and gives "
         "up when the wait would not fit; it never retries a status that is not retryable. Each attempt is a new "
         "call on the wire with the same call id, so no grpc-previous-rpc-attempts header. Look for: attempts with "
         "jittered gaps, then a 'retry suppressed' lab event naming the deadline; a second call failing with "
         "INVALID_ARGUMENT is not retried at all.",
         {{"deadline_ms", "400", "the call's overall budget"}, {"base_ms", "50", "first backoff before jitter"}},
         [](const ScenarioContext &ctx, const ScenarioParams &p) {
             LabClient client(ctx.target, {});
             std::mt19937 rng(std::random_device{}());
             std::uniform_real_distribution<double> jitter(0.7, 1.3);
             const double base = p.integer("base_ms");
             const std::int64_t budget = std::int64_t(p.integer("deadline_ms")) * 1'000'000;
             std::vector<CallResult> results;
             std::vector<ExpectedCall> expected;
             std::string problem;
             for (int code : {kUnavailable, int(grpc::StatusCode::INVALID_ARGUMENT)}) {
                 const auto id = ctx.nextCallId();
                 const std::int64_t start = steadyNowNs();
                 int attempts = 0;
                 CallResult last;
                 std::string why;
                 for (int k = 0;; ++k) {
                     const std::int64_t remaining = budget - (steadyNowNs() - start);
                     last = client.call(failing(id, 1000, code), std::chrono::milliseconds(remaining / 1'000'000));
                     ++attempts;
                     if (last.code == 0)
                         break;
                     if (last.code != kUnavailable) {
                         why = statusName(last.code) + " is not retryable";
                         break;
                     }
                     const double waitMs = base * std::pow(2.0, k) * jitter(rng);
                     const double leftMs = double(budget - (steadyNowNs() - start)) / 1e6;
                     if (waitMs >= leftMs) {
                         std::ostringstream w;
                         w.precision(0);
                         w << std::fixed << "next wait " << waitMs << " ms exceeds the remaining " << leftMs << " ms";
                         why = w.str();
                         break;
                     }
                     std::this_thread::sleep_for(std::chrono::microseconds(std::int64_t(waitMs * 1000)));
                 }
                 if (!why.empty())
                     ctx.labEvent("retry-suppressed", why, id);
                 last.startNs = start;
                 results.push_back(last);
                 expected.push_back({id, attempts, last.code});
                 if (code == kUnavailable && (attempts < 2 || why.find("remaining") == std::string::npos))
                     problem += id + " should retry until the budget runs out ";
                 if (code != kUnavailable && attempts != 1)
                     problem += id + " retried a status that is not retryable ";
             }
             return finish(ctx, results, expected, problem);
         }},
    };
    appendChainScenarios(list);
    appendGovernanceScenarios(list);
    return list;
    }();
    return scenarios;
}

const Scenario *findScenario(const std::string &name)
{
    for (const Scenario &s : allScenarios())
        if (s.name == name)
            return &s;
    return nullptr;
}

} // namespace rpcscope::lab
