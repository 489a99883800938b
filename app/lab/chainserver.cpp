#include "chainserver.h"

#include "chain.grpc.pb.h"
#include "clock.h"

#include <condition_variable>
#include <cstdio>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <random>
#include <thread>

namespace rpcscope::lab {

namespace {

std::string randomHex(size_t digits)
{
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    std::string out;
    std::lock_guard lk(mu);
    while (out.size() < digits) {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
        out += buf;
    }
    out.resize(digits);
    // An all-zero id is invalid (W3C Trace Context); 2^-64 is not worth a loop.
    if (out.find_first_not_of('0') == std::string::npos) out.back() = '1';
    return out;
}

std::string metadata(const grpc::CallbackServerContext *ctx, const char *key)
{
    const auto &md = ctx->client_metadata();
    auto it = md.find(key);
    return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

std::int64_t nsUntil(std::chrono::system_clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - std::chrono::system_clock::now()).count();
}

std::string msText(std::int64_t ns)
{
    return std::to_string(ns / 1'000'000) + " ms";
}

} // namespace

std::string newTraceparent(const std::string &traceId)
{
    return "00-" + (traceId.empty() ? randomHex(32) : traceId) + "-" + randomHex(16) + "-01";
}

std::string traceIdOf(const std::string &traceparent)
{
    return traceparent.size() >= 35 && traceparent[2] == '-' ? traceparent.substr(3, 32) : std::string();
}

struct ChainServer::Impl final : public Chain::CallbackService
{
    explicit Impl(HopConfig c) : config(std::move(c)) {}

    grpc::ServerUnaryReactor *Hop(grpc::CallbackServerContext *ctx, const HopRequest *request,
                                  HopReply *reply) override
    {
        grpc::ServerUnaryReactor *reactor = ctx->DefaultReactor();
        HopRecord r;
        r.arrivedNs = steadyNowNs();
        r.callId = metadata(ctx, "rpcscope-call-id");
        r.traceparent = metadata(ctx, "traceparent");
        if (ctx->deadline() != std::chrono::system_clock::time_point::max())
            r.budgetNs = nsUntil(ctx->deadline());
        const bool failFast = config.minBudgetMs > 0 && r.budgetNs &&
                              *r.budgetNs < std::int64_t(config.minBudgetMs) * 1'000'000;
        const std::optional<std::int64_t> budget = r.budgetNs;
        size_t index;
        {
            std::lock_guard lk(mu);
            index = records.size();
            records.push_back(std::move(r));
            changedCv.notify_all();
        }
        if (failFast) {
            // Doing the work would only be thrown away: say so at once and spare everyone downstream.
            answer(index, reactor,
                   grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                config.name + ": " + msText(*budget) + " left, below the " +
                                    std::to_string(config.minBudgetMs) + " ms it needs: failing fast"),
                   true);
            return reactor;
        }
        std::lock_guard lk(mu);
        workers.emplace_back(
            [this, ctx, request, reply, reactor, index] { work(ctx, request, reply, reactor, index); });
        return reactor;
    }

    void work(grpc::CallbackServerContext *ctx, const HopRequest *request, HopReply *reply,
              grpc::ServerUnaryReactor *reactor, size_t index)
    {
        {
            // The hop's own work; stop() cuts it short so shutdown never waits for it.
            std::unique_lock lk(mu);
            stopCv.wait_for(lk, std::chrono::milliseconds(config.workMs), [this] { return stopping; });
        }
        reply->add_served_by(config.name);
        if (config.next.empty()) {
            answer(index, reactor, grpc::Status::OK, false);
            return;
        }

        std::unique_ptr<grpc::ClientContext> child;
        std::optional<std::int64_t> nextBudget;
        switch (config.passing) {
        case DeadlinePassing::Propagate:
            child = grpc::ClientContext::FromServerContext(*ctx);
            if (ctx->deadline() != std::chrono::system_clock::time_point::max())
                nextBudget = nsUntil(ctx->deadline());
            break;
        case DeadlinePassing::Reset:
            child = std::make_unique<grpc::ClientContext>();
            child->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(config.resetMs));
            nextBudget = std::int64_t(config.resetMs) * 1'000'000;
            break;
        case DeadlinePassing::Drop:
            child = std::make_unique<grpc::ClientContext>();
            break;
        }
        const std::string callId = metadata(ctx, "rpcscope-call-id");
        const std::string traceparent = newTraceparent(traceIdOf(metadata(ctx, "traceparent")));
        // Each hop's call gets an id of its own ("<first call>>C"): one call per hop on the timeline.
        child->AddMetadata("rpcscope-call-id", callId.substr(0, callId.find('>')) + ">" + config.nextName);
        child->AddMetadata("traceparent", traceparent);
        {
            std::lock_guard lk(mu);
            records[index].calledNext = true;
            records[index].nextBudgetNs = nextBudget;
            records[index].sentTraceparent = traceparent;
        }
        HopRequest next;
        next.set_origin(request->origin());
        HopReply downstream;
        // The downstream's status goes back up unchanged, so the chain's first caller sees why it failed.
        const grpc::Status status = stub->Hop(child.get(), next, &downstream);
        if (status.ok())
            for (const std::string &hop : downstream.served_by())
                reply->add_served_by(hop);
        answer(index, reactor, status, false);
    }

    void answer(size_t index, grpc::ServerUnaryReactor *reactor, const grpc::Status &status, bool failedFast)
    {
        {
            std::lock_guard lk(mu);
            HopRecord &r = records[index];
            r.failedFast = failedFast;
            r.code = status.error_code();
            r.message = status.error_message();
            r.doneNs = steadyNowNs();
            changedCv.notify_all();
        }
        // A waiter may now stop the server; its shutdown waits for this Finish.
        reactor->Finish(status);
    }

    HopConfig config;
    std::unique_ptr<grpc::Server> server;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<Chain::Stub> stub;
    int port = 0;

    mutable std::mutex mu;
    std::condition_variable stopCv;
    mutable std::condition_variable changedCv;
    std::vector<HopRecord> records;
    std::vector<std::thread> workers;
    bool stopping = false;
};

