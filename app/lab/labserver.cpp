#include "labserver.h"

#include "clock.h"
#include "lab.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace rpcscope::lab {

namespace {

// Runs delayed replies without parking a gRPC callback thread in sleep().
class Scheduler
{
public:
    Scheduler() : m_thread([this] { loop(); }) {}
    ~Scheduler()
    {
        {
            std::lock_guard lk(m_mu);
            m_stopping = true;
        }
        m_cv.notify_one();
        m_thread.join();
    }
    void at(std::int64_t tNs, std::function<void()> fn)
    {
        {
            std::lock_guard lk(m_mu);
            m_tasks.emplace(tNs, std::move(fn));
        }
        m_cv.notify_one();
    }

private:
    void loop()
    {
        std::unique_lock lk(m_mu);
        for (;;) {
            if (m_tasks.empty()) {
                if (m_stopping)
                    return;
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

class Reactor : public grpc::ServerUnaryReactor
{
public:
    Reactor(grpc::Status status, bool headersFirst) : m_status(std::move(status)), m_headersFirst(headersFirst) {}
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

} // namespace

struct LabServer::Impl : public Lab::CallbackService
{
    mutable std::mutex mu;
    std::vector<Arrival> log;
    std::map<std::string, int> counts;
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<grpc::Server> server;
    int port = 0;

    grpc::ServerUnaryReactor *Call(grpc::CallbackServerContext *ctx, const CallRequest *req,
                                   CallReply *reply) override
    {
        const std::int64_t t = steadyNowNs();
        Arrival a;
        a.tNs = t;
        a.callId = req->call_id();
        const auto &md = ctx->client_metadata();
        if (auto it = md.find("grpc-previous-rpc-attempts"); it != md.end())
            a.previousAttempts = std::atoi(std::string(it->second.data(), it->second.size()).c_str());
        {
            std::lock_guard lk(mu);
            a.arrival = ++counts[a.callId];
            log.push_back(a);
        }

        grpc::Status status = grpc::Status::OK;
        const bool fail = a.arrival <= req->fail_first_n();
        if (fail) {
            const std::string message = req->fail_message().empty()
                                            ? "lab: failing arrival " + std::to_string(a.arrival)
                                            : req->fail_message();
            status = grpc::Status(grpc::StatusCode(req->fail_code()), message);
            if (req->has_pushback_ms())
                ctx->AddTrailingMetadata("grpc-retry-pushback-ms", std::to_string(req->pushback_ms()));
        } else {
            reply->set_call_id(req->call_id());
            reply->set_arrival(a.arrival);
            reply->set_payload(std::string(std::max(0, req->response_size()), 'r'));
        }
        auto *reactor = new Reactor(status, fail && req->send_initial_metadata());
        if (req->delay_ms() > 0)
            scheduler->at(t + std::int64_t(req->delay_ms()) * 1'000'000, [reactor] { reactor->begin(); });
        else
            reactor->begin();
        return reactor;
    }
};

LabServer::LabServer() : d(std::make_unique<Impl>()) {}

LabServer::~LabServer()
{
    stop();
}

bool LabServer::start(std::string *error)
{
    d->scheduler = std::make_unique<Scheduler>();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &d->port);
    builder.RegisterService(d.get());
    builder.SetMaxReceiveMessageSize(64 << 20);
    d->server = builder.BuildAndStart();
    if (!d->server || d->port == 0) {
        if (error)
            *error = "lab server could not listen on 127.0.0.1";
        d->server.reset();
        return false;
    }
    return true;
}

void LabServer::stop()
{
    if (!d->server)
        return;
    d->scheduler.reset(); // sends every delayed reply now
    d->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    d->server->Wait();
    d->server.reset();
}

int LabServer::port() const
{
    return d->port;
}

std::vector<Arrival> LabServer::arrivals() const
{
    std::lock_guard lk(d->mu);
    return d->log;
}

std::vector<Arrival> LabServer::arrivalsFor(const std::string &callId) const
{
    std::lock_guard lk(d->mu);
    std::vector<Arrival> out;
    for (const Arrival &a : d->log)
        if (a.callId == callId)
            out.push_back(a);
    return out;
}

} // namespace rpcscope::lab
