// rpcscope-userbench (scripts/bench.sh --user): the plaintext relay measured the way a user meets it.
//
//   1. Latency and CPU: a plain grpc++ unary client, in a process of its own, makes 3,000 sequential 100-byte
//      calls per round, in rounds interleaved between direct, socat and `rpcscope-cli capture` (this build,
//      and with --before PATH another build's rpcscope-cli, e.g. the old read path). It reports
//      (rpcscope - direct) / (socat - direct) at p50 and p99, and the CPU the capture's relay I/O and decoder
//      threads used per call (their /proc schedstat run time). A lane with RPCSCOPE_RELAY_STEER=0 shows what
//      following the client's core changes (capture/cpusteering.h), and one with RPCSCOPE_HUGEPAGES=1 what
//      malloc's heap on huge pages changes (app/core/hugepageheap.h). A fourth lane is the leanest relay
//      there can be, as a floor for that CPU: one thread of a process of its own, epoll, read and write,
//      decoding nothing.
//   2. Wire times: with both cores kept busy by two spinning processes, the relay's frame times against
//      dumpcap's packet times on loopback, frames matched by connection, direction, stream, type, flags and
//      occurrence (and a PING's data or a WINDOW_UPDATE's increment; stream 0's by the call stream's frame
//      they follow); the relay timing reads when it reads them (the old way) against kernel receive
//      timestamps.
//
// The machine is shared and noisy: every comparison alternates its configurations within one run.

#include "benchtable.h"
#include "benchtext.h"
#include "captureprocess.h"
#include "clock.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"
#include "socatproxy.h"
#include "stats.h"
#include "testnet.h"
#include "wiretimes.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <netinet/tcp.h>
#include <optional>
#include <sstream>
#include <string>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace rpcscope::bench;
using namespace std::chrono_literals;

