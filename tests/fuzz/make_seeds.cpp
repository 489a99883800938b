// rpcscope-fuzz-seeds OUTDIR: writes the seed corpus of fuzz_h2decoder from real grpc++ traffic.
//
// The lab's grpc++ client talks to the lab server through rpcscope's capture Relay (LabSession), as in the
// app. The Relay hands out decoded events only, so a small TCP tap sits in front of it and records every
// read, with its direction, in the order the reads happened:
//
//     LabClient --> tap (records) --> Relay (decodes, as in the app) --> LabServer
//
// Each recorded connection becomes one input in the format of h2input.h. Before writing it, the recording
// is decoded once with ConnectionDecoder: real traffic that does not decode cleanly is an error here.
// Regenerate with:  cmake --build build --target rpcscope-fuzz-seeds &&
//                   build/tests/fuzz/rpcscope-fuzz-seeds tests/fuzz/corpus

#include "connectiondecoder.h"
#include "h2input.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labsession.h"
#include "scenario.h"
#include "testnet.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <grpcpp/support/status_code_enum.h>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace std::chrono_literals;

namespace {

struct Chunk
{
    bool s2c = false;
    std::string bytes;
};

// A recording TCP forwarder on 127.0.0.1: one thread accepts, two threads per connection pump bytes.
class Tap
{
public:
    ~Tap() { stop(0ms); }

