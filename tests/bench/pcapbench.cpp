// rpcscope-pcapbench (scripts/bench.sh --pcap): what importing a large pcapng costs. It records real grpc++
// traffic (the lab server, called through the relay), writes it as pcapng with the project's own writer,
// repeats its packets (each copy on new client ports, later in time) up to about 800 MB (--quick: 100 MB),
// and converts that file with `rpcscope-cli convert` to .rpcscope (the import), to .json and back to
// .pcapng, then merges it with the seed (`rpcscope-cli merge`) to .rpcscope and to .pcapng. For each it
// prints the child's peak RSS (its VmHWM) against the file's size, the same less an empty run of the CLI
// (`rpcscope-cli --help`, measured in the same run: what the process costs before it reads anything), and
// its time against a plain read of the same file. Every generated file is deleted at the end.
//
//   rpcscope-pcapbench [--quick] [--size MB] [--cli PATH]... [--dir DIR] [--write-only FILE]
//
// --cli may be given more than once (say, an older build next to this one) to compare them on one file.
// --write-only FILE only writes the pcapng there and keeps it (to measure another consumer, the GUI's Open).

#include "clock.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "pcapngwriter.h"
#include "relay.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace rpcscope;

namespace {

struct Plan
{
    std::int64_t targetBytes = 800ll << 20;
    std::vector<std::string> clis;
    std::string dir;
    std::string writeOnly;
};

std::uint32_t get32(const std::string &s, size_t at)
{
    std::uint32_t v;
    std::memcpy(&v, s.data() + at, 4);
    return v;
}

void put32(std::string &s, size_t at, std::uint32_t v)
{
    std::memcpy(s.data() + at, &v, 4);
}

std::uint16_t be16(const std::string &s, size_t at)
{
    return std::uint16_t(std::uint8_t(s[at]) << 8 | std::uint8_t(s[at + 1]));
}

void putBe16(std::string &s, size_t at, std::uint16_t v)
{
    s[at] = char(v >> 8);
    s[at + 1] = char(v);
}

// The seed: grpc++ unary calls of a few KB (what a busy service carries: many small calls, so many events
// per MB) and some larger ones, on a few connections, recorded by the relay and written as pcapng.
bool recordSeed(std::string *pcapng, std::string *error)
{
    lab::LabServer server;
    if (!server.start(error)) return false;
    std::mutex mu;
    CaptureData data;
    data.info.hasOrigin = true;
    data.info.originNs = steadyNowNs();
    data.info.originWallNs = wallNowNs();
    Relay relay;
    if (!relay.start(
            {"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())},
            [&](EventBatch &&b) {
                std::lock_guard lk(mu);
                data.batches.push_back(std::move(b));
            },
            error))
        return false;
    const std::string target = "127.0.0.1:" + std::to_string(relay.listenAddress().port);
    for (int conn = 0; conn < 4; ++conn) {
        // A channel argument of its own, so each client gets its own connection.
        lab::LabClient client(target,
                              "{\"loadBalancingConfig\":[{\"pick_first\":{}}],\"methodConfig\":[{\"name\":"
                              "[{\"service\":\"rpcscope.lab.Lab\"}],\"timeout\":\"" +
                                  std::to_string(10 + conn) + "s\"}]}");
        for (int i = 0; i < 500; ++i) {
            lab::CallRequest r;
            r.set_call_id("seed-" + std::to_string(conn) + "-" + std::to_string(i));
            const bool large = i % 50 == 0;
            r.set_payload(std::string(large ? 64 * 1024 : 600 + i % 400, 'q'));
            r.set_response_size(large ? 128 * 1024 : 1500 + i % 1000);
            if (i % 20 == 7) { // a failure now and then
                r.set_fail_first_n(1);
                r.set_fail_code(14);
            }
            client.call(r, std::chrono::seconds(10));
        }
    }
    relay.stop();
    std::lock_guard lk(mu);
    *pcapng = captureToPcapng(data);
    if (pcapng->size() < 64) {
        *error = "the recorded capture is empty";
        return false;
    }
    return true;
}

// Writes the seed's packets again and again (the section and interface header once) until the file holds
// `target` bytes: copy k moves every timestamp k spans later and the clients to other ports, so each copy is
// a set of new connections. Returns the file's size, 0 on failure.
std::int64_t writeRepeated(const std::string &seed, const std::string &path, std::int64_t target, int *copies,
                           std::string *error)
{
    // pcapng blocks: type, total length, body, total length. The writer emits SHB, IDB, then EPBs (type 6).
    size_t at = 0;
    std::string head;
    std::vector<std::string> packets;
    std::uint64_t first = UINT64_MAX, last = 0;
    std::uint16_t serverPort = 0;
    while (at + 12 <= seed.size()) {
        const std::uint32_t type = get32(seed, at), len = get32(seed, at + 4);
        if (len < 12 || at + len > seed.size()) break;
        std::string block = seed.substr(at, len);
        at += len;
        if (type != 6) {
            if (packets.empty()) head += block;
            continue;
        }
        const std::uint64_t ts = std::uint64_t(get32(block, 12)) << 32 | get32(block, 16);
        first = std::min(first, ts);
        last = std::max(last, ts);
        // Ethernet, IPv4 (the writer's), TCP: a bare SYN names the server port.
        const size_t ip = 28 + 14;
        if (block.size() > ip + 40) {
            const size_t tcp = ip + size_t(std::uint8_t(block[ip]) & 0x0F) * 4;
            if ((std::uint8_t(block[tcp + 13]) & 0x12) == 0x02) serverPort = be16(block, tcp + 2);
        }
        packets.push_back(std::move(block));
    }
    if (packets.empty() || !serverPort) {
        *error = "the recorded pcapng holds no TCP connection start";
        return 0;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        *error = "cannot write " + path + ": " + std::strerror(errno);
        return 0;
    }
    auto write = [&](const std::string &s) { return ::write(fd, s.data(), s.size()) == ssize_t(s.size()); };
    bool ok = write(head);
    std::int64_t size = std::int64_t(head.size());
    const std::uint64_t span = last - first + 1'000'000'000; // ns (the writer's resolution), a second apart
    int k = 0;
    std::string copy;
    for (; ok && size < target; ++k) {
        copy.clear();
        for (std::string p : packets) {
            const std::uint64_t ts =
                (std::uint64_t(get32(p, 12)) << 32 | get32(p, 16)) + std::uint64_t(k) * span;
            put32(p, 12, std::uint32_t(ts >> 32));
            put32(p, 16, std::uint32_t(ts));
            const size_t ip = 28 + 14;
            if (p.size() > ip + 40) {
                const size_t tcp = ip + size_t(std::uint8_t(p[ip]) & 0x0F) * 4;
                const size_t client = be16(p, tcp) == serverPort ? tcp + 2 : tcp;
                putBe16(p, client, std::uint16_t(1024 + (be16(p, client) + 7 * k) % 60000));
            }
            copy += p;
        }
        ok = write(copy);
        size += std::int64_t(copy.size());
    }
    if (::close(fd) != 0) ok = false;
    if (!ok) {
        *error = "cannot write " + path + ": " + std::strerror(errno);
        return 0;
    }
    *copies = k;
    return size;
}

double seconds(std::int64_t ns)
{
    return double(ns) / 1e9;
}

// A plain read of the file, 1 MiB at a time: the floor under any import of it.
std::int64_t plainReadNs(const std::string &path)
{
    const std::int64_t t0 = steadyNowNs();
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return -1;
    std::vector<char> buf(1 << 20);
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
    return steadyNowNs() - t0;
}

struct Run
{
    bool ok = false;
    long maxRssKb = 0;
    std::int64_t ns = 0;
};

// The child's own peak RSS: VmHWM of its memory after exec, read from /proc every 10 ms while it runs (it
// only grows). wait4's ru_maxrss would not do: it counts what the forked child held of this process before
// exec.
long vmHwmKb(pid_t pid)
{
    std::FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
    if (!f) return 0;
    char line[256];
    long kb = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::atol(line + 6);
    std::fclose(f);
    return kb;
}

Run runChild(const std::vector<std::string> &argv)
{
    Run r;
    // Closed by the child's exec: until then /proc shows the forked copy of this process, not the CLI.
    int execed[2];
    if (pipe2(execed, O_CLOEXEC) != 0) return r;
    const std::int64_t t0 = steadyNowNs();
    const pid_t pid = fork();
    if (pid == 0) {
        ::close(execed[0]);
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, STDOUT_FILENO);
        std::vector<char *> args;
        for (const std::string &a : argv)
            args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    ::close(execed[1]);
    char byte;
    while (pid > 0 && ::read(execed[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(execed[0]);
    if (pid < 0) return r;
    int status = 0;
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0) return r;
        r.maxRssKb = std::max(r.maxRssKb, vmHwmKb(pid));
        usleep(10'000);
    }
    r.ns = steadyNowNs() - t0;
    r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return r;
}

std::int64_t fileSize(const std::string &path)
{
    struct stat st
    {
    };
    return ::stat(path.c_str(), &st) == 0 ? std::int64_t(st.st_size) : -1;
}

} // namespace

int main(int argc, char **argv)
{
    Plan plan;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") {
            plan.targetBytes = 100ll << 20;
        } else if (a == "--size" && i + 1 < argc) {
            plan.targetBytes = std::atoll(argv[++i]) << 20;
        } else if (a == "--cli" && i + 1 < argc) {
            plan.clis.push_back(argv[++i]);
        } else if (a == "--dir" && i + 1 < argc) {
            plan.dir = argv[++i];
        } else if (a == "--write-only" && i + 1 < argc) {
            plan.writeOnly = argv[++i];
        } else {
            std::fprintf(stderr,
                         "usage: %s [--quick] [--size MB] [--cli PATH]... [--dir DIR] [--write-only FILE]\n",
                         argv[0]);
            return 2;
        }
    }
    if (plan.clis.empty()) plan.clis.push_back(RPCSCOPE_CLI);
    if (plan.targetBytes <= 0) {
        std::fprintf(stderr, "--size must be a positive number of MB\n");
        return 2;
    }
    std::string dir = plan.dir;
    if (dir.empty()) {
        std::error_code ec; // the system's temporary directory (TMPDIR when set)
        std::string templ = (std::filesystem::temp_directory_path(ec) / "rpcscope-pcapbench-XXXXXX").string();
        if (!mkdtemp(templ.data())) {
            std::fprintf(stderr, "cannot make a temporary directory: %s\n", std::strerror(errno));
            return 1;
        }
        dir = templ;
    }
    const std::string seedPath = dir + "/seed.pcapng";
    const std::string bigPath = plan.writeOnly.empty() ? dir + "/big.pcapng" : plan.writeOnly;
    std::vector<std::string> outputs;
    auto cleanUp = [&] {
        for (const std::string &p : outputs)
            ::unlink(p.c_str());
        ::unlink(seedPath.c_str());
        ::unlink(bigPath.c_str());
        if (plan.dir.empty()) ::rmdir(dir.c_str());
    };