namespace {

using benchtext::progress;

using benchtext::fmt;

using benchtext::loadAverage;

std::string selfPath()
{
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// --client PORT CALLS: the plain grpc++ client, one call at a time, printing each call's microseconds.
int runClient(const std::string &target, int calls, int warmup)
{
    lab::LabClient client(target, std::string());
    lab::CallRequest req;
    req.set_payload(std::string(100, 'q'));
    req.set_response_size(100);
    std::string out;
    // Ids unique across rounds (each round is a client process of its own): a reused id would make a later
    // round's call another attempt of an earlier round's.
    const std::string prefix = "u-" + std::to_string(getpid()) + "-";
    for (int i = 0; i < warmup + calls; ++i) {
        req.set_call_id(prefix + std::to_string(i));
        const lab::CallResult r = client.call(req, 5s);
        if (r.code != 0) {
            out += "fail\n";
            continue;
        }
        if (i >= warmup) out += std::to_string(double(r.endNs - r.startNs) / 1e3) + "\n";
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

struct ClientRun
{
    std::vector<double> us;
    int failures = 0;
};

ClientRun spawnClient(std::uint16_t port, int calls, int warmup)
{
    ClientRun run;
    const std::string cmd = "'" + selfPath() + "' --client 127.0.0.1:" + std::to_string(port) + " " +
                            std::to_string(calls) + " " + std::to_string(warmup);
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return run;
    char line[128];
    while (std::fgets(line, sizeof line, p)) {
        if (std::strncmp(line, "fail", 4) == 0)
            ++run.failures;
        else
            run.us.push_back(std::strtod(line, nullptr));
    }
    pclose(p);
    return run;
}

// Run time (ns) of a process's threads named one of `names` (none: all), from /proc/PID/task/TID/schedstat;
// with `switches`, their context switches (voluntary: each time one slept and was woken) instead.
std::int64_t threadsRunNs(pid_t pid, const std::vector<std::string> &names, bool switches = false)
{
    std::int64_t total = 0;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR *d = opendir(dir.c_str());
    if (!d) return -1;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(dir + "/" + e->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
        if (switches) {
            std::ifstream status(dir + "/" + e->d_name + "/status");
            for (std::string line; std::getline(status, line);)
                if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
                    line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
                    total += std::atoll(line.substr(line.find(':') + 1).c_str());
            continue;
        }
        std::ifstream stat(dir + "/" + e->d_name + "/schedstat");
        long long ns = 0;
        stat >> ns;
        total += ns;
    }
    closedir(d);
    return total;
}

// CPU of a process's reaped children (cutime + cstime of /proc/PID/stat), ns; 10 ms ticks.
std::int64_t childrenCpuNs(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    long long cutime = 0, cstime = 0;
    for (int i = 3; i <= 17 && rest >> field; ++i) {
        if (i == 16) cutime = std::atoll(field.c_str());
        if (i == 17) cstime = std::atoll(field.c_str());
    }
    return (cutime + cstime) * (1'000'000'000LL / sysconf(_SC_CLK_TCK));
}

// --leanest-relay TARGET_PORT: the leanest TCP relay there can be, as a floor for a relay's CPU per call: one
// thread, one epoll_wait per wake, a read and a write per readable socket (64 KiB, blocking writes: a unary
// call's bytes always fit), TCP_NODELAY as rpcscope sets it, nothing decoded, timed or kept. It prints its
// loopback port and relays until killed.
int runLeanestRelay(std::uint16_t target)
{
    constexpr size_t kRead = 64 * 1024;
    const int listener = testnet::listenLoopback();
    if (listener < 0) {
        std::fprintf(stderr, "rpcscope-userbench: leanest relay: %s\n", std::strerror(errno));
        return 1;
    }
    std::printf("%d\n", testnet::localPort(listener));
    std::fflush(stdout);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    auto watch = [ep](int fd) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    };
    watch(listener);
    std::map<int, int> peer;
    auto buf = std::make_unique<char[]>(kRead);
    for (;;) {
        epoll_event evs[16];
        const int n = epoll_wait(ep, evs, 16, -1);
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == listener) {
                const int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) continue;
                const int s = testnet::connectLoopback(target);
                if (s < 0) {
                    close(c);
                    continue;
                }
                const int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                peer[c] = s;
                peer[s] = c;
                watch(c);
                watch(s);
                continue;
            }
            const auto other = peer.find(fd);
            if (other == peer.end()) continue;
            const ssize_t got = read(fd, buf.get(), kRead);
            ssize_t sent = 0;
            while (got > 0 && sent < got) {
                const ssize_t w = write(other->second, buf.get() + sent, size_t(got - sent));
                if (w <= 0) break;
                sent += w;
            }
            if (got <= 0 || sent < got) { // either side closed: both go
                const int o = other->second;
                peer.erase(o);
                peer.erase(fd);
                close(o); // closing removes both from the epoll set
                close(fd);
            }
        }
    }
}

// The leanest relay in a process of its own (this binary with --leanest-relay).
class LeanestRelay
{
public:
    ~LeanestRelay() { stop(); }
    bool start(std::uint16_t target, std::string *error)
    {
        int out[2];
        if (pipe2(out, O_CLOEXEC) != 0) {
            *error = std::strerror(errno);
            return false;
        }
        const std::string self = selfPath(), port = std::to_string(target);
        m_pid = fork();
        if (m_pid == 0) {
            dup2(out[1], 1);
            execl(self.c_str(), self.c_str(), "--leanest-relay", port.c_str(), static_cast<char *>(nullptr));
            _exit(127);
        }
        close(out[1]);
        char line[32] = {};
        FILE *f = fdopen(out[0], "r");
        const bool read = f && std::fgets(line, sizeof line, f);
        if (f) std::fclose(f);
        m_port = read ? std::uint16_t(std::atoi(line)) : 0;
        if (m_pid < 0 || m_port == 0) {
            *error = "the leanest relay did not start";
            stop();
            return false;
        }
        return true;
    }
    void stop()
    {
        if (m_pid > 0) {
            kill(m_pid, SIGTERM);
            waitpid(m_pid, nullptr, 0);
        }
        m_pid = -1;
    }
    pid_t pid() const { return m_pid; }
    std::uint16_t port() const { return m_port; }

private:
    pid_t m_pid = -1;
    std::uint16_t m_port = 0;
};

struct Lane
{
    std::string name;
    std::uint16_t port = 0;
    pid_t capturePid = -1; // rpcscope lanes: whose relay threads are counted
    pid_t leanPid = -1;    // the leanest relay's process
    std::vector<double> us = {};
    std::vector<std::vector<double>> rounds = {}; // the same latencies, a vector per round
    std::int64_t relayNs = 0;
    std::int64_t decoderNs = 0; // of which the decoder thread's (it also encodes and writes the capture file)
    std::int64_t relaySwitches = 0;
    std::int64_t processNs = 0; // rpcscope: every thread of rpcscope-cli; socat: its per-connection processes
    pid_t socatPid = -1;
    int calls = 0;
    int failures = 0;
};

} // namespace

