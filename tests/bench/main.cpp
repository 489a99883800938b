// rpcscope-bench: what the capture proxy costs, measured against baselines taken in the same run.
//
//   1. unary latency: 100-byte unary RPCs direct, through socat, and through rpcscope::Relay (decoder
//   running,
//      batches applied to a TimelineStore on a thread of their own), interleaved in rounds;
//   2. server-streaming throughput with 1 MiB messages: direct, socat and rpcscope, rotating;
//   3. decoder throughput on one core over recorded grpc++ bytes (DATA-heavy and HEADERS-heavy);
//   4. TimelineStore memory per recorded frame and per call.
//
// The machine is shared and noisy, so every comparison alternates its configurations round by round and the
// ratios compare numbers from the same run. Everything runs on loopback with bounded loops.
//
// What limits the decoder (perf record of `rpcscope-bench --decoder-only`, samples of the HEADERS-heavy
// replay only, decoder as of this commit; the benchmark also prints its own split for every run):
// - HEADERS-heavy (unary calls, ~8 frames and 3 header blocks per call; ~250 ns a frame, ~4 M frames/s):
//   libc 35% of samples (malloc/free/memmove: a std::string per header name and value, the header vector
//   and the block buffer), libnghttp2 21% (HPACK inflate with Huffman decoding), the decoder's own code 42%
//   (H2Decoder::inflateBlock 10%, constructing and moving a WireEvent - a ~300-byte value with strings, a
//   vector and GrpcFields - for every frame, block and message 5-10%, handleFrame/handleData, the per-stream
//   hash map, grpc field parsing). No single hot spot: the cost is allocation-heavy event values per frame.
// - DATA-heavy (grpc++ sends DATA frames of ~300 KB once the peer allows a 16 MiB frame size, so nearly
//   every frame spans several 64 KiB reads): memmove is 81% of samples, i.e. copying split frames into the
//   carry-over buffer, whose capacity is released after every frame so it also regrows by reallocation.
//   Payload bytes are otherwise never read, so the rate is bounded by memory bandwidth (~9-12 GB/s here).

#include "benchtable.h"
#include "benchtext.h"
#include "capture.pb.h"
#include "capturecodec.h"
#include "clock.h"
#include "decoderbench.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "plainproxy.h"
#include "relay.h"
#include "socatproxy.h"
#include "stats.h"
#include "storeconsumer.h"
#include "timelinestore.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <google/protobuf/arena.h>
#include <malloc.h>
#include <memory>
#include <optional>
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
    bool decoderOnly = false;
    bool streamOnly = false;
    bool unaryOnly = false;
    int latencyRounds = 40;
    int callsPerRound = 1000;
    int warmupCalls = 300;
    int streamRounds = 8;
    int streamMessages = 256;
    int recordDataMessages = 64; // 1 MiB each
    int recordUnaryCalls = 20000;
    double decodeMinSeconds = 1.0;
    int decodeReps = 5;

    static Plan quickPlan()
    {
        Plan p;
        p.quick = true;
        p.latencyRounds = 10;
        p.callsPerRound = 500;
        p.warmupCalls = 100;
        p.streamRounds = 4;
        p.streamMessages = 128;
        p.recordDataMessages = 32;
        p.recordUnaryCalls = 8000;
        p.decodeMinSeconds = 0.3;
        p.decodeReps = 3;
        return p;
    }
};

using benchtext::progress;

using benchtext::loadAverage;

using benchtext::fmt;

// User + system CPU of this whole process so far.
double processCpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// ---- 1. unary latency ---------------------------------------------------------------------------------

struct Lane
{
    std::string name;
    std::unique_ptr<lab::LabClient> client;
    std::vector<double> us;       // every measured call, microseconds
    std::vector<double> roundP50; // p50 of each round
    int failures = 0;
    int next = 0;
    Relay *relay = nullptr; // rpcscope's lane: whose threads' CPU is counted
    double relayCpuNs = 0;  // the relay's threads over the measured rounds
    int measuredCalls = 0;

