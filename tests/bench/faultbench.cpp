// rpcscope-faultbench (scripts/bench.sh --faults): what fault rules cost a relay when none acts. Three relays
// to one lab server, measured in the same run and interleaved: without rules; with rules only for other hops
// (the relay never looks at a connection: the byte-for-byte fast path); and with a stream rule for its hop
// that matches no call (every connection framed, header blocks decoded to be matched, bytes passed on
// unchanged). Unary p50 latency of 100-byte calls and server-streaming throughput, each with its ratio to no
// rules.

#include "faultrule.h"
#include "faultset.h"
#include "labclient.h"
#include "labserver.h"
#include "relay.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {
double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::shared_ptr<FaultSet> ruleSet(const std::vector<std::string> &texts)
{
    std::vector<FaultRule> out;
    for (const std::string &t : texts) {
        FaultRule r;
        std::string error;
        if (!parseFaultRule(t, &r, &error)) {
            std::fprintf(stderr, "rpcscope-faultbench: %s: %s\n", t.c_str(), error.c_str());
            std::exit(1);
        }
        out.push_back(std::move(r));
    }
    return std::make_shared<FaultSet>(std::move(out));
}

struct Lane
{
    std::string name;
    std::unique_ptr<Relay> relay;
    std::unique_ptr<lab::LabClient> client;
    std::vector<double> us;
    std::vector<double> mbs;
};
} // namespace

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int rounds = quick ? 4 : 10, callsPerRound = quick ? 300 : 1000, streamRounds = quick ? 3 : 7;
    const int streamReplies = quick ? 400 : 1600, replySize = 64 * 1024;

    lab::LabServer server;
    std::string error;
    if (!server.start(&error)) {
        std::fprintf(stderr, "rpcscope-faultbench: lab server: %s\n", error.c_str());
        return 1;
    }
    std::vector<Lane> lanes;
    auto add = [&](const std::string &name, std::shared_ptr<FaultSet> faults) {
        Lane l;
        l.name = name;
        l.relay = std::make_unique<Relay>();
        if (faults) l.relay->setFaults(std::move(faults));
        if (!l.relay->start(
                {"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, [](EventBatch &&) {},
                &error)) {
            std::fprintf(stderr, "rpcscope-faultbench: relay: %s\n", error.c_str());
            std::exit(1);
        }
        l.client = std::make_unique<lab::LabClient>(l.relay->listenAddress().toString(), std::string());
        lanes.push_back(std::move(l));
    };
    add("no rules", nullptr);
    add("rules for other hops only", ruleSet({"abort hop=elsewhere", "blackhole hop=elsewhere"}));
    add("stream rule matching nothing",
        ruleSet({"abort method=/nowhere/*", "delay by=1s method=/nowhere/*"}));

    lab::CallRequest req;
    req.set_call_id("bench");
    req.set_payload(std::string(100, 'p'));
    for (Lane &l : lanes)
        for (int i = 0; i < 200; ++i)
            l.client->call(req);
    std::fprintf(stderr, "unary: %d rounds x %d calls x %zu relays\n", rounds, callsPerRound, lanes.size());
    for (int r = 0; r < rounds; ++r)
        for (size_t k = 0; k < lanes.size(); ++k) {
            Lane &l = lanes[(k + size_t(r)) % lanes.size()];
            for (int i = 0; i < callsPerRound; ++i) {
                const auto t0 = std::chrono::steady_clock::now();
                l.client->call(req);
                l.us.push_back(
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
        }
    lab::StreamRequest sreq;
    sreq.set_call_id("bench-stream");
    sreq.set_count(streamReplies);
    sreq.set_message_size(replySize);
    std::fprintf(stderr, "server streaming: %d rounds of %d x %d KiB\n", streamRounds, streamReplies,
                 replySize / 1024);
    for (int r = 0; r < streamRounds; ++r)
        for (size_t k = 0; k < lanes.size(); ++k) {
            Lane &l = lanes[(k + size_t(r)) % lanes.size()];
            const auto t0 = std::chrono::steady_clock::now();
            const auto res = l.client->serverStream(sreq);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (res.code == 0) l.mbs.push_back(double(res.bytes) / 1e6 / s);
        }
    const double baseUs = median(lanes[0].us), baseMbs = median(lanes[0].mbs);
    std::printf("%-58s %12s %10s\n", "fault rules, none acting", "value", "vs none");
    for (const Lane &l : lanes)
        std::printf("%-58s %9.1f us %9.2fx\n", ("unary 100 B p50, " + l.name).c_str(), median(l.us),
                    median(l.us) / baseUs);
    for (const Lane &l : lanes)
        std::printf("%-58s %7.0f MB/s %9.2fx\n", ("server streaming 64 KiB, " + l.name).c_str(),
                    median(l.mbs), median(l.mbs) / baseMbs);
    for (Lane &l : lanes) {
        l.client.reset();
        l.relay->stop();
    }
    return 0;
}
