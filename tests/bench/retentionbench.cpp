// rpcscope-retentionbench (scripts/bench.sh --retention): a live session left running for an hour,
// compressed. One million calls (two attempts each, with their frames) are fed at full speed, in batches the
// way the relay flushes them, into the GUI's item model with the default retention budget. It prints the
// memory the model reports and the process's peak RSS, against an unbounded run of a tenth of the calls
// measured in the same run, and how long each batch keeps the GUI thread busy (that is what decides whether
// the GUI stays responsive), with the evictions included: first the model alone, then again with the swimlane
// widget attached (offscreen) and repainted after every batch, as the GUI does at most once a frame.

#include "stats.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QApplication>
#include <QImage>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <vector>

using namespace rpcscope;

namespace {

constexpr std::int64_t ms = 1'000'000;

WireEvent headers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, bool request,
                  const std::string &id, int prev, int status)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t,
                                request ? Direction::ClientToServer : Direction::ServerToClient);
    e.frameType = FrameHeaders;
    if (request) {
        e.grpc.path = "/shop.Cart/Get";
        e.grpc.callId = id;
        e.grpc.timeoutNs = 1000 * ms;
        if (prev) e.grpc.previousAttempts = prev;
        e.headers = {{":method", "POST"}, {":path", "/shop.Cart/Get"}, {"rpcscope-call-id", id}};
    } else {
        e.endStream = true;
        e.grpc.status = status;
        e.headers = {{"grpc-status", std::to_string(status)}};
    }
    return e;
}

WireEvent frame(std::uint32_t conn, std::uint32_t stream, std::int64_t t, std::uint8_t type, Direction dir)
{
    return testev::frame(conn, stream, t, dir, type, 0, 105);
}

