// rpcscope-hostilebench (scripts/bench.sh --hostile): rpcscope-cli capture under each hostile flood, with
// --keep 16 and --keep 256, in front of a real grpc++ server (the lab's, in this process).
//
// For every flood and budget it prints the capture process's peak RSS (VmHWM), the memory its progress
// lines report (the largest), that figure against the peak RSS minus the empty process's (an empty capture's
// peak RSS, measured in the same run by a capture that relayed the quiet round's calls and no flood, without
// what it reported holding), and the p50 of normal unary calls
// through the same proxy during the flood against the p50 of the same calls just before it (quiet), so every
// flood run is interleaved with its own quiet round. The floods come from tests/common/hostileflood.h, each
// bounded by a count and a time.

#include "benchtable.h"
#include "benchtext.h"
#include "captureprocess.h"
#include "clock.h"
#include "hostileflood.h"
#include "hostileserver.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "stats.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace rpcscope::bench;
using namespace std::chrono_literals;

namespace {

struct Plan
{
    bool quick = false;
    bool verbose = false; // every capture's stderr (its progress lines) to stderr
    bool direct = false;  // floods and calls straight at the server, no capture: what the server alone does
    std::string cli;
    double floodSeconds = 10;
    double quietSeconds = 3;
    std::uint64_t count = 0; // 0: each flood's own bound (below)
    std::vector<hostile::Flood> floods = hostile::allFloods();
    std::vector<int> keeps = {16, 256};
};

// Each flood at the suite's rate for the flood's time, or --count spread over it.
hostile::FloodLimits limitsFor(const Plan &plan, hostile::Flood flood)
{
    const std::uint64_t count =
        plan.count ? plan.count : std::uint64_t(hostile::suiteRate(flood) * plan.floodSeconds);
    return hostile::paced(count, plan.floodSeconds);
}

using benchtext::progress;

using benchtext::fmt;

using benchtext::loadAverage;

std::string mb(double bytes)
{
    return fmt("%.1f MB", bytes / (1 << 20));
}

// Normal unary calls through the proxy on one connection, one every 10 ms (at once when a call took longer),
// until `stop` or untilNs; their latencies in microseconds.
struct Caller
{
    static constexpr std::int64_t kIntervalNs = 10'000'000;
    lab::LabClient client;
    int next = 0;
    int failures = 0;
    std::string firstFailure;

    explicit Caller(std::uint16_t port) : client("127.0.0.1:" + std::to_string(port), std::string()) {}