ChainServer::ChainServer(HopConfig config) : d(std::make_unique<Impl>(std::move(config))) {}

ChainServer::~ChainServer()
{
    stop();
}

bool ChainServer::start(std::string *error)
{
    if (!d->config.next.empty()) {
        d->channel = grpc::CreateChannel(d->config.next, grpc::InsecureChannelCredentials());
        d->stub = Chain::NewStub(d->channel);
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &d->port);
    builder.RegisterService(d.get());
    d->server = builder.BuildAndStart();
    if (!d->server || d->port == 0) {
        *error = "chain hop " + d->config.name + ": could not listen on 127.0.0.1";
        d->server.reset();
        return false;
    }
    return true;
}

void ChainServer::stop()
{
    if (!d->server) return;
    {
        std::lock_guard lk(d->mu);
        d->stopping = true;
    }
    d->stopCv.notify_all();
    // Workers may still be waiting on the next hop; a bounded shutdown cancels what is left.
    d->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    std::vector<std::thread> workers;
    {
        std::lock_guard lk(d->mu);
        workers.swap(d->workers);
    }
    for (std::thread &t : workers)
        t.join();
    d->server->Wait();
    d->server.reset();
}

int ChainServer::port() const
{
    return d->port;
}

std::string ChainServer::address() const
{
    return "127.0.0.1:" + std::to_string(d->port);
}

const HopConfig &ChainServer::config() const
{
    return d->config;
}

std::vector<HopRecord> ChainServer::records() const
{
    std::lock_guard lk(d->mu);
    return d->records;
}

std::optional<HopRecord> ChainServer::recordFor(const std::string &callId) const
{
    std::lock_guard lk(d->mu);
    for (const HopRecord &r : d->records)
        if (r.callId == callId) return r;
    return std::nullopt;
}

bool ChainServer::waitFor(const std::string &callId, bool answered, std::chrono::milliseconds timeout) const
{
    std::unique_lock lk(d->mu);
    return d->changedCv.wait_for(lk, timeout, [&] {
        for (const HopRecord &r : d->records)
            if (r.callId == callId && (!answered || r.doneNs != 0)) return true;
        return false;
    });
}

CallResult callChain(const std::string &target, const std::string &callId,
                     std::optional<std::chrono::milliseconds> timeout, std::string *traceparent)
{
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    auto stub = Chain::NewStub(channel);
    grpc::ClientContext ctx;
    const std::string tp = newTraceparent();
    if (traceparent) *traceparent = tp;
    ctx.AddMetadata("rpcscope-call-id", callId);
    ctx.AddMetadata("traceparent", tp);
    if (timeout) ctx.set_deadline(std::chrono::system_clock::now() + *timeout);
    HopRequest request;
    request.set_origin("client");
    HopReply reply;
    CallResult r;
    r.callId = callId;
    r.startNs = steadyNowNs();
    const grpc::Status status = stub->Hop(&ctx, request, &reply);
    r.endNs = steadyNowNs();
    r.code = status.error_code();
    r.message = status.error_message();
    return r;
}

} // namespace rpcscope::lab
