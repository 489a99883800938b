// rpcscope-tlsbench (scripts/bench.sh --tls): what TLS interception costs, against nghttpx, a real
// TLS-terminating HTTP/2 proxy, in front of the same grpc++ TLS server in the same run, and against the
// client talking TLS to the server directly. rpcscope runs as a user runs it, `rpcscope-cli capture
// --tls-intercept` in its own process, as nghttpx runs in its own.
//
//   1. unary latency of 100-byte RPCs, p50 and p99, interleaved in rounds;
//   2. server-streaming throughput with 1 MiB messages, rotating;
//   3. wire times on intercepted hops: with both cores kept busy by two spinning processes, the decrypted
//      frames' times against dumpcap's packets on loopback, the recording decrypted with the hops' key log
//      and read by rpcscope's own pcap reader; the hop timing its reads (the old way) against kernel receive
//      timestamps (wiretimes.h).
//
// Each proxy's overhead is its number minus direct's; the ratio (rpcscope - direct) / (nghttpx - direct) says
// how rpcscope's interception compares with nghttpx's (goal: at most 1). For throughput the overhead is in
// time per byte: (1/rpcscope - 1/direct) / (1/nghttpx - 1/direct), and the goal's test is the proxies' time
// per byte (the same test, without dividing by direct's spread). Each streaming round runs on a new
// connection of each lane, because grpc++ sizes a connection's windows from its own early estimates: one
// connection can stream at a fifth of the next one's rate for its whole life. Beside it, each proxy's own CPU
// time per MB streamed (the kernel's per-thread run time): nghttpx rewrites flow control with the wide
// windows it is given, while rpcscope relays grpc++'s own byte for byte, so throughput alone mixes the
// proxies' cost with their windows.

#include "benchtable.h"
#include "benchtext.h"
#include "captureprocess.h"
#include "clock.h"
#include "lab.grpc.pb.h"
#include "nghttpxproxy.h"
#include "relay.h"
#include "rpcscopeca.h"
#include "stats.h"
#include "tlskeylog.h"
#include "wiretimes.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <memory>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace rpcscope::bench;

namespace {

struct Plan
{
    bool quick = false;
    int latencyRounds = 20;
    int callsPerRound = 1000;
    int warmupCalls = 300;
    int streamRounds = 16;
    int streamMessages = 64;
    int idleConnections = 100;

    static Plan quickPlan()
    {
        Plan p;
        p.quick = true;
        p.latencyRounds = 6;
        p.callsPerRound = 400;
        p.warmupCalls = 100;
        p.streamRounds = 10;
        p.streamMessages = 32;
        p.idleConnections = 40;
        return p;
    }
};

using benchtext::progress;

using benchtext::fmt;

using benchtext::loadAverage;

std::string pem(X509 *cert, EVP_PKEY *key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (cert) PEM_write_bio_X509(bio, cert);
    if (key) PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio, &p);
    std::string s(p, size_t(n));
    BIO_free(bio);
    return s;
}

bool writeFile(const std::string &path, const std::string &text)
{
    std::ofstream f(path, std::ios::binary);
    f << text;
    return bool(f);
}

// The server side of the Lab service the benchmark uses: a unary call answering response_size bytes, and a
// server stream of count messages of message_size bytes.
class BenchLab final : public lab::Lab::Service
{
public:
    grpc::Status Call(grpc::ServerContext *, const lab::CallRequest *req, lab::CallReply *reply) override
    {
        reply->set_payload(std::string(size_t(std::max(0, req->response_size())), 'r'));
        return grpc::Status::OK;
    }
    grpc::Status ServerStream(grpc::ServerContext *, const lab::StreamRequest *req,
                              grpc::ServerWriter<lab::CallReply> *writer) override
    {
        lab::CallReply reply;
        reply.set_payload(std::string(size_t(std::max(0, req->message_size())), 's'));
        for (int i = 0; i < req->count(); ++i) {
            reply.set_sequence(i);
            if (!writer->Write(reply)) break;
        }
        return grpc::Status::OK;
    }
};

std::unique_ptr<lab::Lab::Stub> stubFor(std::uint16_t port, const std::string &roots, int pool = -1);