    std::vector<double> callUntil(const std::atomic<bool> &stop, std::int64_t untilNs = 0)
    {
        lab::CallRequest req;
        req.set_payload(std::string(100, 'q'));
        req.set_response_size(100);
        std::vector<double> us;
        std::int64_t due = steadyNowNs();
        while (!stop && (!untilNs || steadyNowNs() < untilNs)) {
            if (const std::int64_t wait = due - steadyNowNs(); wait > 0)
                std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
            due = std::max(due + kIntervalNs, steadyNowNs());
            req.set_call_id("hostile-bench-" + std::to_string(next++));
            const lab::CallResult r = client.call(req, 30s);
            if (r.code != 0) {
                if (!failures++) firstFailure = "code " + std::to_string(r.code) + ": " + r.message;
                continue;
            }
            us.push_back(double(r.endNs - r.startNs) / 1e3);
        }
        return us;
    }
};

struct Outcome
{
    long peakRssKb = 0;
    double maxReported = 0;
    double quietP50 = 0, floodP50 = 0;
    double floodMax = 0; // the slowest call that succeeded during the flood
    size_t quietCalls = 0, floodCalls = 0;
    int failures = 0;
    std::string firstFailure;
    std::string flood;
    std::string exit;
    bool clean = false;
    std::uintmax_t fileBytes = 0;
    std::string problem; // a capture that would not start, say
};

Outcome runOne(const Plan &plan, const hostile::Flood *flood, int keepMb, const std::string &dir)
{
    Outcome o;
    lab::LabServer server;
    server.setOptions(hostile::serverOptions());
    std::string error;
    if (!server.start(&error)) {
        o.problem = "lab server: " + error;
        return o;
    }
    const std::string out = dir + "/" + (flood ? hostile::floodName(*flood) : "empty") + "-" +
                            std::to_string(keepMb) + ".rpcscope";
    hostile::CaptureProcess capture;
    if (!plan.direct && !capture.start(plan.cli, std::uint16_t(server.port()), out,
                                       {"--keep", std::to_string(keepMb)}, &error)) {
        o.problem = error;
        return o;
    }
    const std::uint16_t target = plan.direct ? std::uint16_t(server.port()) : capture.listenPort();
    if (flood) {
        Caller caller(target);
        std::atomic<bool> stop{false};
        caller.callUntil(stop, steadyNowNs() + 300'000'000); // connection and warm-up
        caller.failures = 0;
        const std::vector<double> quiet =
            caller.callUntil(stop, steadyNowNs() + std::int64_t(plan.quietSeconds * 1e9));
        std::vector<double> during;
        std::thread calls([&] { during = caller.callUntil(stop); });
        hostile::FloodClient client;
        const hostile::FloodResult fr = client.run(*flood, target, limitsFor(plan, *flood));
        stop = true;
        calls.join();
        // The model may still be taking in what the flood sent: two more progress lines.
        if (!plan.direct) capture.waitProgressLines(capture.progressLines() + 2, 10000);
        client.close();
        o.quietP50 = median(quiet);
        o.floodP50 = median(during);
        o.floodMax = percentile(during, 100);
        o.quietCalls = quiet.size();
        o.floodCalls = during.size();
        o.failures = caller.failures;
        o.firstFailure = caller.firstFailure;
        o.flood = fr.summary();
    } else {
        // The same warm-up and quiet round as every flood run, without the flood: the process has then run
        // the relay's, the decoder's and the file's code, whose pages (about 1.5 MB of RSS, file-backed) are
        // no memory the capture holds, and RSS minus this is what the flood alone added.
        Caller caller(capture.listenPort());
        std::atomic<bool> stop{false};
        caller.callUntil(stop, steadyNowNs() + 300'000'000);
        caller.callUntil(stop, steadyNowNs() + std::int64_t(plan.quietSeconds * 1e9));
        capture.waitProgressLines(capture.progressLines() + 2, 10000);
    }
    if (plan.direct) {
        o.exit = "none (direct)";
        o.clean = true;
        server.stop();
        return o;
    }
    o.maxReported = capture.maxReported();
    const hostile::CaptureProcess::Exit e = capture.stop(120000);
    o.peakRssKb = e.peakRssKb;
    o.exit = e.describe();
    o.clean = e.exited && e.code == 0;
    if (!o.clean) o.exit += "; stderr: " + capture.stderrText();
    if (plan.verbose) std::fprintf(stderr, "%s", capture.stderrText().c_str());
    std::error_code ec;
    o.fileBytes = std::filesystem::file_size(out, ec);
    std::filesystem::remove(out, ec);
    server.stop();
    return o;
}

int usage(FILE *to)
{
    std::fprintf(
        to,
        "usage: rpcscope-hostilebench --cli PATH [--quick] [--seconds S] [--count N] [--flood NAME,...]\n"
        "                             [--keep MB,...] [--verbose] [--direct]\n"
        "  rpcscope-cli capture under each hostile flood, in front of the lab's grpc++ server: peak RSS,\n"
        "  the memory it reports, and a normal call's p50 during the flood against a quiet round.\n"
        "  --cli PATH     the rpcscope-cli to measure (default: $RPCSCOPE_CLI)\n"
        "  --quick        3 s floods and 1 s quiet rounds (default: 10 s and 3 s)\n"
        "  --seconds S    each flood's time; its count is its rate (hostileflood.h) times that\n"
        "  --count N      each flood's count (frames or streams), spread over its time\n"
        "  --flood LIST   only these floods: ping, settings, continuation, hpack-heavy, rapid-reset,\n"
        "                 open-streams\n"
        "  --keep LIST    the --keep budgets to run (default: 16,256)\n"
        "  --verbose      every capture's progress lines and messages on stderr\n"
        "  --direct       no capture: floods and calls straight at the server, to tell what the server\n"
        "                 alone does under a flood (p50 rows only)\n");
    return to == stdout ? 0 : 2;
}

std::vector<std::string> splitList(const std::string &s)
{
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        const size_t comma = s.find(',', start);
        parts.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) return parts;
        start = comma + 1;
    }
}

} // namespace