    bool start(std::uint16_t targetPort)
    {
        m_target = targetPort;
        m_listen = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (m_listen < 0 || bind(m_listen, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
            listen(m_listen, 16) != 0)
            return false;
        socklen_t len = sizeof sin;
        getsockname(m_listen, reinterpret_cast<sockaddr *>(&sin), &len);
        m_port = ntohs(sin.sin_port);
        m_acceptor = std::thread([this] { acceptLoop(); });
        return true;
    }

    std::string address() const { return "127.0.0.1:" + std::to_string(m_port); }

    // Waits up to `grace` for every connection to close both ways, then cuts what is left and returns one
    // recording per connection, in accept order.
    std::vector<std::vector<Chunk>> stop(std::chrono::milliseconds grace)
    {
        if (m_acceptor.joinable()) {
            m_stopping = true;
            m_acceptor.join();
            close(m_listen);
        }
        std::vector<std::vector<Chunk>> out;
        const auto deadline = std::chrono::steady_clock::now() + grace;
        for (auto &c : m_conns) {
            {
                std::unique_lock lk(c->mu);
                c->cv.wait_until(lk, deadline, [&] { return c->pumpsDone == 2; });
            }
            shutdown(c->clientFd, SHUT_RDWR);
            shutdown(c->serverFd, SHUT_RDWR);
            for (auto &t : c->pumps)
                t.join();
            close(c->clientFd);
            close(c->serverFd);
            out.push_back(std::move(c->chunks));
        }
        m_conns.clear();
        return out;
    }

private:
    struct Conn
    {
        int clientFd = -1;
        int serverFd = -1;
        std::mutex mu;
        std::condition_variable cv;
        std::vector<Chunk> chunks;
        int pumpsDone = 0;
        std::thread pumps[2];
    };

    void acceptLoop()
    {
        while (!m_stopping) {
            pollfd p{m_listen, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            const int cfd = accept(m_listen, nullptr, nullptr);
            if (cfd < 0) continue;
            const int sfd = socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in sin{};
            sin.sin_family = AF_INET;
            sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            sin.sin_port = htons(m_target);
            if (connect(sfd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
                std::fprintf(stderr, "tap: cannot connect to the relay\n");
                close(cfd);
                close(sfd);
                continue;
            }
            auto c = std::make_unique<Conn>();
            c->clientFd = cfd;
            c->serverFd = sfd;
            Conn *raw = c.get();
            c->pumps[0] = std::thread([this, raw] { pump(raw, raw->clientFd, raw->serverFd, false); });
            c->pumps[1] = std::thread([this, raw] { pump(raw, raw->serverFd, raw->clientFd, true); });
            m_conns.push_back(std::move(c));
        }
    }

    static void pump(Conn *c, int from, int to, bool s2c)
    {
        std::vector<char> buf(64 * 1024);
        for (;;) {
            const ssize_t n = recv(from, buf.data(), buf.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            {
                // Recorded before it is forwarded: an answer can only be recorded after what caused it.
                std::lock_guard lk(c->mu);
                c->chunks.push_back({s2c, std::string(buf.data(), size_t(n))});
            }
            if (!testnet::sendAll(to, buf.data(), size_t(n))) break;
        }
        shutdown(to, SHUT_WR);
        std::lock_guard lk(c->mu);
        ++c->pumpsDone;
        c->cv.notify_all();
    }

    std::uint16_t m_target = 0;
    std::uint16_t m_port = 0;
    int m_listen = -1;
    std::atomic<bool> m_stopping{false};
    std::thread m_acceptor;
    std::vector<std::unique_ptr<Conn>> m_conns; // touched by the acceptor until it is joined
};

std::string serviceConfig(int maxAttempts)
{
    return R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":)" +
           std::to_string(maxAttempts) +
           R"(,"initialBackoff":"0.05s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";
}

struct Summary
{
    int frames = 0, headers = 0, messages = 0, errors = 0, notices = 0;
    std::string firstError;
};

// Decodes a recording as the capture would, read by read.
Summary decode(const std::vector<Chunk> &chunks)
{
    ConnectionDecoder dec(1);
    EventBatch events;
    std::int64_t t = 0;
    for (const Chunk &c : chunks)
        dec.feed(c.s2c ? Direction::ServerToClient : Direction::ClientToServer,
                 reinterpret_cast<const std::uint8_t *>(c.bytes.data()), c.bytes.size(), t += 1000, events);
    dec.finish(t + 1000, events);
    Summary s;
    for (const WireEvent &e : events) {
        s.frames += e.kind == EventKind::Frame;
        s.headers += e.kind == EventKind::Headers;
        s.messages += e.kind == EventKind::Message;
        s.notices += e.kind == EventKind::Notice;
        if (e.kind == EventKind::DecodeError) {
            if (!s.errors++) s.firstError = e.reason;
        }
    }
    return s;
}

std::string encode(const std::vector<Chunk> &chunks, std::uint8_t mode, size_t skipC2S = 0,
                   size_t skipS2C = 0)
{
    std::string out(1, char(mode));
    for (const Chunk &c : chunks) {
        size_t &skip = c.s2c ? skipS2C : skipC2S;
        const size_t drop = std::min(skip, c.bytes.size());
        skip -= drop;
        fuzz::appendRead(out, c.s2c, reinterpret_cast<const std::uint8_t *>(c.bytes.data()) + drop,
                         c.bytes.size() - drop);
    }
    return out;
}

bool writeFile(const std::filesystem::path &path, const std::string &bytes)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    return bool(f);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: rpcscope-fuzz-seeds OUTDIR\n");
        return 2;
    }
    const std::filesystem::path outDir = argv[1];
    std::filesystem::create_directories(outDir);

    std::atomic<int> relayEvents{0};
    std::atomic<int> relayErrors{0};
    lab::LabSession session;
    std::string error;
    auto sink = [&](EventBatch &&b) {
        relayEvents += int(b.size());
        for (const WireEvent &e : b)
            relayErrors += e.kind == EventKind::DecodeError;
    };
    if (!session.start(sink, &error)) {
        std::fprintf(stderr, "rpcscope-fuzz-seeds: %s\n", error.c_str());
        return 1;
    }
    int nextCall = 1;
    auto callId = [&] { return "seed-" + std::to_string(nextCall++); };

    // name -> what the grpc++ client does through the tap
    const std::vector<std::pair<std::string, std::function<bool(const std::string &target)>>> scenarios = {
        {"retry-basic",
         [&](const std::string &target) {
             lab::ScenarioContext ctx;
             ctx.target = target;
             ctx.server = &session.server();
             ctx.nextCallId = callId;
             const lab::Scenario *scenario = lab::findScenario("retry-basic");
             lab::ScenarioParams defaults;
             std::string unused;
             scenario->resolveParams({}, &defaults, &unused);
             const lab::ScenarioResult r = scenario->run(ctx, defaults);
             std::printf("  %s\n", r.summary.c_str());
             return r.expectationHeld;
         }},
        {"large-request",
         [&](const std::string &target) {
             lab::LabClient client(target, serviceConfig(3));
             lab::CallRequest req;
             req.set_call_id(callId());
             req.set_payload(std::string(300 * 1024, 'q'));
             req.set_response_size(100 * 1024);
             const lab::CallResult r = client.call(req, 10s);
             std::printf("  300 KiB request, 100 KiB reply: status %d\n", r.code);
             return r.code == grpc::StatusCode::OK;
         }},
        {"pushback",
         [&](const std::string &target) {
             lab::LabClient client(target, serviceConfig(3));
             // Retried after the server's pushback; the message needs percent-encoding on the wire.
             lab::CallRequest a;
             a.set_call_id(callId());
             a.set_fail_first_n(1);
             a.set_fail_code(grpc::StatusCode::UNAVAILABLE);
             a.set_fail_message("lab: 100% unavailable, ünïcödé");
             a.set_pushback_ms(30);
             const lab::CallResult ra = client.call(a, 5s);
             // A negative pushback tells the client not to retry at all.
             lab::CallRequest b;
             b.set_call_id(callId());
             b.set_fail_first_n(5);
             b.set_fail_code(grpc::StatusCode::UNAVAILABLE);
             b.set_pushback_ms(-1);
             const lab::CallResult rb = client.call(b, 5s);
             // Response headers before the failure: the call is committed and not retried.
             lab::CallRequest c;
             c.set_call_id(callId());
             c.set_fail_first_n(1);
             c.set_fail_code(grpc::StatusCode::UNAVAILABLE);
             c.set_send_initial_metadata(true);
             const lab::CallResult rc = client.call(c, 5s);
             std::printf("  pushback 30 ms: status %d; pushback -1: status %d; committed: status %d\n",
                         ra.code, rb.code, rc.code);
             return ra.code == grpc::StatusCode::OK && rb.code == grpc::StatusCode::UNAVAILABLE &&
                    rc.code == grpc::StatusCode::UNAVAILABLE;
         }},
        {"deadline",
         [&](const std::string &target) {
             // The client gives up after 50 ms and resets the stream while the server still holds the call.
             lab::LabClient client(target, serviceConfig(3));
             lab::CallRequest req;
             req.set_call_id(callId());
             req.set_delay_ms(300);
             req.set_payload(std::string(2000, 'd'));
             const lab::CallResult r = client.call(req, 50ms);
             std::this_thread::sleep_for(400ms); // let the late reply hit the reset stream
             std::printf("  deadline 50 ms, server delay 300 ms: status %d\n", r.code);
             return r.code == grpc::StatusCode::DEADLINE_EXCEEDED;
         }},
    };

    size_t total = 0;
    for (const auto &[name, body] : scenarios) {
        std::printf("%s\n", name.c_str());
        Tap tap;
        if (!tap.start(session.proxyAddress().port)) {
            std::fprintf(stderr, "rpcscope-fuzz-seeds: tap cannot listen\n");
            return 1;
        }
        const bool ok = body(tap.address());
        // The client's channel is gone now; its connection closes shortly after.
        const auto conns = tap.stop(5s);
        if (!ok || conns.empty()) {
            std::fprintf(stderr, "rpcscope-fuzz-seeds: %s did not behave as expected (%zu connections)\n",
                         name.c_str(), conns.size());
            return 1;
        }
        for (size_t i = 0; i < conns.size(); ++i) {
            const Summary s = decode(conns[i]);
            std::printf("  connection %zu: %zu reads, %d frames, %d header blocks, %d messages, %d notices\n",
                        i, conns[i].size(), s.frames, s.headers, s.messages, s.notices);
            if (s.errors) {
                std::fprintf(stderr, "rpcscope-fuzz-seeds: %s: real traffic did not decode: %s\n",
                             name.c_str(), s.firstError.c_str());
                return 1;
            }
            const std::string base = name + (conns.size() > 1 ? "-" + std::to_string(i) : "");
            std::vector<std::pair<std::string, std::string>> files = {{base + ".h2", encode(conns[i], 0)}};
            if (name == "retry-basic" && i == 0) {
                // The same conversation with the preface supplied by the mode byte, and joined mid-stream.
                files.push_back({base + "-preface-mode.h2", encode(conns[i], fuzz::kModeClientPreface, 24)});
                files.push_back({base + "-midstream.h2", encode(conns[i], fuzz::kModeMidStream, 100, 30)});
            }
            for (const auto &[file, bytes] : files) {
                if (!writeFile(outDir / file, bytes)) {
                    std::fprintf(stderr, "rpcscope-fuzz-seeds: cannot write %s\n", (outDir / file).c_str());
                    return 1;
                }
                std::printf("  wrote %s (%zu bytes)\n", file.c_str(), bytes.size());
                total += bytes.size();
            }
        }
    }
    session.stop();
    std::printf("%zu bytes of seeds in %s; the relay decoded %d events, %d decode errors\n", total,
                outDir.c_str(), relayEvents.load(), relayErrors.load());
    return relayErrors ? 1 : 0;
}