// Call i on one of 8 connections: an UNAVAILABLE attempt, a 50 ms backoff, an OK one; 3.6 ms apart, so a
// million calls span an hour.
void appendCall(EventBatch &b, std::uint64_t i)
{
    const std::uint32_t conn = std::uint32_t(1 + i % 8);
    const std::uint32_t stream = std::uint32_t(1 + 4 * (i / 8)) & 0x7FFFFFFF;
    const std::int64_t t = std::int64_t(i) * 3'600'000;
    const std::string id = "c" + std::to_string(i);
    for (int a = 0; a < 2; ++a) {
        const std::uint32_t s = stream + 2 * std::uint32_t(a);
        const std::int64_t t0 = t + a * 50 * ms;
        b.push_back(frame(conn, s, t0, FrameHeaders, Direction::ClientToServer));
        b.push_back(headers(conn, s, t0, true, id, a, 0));
        b.push_back(frame(conn, s, t0 + 20'000, FrameData, Direction::ClientToServer));
        b.push_back(frame(conn, s, t0 + 900'000, FrameHeaders, Direction::ServerToClient));
        b.push_back(headers(conn, s, t0 + 900'000, false, id, 0, a == 0 ? 14 : 0));
    }
}

long peakRssKb()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

long currentRssKb()
{
    std::ifstream f("/proc/self/statm");
    long pages = 0, resident = 0;
    f >> pages >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// This thread's CPU time: what a batch costs the GUI thread, apart from time lost to other processes on a
// shared machine (wall time is reported too).
double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

struct Run
{
    std::uint64_t calls = 0;
    double seconds = 0;
    std::vector<double> batchMs;
    std::vector<double> batchCpuMs;
    std::vector<double> evictionCpuMs; // batches that evicted
    size_t peakModelBytes = 0;
    size_t finalModelBytes = 0;
    size_t keptCalls = 0;
    size_t evicted = 0;
    long rssKb = 0;
};

Run feed(TimelineModel &model, std::uint64_t calls, size_t callsPerBatch, SwimlaneView *view = nullptr)
{
    QImage frame(view ? view->size() : QSize(1, 1), QImage::Format_ARGB32_Premultiplied);
    Run r;
    r.calls = calls;
    for (std::uint32_t c = 1; c <= 8; ++c)
        model.appendBatch({testev::event(EventKind::ConnectionOpened, c, 0, 0)});
    const auto start = std::chrono::steady_clock::now();
    EventBatch batch;
    for (std::uint64_t i = 0; i < calls; i += callsPerBatch) {
        batch.clear();
        for (std::uint64_t k = i; k < std::min(calls, i + callsPerBatch); ++k)
            appendCall(batch, k);
        const auto t0 = std::chrono::steady_clock::now();
        const double cpu0 = threadCpuMs();
        const size_t evicted0 = model.store().evictedCalls();
        model.appendBatch(batch);
        if (view) view->render(&frame);
        r.batchMs.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        r.batchCpuMs.push_back(threadCpuMs() - cpu0);
        if (model.store().evictedCalls() != evicted0) r.evictionCpuMs.push_back(r.batchCpuMs.back());
        if ((i / callsPerBatch) % 64 == 0) r.peakModelBytes = std::max(r.peakModelBytes, model.memoryBytes());
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.finalModelBytes = model.memoryBytes();
    r.peakModelBytes = std::max(r.peakModelBytes, r.finalModelBytes);
    r.keptCalls = model.store().calls().size();
    r.evicted = model.store().evictedCalls();
    r.rssKb = currentRssKb();
    return r;
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    std::uint64_t calls = 1'000'000;
    size_t budgetMb = 256;
    const char *png = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) {
            calls = 200'000;
        } else if (!std::strcmp(argv[i], "--png") && i + 1 < argc) {
            png = argv[++i];
        } else if (!std::strcmp(argv[i], "--budget-mb") && i + 1 < argc) {
            budgetMb = size_t(std::atol(argv[++i]));
        } else {
            std::fprintf(stderr,
                         "usage: rpcscope-retentionbench [--quick] [--budget-mb N] [--png FILE]\n"
                         "  --png FILE  save the swimlane view's last frame of the run with the view\n");
            return 2;
        }
    }
    const size_t callsPerBatch = 256; // ~16 ms of a busy relay
    std::fprintf(stderr, "feeding %llu calls (2 attempts each) with a %zu MB budget...\n",
                 (unsigned long long)calls, budgetMb);

    // Baseline in the same run: a tenth of the calls, no retention at all.
    Run unbounded;
    {
        TimelineModel model;
        unbounded = feed(model, calls / 10, callsPerBatch);
    }
    const long rssAfterBaseline = currentRssKb();
    Run bounded;
    RetentionPolicy policy;
    policy.maxBytes = budgetMb << 20;
    {
        TimelineModel model;
        model.setRetention(policy);
        bounded = feed(model, calls, callsPerBatch);
    }
    const long peakModelOnlyKb = peakRssKb();
    // The same session with the swimlane widget following it (the model-only one is gone).
    Run withView;
    {
        TimelineModel viewModel;
        viewModel.setRetention(policy);
        SwimlaneView view(&viewModel);
        view.resize(1920, 1080);
        withView = feed(viewModel, calls, callsPerBatch, &view);
        if (png) {
            // A few seconds around the retention cut, so the lanes are readable and the cut is on the ruler.
            const qint64 cut = viewModel.store().retentionCutNs();
            view.setRange(cut - 2'000'000'000, cut + 1'500'000'000);
            if (!view.grab().save(QString::fromLocal8Bit(png)))
                std::fprintf(stderr, "rpcscope-retentionbench: cannot write %s\n", png);
        }
    }

    std::vector<double> sorted = bounded.batchMs;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double p) { return sorted[size_t(p * double(sorted.size() - 1))]; };
    auto pctOf = [](std::vector<double> v, double p) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[size_t(p * double(v.size() - 1))];
    };
    const double perCallUnbounded = double(unbounded.finalModelBytes) / double(unbounded.calls);
    std::printf("measurement                                              | value\n");
    std::printf(
        "---------------------------------------------------------+--------------------------------\n");
    std::printf("unbounded baseline: %8llu calls, model memory            | %.0f MB (%.0f B per call)\n",
                (unsigned long long)unbounded.calls, double(unbounded.finalModelBytes) / (1 << 20),
                perCallUnbounded);
    std::printf("unbounded, projected to %llu calls                     | %.0f MB\n",
                (unsigned long long)calls, perCallUnbounded * double(calls) / (1 << 20));
    std::printf("with retention (budget %zu MB): peak model memory        | %.0f MB (%.2f of the budget)\n",
                budgetMb, double(bounded.peakModelBytes) / (1 << 20),
                double(bounded.peakModelBytes) / double(policy.maxBytes));
    std::printf("with retention: calls kept at the end / evicted          | %zu / %zu\n", bounded.keptCalls,
                bounded.evicted);
    std::printf("process peak RSS (all runs before the view's) / RSS before | %ld MB / %ld MB\n",
                peakModelOnlyKb / 1024, rssAfterBaseline / 1024);
    std::printf("process peak RSS including the run with the view         | %ld MB\n", peakRssKb() / 1024);
    std::printf("process RSS at the end of the long run                   | %ld MB\n", bounded.rssKb / 1024);
    std::printf("feed rate                                                | %.0f calls/s (%.1f s)\n",
                double(bounded.calls) / bounded.seconds, bounded.seconds);
    std::printf("GUI thread per batch of %zu calls: p50 / p99 / max         | %.2f / %.2f / %.1f ms\n",
                callsPerBatch, pct(0.5), pct(0.99), sorted.back());
    std::printf("batches over 16 ms (one frame)                           | %zu of %zu\n",
                size_t(std::count_if(sorted.begin(), sorted.end(), [](double v) { return v > 16; })),
                sorted.size());
    std::printf("GUI thread CPU per batch: p50 / p99 / max                | %.2f / %.2f / %.1f ms\n",
                pctOf(bounded.batchCpuMs, 0.5), pctOf(bounded.batchCpuMs, 0.99),
                pctOf(bounded.batchCpuMs, 1.0));
    std::printf("batches that evicted: count, CPU p50 / max                | %zu, %.2f / %.1f ms\n",
                bounded.evictionCpuMs.size(), pctOf(bounded.evictionCpuMs, 0.5),
                pctOf(bounded.evictionCpuMs, 1.0));
    auto over16 = [](const std::vector<double> &v) {
        return size_t(std::count_if(v.begin(), v.end(), [](double x) { return x > 16; }));
    };
    std::printf("batches over 16 ms of CPU                                | %zu of %zu\n",
                over16(bounded.batchCpuMs), bounded.batchCpuMs.size());
    std::printf("with the swimlane view, per batch + repaint: p50 / p99 / max | %.2f / %.2f / %.1f ms wall\n",
                pctOf(withView.batchMs, 0.5), pctOf(withView.batchMs, 0.99), pctOf(withView.batchMs, 1.0));
    std::printf("with the swimlane view, CPU: p50 / p99 / max              | %.2f / %.2f / %.1f ms\n",
                pctOf(withView.batchCpuMs, 0.5), pctOf(withView.batchCpuMs, 0.99),
                pctOf(withView.batchCpuMs, 1.0));
    std::printf("with the swimlane view, batches that evicted: CPU p50 / max | %.2f / %.1f ms (%zu)\n",
                pctOf(withView.evictionCpuMs, 0.5), pctOf(withView.evictionCpuMs, 1.0),
                withView.evictionCpuMs.size());
    std::printf("with the swimlane view, over 16 ms: wall / CPU            | %zu / %zu of %zu\n",
                over16(withView.batchMs), over16(withView.batchCpuMs), withView.batchMs.size());

    return 0;
}