int main(int argc, char **argv)
{
    Plan plan;
    if (const char *env = std::getenv("RPCSCOPE_CLI")) plan.cli = env;
    bool secondsGiven = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](std::string *out) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "rpcscope-hostilebench: %s needs a value\n", a.c_str());
                return false;
            }
            *out = argv[++i];
            return true;
        };
        std::string v;
        if (a == "--quick") {
            plan.quick = true;
        } else if (a == "--verbose") {
            plan.verbose = true;
        } else if (a == "--direct") {
            plan.direct = true;
        } else if (a == "--help" || a == "-h") {
            return usage(stdout);
        } else if (a == "--cli") {
            if (!value(&plan.cli)) return 2;
        } else if (a == "--seconds") {
            if (!value(&v)) return 2;
            char *end = nullptr;
            plan.floodSeconds = std::strtod(v.c_str(), &end);
            if (*end || !(plan.floodSeconds > 0)) {
                std::fprintf(stderr, "rpcscope-hostilebench: --seconds needs a positive number, got '%s'\n",
                             v.c_str());
                return 2;
            }
            secondsGiven = true;
        } else if (a == "--count") {
            if (!value(&v)) return 2;
            char *end = nullptr;
            plan.count = std::strtoull(v.c_str(), &end, 10);
            if (*end || !plan.count) {
                std::fprintf(stderr, "rpcscope-hostilebench: --count needs a positive number, got '%s'\n",
                             v.c_str());
                return 2;
            }
        } else if (a == "--flood") {
            if (!value(&v)) return 2;
            plan.floods.clear();
            for (const std::string &name : splitList(v)) {
                hostile::Flood f;
                if (!hostile::floodFromName(name, &f)) {
                    std::fprintf(stderr, "rpcscope-hostilebench: unknown flood '%s' (try --help)\n",
                                 name.c_str());
                    return 2;
                }
                plan.floods.push_back(f);
            }
        } else if (a == "--keep") {
            if (!value(&v)) return 2;
            plan.keeps.clear();
            for (const std::string &k : splitList(v)) {
                char *end = nullptr;
                const long mbs = std::strtol(k.c_str(), &end, 10);
                if (*end || mbs <= 0) {
                    std::fprintf(stderr, "rpcscope-hostilebench: --keep needs megabytes above 0, got '%s'\n",
                                 k.c_str());
                    return 2;
                }
                plan.keeps.push_back(int(mbs));
            }
        } else {
            std::fprintf(stderr, "rpcscope-hostilebench: unknown argument '%s' (try --help)\n", a.c_str());
            return 2;
        }
    }
    if (plan.quick && !secondsGiven) {
        plan.floodSeconds = 3;
        plan.quietSeconds = 1;
    }
    if (plan.cli.empty() || access(plan.cli.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "rpcscope-hostilebench: no rpcscope-cli to run ('%s'); pass --cli PATH\n",
                     plan.cli.c_str());
        return 2;
    }
    char dirTemplate[] = "/tmp/rpcscope-hostilebench-XXXXXX";
    const char *dirPath = mkdtemp(dirTemplate);
    if (!dirPath) {
        std::fprintf(stderr, "rpcscope-hostilebench: cannot make a directory for the captures: %s\n",
                     std::strerror(errno));
        return 1;
    }
    const std::string dir = dirPath;

    const std::int64_t runStart = steadyNowNs();
    const std::string loadBefore = loadAverage();
    std::vector<Row> rows;
    std::vector<std::string> notes;

    if (plan.direct) plan.keeps = {0}; // no capture, no budget
    if (!plan.direct) progress("empty capture (the quiet round's calls, no flood)");
    const Outcome empty = plan.direct ? Outcome{} : runOne(plan, nullptr, plan.keeps.front(), dir);
    if (!empty.problem.empty()) {
        std::fprintf(stderr, "rpcscope-hostilebench: %s\n", empty.problem.c_str());
        return 1;
    }
    const double emptyBytes = double(empty.peakRssKb) * 1024;
    // The empty process: the empty capture without what it reported holding (the quiet round's calls), which
    // every flood run holds and reports as well. Its RSS alone as the baseline took those calls off one side
    // only, and read a figure that told the truth as 1.6x over it.
    const double emptyProcess = std::max(0.0, emptyBytes - empty.maxReported);
    if (!plan.direct) {
        rows.push_back({"empty capture (quiet calls, no flood), peak RSS", mb(emptyBytes), "", "", "", ""});
        rows.push_back({"  of which it reported holding (the empty process: the rest)", mb(empty.maxReported),
                        mb(emptyProcess), "", "", ""});
    }

    for (hostile::Flood flood : plan.floods) {
        // Under a rapid reset the grpc++ server itself lets a call hang now and then, proxy or not: the same
        // flood straight at the server, beside the proxy's rows, tells the server's share from the proxy's,
        // and a proxy run is not blamed for failures the server has alone.
        Outcome direct;
        const bool withDirect = !plan.direct && flood == hostile::Flood::RapidReset;
        if (withDirect) {
            Plan straight = plan;
            straight.direct = true;
            const std::string name = std::string(hostile::floodName(flood)) + ", direct (no proxy)";
            progress("%s: %.0f s quiet, then %.0f s of flood", name.c_str(), plan.quietSeconds,
                     plan.floodSeconds);
            direct = runOne(straight, &flood, 0, dir);
            if (!direct.problem.empty()) {
                notes.push_back(name + ": " + direct.problem);
            } else {
                const double p50 = direct.quietP50 > 0 ? direct.floodP50 / direct.quietP50 : 0;
                rows.push_back({name + ": unary p50 during the flood (" + std::to_string(direct.floodCalls) +
                                    " calls" +
                                    (direct.failures ? ", " + std::to_string(direct.failures) + " failed"
                                                     : std::string()) +
                                    ")",
                                fmt("%.0f us", direct.floodP50),
                                "quiet " + fmt("%.0f us", direct.quietP50) + " (" +
                                    std::to_string(direct.quietCalls) + ")",
                                fmt("%.2f", p50), "the server alone", ""});
                notes.push_back(name + ": flood " + direct.flood + "; slowest call during it " +
                                fmt("%.0f ms", direct.floodMax / 1e3) +
                                (direct.failures
                                     ? "; " + std::to_string(direct.failures) +
                                           " unary calls failed, the first with " + direct.firstFailure
                                     : std::string()));
            }
        }
        for (int keep : plan.keeps) {
            const std::string name = std::string(hostile::floodName(flood)) +
                                     (plan.direct ? ", direct" : ", --keep " + std::to_string(keep));
            progress("%s: %.0f s quiet, then %.0f s of flood", name.c_str(), plan.quietSeconds,
                     plan.floodSeconds);
            const Outcome o = runOne(plan, &flood, keep, dir);
            if (!o.problem.empty()) {
                notes.push_back(name + ": " + o.problem);
                continue;
            }
            const double rss = double(o.peakRssKb) * 1024;
            const double goal = keep == 16 ? 160 : keep == 256 ? 400 : 0;
            if (!plan.direct)
                rows.push_back({name + ": peak RSS", mb(rss), "empty " + mb(emptyBytes), "",
                                goal ? fmt("<= %.0f MB", goal) : "",
                                goal ? (rss <= goal * (1 << 20) ? "met" : "missed") : ""});
            const double grown = rss - emptyProcess;
            const double ratio = grown > 0 ? o.maxReported / grown : 0;
            // Under 2 MB both ways, RSS's own noise (a thread's stack touched, the allocator's next arena
            // page) is as large as the figure: the difference is judged instead, within 2 MB.
            const bool tiny = o.maxReported < 2.0 * (1 << 20) && grown < 2.0 * (1 << 20);
            const double diff = o.maxReported - grown;
            if (!plan.direct)
                rows.push_back({name + ": reported in memory (max)", mb(o.maxReported),
                                "RSS - empty process " + mb(grown) + ", diff " + (diff >= 0 ? "+" : "-") +
                                    mb(std::abs(diff)),
                                fmt("%.2f", ratio), tiny ? "|diff| < 2 MB" : "0.67-1.50",
                                (tiny ? std::abs(diff) < 2.0 * (1 << 20) : ratio >= 1 / 1.5 && ratio <= 1.5)
                                    ? "met"
                                    : "missed"});
            const double p50 = o.quietP50 > 0 ? o.floodP50 / o.quietP50 : 0;
            // Failures the server has without the proxy too are the server's: the proxy is judged on its p50.
            const bool serverFails = withDirect && direct.problem.empty() && direct.failures > 0;
            const bool p50Met = o.floodCalls && p50 <= 2;
            rows.push_back(
                {name + ": unary p50 during the flood (" + std::to_string(o.floodCalls) + " calls" +
                     (o.failures ? ", " + std::to_string(o.failures) + " failed" : std::string()) + ")",
                 fmt("%.0f us", o.floodP50),
                 "quiet " + fmt("%.0f us", o.quietP50) + " (" + std::to_string(o.quietCalls) + ")",
                 fmt("%.2f", p50), "<= 2.00",
                 !p50Met       ? "missed"
                 : !o.failures ? "met"
                 : serverFails ? "met (direct fails too)"
                               : "missed"});
            notes.push_back(name + ": flood " + o.flood + "; slowest call during it " +
                            fmt("%.0f ms", o.floodMax / 1e3) + "; capture " + o.exit + "; file " +
                            mb(double(o.fileBytes)) +
                            (o.failures ? "; " + std::to_string(o.failures) +
                                              " unary calls failed, the first with " + o.firstFailure
                                        : std::string()));
        }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);

    std::printf("rpcscope-hostilebench%s: %ld s, %ld cores, load average %s before, %s after\n",
                plan.quick ? " --quick" : "", long((steadyNowNs() - runStart) / 1'000'000'000),
                sysconf(_SC_NPROCESSORS_ONLN), loadBefore.c_str(), loadAverage().c_str());
    std::printf("rpcscope-cli: %s\n", plan.cli.c_str());
    printTable(rows);
    for (const std::string &n : notes)
        std::printf("- %s\n", n.c_str());
    return 0;
}