    std::string seed, error;
    std::fprintf(stderr, "recording the seed traffic...\n");
    if (!recordSeed(&seed, &error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        cleanUp();
        return 1;
    }
    {
        const int fd = ::open(seedPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const bool ok = fd >= 0 && ::write(fd, seed.data(), seed.size()) == ssize_t(seed.size());
        if (fd >= 0) ::close(fd);
        if (!ok) {
            std::fprintf(stderr, "cannot write %s\n", seedPath.c_str());
            cleanUp();
            return 1;
        }
    }
    int copies = 0;
    std::fprintf(stderr, "writing %lld MB of pcapng...\n", static_cast<long long>(plan.targetBytes >> 20));
    const std::int64_t size = writeRepeated(seed, bigPath, plan.targetBytes, &copies, &error);
    if (!size) {
        std::fprintf(stderr, "%s\n", error.c_str());
        cleanUp();
        return 1;
    }
    const double mb = double(size) / (1 << 20);
    if (!plan.writeOnly.empty()) {
        std::printf("wrote %s: %.0f MB pcapng (%d copies of %.1f MB of recorded grpc++ traffic)\n",
                    bigPath.c_str(), mb, copies, double(seed.size()) / (1 << 20));
        ::unlink(seedPath.c_str());
        if (plan.dir.empty()) ::rmdir(dir.c_str());
        return 0;
    }
    std::printf("pcap import: %.0f MB pcapng (%d copies of %.1f MB of recorded grpc++ traffic)\n", mb, copies,
                double(seed.size()) / (1 << 20));
    plainReadNs(bigPath); // the same page-cache state for every run below
    const std::int64_t readNs = plainReadNs(bigPath);
    std::printf("plain read of the file: %.2f s\n\n", seconds(readNs));
    // The empty process: what the CLI's libraries cost before it reads a byte.
    long baselineKb = 0;
    for (int i = 0; i < 3; ++i) {
        const Run r = runChild({plan.clis.front(), "--help"});
        baselineKb = baselineKb ? std::min(baselineKb, r.maxRssKb) : r.maxRssKb;
    }
    const double baseMb = double(baselineKb) / 1024;
    std::printf("empty process (rpcscope-cli --help): %.0f MB peak RSS\n\n", baseMb);
    std::printf("%-40s %-26s %9s %10s %10s %9s %9s %10s\n", "rpcscope-cli", "step", "peak RSS", "less empty",
                "/file", "time", "vs read", "output");
    bool allOk = true;
    struct Step
    {
        const char *name; // as printed
        bool merge;
        const char *ext;
    };
    static const Step kSteps[] = {{"convert (import)", false, "rpcscope"},
                                  {"convert", false, "json"},
                                  {"convert", false, "pcapng"},
                                  {"merge +seed", true, "rpcscope"},
                                  {"merge +seed", true, "pcapng"}};
    for (const std::string &cli : plan.clis) {
        for (const Step &step : kSteps) {
            for (const bool small : {true, false}) {
                const std::string in = small ? seedPath : bigPath;
                const std::string out = dir + "/out." + step.ext;
                outputs.push_back(out);
                const Run r = step.merge ? runChild({cli, "merge", in, seedPath, "--out", out})
                                         : runChild({cli, "convert", in, out});
                const std::int64_t outSize = fileSize(out);
                ::unlink(out.c_str());
                const double rssMb = double(r.maxRssKb) / 1024;
                const double lessEmpty = rssMb - baseMb;
                const std::string name = cli.size() > 36 ? "..." + cli.substr(cli.size() - 33) : cli;
                const std::string what = std::string(step.name) + " " + step.ext;
                if (small) {
                    std::printf(
                        "%-40s %-26s %6.0f MB %7.0f MB %10s %7.2f s %9s %7.1f MB  (one copy: the floor)%s\n",
                        name.c_str(), what.c_str(), rssMb, lessEmpty, "", seconds(r.ns), "",
                        double(outSize) / (1 << 20), r.ok ? "" : "  FAILED");
                } else {
                    std::printf("%-40s %-26s %6.0f MB %7.0f MB %9.3fx %7.2f s %8.1fx %7.1f MB%s\n",
                                name.c_str(), what.c_str(), rssMb, lessEmpty, lessEmpty / mb, seconds(r.ns),
                                double(r.ns) / double(std::max<std::int64_t>(1, readNs)),
                                double(outSize) / (1 << 20), r.ok ? "" : "  FAILED");
                }
                std::fflush(stdout);
                allOk = allOk && r.ok;
            }
        }
    }
    std::printf(
        "\ngoal: an 800 MB pcapng imports within 600 MB peak RSS; convert to pcapng and merge hold what "
        "the import holds, not the file\n");
    cleanUp();
    return allOk ? 0 : 1;
}