    void run(int calls, bool record)
    {
        const std::int64_t cpu0 = relay && record ? relay->threadCpuNs() : 0;
        lab::CallRequest req;
        req.set_payload(std::string(100, 'q'));
        req.set_response_size(100);
        std::vector<double> round;
        for (int i = 0; i < calls; ++i) {
            req.set_call_id(name + "-" + std::to_string(next++));
            const lab::CallResult r = client->call(req, 5s);
            if (r.code != 0) {
                ++failures;
                continue;
            }
            if (record) round.push_back(double(r.endNs - r.startNs) / 1e3);
        }
        if (record && !round.empty()) {
            roundP50.push_back(median(round));
            us.insert(us.end(), round.begin(), round.end());
        }
        if (relay && record) {
            relayCpuNs += double(relay->threadCpuNs() - cpu0);
            measuredCalls += calls;
        }
    }
};

std::string ratioWithSpread(double pooled, const std::vector<double> &num, const std::vector<double> &den)
{
    std::vector<double> r;
    for (size_t i = 0; i < num.size() && i < den.size(); ++i)
        r.push_back(num[i] / den[i]);
    if (r.empty()) return fmt("%.2f", pooled);
    return fmt("%.2f", pooled) + " (rounds " + fmt("%.2f", percentile(r, 0)) + "-" +
           fmt("%.2f", percentile(r, 100)) + ")";
}

// ---- memory ---------------------------------------------------------------------------------------------

size_t heapInUse()
{
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; // small chunks in arenas + mmapped large ones (big vectors)
}

size_t storeGrowth(const EventBatch &events, bool recordFrames, TimelineStore &store)
{
    store.setRecordFrames(recordFrames);
    const size_t before = heapInUse();
    // Applied in relay-sized batches, as the app does.
    for (size_t i = 0; i < events.size(); i += 4096) {
        const EventBatch batch(events.begin() + i, events.begin() + std::min(events.size(), i + 4096));
        store.apply(batch);
    }
    return heapInUse() - before;
}

} // namespace