struct Lane
{
    std::string name;
    std::unique_ptr<lab::Lab::Stub> stub;
    // Where a fresh connection of this lane goes (reconnect()).
    std::uint16_t port = 0;
    std::string roots = {};
    std::vector<double> us = {};
    std::vector<double> mbs = {};
    int failures = 0;

    void unary(int calls, bool record)
    {
        lab::CallRequest req;
        req.set_payload(std::string(100, 'q'));
        req.set_response_size(100);
        for (int i = 0; i < calls; ++i) {
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
            lab::CallReply reply;
            const std::int64_t t0 = steadyNowNs();
            const grpc::Status s = stub->Call(&ctx, req, &reply);
            const std::int64_t t1 = steadyNowNs();
            if (!s.ok()) {
                ++failures;
                continue;
            }
            if (record) us.push_back(double(t1 - t0) / 1e3);
        }
    }

    // A new channel with a connection of its own (a subchannel pool of its own): grpc++ sizes each
    // connection's flow-control windows from its own estimate of the bandwidth-delay product, and one
    // connection's can stay small for its whole life.
    void reconnect(int pool) { stub = stubFor(port, roots, pool); }

    void stream(int messages, bool record, int messageSize = 1 << 20)
    {
        lab::StreamRequest req;
        req.set_count(messages);
        req.set_message_size(messageSize);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
        const std::int64_t t0 = steadyNowNs();
        auto reader = stub->ServerStream(&ctx, req);
        lab::CallReply reply;
        std::int64_t bytes = 0;
        int got = 0;
        while (reader->Read(&reply)) {
            bytes += std::int64_t(reply.payload().size());
            ++got;
        }
        const grpc::Status s = reader->Finish();
        const std::int64_t t1 = steadyNowNs();
        if (!s.ok() || got != messages) {
            ++failures;
            return;
        }
        if (record) mbs.push_back(double(bytes) / (double(t1 - t0) / 1e9) / 1e6);
    }
};

// CPU time (ns) that the threads of `pid` have run, from the kernel's per-thread schedstat: all of them, and
// those named `name` (when given).
struct ThreadsCpu
{
    std::int64_t all = 0, named = 0;
};
ThreadsCpu threadsCpu(pid_t pid, const char *name = nullptr)
{
    ThreadsCpu sum;
    std::error_code ec;
    for (const auto &task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::int64_t ns = 0;
        if (!(std::ifstream(task.path() / "schedstat") >> ns)) continue;
        sum.all += ns;
        std::string comm;
        if (name && std::getline(std::ifstream(task.path() / "comm"), comm) && comm == name) sum.named += ns;
    }
    return sum;
}

// The processes in process group `pgid` (nghttpx forks its worker).
std::vector<std::filesystem::path> groupProcesses(pid_t pgid)
{
    std::vector<std::filesystem::path> found;
    std::error_code ec;
    for (const auto &proc : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = proc.path().filename();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string stat;
        std::getline(std::ifstream(proc.path() / "stat"), stat);
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its closing parenthesis.
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        long ppid = 0, pgrp = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 && pgrp == pgid)
            found.push_back(proc.path());
    }
    return found;
}

// CPU time (ns) of every thread of every process in process group `pgid`.
std::int64_t groupCpuNs(pid_t pgid)
{
    std::int64_t sum = 0;
    for (const auto &proc : groupProcesses(pgid))
        sum += threadsCpu(pid_t(std::stol(proc.filename().string()))).all;
    return sum;
}

// VmRSS (KiB) of every process in process group `pgid`.
long groupRssKb(pid_t pgid)
{
    long sum = 0;
    for (const auto &proc : groupProcesses(pgid)) {
        std::ifstream status(proc / "status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("VmRSS:", 0) == 0) sum += std::atol(line.c_str() + 6);
    }
    return sum;
}

// `pool`: a channel of its own (its own connection), as each channel of a client's pool has, instead of the
// one grpc++ shares between channels to the same target with the same arguments.
std::unique_ptr<lab::Lab::Stub> stubFor(std::uint16_t port, const std::string &roots, int pool)
{
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = roots;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    args.SetMaxReceiveMessageSize(-1);
    if (pool >= 0) {
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        args.SetInt("rpcscope.bench.pool", pool);
    }
    return lab::Lab::NewStub(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(ssl), args));
}

