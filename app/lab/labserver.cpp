#include "labserver.h"

#include "clock.h"
#include "lab.grpc.pb.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace rpcscope::lab {

namespace {

// Runs delayed replies and stream intervals without parking a gRPC callback thread in sleep().
class Scheduler
{
public:
    Scheduler() : m_thread([this] { loop(); }) {}
    ~Scheduler() { stop(); }

    // Runs fn at tNs on the scheduler thread; once stop() has begun, at once on the caller's thread, so a
    // stream that schedules its next write while the server shuts down still reaches Finish.
    void at(std::int64_t tNs, std::function<void()> fn)
    {
        {
            std::lock_guard lk(m_mu);
            if (!m_stopping) {
                m_tasks.emplace(tNs, std::move(fn));
                m_cv.notify_one();
                return;
            }
        }
        fn();
    }

    // Runs every pending task now and joins the thread. The object stays valid for late at() calls.
    void stop()
    {
        {
            std::lock_guard lk(m_mu);
            m_stopping = true;
        }
        m_cv.notify_one();
        if (m_thread.joinable()) m_thread.join();
    }

private:
    void loop()
    {
        std::unique_lock lk(m_mu);
        for (;;) {
            if (m_tasks.empty()) {
                if (m_stopping) return;
                m_cv.wait(lk);
                continue;
            }
            auto it = m_tasks.begin();
            const std::int64_t now = steadyNowNs();
            // On shutdown pending replies are sent at once so the server can drain.
            if (it->first > now && !m_stopping) {
                m_cv.wait_for(lk, std::chrono::nanoseconds(it->first - now));
                continue;
            }
            auto fn = std::move(it->second);
            m_tasks.erase(it);
            lk.unlock();
            fn();
            lk.lock();
        }
    }
    std::mutex m_mu;
    std::condition_variable m_cv;
    std::multimap<std::int64_t, std::function<void()>> m_tasks;
    bool m_stopping = false;
    std::thread m_thread;
};

// The arrival log shared by every method.
class ArrivalLog
{
public:
    Arrival record(std::string callId, std::int64_t tNs, const grpc::CallbackServerContext *ctx)
    {
        Arrival a;
        a.tNs = tNs;
        a.callId = std::move(callId);
        const auto &md = ctx->client_metadata();
        if (auto it = md.find("grpc-previous-rpc-attempts"); it != md.end())
            a.previousAttempts = std::atoi(std::string(it->second.data(), it->second.size()).c_str());
        std::lock_guard lk(m_mu);
        a.arrival = ++m_counts[a.callId];
        m_log.push_back(a);
        return a;
    }
    std::vector<Arrival> all() const
    {
        std::lock_guard lk(m_mu);
        return m_log;
    }
    std::vector<Arrival> forCall(const std::string &callId) const
    {
        std::lock_guard lk(m_mu);
        std::vector<Arrival> out;
        for (const Arrival &a : m_log)
            if (a.callId == callId) out.push_back(a);
        return out;
    }

private:
    mutable std::mutex m_mu;
    std::vector<Arrival> m_log;
    std::map<std::string, int> m_counts;
};

std::string metadataCallId(const grpc::CallbackServerContext *ctx)
{
    const auto &md = ctx->client_metadata();
    auto it = md.find("rpcscope-call-id");
    return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// The status a CallRequest asks for on this arrival: OK, or its failure (with a pushback trailer if asked).
grpc::Status requestedStatus(const CallRequest &req, int arrival, grpc::CallbackServerContext *ctx)
{
    if (arrival > req.fail_first_n()) return grpc::Status::OK;
    const std::string message =
        req.fail_message().empty() ? "lab: failing arrival " + std::to_string(arrival) : req.fail_message();
    if (req.has_pushback_ms())
        ctx->AddTrailingMetadata("grpc-retry-pushback-ms", std::to_string(req.pushback_ms()));
    return grpc::Status(grpc::StatusCode(req.fail_code()), message);
}

class Reactor : public grpc::ServerUnaryReactor
{
public:
    Reactor(grpc::Status status, bool headersFirst)
        : m_status(std::move(status)), m_headersFirst(headersFirst)
    {
    }
    void begin()
    {
        if (m_headersFirst)
            StartSendInitialMetadata();
        else
            Finish(m_status);
    }
    void OnSendInitialMetadataDone(bool) override { Finish(m_status); }
    void OnDone() override { delete this; }

private:
    grpc::Status m_status;
    bool m_headersFirst;
};

// ServerStream: `count` replies, `interval_ms` apart, optionally failing after `fail_after` of them.
class StreamWriter : public grpc::ServerWriteReactor<CallReply>
{
public:
    StreamWriter(Scheduler *scheduler, const StreamRequest &req, const Arrival &arrival)
        : m_scheduler(scheduler), m_count(std::max(0, req.count())),
          m_intervalNs(std::int64_t(std::max(0, req.interval_ms())) * 1'000'000)
    {
        if (req.has_fail_after() && (req.fail_first_n() <= 0 || arrival.arrival <= req.fail_first_n())) {
            m_failAfter = std::max(0, req.fail_after());
            m_failStatus = grpc::Status(grpc::StatusCode(req.fail_code()),
                                        req.fail_message().empty()
                                            ? "lab: failing arrival " + std::to_string(arrival.arrival) +
                                                  " after " + std::to_string(*m_failAfter) + " messages"
                                            : req.fail_message());
        }
        m_reply.set_call_id(req.call_id());
        m_reply.set_arrival(arrival.arrival);
        // One payload for the whole stream: serialising is the only per-message copy.
        m_reply.set_payload(std::string(std::max(0, req.message_size()), 's'));
        next();
    }
    void OnWriteDone(bool ok) override
    {
        if (!ok) {
            Finish(grpc::Status(grpc::StatusCode::CANCELLED, "lab: stream write failed"));
            return;
        }
        ++m_sent;
        if (m_intervalNs > 0 && m_sent < m_count)
            m_scheduler->at(steadyNowNs() + m_intervalNs, [this] { next(); });
        else
            next();
    }
    void OnDone() override { delete this; }

private:
    void next()
    {
        if (m_failAfter && m_sent >= *m_failAfter) {
            Finish(m_failStatus);
            return;
        }
        if (m_sent >= m_count) {
            Finish(grpc::Status::OK);
            return;
        }
        m_reply.set_sequence(m_sent + 1);
        StartWrite(&m_reply);
    }

    Scheduler *m_scheduler;
    int m_count;
    std::int64_t m_intervalNs;
    std::optional<int> m_failAfter;
    grpc::Status m_failStatus;
    CallReply m_reply;
    int m_sent = 0;
};

// ClientStream: counts the requests and their payload bytes, then replies once.
class StreamReader : public grpc::ServerReadReactor<CallRequest>
{
public:
    StreamReader(ArrivalLog *log, grpc::CallbackServerContext *ctx, CallReply *reply)
        : m_log(log), m_ctx(ctx), m_reply(reply), m_t(steadyNowNs()), m_callId(metadataCallId(ctx))
    {
        StartRead(&m_req);
    }
    void OnReadDone(bool ok) override
    {
        if (ok) {
            if (m_messages == 0) first();
            ++m_messages;
            m_bytes += m_req.payload().size();
            StartRead(&m_req);
            return;
        }
        // The client half-closed (or went away; then Finish is a no-op for it).
        if (m_messages == 0) m_arrival = m_log->record(m_callId, m_t, m_ctx);
        if (!m_status.ok()) {
            Finish(m_status);
            return;
        }
        m_reply->set_call_id(m_arrival.callId);
        m_reply->set_arrival(m_arrival.arrival);
        m_reply->set_messages(m_messages);
        m_reply->set_bytes(m_bytes);
        Finish(grpc::Status::OK);
    }
    void OnDone() override { delete this; }

private:
    void first()
    {
        m_arrival = m_log->record(m_callId.empty() ? m_req.call_id() : m_callId, m_t, m_ctx);
        m_status = requestedStatus(m_req, m_arrival.arrival, m_ctx);
    }

    ArrivalLog *m_log;
    grpc::CallbackServerContext *m_ctx;
    CallReply *m_reply;
    std::int64_t m_t;
    std::string m_callId;
    Arrival m_arrival;
    grpc::Status m_status;
    CallRequest m_req;
    int m_messages = 0;
    std::int64_t m_bytes = 0;
};

// Bidi: strictly one reply per request, read and write alternating, so at most one write is in flight.
class Echo : public grpc::ServerBidiReactor<CallRequest, CallReply>
{
public:
    Echo(ArrivalLog *log, grpc::CallbackServerContext *ctx)
        : m_log(log), m_ctx(ctx), m_t(steadyNowNs()), m_callId(metadataCallId(ctx))
    {
        StartRead(&m_req);
    }
    void OnReadDone(bool ok) override
    {
        if (!ok) {
            if (m_replies == 0) m_log->record(m_callId, m_t, m_ctx);
            Finish(grpc::Status::OK);
            return;
        }
        if (m_replies == 0) {
            m_arrival = m_log->record(m_callId.empty() ? m_req.call_id() : m_callId, m_t, m_ctx);
            if (grpc::Status status = requestedStatus(m_req, m_arrival.arrival, m_ctx); !status.ok()) {
                Finish(status);
                return;
            }
        }
        m_reply.set_call_id(m_arrival.callId);
        m_reply.set_arrival(m_arrival.arrival);
        m_reply.set_sequence(++m_replies);
        const size_t size = size_t(std::max(0, m_req.response_size()));
        if (m_reply.payload().size() != size) m_reply.set_payload(std::string(size, 'b'));
        StartWrite(&m_reply);
    }
    void OnWriteDone(bool ok) override
    {
        if (!ok) {
            Finish(grpc::Status(grpc::StatusCode::CANCELLED, "lab: stream write failed"));
            return;
        }
        StartRead(&m_req);
    }
    void OnDone() override { delete this; }

private:
    ArrivalLog *m_log;
    grpc::CallbackServerContext *m_ctx;
    std::int64_t m_t;
    std::string m_callId;
    Arrival m_arrival;
    CallRequest m_req;
    CallReply m_reply;
    int m_replies = 0;
};

} // namespace

struct LabServer::Impl : public Lab::CallbackService
{
    ArrivalLog log;
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
    LabServerOptions options;

