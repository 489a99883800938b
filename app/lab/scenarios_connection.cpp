// Seed 001 scenarios about connections: a transparent retry after GOAWAY, keepalive detecting a dropped
// connection, channel pools against MAX_CONCURRENT_STREAMS, and health checking. appendGovernanceScenarios()
// registers them, in the order they are listed; their texts and parameters are in
// resources/scenarios/governance.json. Expected outcomes follow gRPC C-core 1.51
// (shared/reference/grpc-core-retry-behaviour.md).

#include "scenarios_connection.h"

#include "clock.h"
#include "events.h"
#include "faultfront.h"
#include "health.grpc.pb.h"
#include "lab.grpc.pb.h"
#include "labserver.h"
#include "scenariokit.h"
#include "serviceconfig.h"
#include "verdict.h"

#include <algorithm>
#include <condition_variable>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <sstream>
#include <thread>

namespace rpcscope::lab {

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
    calls.push_back(unaryCall(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(p.integer("idle_ms"))); // idle: only PINGs
    // A call the server holds, so the drop hits a call in flight; the deadline is a backstop far beyond what
    // keepalive needs.
    const std::string heldId = ctx.nextCallId();
    const auto backstop = std::chrono::milliseconds(timeMs + timeoutMs + 5000);
    CallResult held;
    std::thread inFlight([&] { held = unaryCall(*stub, labRequest(heldId, 0, 60'000), backstop); });
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
    calls.push_back(unaryCall(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2)));
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

namespace {

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

} // namespace

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
            unaryCall(*stub, labRequest(ctx.nextCallId()), std::chrono::seconds(2));
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

} // namespace rpcscope::lab