int main(int argc, char **argv)
{
    bool quick = false;
    const char *only = nullptr; // one of the sections alone
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--decoder-only") == 0 ||
                   std::strcmp(argv[i], "--stream-only") == 0 || std::strcmp(argv[i], "--unary-only") == 0) {
            if (only && std::strcmp(only, argv[i]) != 0) {
                std::fprintf(stderr, "rpcscope-bench: %s and %s exclude each other\n", only, argv[i]);
                return 2;
            }
            only = argv[i];
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("usage: rpcscope-bench [--quick] [--unary-only | --stream-only | --decoder-only]\n"
                        "  Measures rpcscope's capture proxy against direct and socat baselines in one run\n"
                        "  (about 2 minutes; --quick about 20 s) and prints one table.\n"
                        "  --unary-only    only the unary latency section\n"
                        "  --stream-only   only the streaming throughput section (for perf record)\n"
                        "  --decoder-only  only the decoder and memory sections (for perf record)\n");
            return 0;
        } else {
            std::fprintf(stderr, "rpcscope-bench: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    Plan plan = quick ? Plan::quickPlan() : Plan();
    plan.unaryOnly = only && std::strcmp(only, "--unary-only") == 0;
    plan.streamOnly = only && std::strcmp(only, "--stream-only") == 0;
    plan.decoderOnly = only && std::strcmp(only, "--decoder-only") == 0;
    const std::int64_t runStart = steadyNowNs();
    const std::string loadBefore = loadAverage();
    std::vector<Row> rows;
    std::vector<std::string> notes;
    auto finish = [&] {
        std::printf("rpcscope-bench%s: %ld s, %ld cores, load average %s before, %s after\n",
                    plan.quick ? " --quick" : "", long((steadyNowNs() - runStart) / 1'000'000'000),
                    sysconf(_SC_NPROCESSORS_ONLN), loadBefore.c_str(), loadAverage().c_str());
        printTable(rows);
        for (const std::string &n : notes)
            std::printf("- %s\n", n.c_str());
        return 0;
    };

    lab::LabServer server;
    std::string error;
    if (!server.start(&error)) {
        std::fprintf(stderr, "rpcscope-bench: %s\n", error.c_str());
        return 1;
    }
    const std::uint16_t serverPort = std::uint16_t(server.port());
    const std::string direct = "127.0.0.1:" + std::to_string(serverPort);

    StoreConsumer consumer;
    Relay relay;
    if (!relay.start({"127.0.0.1", 0}, {"127.0.0.1", serverPort}, consumer.sink(), &error)) {
        std::fprintf(stderr, "rpcscope-bench: relay: %s\n", error.c_str());
        return 1;
    }
    // The same relay with decoding off: what relaying alone costs, the ceiling for the decoding relay.
    Relay bare;
    bare.setDecoding(false);
    if (!bare.start({"127.0.0.1", 0}, {"127.0.0.1", serverPort}, {}, &error)) {
        std::fprintf(stderr, "rpcscope-bench: relay: %s\n", error.c_str());
        return 1;
    }
    // The leanest relay there is (blocking splice, a thread per direction): what the extra TCP hop alone
    // costs.
    PlainProxy lean(PlainProxy::Mode::Splice);
    if (!lean.start(serverPort, &error)) {
        std::fprintf(stderr, "rpcscope-bench: %s\n", error.c_str());
        return 1;
    }
    SocatProxy socat;
    const bool haveSocat = socat.start(serverPort, &error);
    if (!haveSocat) notes.push_back("socat baseline skipped: " + error);

    // ---- 1. unary latency, interleaved ----
    if (!plan.decoderOnly && !plan.streamOnly) {
        std::vector<Lane> lanes;
        lanes.push_back({"direct", std::make_unique<lab::LabClient>(direct, std::string()), {}, {}, 0, 0});
        if (haveSocat)
            lanes.push_back(
                {"socat",
                 std::make_unique<lab::LabClient>("127.0.0.1:" + std::to_string(socat.port()), std::string()),
                 {},
                 {},
                 0,
                 0});
        lanes.push_back({"rpcscope",
                         std::make_unique<lab::LabClient>(relay.listenAddress().toString(), std::string()),
                         {},
                         {},
                         0,
                         0});
        lanes.back().relay = &relay;
        progress("unary latency: %d rounds x %d calls x %zu configurations", plan.latencyRounds,
                 plan.callsPerRound, lanes.size());
        for (Lane &l : lanes)
            l.run(plan.warmupCalls, false);
        for (int r = 0; r < plan.latencyRounds; ++r)
            for (size_t k = 0; k < lanes.size(); ++k)
                lanes[(k + size_t(r)) % lanes.size()].run(plan.callsPerRound, true); // rotate who goes first
        const Lane &d = lanes.front();
        const Lane &rs = lanes.back();
        const Lane *so = haveSocat ? &lanes[1] : nullptr;
        const double dP50 = median(d.us), dP99 = percentile(d.us, 99);
        const double rP50 = median(rs.us), rP99 = percentile(rs.us, 99);
        const std::string n = " (" + std::to_string(d.us.size()) + " calls each)";
        rows.push_back({"unary 100 B p50, direct" + n, fmt("%.1f us", dP50), "", "", "", ""});
        if (so) rows.push_back({"unary 100 B p50, socat", fmt("%.1f us", median(so->us)), "", "", "", ""});
        if (so) {
            const double ratio = rP50 / median(so->us);
            rows.push_back({"unary 100 B p50, rpcscope", fmt("%.1f us", rP50),
                            "socat " + fmt("%.1f us", median(so->us)),
                            ratioWithSpread(ratio, rs.roundP50, so->roundP50), "<= 1.00",
                            ratio <= 1.0 ? "met" : "missed"});
        }
        rows.push_back({"unary 100 B p50, rpcscope", fmt("%.1f us", rP50), "direct " + fmt("%.1f us", dP50),
                        ratioWithSpread(rP50 / dP50, rs.roundP50, d.roundP50), "", ""});
        if (rs.measuredCalls)
            rows.push_back({"unary 100 B, CPU of the relay's I/O + decoder threads per call",
                            fmt("%.1f us", rs.relayCpuNs / 1e3 / rs.measuredCalls), "", "", "", ""});
        rows.push_back({"unary 100 B p99, direct", fmt("%.1f us", dP99), "", "", "", ""});
        if (so) {
            const double sP99 = percentile(so->us, 99);
            rows.push_back({"unary 100 B p99, socat", fmt("%.1f us", sP99), "", "", "", ""});
            rows.push_back({"unary 100 B p99, rpcscope", fmt("%.1f us", rP99),
                            "socat " + fmt("%.1f us", sP99), fmt("%.2f", rP99 / sP99), "", ""});
        }
        rows.push_back({"unary 100 B p99, rpcscope", fmt("%.1f us", rP99), "direct " + fmt("%.1f us", dP99),
                        fmt("%.2f", rP99 / dP99), "", ""});
        for (const Lane &l : lanes)
            if (l.failures)
                notes.push_back(l.name + ": " + std::to_string(l.failures) + " unary calls failed");
    }

    // ---- 2. streaming throughput, rotating ----
    if (!plan.decoderOnly && !plan.unaryOnly) {
        struct StreamLane
        {
            std::string name;
            std::unique_ptr<lab::LabClient> client;
            std::vector<double> mbs;
            double cpuSeconds = 0; // this process (client, server and, for rpcscope, the relay) while it ran
            double relaySeconds = 0; // the relay's own threads while it ran
            double gigabytes = 0;
            Relay *relay = nullptr;
        };
        std::vector<StreamLane> lanes;
        lanes.push_back({"direct", std::make_unique<lab::LabClient>(direct, std::string()), {}});
        lanes.push_back({"rpcscope",
                         std::make_unique<lab::LabClient>(relay.listenAddress().toString(), std::string()),
                         {}});
        lanes.back().relay = &relay;
        lanes.push_back({"relay only",
                         std::make_unique<lab::LabClient>(bare.listenAddress().toString(), std::string()),
                         {}});
        lanes.back().relay = &bare;
        lanes.push_back(
            {"splice relay",
             std::make_unique<lab::LabClient>("127.0.0.1:" + std::to_string(lean.port()), std::string()),
             {}});
        if (haveSocat)
            lanes.push_back(
                {"socat",
                 std::make_unique<lab::LabClient>("127.0.0.1:" + std::to_string(socat.port()), std::string()),
                 {}});
        lab::StreamRequest req;
        req.set_message_size(1 << 20);
        int id = 0;
        auto once = [&](lab::LabClient &c, int count, StreamLane *lane = nullptr) {
            req.set_call_id("stream-" + std::to_string(id++));
            req.set_count(count);
            const double cpu0 = processCpuSeconds();
            const std::int64_t relay0 = lane && lane->relay ? lane->relay->threadCpuNs() : 0;
            const lab::StreamResult r = c.serverStream(req, 120s);
            if (lane) {
                lane->cpuSeconds += processCpuSeconds() - cpu0;
                if (lane->relay) lane->relaySeconds += double(lane->relay->threadCpuNs() - relay0) / 1e9;
                lane->gigabytes += double(r.bytes) / 1e9;
            }
            if (r.code != 0 || r.messages != count) {
                notes.push_back("stream " + r.callId + " ended with code " + std::to_string(r.code) +
                                " after " + std::to_string(r.messages) + " messages: " + r.message);
                return 0.0;
            }
            return double(r.bytes) / (double(r.endNs - r.startNs) / 1e9) / 1e6;
        };
        progress("streaming: %d rounds x %d x 1 MiB x %zu configurations", plan.streamRounds,
                 plan.streamMessages, lanes.size());
        for (StreamLane &l : lanes)
            once(*l.client, 16); // warm-up: connection, flow-control windows
        for (int r = 0; r < plan.streamRounds; ++r)
            for (size_t k = 0; k < lanes.size(); ++k) {
                StreamLane &l = lanes[(k + size_t(r)) % lanes.size()];
                l.mbs.push_back(once(*l.client, plan.streamMessages, &l));
            }
        const StreamLane &dl = lanes[0], &rl = lanes[1], &bl = lanes[2], &ll = lanes[3];
        const StreamLane *sl = haveSocat ? &lanes[4] : nullptr;
        const double d = median(dl.mbs), rr = median(rl.mbs), bare = median(bl.mbs), leanMbs = median(ll.mbs);
        const std::string what = "server stream " + std::to_string(plan.streamMessages) + " x 1 MiB";
        rows.push_back({what + ", direct (median of " + std::to_string(plan.streamRounds) + ")",
                        fmt("%.0f MB/s", d), "", "", "", ""});
        if (sl)
            rows.push_back({what + ", socat", fmt("%.0f MB/s", median(sl->mbs)),
                            "direct " + fmt("%.0f MB/s", d),
                            ratioWithSpread(median(sl->mbs) / d, sl->mbs, dl.mbs), "", ""});
        rows.push_back({what + ", plain splice relay", fmt("%.0f MB/s", leanMbs),
                        "direct " + fmt("%.0f MB/s", d), ratioWithSpread(leanMbs / d, ll.mbs, dl.mbs), "",
                        ""});
        rows.push_back({what + ", relay only (decoding off)", fmt("%.0f MB/s", bare),
                        "direct " + fmt("%.0f MB/s", d), ratioWithSpread(bare / d, bl.mbs, dl.mbs), "", ""});
        rows.push_back({what + ", relay only (decoding off)", fmt("%.0f MB/s", bare),
                        "splice relay " + fmt("%.0f MB/s", leanMbs),
                        ratioWithSpread(bare / leanMbs, bl.mbs, ll.mbs), "", ""});
        rows.push_back({what + ", rpcscope", fmt("%.0f MB/s", rr), "direct " + fmt("%.0f MB/s", d),
                        ratioWithSpread(rr / d, rl.mbs, dl.mbs), ">= 0.90",
                        rr / d >= 0.9 ? "met" : "missed"});
        rows.push_back({what + ", rpcscope", fmt("%.0f MB/s", rr), "relay only " + fmt("%.0f MB/s", bare),
                        ratioWithSpread(rr / bare, rl.mbs, bl.mbs), "", ""});
        if (sl)
            rows.push_back({what + ", rpcscope", fmt("%.0f MB/s", rr),
                            "socat " + fmt("%.0f MB/s", median(sl->mbs)),
                            ratioWithSpread(rr / median(sl->mbs), rl.mbs, sl->mbs), "", ""});
        // What limits it: CPU. Every GB through a relay costs the client, the server and the relay more than
        // a direct GB costs the client and the server; the rows below say how much, and what rate that
        // allows.
        auto perGb = [](const StreamLane &l, double seconds) {
            return l.gigabytes > 0 ? seconds / l.gigabytes : 0.0;
        };
        const double cd = perGb(dl, dl.cpuSeconds), cr = perGb(rl, rl.cpuSeconds),
                     cb = perGb(bl, bl.cpuSeconds), cl = perGb(ll, ll.cpuSeconds);
        rows.push_back({"CPU per GB streamed, direct (client + server)", fmt("%.2f core-s", cd),
                        fmt("%.1f cores busy", cd * d / 1000.0) + " of " +
                            std::to_string(std::thread::hardware_concurrency()),
                        "", "", ""});
        rows.push_back({"CPU per GB streamed, through rpcscope", fmt("%.2f core-s", cr),
                        "direct " + fmt("%.2f", cd), fmt("%.2f", cr / cd), "", ""});
        rows.push_back({"  of which the relay's I/O + decoder threads",
                        fmt("%.2f core-s", perGb(rl, rl.relaySeconds)), "", "", "", ""});
        rows.push_back({"CPU per GB streamed, relay only", fmt("%.2f core-s", cb),
                        "direct " + fmt("%.2f", cd), fmt("%.2f", cb / cd), "", ""});
        rows.push_back({"  of which the relay's threads", fmt("%.2f core-s", perGb(bl, bl.relaySeconds)), "",
                        "", "", ""});
        rows.push_back({"CPU per GB streamed, plain splice relay", fmt("%.2f core-s", cl),
                        "direct " + fmt("%.2f", cd), fmt("%.2f", cl / cd), "", ""});
        // The most a proxied run could reach if it kept every core busy all the time: cores / (core-s per
        // GB). Below 0.90 of direct, the goal is out of reach on this machine whatever the relay does; in
        // practice a pipeline of client, relay and server threads keeps fewer cores busy than all of them.
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        for (auto [name, cpu] : {std::pair{"rpcscope", cr}, std::pair{"plain splice relay", cl}})
            if (cpu > 0)
                rows.push_back({std::string("ceiling for ") + name + " with all " + std::to_string(cores) +
                                    " cores busy (cores / CPU per GB)",
                                fmt("%.0f MB/s", cores / cpu * 1000.0), "direct " + fmt("%.0f MB/s", d),
                                fmt("%.2f", cores / cpu * 1000.0 / d), "", ""});
        const std::uint64_t spliced = relay.bytesSpliced(), relayed = relay.bytesRelayed();
        notes.push_back(
            "relay only: the same relay with decoding off, so rpcscope / relay only is what decoding "
            "costs and relay only / direct what the extra TCP hop costs on this machine; rpcscope "
            "spliced " +
            fmt("%.0f%%", relayed ? 100.0 * double(spliced) / double(relayed) : 0.0) +
            " of the bytes it relayed (socket to pipe to socket, tee'd for the decoder)");
        notes.push_back(
            "plain splice relay: a baseline with nothing but the hop, two threads per connection that "
            "splice socket -> 1 MiB pipe -> socket with blocking calls (no poll, no decoder); "
            "splice relay / direct is what any relay on this machine pays for the extra TCP hop" +
            std::string(lean.copiedDirections() ? " (some directions had no pipe and copied)" : ""));
    }

    consumer.calls(); // drains
    socat.stop();
    lean.stop();
    bare.stop();
    relay.stop();
    if (consumer.decodeErrors())
        notes.push_back("the relay reported " + std::to_string(consumer.decodeErrors()) +
                        " decode errors: the proxied numbers may not include full decoding");

    if (plan.streamOnly || plan.unaryOnly) return finish();

    // ---- 3. decoder throughput over recorded bytes ----
    auto record = [&](auto &&traffic) {
        PlainProxy rec(PlainProxy::Mode::Record);
        if (!rec.start(serverPort, &error)) {
            std::fprintf(stderr, "rpcscope-bench: %s\n", error.c_str());
            std::exit(1);
        }
        {
            lab::LabClient client("127.0.0.1:" + std::to_string(rec.port()), {});
            traffic(client);
        }
        rec.stop();
        std::vector<Chunk> biggest;
        for (auto &c : rec.connections())
            if (c.size() > biggest.size()) biggest = std::move(c);
        return biggest;
    };
    progress("recording %d x 1 MiB server-stream messages and %d unary calls for the decoder",
             plan.recordDataMessages, plan.recordUnaryCalls);
    const std::vector<Chunk> dataHeavy = record([&](lab::LabClient &c) {
        lab::StreamRequest req;
        req.set_call_id("record-data");
        req.set_count(plan.recordDataMessages);
        req.set_message_size(1 << 20);
        c.serverStream(req, 120s);
    });
    const std::vector<Chunk> headersHeavy = record([&](lab::LabClient &c) {
        lab::CallRequest req;
        req.set_payload(std::string(100, 'q'));
        req.set_response_size(100);
        for (int i = 0; i < plan.recordUnaryCalls; ++i) {
            req.set_call_id("record-" + std::to_string(i));
            c.call(req, 5s);
        }
    });
    server.stop();

    progress("decoding the recordings on one core");
    {
        const DecodeCounts dc = countEvents(dataHeavy);
        const DecoderPasses passes = decoderPasses(dataHeavy);
        const auto best =
            bestSecondsPerPass({passes.decode, passes.frameWalk}, plan.decodeMinSeconds, plan.decodeReps);
        const double t = best[0], walk = best[1];
        const double mbs = double(dc.bytes) / t / 1e6;
        rows.push_back({"decoder, DATA-heavy (" + fmt("%.0f MB", double(dc.bytes) / 1e6) + ", " +
                            std::to_string(dc.frames) + " frames)",
                        fmt("%.0f MB/s", mbs), "", "", "> 1000 MB/s", mbs > 1000 ? "met" : "missed"});
        notes.push_back(
            "DATA-heavy decode: " + fmt("%.1f", t / double(dc.frames) * 1e6) + " us/frame (" +
            fmt("%.0f", double(dc.bytes) / double(dc.frames) / 1e3) + " KB frames), of which " +
            fmt("%.1f", walk / double(dc.frames) * 1e6) +
            " us go to delimiting frames (a DATA frame split across reads is not copied: its payload goes to "
            "the message parser as it arrives); payload bytes beyond each message's kept 64 KiB are never "
            "read, so the rate follows frame and message size more than memory bandwidth");
        if (dc.decodeErrors)
            notes.push_back("DATA-heavy recording did not decode cleanly (" +
                            std::to_string(dc.decodeErrors) + " errors)");
    }
    {
        const DecodeCounts dc = countEvents(headersHeavy);
        const DecoderPasses passes = decoderPasses(headersHeavy);
        const auto best =
            bestSecondsPerPass({passes.decode, passes.frameWalk, passes.hpack, passes.hpackStrings},
                               plan.decodeMinSeconds, plan.decodeReps);
        const double t = best[0];
        const double fps = double(dc.frames) / t;
        rows.push_back({"decoder, HEADERS-heavy (" + std::to_string(plan.recordUnaryCalls) +
                            " unary calls, " + std::to_string(dc.frames) + " frames)",
                        fmt("%.2f M frames/s", fps / 1e6), "", "", "> 1 M frames/s",
                        fps > 1e6 ? "met" : "missed"});
        rows.push_back({"decoder, HEADERS-heavy, header blocks",
                        fmt("%.2f M blocks/s", double(dc.headerBlocks) / t / 1e6), "", "", "", ""});
        rows.push_back(
            {"decoder, HEADERS-heavy, bytes", fmt("%.0f MB/s", double(dc.bytes) / t / 1e6), "", "", "", ""});
        auto perFrame = [&](double seconds) { return seconds / double(dc.frames) * 1e9; };
        const double pAll = perFrame(t), pWalk = perFrame(best[1]), pHpack = perFrame(best[2]);
        const double pStrings = std::max(0.0, perFrame(best[3]) - pHpack);
        const double rest = std::max(0.0, pAll - pWalk - pHpack - pStrings);
        notes.push_back(
            "HEADERS-heavy decode: " + fmt("%.0f", pAll) + " ns/frame = frame delimiting " +
            fmt("%.0f", pWalk) + " + HPACK inflate (nghttp2) " + fmt("%.0f", pHpack) +
            " + copying header names/values into std::strings " + fmt("%.0f", pStrings) + " + the rest " +
            fmt("%.0f", rest) +
            " (a WireEvent built, moved and destroyed per frame, block and message; per-stream state; "
            "grpc field parsing)");
        if (dc.decodeErrors)
            notes.push_back("HEADERS-heavy recording did not decode cleanly (" +
                            std::to_string(dc.decodeErrors) + " errors)");
    }

    // ---- 4. memory of the store ----
    progress("measuring TimelineStore memory");
    {
        const EventBatch events = decodeAll(headersHeavy, 1);
        std::optional<TimelineStore> callsOnly(std::in_place);
        const size_t callBytes = storeGrowth(events, false, *callsOnly);
        const size_t calls = callsOnly->calls().size();
        callsOnly.reset();
        TimelineStore withFrames;
        const size_t allBytes = storeGrowth(events, true, withFrames);
        const size_t frames = withFrames.frames().size();
        const double perCall = double(callBytes) / double(std::max<size_t>(calls, 1));
        const double perFrame = (double(allBytes) - double(callBytes)) / double(std::max<size_t>(frames, 1));
        rows.push_back({"TimelineStore, per call (" + std::to_string(calls) + " calls, 1 attempt each)",
                        fmt("%.0f B", perCall), "", "", "", ""});
        rows.push_back({"TimelineStore, per recorded frame (" + std::to_string(frames) + " frames)",
                        fmt("%.1f B", perFrame), "", "", "", ""});
        notes.push_back(
            "memory: heap in use (mallinfo2 uordblks + hblkhd) before and after applying the decoded "
            "HEADERS-heavy events; calls and frames live in deques, which grow by fixed blocks "
            "(sizeof(FrameRecord) = " +
            std::to_string(sizeof(FrameRecord)) + ", sizeof(Call) = " + std::to_string(sizeof(Call)) +
            ", sizeof(Attempt) = " + std::to_string(sizeof(Attempt)) + ")");
    }

    // ---- 5. encoding events for the capture file and the event log ----
    progress("encoding the decoded events as the capture file does");
    {
        const EventBatch events = decodeAll(headersHeavy, 1);
        // Baseline, in the same run: protobuf's own classes, each event built as a message in an arena and
        // the batch serialized (how encodeEvents worked before it wrote the wire format itself). Batches of
        // 1,024 events, the size the model's feed appends.
        constexpr size_t kBatch = 1024;
        static volatile size_t sink = 0;
        auto viaMessages = [&] {
            for (size_t from = 0; from < events.size(); from += kBatch) {
                google::protobuf::ArenaOptions options;
                options.start_block_size = 4096;
                options.max_block_size = 64 * 1024;
                google::protobuf::Arena arena(options);
                auto *b = google::protobuf::Arena::CreateMessage<capture::EventBatch>(&arena);
                const size_t to = std::min(events.size(), from + kBatch);
                b->mutable_events()->Reserve(int(to - from));
                for (size_t i = from; i < to; ++i)
                    toMessage(events[i], nullptr, b->add_events());
                sink = sink + b->SerializeAsString().size();
            }
        };
        auto direct = [&] {
            for (size_t from = 0; from < events.size(); from += kBatch)
                sink = sink + encodeEvents(std::span<const WireEvent>(events).subspan(
                                               from, std::min(kBatch, events.size() - from)))
                                  .size();
        };
        const auto best = bestSecondsPerPass({direct, viaMessages}, plan.decodeMinSeconds, plan.decodeReps);
        auto perEvent = [&](double seconds) { return seconds / double(events.size()) * 1e9; };
        const double ratio = best[0] / best[1];
        rows.push_back({"capture encoding, HEADERS-heavy events (" + std::to_string(events.size()) + ")",
                        fmt("%.0f ns/event", perEvent(best[0])),
                        fmt("protobuf messages %.0f ns/event", perEvent(best[1])), fmt("%.2f", ratio), "",
                        ""});
        notes.push_back(
            "capture encoding: encodeEvents (the wire format written straight from the events) "
            "against protobuf's generated classes for the same events in the same run; the model's "
            "thread encodes every batch it applies for its event log, a capture's decoder thread "
            "every batch for the file");
    }

    return finish();
}