    // Side effects and the idempotency-key cache (CallRequest.side_effect).
    mutable std::mutex effectsMu;
    std::map<std::string, int> sideEffects;   // call id -> applied
    std::map<std::string, int> deduplicated;  // call id -> answered from the cache
    std::map<std::string, CallReply> replies; // idempotency key -> the reply of its first arrival
    std::function<void(const std::string &, const std::string &)> dedupListener;

    // The handler pool (options.handlerPool): workers busy, and requests waiting for one, in arrival order.
    std::mutex poolMu;
    int poolBusy = 0;
    std::deque<std::function<void()>> poolQueue;

    // Runs `work` (which must call release() when its worker is free again) on a pool worker.
    void acquire(std::function<void()> work)
    {
        {
            std::lock_guard lk(poolMu);
            if (poolBusy >= options.handlerPool) {
                poolQueue.push_back(std::move(work));
                return;
            }
            ++poolBusy;
        }
        work();
    }
    void release()
    {
        std::function<void()> next;
        {
            std::lock_guard lk(poolMu);
            if (poolQueue.empty()) {
                --poolBusy;
                return;
            }
            next = std::move(poolQueue.front());
            poolQueue.pop_front();
        }
        next();
    }

    // Applies the side effect, or answers from the idempotency cache: true when the reply is the cached one.
    bool sideEffect(grpc::CallbackServerContext *ctx, const CallRequest &req, CallReply *reply)
    {
        const auto &md = ctx->client_metadata();
        auto it = md.find("idempotency-key");
        const std::string key =
            it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
        std::function<void(const std::string &, const std::string &)> listener;
        {
            std::lock_guard lk(effectsMu);
            if (!key.empty()) {
                if (auto hit = replies.find(key); hit != replies.end()) {
                    *reply = hit->second;
                    ++deduplicated[req.call_id()];
                    listener = dedupListener;
                } else {
                    replies[key] = *reply;
                }
            }
            if (!listener) ++sideEffects[req.call_id()];
        }
        if (!listener) return false;
        listener(req.call_id(), key);
        return true;
    }

