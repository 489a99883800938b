// rpcscope-ratebench: the rates strip's counts (RateBins) at 1,000,000 calls.
//
// A TimelineStore is filled by batches the way a live capture fills it (10,000 calls a second, 1,000 calls a
// batch, a fifth of them retried once and a tenth failing), and RateBins follows each batch from the calls it
// changed. Printed: the incremental sync per batch (what the GUI thread pays beside the store), a rebuild
// from every call (a fresh index: an export, a model reset), the buckets a 1920 px picture sums over the
// whole trace and over a zoomed second, and the memory of bins and records.

#include "ratebins.h"
#include "timelinestore.h"
#include "wireevents.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace rpcscope;

namespace {
using testev::trailers;
constexpr std::int64_t kMs = 1'000'000;

double msSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &id,
                  int previous)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ClientToServer);
    e.grpc.path = "/shop.Cart/Get";
    e.grpc.callId = id;
    if (previous > 0) e.grpc.previousAttempts = previous;
    e.grpc.timeoutNs = 1000 * kMs;
    return e;
}

} // namespace

int main(int argc, char **argv)
{
    const size_t calls = argc > 1 ? size_t(std::atol(argv[1])) : 1'000'000;
    constexpr size_t kPerBatch = 1000;
    constexpr std::int64_t kSpacing = 100'000; // 10,000 calls a second
    constexpr std::uint32_t kConnections = 64;
    TimelineStore store;
    store.setOrigin(0, 0);
    RateBins rates;
    std::vector<std::uint32_t> nextStream(kConnections + 1, 1);
    std::vector<double> syncMs;
    double applyMs = 0;
    {
        EventBatch opens;
        for (std::uint32_t c = 1; c <= kConnections; ++c)
            opens.push_back(testev::opened(c, 0));
        store.apply(opens);
    }
    for (size_t first = 0; first < calls; first += kPerBatch) {
        EventBatch batch;
        for (size_t i = first; i < std::min(calls, first + kPerBatch); ++i) {
            const std::uint32_t conn = std::uint32_t(i % kConnections) + 1;
            const std::int64_t t = std::int64_t(i) * kSpacing;
            const std::string id = "c" + std::to_string(i);
            const std::uint32_t s1 = (nextStream[conn] += 2) - 2;
            const bool retried = i % 5 == 0, failing = i % 10 == 0;
            batch.push_back(request(conn, s1, t, id, 0));
            batch.push_back(trailers(conn, s1, t + 4 * kMs, retried ? 14 : 0));
            if (retried) {
                const std::uint32_t s2 = (nextStream[conn] += 2) - 2;
                batch.push_back(request(conn, s2, t + 30 * kMs, id, 1));
                batch.push_back(trailers(conn, s2, t + 34 * kMs, failing ? 14 : 0));
            }
        }
        std::sort(batch.begin(), batch.end(),
                  [](const WireEvent &a, const WireEvent &b) { return a.tNs < b.tNs; });
        StoreChanges changes;
        auto t0 = std::chrono::steady_clock::now();
        store.apply(batch, &changes);
        applyMs += msSince(t0);
        t0 = std::chrono::steady_clock::now();
        rates.sync(store, &changes);
        syncMs.push_back(msSince(t0));
    }
    std::sort(syncMs.begin(), syncMs.end());
    double total = 0;
    for (double v : syncMs)
        total += v;
    std::printf("rpcscope-ratebench: %zu calls, %zu attempts, in %zu batches of %zu calls\n",
                store.calls().size(), size_t(calls + calls / 5), syncMs.size(), kPerBatch);
    std::printf("  store.apply, all batches:            %8.1f ms\n", applyMs);
    std::printf(
        "  RateBins incremental sync, total:    %8.1f ms  (per batch: median %.3f ms, p99 %.3f ms, max %.3f "
        "ms)\n",
        total, syncMs[syncMs.size() / 2], syncMs[syncMs.size() * 99 / 100], syncMs.back());
    auto t0 = std::chrono::steady_clock::now();
    RateBins rebuilt;
    rebuilt.sync(store);
    std::printf("  RateBins rebuild from every call:    %8.1f ms\n", msSince(t0));

    const std::int64_t end = store.latestNs();
    for (const auto &[what, from, to] : {std::tuple{"whole trace", std::int64_t(0), end},
                                         std::tuple{"one second", end / 2, end / 2 + 1000 * kMs}}) {
        const std::int64_t width = RateBins::bucketWidth(double(to - from) / 1920 * 8);
        t0 = std::chrono::steady_clock::now();
        constexpr int kRounds = 50;
        size_t n = 0;
        for (int r = 0; r < kRounds; ++r)
            n = rates.buckets(from, to, width).size();
        std::printf("  buckets for 1920 px, %-11s:     %8.3f ms  (%zu buckets of %lld ms)\n", what,
                    msSince(t0) / kRounds, n, static_cast<long long>(width / kMs));
    }
    // Bins: 32 bytes each in 1024-bin chunks, at five levels; records: one per call the store holds.
    const double binsMb = double(end / RateBins::kBaseNs) * 1.1111 * sizeof(RateBins::Bin) / 1e6;
    std::printf("  memory: bins ~%.1f MB (%lld s of 1 ms bins and the coarser levels), records %.1f MB\n",
                binsMb, static_cast<long long>(end / 1'000'000'000),
                double(rates.recordedCalls()) * 56 / 1e6);
    return 0;
}