// (proxy - direct) / (baseline - direct), with the two overheads.
std::string overheadRatio(double proxy, double baseline, double direct)
{
    const double a = proxy - direct, b = baseline - direct;
    if (b <= 0) return "n/a";
    return fmt("%.2f", a / b);
}

} // namespace

int main(int argc, char **argv)
{
    bool quick = false;
    std::string cli = RPCSCOPE_CLI;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--cli") == 0 && i + 1 < argc) {
            cli = argv[++i];
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf(
                "usage: rpcscope-tlsbench [--quick] [--cli PATH]\n"
                "  TLS interception (rpcscope-cli capture --tls-intercept, this build's or PATH) against\n"
                "  nghttpx (nghttp2-proxy) and direct TLS, in one run: unary p50/p99, 1 MiB server\n"
                "  streaming and wire times (about 1 minute; --quick about 20 s).\n");
            return 0;
        } else {
            std::fprintf(stderr, "rpcscope-tlsbench: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (access(cli.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "rpcscope-tlsbench: %s is not an executable rpcscope-cli\n", cli.c_str());
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    const Plan plan = quick ? Plan::quickPlan() : Plan();
    const std::int64_t runStart = steadyNowNs();
    const std::string loadBefore = loadAverage();
    std::vector<Row> rows;
    std::vector<std::string> notes;

    // Certificates: the server's own CA and its localhost leaf; the rpcscope CA in a folder of this run's.
    char tmpl[] = "/tmp/rpcscope-tlsbench-XXXXXX";
    if (!mkdtemp(tmpl)) {
        std::fprintf(stderr, "rpcscope-tlsbench: cannot make a temporary folder: %s\n", std::strerror(errno));
        return 1;
    }
    const std::string dir = tmpl;
    struct Cleanup
    {
        std::string dir;
        ~Cleanup() { std::filesystem::remove_all(dir); }
    } cleanup{dir};
    std::string error;
    RpcscopeCa serverCa;
    if (!serverCa.open(dir + "/server-ca", false, &error)) {
        std::fprintf(stderr, "rpcscope-tlsbench: %s\n", error.c_str());
        return 1;
    }
    const auto leaf = serverCa.leafFor("localhost", &error);
    if (!leaf) {
        std::fprintf(stderr, "rpcscope-tlsbench: %s\n", error.c_str());
        return 1;
    }
    const std::string certPem = pem(leaf->cert, nullptr), keyPem = pem(nullptr, leaf->key);
    const std::string certFile = dir + "/server.pem", keyFile = dir + "/server.key";
    if (!writeFile(certFile, certPem) || !writeFile(keyFile, keyPem)) {
        std::fprintf(stderr, "rpcscope-tlsbench: cannot write the server's certificate into %s\n",
                     dir.c_str());
        return 1;
    }

    BenchLab service;
    grpc::SslServerCredentialsOptions sslOpts;
    sslOpts.pem_key_cert_pairs.push_back({keyPem, certPem});
    grpc::ServerBuilder builder;
    int serverPort = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(sslOpts), &serverPort);
    builder.RegisterService(&service);
    builder.SetMaxSendMessageSize(-1);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || serverPort <= 0) {
        std::fprintf(stderr, "rpcscope-tlsbench: the grpc++ TLS server did not start\n");
        return 1;
    }

    // rpcscope as a user runs it: `rpcscope-cli capture --tls-intercept`, its own process (a relay thread per
    // connection, the decoder, the model, the capture file), its CA made on first use in a config folder of
    // this run's.
    const std::string cliConfig = dir + "/cli-config";
    std::filesystem::create_directories(cliConfig);
    hostile::CaptureProcess capture;
    setenv("XDG_CONFIG_HOME", cliConfig.c_str(), 1);
    const bool captureStarted =
        capture.start(cli, std::uint16_t(serverPort), dir + "/capture.rpcscope",
                      {"--tls-intercept", "--target-ca", serverCa.certPath()}, &error);
    unsetenv("XDG_CONFIG_HOME");
    if (!captureStarted) {
        std::fprintf(stderr, "rpcscope-tlsbench: %s: %s\n", cli.c_str(), error.c_str());
        return 1;
    }
    RpcscopeCa cliCa;
    if (!cliCa.open(cliConfig + "/rpcscope", false, &error)) {
        std::fprintf(stderr, "rpcscope-tlsbench: rpcscope-cli's CA: %s\n", error.c_str());
        return 1;
    }
    // The wire-time hops below run in this process, with their own CA.
    TlsInterceptOptions tls;
    tls.enabled = true;
    tls.caDirectory = dir + "/rpcscope-ca";
    tls.targetCaFile = serverCa.certPath();
    RpcscopeCa proxyCa;
    if (!proxyCa.open(tls.caDirectory, false, &error)) {
        std::fprintf(stderr, "rpcscope-tlsbench: %s\n", error.c_str());
        return 1;
    }

    NghttpxProxy nghttpx;
    std::string nghttpxMissing = NghttpxProxy::missing();
    if (nghttpxMissing.empty() && !nghttpx.start(std::uint16_t(serverPort), "localhost", serverCa.certPath(),
                                                 certFile, keyFile, &error))
        nghttpxMissing = "nghttpx baseline skipped: " + error;
    const bool haveNghttpx = nghttpxMissing.empty();
    if (!haveNghttpx) std::printf("%s\n", nghttpxMissing.c_str());

    std::vector<Lane> lanes;
    auto lane = [](std::string name, std::uint16_t port, const std::string &roots) {
        return Lane{std::move(name), stubFor(port, roots), port, roots};
    };
    lanes.push_back(lane("direct", std::uint16_t(serverPort), serverCa.certPem()));
    if (haveNghttpx) lanes.push_back(lane("nghttpx", nghttpx.port(), serverCa.certPem()));
    lanes.push_back(lane("rpcscope", capture.listenPort(), cliCa.certPem()));
    const Lane &d = lanes.front();
    const Lane &r = lanes.back();
    const Lane *n = haveNghttpx ? &lanes[1] : nullptr;

    progress("unary latency over TLS: %d rounds x %d calls x %zu configurations", plan.latencyRounds,
             plan.callsPerRound, lanes.size());
    for (Lane &l : lanes)
        l.unary(plan.warmupCalls, false);
    for (int round = 0; round < plan.latencyRounds; ++round)
        for (size_t k = 0; k < lanes.size(); ++k)
            lanes[(k + size_t(round)) % lanes.size()].unary(plan.callsPerRound, true);
    for (const auto &[label, pct] : {std::pair{"p50", 50.0}, std::pair{"p99", 99.0}}) {
        const double dv = percentile(d.us, pct), rv = percentile(r.us, pct);
        const std::string what = std::string("TLS unary 100 B ") + label;
        rows.push_back({what + ", direct TLS (" + std::to_string(d.us.size()) + " calls each)",
                        fmt("%.1f us", dv), "", "", "", ""});
        if (n) {
            const double nv = percentile(n->us, pct);
            rows.push_back({what + ", nghttpx", fmt("%.1f us", nv), "direct " + fmt("%.1f us", dv),
                            fmt("%.2f", nv / dv), "", ""});
            rows.push_back({what + ", rpcscope intercepting", fmt("%.1f us", rv),
                            "direct " + fmt("%.1f us", dv), fmt("%.2f", rv / dv), "", ""});
            const double ratio = (rv - dv) / (nv - dv);
            rows.push_back({what + ", overhead (rpcscope - direct) / (nghttpx - direct)",
                            fmt("%+.1f us", rv - dv), "nghttpx " + fmt("%+.1f us", nv - dv),
                            overheadRatio(rv, nv, dv), "<= 1.00",
                            nv > dv && ratio <= 1.0 ? "met" : "missed"});
        } else {
            rows.push_back({what + ", rpcscope intercepting", fmt("%.1f us", rv),
                            "direct " + fmt("%.1f us", dv), fmt("%.2f", rv / dv), "", ""});
        }
    }

    progress("streaming over TLS: %d rounds x %d x 1 MiB x %zu configurations", plan.streamRounds,
             plan.streamMessages, lanes.size());
    // Each proxy's CPU while its own lane streams: all of rpcscope-cli's threads, all of nghttpx's processes.
    std::int64_t rpcscopeCpuNs = 0, nghttpxCpuNs = 0, relayCpuNs = 0;
    auto proxyCpu = [&](const Lane &l) -> ThreadsCpu {
        if (&l == &r) return threadsCpu(capture.pid(), "rpcscope-tls");
        if (&l == n) return {groupCpuNs(nghttpx.pid()), 0};
        return {};
    };
    for (int round = 0; round < plan.streamRounds; ++round)
        for (size_t k = 0; k < lanes.size(); ++k) {
            Lane &l = lanes[(k + size_t(round)) % lanes.size()];
            // Every round on a new connection, warmed by 16 MiB: the rounds sample how grpc++'s windows
            // come out on each path instead of one connection's luck (one lane's connection alone ran at
            // 179-193 MB/s in every round of a run, and another's at 319-842).
            l.reconnect(1000 + round);
            l.stream(16, false);
            const ThreadsCpu before = proxyCpu(l);
            l.stream(plan.streamMessages, true);
            const ThreadsCpu after = proxyCpu(l);
            (&l == &r ? rpcscopeCpuNs : nghttpxCpuNs) += after.all - before.all;
            relayCpuNs += after.named - before.named;
        }
    {
        const double dv = median(d.mbs), rv = median(r.mbs);
        const std::string what = "TLS server stream " + std::to_string(plan.streamMessages) + " x 1 MiB";
        // The rounds' spread beside each median: on two cores shared by the client, the server and the proxy,
        // a round can run at half the rate of the next.
        auto rate = [](const Lane &l) {
            if (l.mbs.empty()) return std::string("n/a");
            const auto [lo, hi] = std::minmax_element(l.mbs.begin(), l.mbs.end());
            return fmt("%.0f MB/s", median(l.mbs)) + fmt(" (%.0f", *lo) + fmt("-%.0f)", *hi);
        };
        rows.push_back(
            {what + ", direct TLS (median of " + std::to_string(plan.streamRounds) + ", rounds' range)",
             rate(d), "", "", "", ""});
        if (n) {
            const double nv = median(n->mbs);
            rows.push_back({what + ", nghttpx", rate(*n), "direct " + fmt("%.0f MB/s", dv),
                            fmt("%.2f", nv / dv), "", ""});
            rows.push_back({what + ", rpcscope intercepting", rate(r), "direct " + fmt("%.0f MB/s", dv),
                            fmt("%.2f", rv / dv), "", ""});
            // In time per MB: what each proxy adds to every megabyte. rpcscope's overhead is at most
            // nghttpx's exactly when its time per MB is, and that ratio is the goal's: the overheads' ratio
            // divides by a difference that direct's spread (the widest of the three) can make zero or
            // negative (direct is then slower than the proxies, whose windows differ from its own).
            const double dt = 1e6 / dv, rt = 1e6 / rv, nt = 1e6 / nv; // us per MB
            rows.push_back({what + ", overhead per MB over direct, rpcscope / nghttpx",
                            fmt("%+.0f us/MB", rt - dt), "nghttpx " + fmt("%+.0f us/MB", nt - dt),
                            nt > dt ? overheadRatio(rt, nt, dt) : "n/a", "", ""});
            rows.push_back({what + ", time per MB, rpcscope / nghttpx (overhead at most nghttpx's)",
                            fmt("%.0f us/MB", rt), "nghttpx " + fmt("%.0f us/MB", nt), fmt("%.2f", rt / nt),
                            "<= 1.00", rt <= nt ? "met" : "missed"});
            const double mb = double(plan.streamRounds) * plan.streamMessages * double(1 << 20) / 1e6;
            if (rpcscopeCpuNs > 0 && nghttpxCpuNs > 0)
                rows.push_back({what + ", proxy CPU per MB: rpcscope-cli / nghttpx, whole processes",
                                fmt("%.0f us/MB", double(rpcscopeCpuNs) / 1e3 / mb),
                                "nghttpx " + fmt("%.0f us/MB", double(nghttpxCpuNs) / 1e3 / mb),
                                fmt("%.2f", double(rpcscopeCpuNs) / double(nghttpxCpuNs)), "", ""});
            if (rpcscopeCpuNs > 0)
                rows.push_back({what + ", of which the relay thread (the rest: decoder, model, capture file)",
                                fmt("%.0f us/MB", double(relayCpuNs) / 1e3 / mb), "", "", "", ""});
        } else {
            rows.push_back({what + ", rpcscope intercepting", fmt("%.0f MB/s", rv),
                            "direct " + fmt("%.0f MB/s", dv), fmt("%.2f", rv / dv), "", ""});
        }
    }

    // Idle connections: a client's pool of channels, each with a connection of its own that made a call and
    // streamed a 1 MiB message, then idle, as pooled channels are between bursts. What each proxy's processes
    // hold per connection (RSS growth over the proxy before the pool), and for rpcscope what it counts
    // against --keep. Each proxy fresh (its own new process, warmed by one connection), so that what the
    // parts above left in it neither hides nor adds to the pool's.
    if (n) {
        const int pool = plan.idleConnections;
        progress("idle TLS connections: %d channels each through a fresh nghttpx and rpcscope-cli", pool);
        NghttpxProxy poolNghttpx;
        hostile::CaptureProcess poolCapture;
        setenv("XDG_CONFIG_HOME", cliConfig.c_str(), 1);
        const bool started =
            poolNghttpx.start(std::uint16_t(serverPort), "localhost", serverCa.certPath(), certFile, keyFile,
                              &error) &&
            poolCapture.start(cli, std::uint16_t(serverPort), dir + "/pool.rpcscope",
                              {"--tls-intercept", "--target-ca", serverCa.certPath()}, &error);
        unsetenv("XDG_CONFIG_HOME");
        struct Held
        {
            long before = 0, busy = 0, idle = 0; // KiB
        };
        auto holdPool = [&](std::uint16_t port, const std::string &roots, auto rssKb, Held *held,
                            double *counted) {
            Lane warm{"warm-up", stubFor(port, roots, pool)};
            warm.unary(1, false);
            warm.stream(1, false);
            warm.stub.reset();
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            held->before = rssKb();
            const double countedBefore = poolCapture.lastReported();
            std::vector<Lane> channels;
            for (int i = 0; i < pool; ++i) {
                channels.push_back({"pool", stubFor(port, roots, i)});
                channels.back().unary(1, false);
                channels.back().stream(1, false);
            }
            held->busy = rssKb();
            // Idle: past rpcscope's second (kIdleReleaseMs), its allocator's trim (a second after the last
            // connection gave back its buffers), and two progress lines.
            std::this_thread::sleep_for(std::chrono::milliseconds(4000));
            held->idle = rssKb();
            if (counted) *counted = poolCapture.lastReported() - countedBefore;
            for (const Lane &c : channels)
                if (c.failures || warm.failures)
                    notes.push_back("idle pool: a channel's call or stream failed");
        };
        if (!started) {
            notes.push_back("idle pool skipped: " + error);
        } else {
            Held ng, rs;
            double countedBytes = 0;
            holdPool(
                poolNghttpx.port(), serverCa.certPem(), [&] { return groupRssKb(poolNghttpx.pid()); }, &ng,
                nullptr);
            holdPool(
                poolCapture.listenPort(), cliCa.certPem(), [&] { return poolCapture.rssKb(); }, &rs,
                &countedBytes);
            const std::string what = "TLS idle connections (" + std::to_string(pool) +
                                     " channels, each after a call and a 1 MiB message), ";
            const double ngEach = double(ng.idle - ng.before) / pool,
                         rsEach = double(rs.idle - rs.before) / pool;
            rows.push_back({what + "RSS growth per connection, idle (rpcscope: its timeline too)",
                            fmt("%.0f KiB", rsEach), "nghttpx " + fmt("%.0f KiB", ngEach),
                            ngEach > 0 ? fmt("%.2f", rsEach / ngEach) : "n/a", "", ""});
            rows.push_back({what + "rpcscope RSS growth per connection, busy / idle",
                            fmt("%.0f", double(rs.busy - rs.before) / pool) + fmt(" / %.0f KiB", rsEach), "",
                            "", "", ""});
            rows.push_back({what + "rpcscope per connection counted against --keep (its calls included)",
                            fmt("%.0f KiB", countedBytes / pool / 1024), "", "", "", ""});
        }
        poolNghttpx.stop();
        poolCapture.stop(30000);
    }

    for (const Lane &l : lanes)
        if (l.failures)
            notes.push_back(l.name + ": " + std::to_string(l.failures) + " calls or streams failed");
    if (haveNghttpx)
        notes.push_back(
            "nghttpx: TLS to the client and to the server (the server verified against its CA), " +
            nghttpx.flags());
    notes.push_back(
        "rpcscope: " + (cli == RPCSCOPE_CLI ? std::string("this build's rpcscope-cli") : cli) +
        " capture --tls-intercept --target-ca FILE --out FILE.rpcscope, its own process (a relay "
        "thread per connection, OpenSSL both legs, the decoder, the model, the capture file); all "
        "three lanes use the same grpc++ TLS server and client code, each lane its own connection");

    nghttpx.stop();
    lanes.clear(); // their connections close: the recording below holds only its own hops' connections
    const hostile::CaptureProcess::Exit exit = capture.stop(30000);
    if (!exit.exited || exit.code != 0)
        notes.push_back("rpcscope-cli did not end cleanly: " + exit.describe());

    // ---- 3. wire times on intercepted hops against dumpcap, both cores busy ----
    {
        // Both hops append the keys of both their legs to one key log (a line per write); the recording is
        // decrypted with it.
        const std::string keyFile = dir + "/hops.keys";
        int failures = 0;
        size_t sessions = 0;
        WireTimesRun run;
        const bool started = measureWireTimes(
            std::uint16_t(serverPort), dir + "/wire.pcapng",
            [&](Relay &hop, bool) {
                TlsInterceptOptions o = tls;
                o.keylogFile = keyFile;
                hop.setTlsIntercept(o);
            },
            [&](std::uint16_t pr, std::uint16_t pk) {
                Lane viaRead{"read-timed hop", stubFor(pr, proxyCa.certPem())};
                Lane viaKernel{"kernel-timed hop", stubFor(pk, proxyCa.certPem())};
                viaRead.unary(50, false);
                viaKernel.unary(50, false);
                const int rounds = plan.quick ? 2 : 5, calls = plan.quick ? 300 : 1000;
                progress("TLS wire times: %d rounds x %d calls x 2 hops, two spinning processes", rounds,
                         calls);
                for (int round = 0; round < rounds; ++round) {
                    (round % 2 ? viaKernel : viaRead).unary(calls, false);
                    (round % 2 ? viaRead : viaKernel).unary(calls, false);
                }
                failures = viaRead.failures + viaKernel.failures;
            },
            [&] {
                auto keys = std::make_shared<TlsKeyLog>();
                std::string why;
                if (!keys->load(keyFile, &why)) notes.push_back("key log: " + why);
                sessions = keys->size();
                return keys;
            },
            &run, &error);
        if (!started) {
            std::fprintf(stderr, "rpcscope-tlsbench: relay: %s\n", error.c_str());
            return 1;
        }
        reportWireTimes(run, "TLS ",
                        "intercepted connections (two hops, one timing its reads, one kernel receive times; "
                        "decrypted with their key log, " +
                            std::to_string(sessions) + " TLS sessions)",
                        &rows, &notes);
        if (failures) notes.push_back("TLS wire times: " + std::to_string(failures) + " calls failed");
    }
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));

    std::printf("rpcscope-tlsbench%s: %ld s, %ld cores, load average %s before, %s after\n",
                plan.quick ? " --quick" : "", long((steadyNowNs() - runStart) / 1'000'000'000),
                sysconf(_SC_NPROCESSORS_ONLN), loadBefore.c_str(), loadAverage().c_str());
    printTable(rows);
    for (const std::string &note : notes)
        std::printf("- %s\n", note.c_str());
    return 0;
}