    grpc::ServerUnaryReactor *unary(grpc::CallbackServerContext *ctx, const CallRequest *req,
                                    CallReply *reply)
    {
        const std::int64_t t = steadyNowNs();
        const Arrival a = log.record(req->call_id(), t, ctx);
        reply->set_call_id(req->call_id());
        reply->set_arrival(a.arrival);
        reply->set_payload(std::string(std::max(0, req->response_size()), 'r'));
        const bool cached = req->side_effect() && sideEffect(ctx, *req, reply);
        const grpc::Status status = cached ? grpc::Status::OK : requestedStatus(*req, a.arrival, ctx);
        if (!status.ok()) reply->Clear();
        auto *reactor = new Reactor(status, !status.ok() && req->send_initial_metadata());
        const std::int64_t delayNs = std::int64_t(std::max(0, req->delay_ms())) * 1'000'000;
        if (options.handlerPool > 0) {
            acquire([this, reactor, delayNs] {
                scheduler->at(steadyNowNs() + delayNs, [this, reactor] {
                    reactor->begin();
                    release();
                });
            });
        } else if (delayNs > 0) {
            scheduler->at(t + delayNs, [reactor] { reactor->begin(); });
        } else {
            reactor->begin();
        }
        return reactor;
    }

    grpc::ServerUnaryReactor *Call(grpc::CallbackServerContext *ctx, const CallRequest *req,
                                   CallReply *reply) override
    {
        return unary(ctx, req, reply);
    }