int main(int argc, char **argv)
{
    if (argc >= 5 && std::strcmp(argv[1], "--client") == 0)
        return runClient(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
    if (argc >= 3 && std::strcmp(argv[1], "--leanest-relay") == 0)
        return runLeanestRelay(std::uint16_t(std::atoi(argv[2])));
    if (argc >= 2 && std::strcmp(argv[1], "--serve") == 0) { // for profiling by hand: serves until stdin ends
        lab::LabServer server;
        std::string error;
        if (!server.start(&error)) {
            std::fprintf(stderr, "rpcscope-userbench: %s\n", error.c_str());
            return 1;
        }
        std::printf("%d\n", server.port());
        std::fflush(stdout);
        char c;
        while (read(0, &c, 1) > 0) {
        }
        return 0;
    }
    bool quick = false;
    std::string cli = RPCSCOPE_CLI, before;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--cli") == 0 && i + 1 < argc) {
            cli = argv[++i];
        } else if (std::strcmp(argv[i], "--before") == 0 && i + 1 < argc) {
            before = argv[++i];
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf(
                "usage: rpcscope-userbench [--quick] [--cli PATH] [--before PATH]\n"
                "  A plain grpc++ client process: direct, socat and rpcscope-cli capture interleaved, "
                "and the relay's\n  wire times against dumpcap with both cores busy. --before PATH: "
                "another rpcscope-cli (e.g. an\n  older build) measured in the same rounds.\n");
            return 0;
        } else {
            std::fprintf(stderr, "rpcscope-userbench: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    for (const std::string &c : {cli, before})
        if (!c.empty() && access(c.c_str(), X_OK) != 0) {
            std::fprintf(stderr, "rpcscope-userbench: %s is not an executable rpcscope-cli\n", c.c_str());
            return 2;
        }
    const int rounds = quick ? 2 : 5;
    const int calls = quick ? 1000 : 3000;
    const int warmup = 200;
    const std::int64_t runStart = steadyNowNs();
    const std::string loadBefore = loadAverage();
    std::vector<Row> rows;
    std::vector<std::string> notes;
    std::signal(SIGPIPE, SIG_IGN);

    lab::LabServer server;
    std::string error;
    if (!server.start(&error)) {
        std::fprintf(stderr, "rpcscope-userbench: %s\n", error.c_str());
        return 1;
    }
    const std::uint16_t serverPort = std::uint16_t(server.port());
    std::string tmpl = (std::filesystem::temp_directory_path() / "rpcscope-userbench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
        std::fprintf(stderr, "rpcscope-userbench: cannot make a temporary directory: %s\n",
                     std::strerror(errno));
        return 1;
    }
    const std::string work = tmpl;

    // ---- 1. latency and CPU, as a user would see them ----
    {
        std::vector<Lane> lanes;
        lanes.push_back({"direct", serverPort});
        SocatProxy socat;
        const bool haveSocat = socat.start(serverPort, &error);
        if (haveSocat) {
            lanes.push_back({"socat", socat.port()});
            lanes.back().socatPid = socat.pid();
        } else
            notes.push_back("SOCAT MISSING: the socat lane and the ratios against it are skipped (" + error +
                            "; scripts/setup.sh installs it)");
        LeanestRelay lean;
        if (lean.start(serverPort, &error)) {
            lanes.push_back({"leanest relay", lean.port()});
            lanes.back().leanPid = lean.pid();
        } else
            notes.push_back("leanest relay skipped: " + error);
        // The same build with a stream fault rule that matches no call: its hop is framed for faults, which
        // is the cost a user pays for having rules at all (issue 19's "as fast as today").
        hostile::CaptureProcess now, ruled, old, level, niceOnly, unsteered, hugePages;
        struct CaptureLane
        {
            hostile::CaptureProcess *proc;
            std::string path, name, file;
            std::vector<std::string> extra;
            const char *nice = nullptr;      // RPCSCOPE_CAPTURE_NICE for this process, if set
            const char *idle = nullptr;      // RPCSCOPE_CAPTURE_IDLE, if set
            const char *steer = nullptr;     // RPCSCOPE_RELAY_STEER, if set
            const char *hugePages = nullptr; // RPCSCOPE_HUGEPAGES, if set
        };
        std::vector<CaptureLane> captures{
            {&now, cli, "rpcscope", "now", {"--keep", "0"}},
            {&ruled,
             cli,
             "rpcscope, a stream rule matching nothing",
             "ruled",
             {"--keep", "0", "--fault", "abort status=UNAVAILABLE method=/no.such.Service/*"}}};
        // The same build with its decoder and model threads at the relay's priority (capture/threadpriority.h
        // lowers them): what that lowering changes, in the same rounds.
        captures.push_back(
            {&level, cli, "rpcscope, all threads at the relay's priority", "level", {"--keep", "0"}, "0"});
        // And with the nice step alone, without the idle policy: what that policy adds.
        captures.push_back({&niceOnly,
                            cli,
                            "rpcscope, nice step only (no idle policy)",
                            "niceonly",
                            {"--keep", "0"},
                            nullptr,
                            "1"});
        // And with the relay thread left where the kernel puts it (capture/cpusteering.h): what following the
        // client's core changes.
        captures.push_back({&unsteered,
                            cli,
                            "rpcscope, relay not steered to the client's core",
                            "unsteered",
                            {"--keep", "0"},
                            nullptr,
                            nullptr,
                            "1"});
        // And with malloc's heap on transparent huge pages (app/core/hugepageheap.h, off by default): what
        // they change.
        captures.push_back({&hugePages,
                            cli,
                            "rpcscope, heap on huge pages",
                            "hugepages",
                            {"--keep", "0"},
                            nullptr,
                            nullptr,
                            nullptr,
                            "1"});
        if (!before.empty()) captures.push_back({&old, before, "rpcscope before", "before", {"--keep", "0"}});
        for (const CaptureLane &c : captures) {
            if (c.nice) setenv("RPCSCOPE_CAPTURE_NICE", c.nice, 1);
            if (c.idle) setenv("RPCSCOPE_CAPTURE_IDLE", c.idle, 1);
            if (c.steer) setenv("RPCSCOPE_RELAY_STEER", c.steer, 1);
            if (c.hugePages) setenv("RPCSCOPE_HUGEPAGES", c.hugePages, 1);
            const bool started =
                c.proc->start(c.path, serverPort, work + "/" + c.file + ".rpcscope", c.extra, &error);
            unsetenv("RPCSCOPE_CAPTURE_NICE");
            unsetenv("RPCSCOPE_CAPTURE_IDLE");
            unsetenv("RPCSCOPE_RELAY_STEER");
            unsetenv("RPCSCOPE_HUGEPAGES");
            if (!started) {
                std::fprintf(stderr, "rpcscope-userbench: %s: %s\n", c.path.c_str(), error.c_str());
                return 1;
            }
            lanes.push_back({c.name, c.proc->listenPort(), c.proc->pid()});
        }
        progress("latency: %d rounds x %d calls x %zu configurations, one client process each", rounds, calls,
                 lanes.size());
        for (int r = 0; r < rounds; ++r)
            for (size_t k = 0; k < lanes.size(); ++k) {
                Lane &l = lanes[(k + size_t(r)) % lanes.size()];
                const std::int64_t cpu0 =
                    l.capturePid > 0 ? threadsRunNs(l.capturePid, {"rpcscope-relay", "rpcscope-decode"}) : 0;
                const std::int64_t dec0 =
                    l.capturePid > 0 ? threadsRunNs(l.capturePid, {"rpcscope-decode"}) : 0;
                const std::int64_t sw0 =
                    l.capturePid > 0 ? threadsRunNs(l.capturePid, {"rpcscope-relay", "rpcscope-decode"}, true)
                                     : 0;
                const std::int64_t all0 = l.capturePid > 0 ? threadsRunNs(l.capturePid, {})
                                          : l.leanPid > 0  ? threadsRunNs(l.leanPid, {})
                                          : l.socatPid > 0 ? childrenCpuNs(l.socatPid)
                                                           : 0;
                ClientRun run = spawnClient(l.port, calls, warmup);
                if (l.capturePid > 0) {
                    l.relayNs += threadsRunNs(l.capturePid, {"rpcscope-relay", "rpcscope-decode"}) - cpu0;
                    l.processNs += threadsRunNs(l.capturePid, {}) - all0;
                    l.decoderNs += threadsRunNs(l.capturePid, {"rpcscope-decode"}) - dec0;
                    l.relaySwitches +=
                        threadsRunNs(l.capturePid, {"rpcscope-relay", "rpcscope-decode"}, true) - sw0;
                } else if (l.leanPid > 0) {
                    l.processNs += threadsRunNs(l.leanPid, {}) - all0;
                } else if (l.socatPid > 0) {
                    std::this_thread::sleep_for(300ms); // until socat has reaped the connection's process
                    l.processNs += childrenCpuNs(l.socatPid) - all0;
                }
                l.calls += calls + warmup;
                l.failures += run.failures;
                l.us.insert(l.us.end(), run.us.begin(), run.us.end());
                l.rounds.push_back(std::move(run.us));
            }
        for (const CaptureLane &c : captures)
            c.proc->stop(20000);
        socat.stop();
        lean.stop();
        const Lane &d = lanes[0];
        const Lane *s = haveSocat ? &lanes[1] : nullptr;
        const double dP50 = median(d.us), dP99 = percentile(d.us, 99);
        const std::string n = " (" + std::to_string(d.us.size()) + " calls each)";
        rows.push_back({"user unary 100 B p50 / p99, direct" + n,
                        fmt("%.1f", dP50) + " / " + fmt("%.1f us", dP99), "", "", "", ""});
        if (s)
            rows.push_back({"user unary 100 B p50 / p99, socat",
                            fmt("%.1f", median(s->us)) + " / " + fmt("%.1f us", percentile(s->us, 99)), "",
                            "", "", ""});
        const Lane *leanLane = nullptr;
        for (const Lane &l : lanes)
            if (l.leanPid > 0) leanLane = &l;
        if (leanLane)
            rows.push_back(
                {"user unary 100 B p50 / p99, leanest relay (one thread: epoll, read, write)",
                 fmt("%.1f", median(leanLane->us)) + " / " + fmt("%.1f us", percentile(leanLane->us, 99)), "",
                 "", "", ""});
        const Lane *nowLane = nullptr;
        for (const Lane &l : lanes) {
            if (l.capturePid <= 0) continue;
            if (l.name == "rpcscope") nowLane = &l;
            const double p50 = median(l.us), p99 = percentile(l.us, 99);
            rows.push_back({"user unary 100 B p50 / p99, " + l.name,
                            fmt("%.1f", p50) + " / " + fmt("%.1f us", p99), "", "", "", ""});
            if (s) {
                // A ratio means something only when socat is slower than direct; on a loaded machine a p99
                // can come out the other way round, and then the run says so instead.
                auto ratioRow = [&](const char *p, double mine, double socats) {
                    const bool meaningful = socats > 0;
                    rows.push_back({"  " + l.name + " overhead / socat's, " + p, fmt("%+.1f us", mine),
                                    "socat " + fmt("%+.1f us", socats),
                                    meaningful ? fmt("%.2f", mine / socats) : "n/a", "<= 1.00",
                                    !meaningful          ? "noise: socat not slower than direct"
                                    : mine / socats <= 1 ? "met"
                                                         : "missed"});
                };
                ratioRow("p50", p50 - dP50, median(s->us) - dP50);
                ratioRow("p99", p99 - dP99, percentile(s->us, 99) - dP99);
                // How far one round is from another: the same ratio in each round alone (3,000 calls, so
                // its p99 is the 30th slowest call), against that round's direct and socat.
                if (l.name == "rpcscope" && l.rounds.size() == d.rounds.size() &&
                    l.rounds.size() == s->rounds.size()) {
                    for (const double q : {50.0, 99.0}) {
                        std::string each;
                        std::vector<double> ratios;
                        for (size_t r = 0; r < l.rounds.size(); ++r) {
                            if (l.rounds[r].empty() || d.rounds[r].empty() || s->rounds[r].empty()) continue;
                            const double dq = percentile(d.rounds[r], q);
                            const double sq = percentile(s->rounds[r], q) - dq;
                            const double mine = percentile(l.rounds[r], q) - dq;
                            each += (each.empty() ? "" : " ") +
                                    (sq > 0 ? fmt("%.2f", mine / sq) : std::string("n/a"));
                            if (sq > 0) ratios.push_back(mine / sq);
                        }
                        rows.push_back(
                            {"  " + l.name + " overhead / socat's, p" + fmt("%.0f", q) + ", each round", each,
                             "", ratios.empty() ? "" : fmt("%.2f", median(ratios)), "", ""});
                    }
                }
            }
        }
        for (const Lane &l : lanes)
            if (l.capturePid > 0 && l.calls) {
                const double us = double(l.relayNs) / 1e3 / l.calls;
                const bool isNow = &l == nowLane;
                const Lane *old = nullptr;
                for (const Lane &o : lanes)
                    if (o.name == "rpcscope before") old = &o;
                const double oldUs = old && old->calls ? double(old->relayNs) / 1e3 / old->calls : 0;
                rows.push_back(
                    {"  " + l.name + " CPU of relay I/O + decoder threads per call", fmt("%.1f us", us),
                     isNow && oldUs > 0 ? "before " + fmt("%.1f us", oldUs) : "",
                     isNow && oldUs > 0 ? fmt("%.2f", us / oldUs) : "", isNow && oldUs > 0 ? "<= 0.50" : "",
                     isNow && oldUs > 0 ? (us / oldUs <= 0.5 ? "met" : "missed") : ""});
            }
        // Against the floor: what any relay thread pays per call here (its wake-ups and system calls; on this
        // kind of virtual machine they are most of it).
        if (leanLane && leanLane->calls && leanLane->processNs > 0 && nowLane && nowLane->calls) {
            const double floorUs = double(leanLane->processNs) / 1e3 / leanLane->calls;
            const double relayUs = double(nowLane->relayNs - nowLane->decoderNs) / 1e3 / nowLane->calls;
            const double bothUs = double(nowLane->relayNs) / 1e3 / nowLane->calls;
            rows.push_back({"  leanest relay CPU per call (its one thread: the floor of a relay's)",
                            fmt("%.1f us", floorUs), "", "", "", ""});
            rows.push_back({"  rpcscope relay I/O thread / leanest relay, CPU per call",
                            fmt("%.1f us", relayUs), "leanest " + fmt("%.1f us", floorUs),
                            fmt("%.2f", relayUs / floorUs), "", ""});
            rows.push_back({"  rpcscope relay I/O + decoder threads / leanest relay, CPU per call",
                            fmt("%.1f us", bothUs), "leanest " + fmt("%.1f us", floorUs),
                            fmt("%.2f", bothUs / floorUs), "", ""});
        }
        for (const Lane &l : lanes)
            if (l.capturePid > 0 && l.calls)
                rows.push_back({"  " + l.name + " of which relay I/O thread / decoder thread",
                                fmt("%.1f", double(l.relayNs - l.decoderNs) / 1e3 / l.calls) + " / " +
                                    fmt("%.1f us", double(l.decoderNs) / 1e3 / l.calls),
                                "", "", "", ""});
        // Rules that match nothing against none, same build, same rounds. Rounds of identical configurations
        // differ by several percent here, so within 10% counts as "as fast as without rules".
        const Lane *ruledLane = nullptr;
        for (const Lane &l : lanes)
            if (l.name.find("rule") != std::string::npos) ruledLane = &l;
        if (nowLane && ruledLane && nowLane->calls && ruledLane->calls) {
            auto sameRow = [&](const std::string &what, double mine, double base, const char *unit) {
                rows.push_back({"  a stream rule matching nothing / no rules, " + what,
                                fmt("%.1f ", mine) + unit, "no rules " + fmt("%.1f ", base) + unit,
                                fmt("%.2f", mine / base), "<= 1.10", mine / base <= 1.10 ? "met" : "missed"});
            };
            sameRow("p50 overhead", median(ruledLane->us) - median(lanes[0].us),
                    median(nowLane->us) - median(lanes[0].us), "us");
            sameRow("relay + decoder CPU per call", double(ruledLane->relayNs) / 1e3 / ruledLane->calls,
                    double(nowLane->relayNs) / 1e3 / nowLane->calls, "us");
        }
        for (const Lane &l : lanes)
            if (l.capturePid > 0 && l.calls)
                rows.push_back({"  " + l.name + " context switches of relay I/O + decoder threads per call",
                                fmt("%.2f", double(l.relaySwitches) / l.calls), "", "", "", ""});
        for (const Lane &l : lanes)
            if (l.processNs > 0 && l.calls && l.leanPid <= 0)
                rows.push_back(
                    {"  " + l.name +
                         (l.capturePid > 0 ? " CPU of the whole rpcscope-cli process per call"
                                           : " CPU of its connection's process per call (10 ms ticks)"),
                     fmt("%.1f us", double(l.processNs) / 1e3 / l.calls), "", "", "", ""});
        for (const Lane &l : lanes)
            if (l.failures) notes.push_back(l.name + ": " + std::to_string(l.failures) + " calls failed");
    }

    // ---- 2. wire times against dumpcap, both cores busy ----
    {
        const int tsCalls = quick ? 500 : 1500;
        WireTimesRun run;
        const bool started = measureWireTimes(
            serverPort, work + "/wire.pcapng", {},
            [&](std::uint16_t pr, std::uint16_t pk) {
                progress("wire times: %d rounds x %d calls x 2 configurations, two spinning processes",
                         rounds, tsCalls);
                for (int r = 0; r < rounds; ++r)
                    for (int k = 0; k < 2; ++k) {
                        const bool kernel = (k + r) % 2 == 1;
                        spawnClient(kernel ? pk : pr, tsCalls, 50);
                    }
            },
            {}, &run, &error);
        if (!started) {
            std::fprintf(stderr, "rpcscope-userbench: relay: %s\n", error.c_str());
            return 1;
        }
        reportWireTimes(run, "", "relay connections", &rows, &notes);
    }

    std::error_code ignored;
    std::filesystem::remove_all(work, ignored);
    std::printf("rpcscope-userbench%s: %ld s, %ld cores, load average %s before, %s after\n",
                quick ? " --quick" : "", long((steadyNowNs() - runStart) / 1'000'000'000),
                sysconf(_SC_NPROCESSORS_ONLN), loadBefore.c_str(), loadAverage().c_str());
    printTable(rows);
    for (const std::string &n : notes)
        std::printf("- %s\n", n.c_str());
    return 0;
}