    grpc::ServerUnaryReactor *Search(grpc::CallbackServerContext *ctx, const CallRequest *req,
                                     CallReply *reply) override
    {
        return unary(ctx, req, reply);
    }

    grpc::ServerWriteReactor<CallReply> *ServerStream(grpc::CallbackServerContext *ctx,
                                                      const StreamRequest *req) override
    {
        const Arrival a = log.record(req->call_id(), steadyNowNs(), ctx);
        return new StreamWriter(scheduler.get(), *req, a);
    }

    grpc::ServerReadReactor<CallRequest> *ClientStream(grpc::CallbackServerContext *ctx,
                                                       CallReply *reply) override
    {
        return new StreamReader(&log, ctx, reply);
    }

    grpc::ServerBidiReactor<CallRequest, CallReply> *Bidi(grpc::CallbackServerContext *ctx) override
    {
        return new Echo(&log, ctx);
    }
};

namespace {
// Server reflection on or off for this server alone. Loading libgrpc++_reflection registers its plugin for
// every ServerBuilder of the process (a static initializer), and a second plugin is refused ("duplicate
// registration"): so this drops whatever the builder was given and adds exactly one when asked to.
class ReflectionOption : public grpc::ServerBuilderOption
{
public:
    explicit ReflectionOption(bool on) : m_on(on) {}
    void UpdateArguments(grpc::ChannelArguments *) override {}
    void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>> *plugins) override
    {
        auto reflection = std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>();
        std::erase_if(*plugins, [&](const auto &p) { return p->name() == reflection->name(); });
        if (m_on) plugins->push_back(std::move(reflection));
    }

private:
    bool m_on;
};
} // namespace

LabServer::LabServer() : d(std::make_unique<Impl>()) {}

LabServer::~LabServer()
{
    stop();
}

void LabServer::setOptions(const LabServerOptions &options)
{
    d->options = options;
}

bool LabServer::start(std::string *error)
{
    d->scheduler = std::make_unique<Scheduler>();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &d->port);
    builder.RegisterService(d.get());
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.SetOption(std::make_unique<ReflectionOption>(d->options.reflection));
    if (d->options.maxConcurrentStreams > 0)
        builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, d->options.maxConcurrentStreams);
    if (d->options.maxMetadataBytes > 0)
        builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, d->options.maxMetadataBytes);
    if (d->options.permitIdlePings) {
        builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
        builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 0);
        builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
    }
    // The default health service is a process-wide switch read while the server is built.
    static std::mutex healthSwitch;
    std::unique_lock healthLock(healthSwitch, std::defer_lock);
    if (d->options.healthService) {
        healthLock.lock();
        grpc::EnableDefaultHealthCheckService(true);
    }
    d->server = builder.BuildAndStart();
    if (d->options.healthService) {
        grpc::EnableDefaultHealthCheckService(false);
        healthLock.unlock();
        if (d->server && d->server->GetHealthCheckService())
            d->server->GetHealthCheckService()->SetServingStatus(Lab::service_full_name(), true);
    }
    if (!d->server || d->port == 0) {
        if (error) *error = "lab server could not listen on 127.0.0.1";
        d->server.reset();
        return false;
    }
    return true;
}

void LabServer::stop()
{
    if (!d->server) return;
    d->scheduler->stop(); // sends every delayed reply and stream message now
    d->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    d->server->Wait();
    d->server.reset();
    // Only now: a stream may schedule its next write until the server has finished every call.
    d->scheduler.reset();
}

int LabServer::port() const
{
    return d->port;
}

std::vector<Arrival> LabServer::arrivals() const
{
    return d->log.all();
}

std::vector<Arrival> LabServer::arrivalsFor(const std::string &callId) const
{
    return d->log.forCall(callId);
}

int LabServer::sideEffectsFor(const std::string &callId) const
{
    std::lock_guard lk(d->effectsMu);
    auto it = d->sideEffects.find(callId);
    return it == d->sideEffects.end() ? 0 : it->second;
}

int LabServer::deduplicatedFor(const std::string &callId) const
{
    std::lock_guard lk(d->effectsMu);
    auto it = d->deduplicated.find(callId);
    return it == d->deduplicated.end() ? 0 : it->second;
}

void LabServer::setDeduplicationListener(std::function<void(const std::string &, const std::string &)> fn)
{
    std::lock_guard lk(d->effectsMu);
    d->dedupListener = std::move(fn);
}

void LabServer::setServing(bool serving)
{
    if (!d->server || !d->server->GetHealthCheckService()) return;
    // One update per service, so a watcher sees one message per change.
    d->server->GetHealthCheckService()->SetServingStatus("", serving);
    d->server->GetHealthCheckService()->SetServingStatus(Lab::service_full_name(), serving);
}

} // namespace rpcscope::lab
