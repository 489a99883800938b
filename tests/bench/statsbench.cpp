// rpcscope-statsbench (scripts/bench.sh --stats): what call statistics (model/callstats.h) cost.
//
// 1. Live: 10,000 calls a second (3 methods on 8 connections, a tenth retried once), fed in 100 batches a
//    second into the GUI's item model under the GUI's default retention (512 MB), the way relays flush. Per
//    second of traffic it measures the GUI thread's CPU time spent keeping the statistics (CallStats::update,
//    timed on a store fed the same batches in lockstep) and one refresh of the Statistics dock (its table
//    model following the stats, every cell read, the histogram's series), as the dock does once a second.
//    Goal: a refresh costs at most 5 ms a second; the upkeep is printed beside it, and both together. Batches
//    hold 10 ms of events each, so a call's request and response usually come in different batches, as from
//    a relay.
//    The baseline, same run: the store's own apply() of the same batches.
//    Beside it, the Policy check with a service config given, which follows the calls once a second while
//    they come in, its tab shown or not (app/gui/policydock.h), judging again what changed: one config the
//    calls conform to, and one every retried call breaks (a tenth of them listed as findings, a thousand new
//    rows a second; that dock is on screen, and the event loop's layout and paint after each refresh is
//    printed beside it), and the same under retention. Goal: at most 5 ms a second, like the Statistics dock.
// 2. A file of 1,000,000 calls (200,000 with --quick): `stats` (read batch by batch, calls assembled without
//    frames, counted, evicted - StatsFeed) against reading it into a store the way opening it does, in
//    interleaved rounds; and against decoding the file alone, the least any reader pays.

#include "callstats.h"
#include "capturereader.h"
#include "capturestream.h"
#include "latencyhistogram.h"
#include "policydock.h"
#include "stats.h"
#include "statsfeed.h"
#include "statstablemodel.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QAbstractItemModel>
#include <QApplication>
#include <QDir>
#include <QTableView>
#include <QTemporaryDir>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <vector>

using namespace rpcscope;

namespace {

constexpr std::int64_t us = 1'000, ms = 1'000'000;

double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

long peakRssKb()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

const char *const kMethods[] = {"/shop.Cart/Get", "/shop.Cart/Put", "/shop.Search/Query"};

WireEvent headers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, bool request,
                  const std::string &id, const char *method, int prev, int status)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t,
                                request ? Direction::ClientToServer : Direction::ServerToClient);
    e.frameType = FrameHeaders;
    if (request) {
        e.grpc.path = method;
        e.grpc.callId = id;
        e.grpc.timeoutNs = 1000 * ms;
        e.grpc.retryInitialMs = 50;
        e.grpc.retryMultiplier = 2;
        e.grpc.retryMaxMs = 500;
        if (prev) e.grpc.previousAttempts = prev;
        e.headers = {{":method", "POST"}, {":path", method}, {"rpcscope-call-id", id}};
    } else {
        e.endStream = true;
        e.grpc.status = status;
        e.headers = {{"grpc-status", std::to_string(status)}};
    }
    return e;
}

// Call i, 100 µs after call i-1 (10,000 a second), on one of 8 connections; its latency spreads over
// 0.2-20 ms; every tenth fails UNAVAILABLE once and succeeds 50 ms later.
void appendCall(EventBatch &b, std::uint64_t i, bool frames)
{
    const std::uint32_t conn = std::uint32_t(1 + i % 8);
    const std::uint32_t stream = std::uint32_t(1 + 4 * (i / 8)) & 0x7FFFFFFF;
    const std::int64_t t = std::int64_t(i) * 100 * us;
    const std::string id = "c" + std::to_string(i);
    const char *method = kMethods[i % 3];
    const std::int64_t latency = 200 * us + std::int64_t((i * 2654435761u) % 20'000) * us;
    const int attempts = i % 10 == 0 ? 2 : 1;
    for (int a = 0; a < attempts; ++a) {
        const std::uint32_t s = stream + 2 * std::uint32_t(a);
        const std::int64_t t0 = t + a * (latency + 50 * ms);
        if (frames) b.push_back(testev::frame(conn, s, t0, Direction::ClientToServer, FrameHeaders, 0, 90));
        b.push_back(headers(conn, s, t0, true, id, method, a, 0));
        if (frames)
            b.push_back(testev::frame(conn, s, t0 + latency, Direction::ServerToClient, FrameHeaders));
        b.push_back(headers(conn, s, t0 + latency, false, id, method, 0, a + 1 < attempts ? 14 : 0));
    }
}

EventBatch openings()
{
    EventBatch b;
    for (std::uint32_t c = 1; c <= 8; ++c)
        b.push_back(testev::opened(c, 0));
    return b;
}

// What the Statistics dock does once a second: its table model follows the stats, and every cell is read as
// a view painting the whole table would (the dock paints only the visible ones), per method and per hop; the
// histogram takes the Total row's series.
std::int64_t refresh(StatsTableModel &methods, StatsTableModel &hops, const CallStats &stats)
{
    std::int64_t sink = 0;
    for (StatsTableModel *m : {&methods, &hops}) {
        m->refresh();
        for (int r = 0; r < m->rowCount(); ++r)
            for (int c = 0; c < m->columnCount(); ++c)
                sink += m->data(m->index(r, c)).toString().size();
    }
    const auto series =
        LatencyHistogram::fromRecorder(stats.total().callLatency, QStringLiteral("calls"), Qt::blue);
    sink += std::int64_t(series.counts[5]) + series.p99Ns.value_or(0);
    return sink;
}

// The same reads without the table model: every row's percentiles and histogram (for `stats` on a file).
std::int64_t readAll(const CallStats &stats)
{
    std::int64_t sink = 0;
    auto read = [&](const StatsRow &r) {
        for (const LatencyRecorder *rec : {&r.callLatency, &r.attemptLatency}) {
            for (double q : {0.5, 0.9, 0.99, 0.999, 1.0})
                sink += rec->percentile(q).value_or(0);
            for (auto n : rec->buckets())
                sink += std::int64_t(n);
        }
        sink += std::int64_t(r.calls + r.attempts + r.gaps.total());
    };
    read(stats.total());
    for (const auto &[k, r] : stats.methods())
        read(r);
    for (const auto &[k, r] : stats.hops())
        read(r);
    return sink;
}

void live(int seconds)
{
    std::printf(
        "1. live: 10,000 calls/s for %d s, 100 batches/s, into the GUI's item model (retention 512 MB)\n",
        seconds);
    TimelineModel model;
    RetentionPolicy retention;
    retention.maxBytes = 512ull << 20;
    model.setRetention(retention);
    TimelineStore store; // the same batches, for timing the store and the statistics apart
    CallStats stats;
    model.appendBatch(openings());
    store.apply(openings());
    StatsTableModel methods, hops;
    methods.setStats(&model.stats());
    hops.setStats(&model.stats());
    hops.setKind(StatsRow::Kind::Hop);
    // The Policy check, as the window's: one with a config the calls conform to, one that every retried
    // call breaks (it retries UNAVAILABLE, which that config does not call retryable).
    auto policyConfig = [](const char *retryable) {
        return QStringLiteral(
                   R"({"methodConfig":[{"name":[{"service":"shop.Cart"},{"service":"shop.Search"}],)"
                   R"("retryPolicy":{"maxAttempts":3,"initialBackoff":"0.05s","maxBackoff":"10s",)"
                   R"("backoffMultiplier":2,"retryableStatusCodes":["%1"]}}]})")
            .arg(QLatin1String(retryable));
    };
    PolicyDock conforming(&model), breaking(&model);
    // And under retention: a model that keeps 100,000 calls, evicting every second once full (the rows of
    // the findings evicted leave the list as new ones come in).
    TimelineModel kept;
    RetentionPolicy keep100k;
    keep100k.maxCalls = 100'000;
    kept.setRetention(keep100k);
    kept.appendBatch(openings());
    PolicyDock evicting(&kept);
    QString configError;
    if (!conforming.setServiceConfig(policyConfig("UNAVAILABLE"), &configError) ||
        !breaking.setServiceConfig(policyConfig("DEADLINE_EXCEEDED"), &configError) ||
        !evicting.setServiceConfig(policyConfig("DEADLINE_EXCEEDED"), &configError))
        std::printf("   the Policy check's config was refused: %s\n", qPrintable(configError));
    std::vector<double> updateMs, applyMs, refreshMs, modelMs, policyMs, breakingMs, evictingMs, shownMs;
    // The status bar's "N calls (M in view)", refreshed once a second: the store's spans, and as baseline the
    // walk of every call it replaced.
    std::vector<double> inViewMs, inViewWalkMs;
    size_t inViewSeen = 0, inViewWalked = 0;
    // The dock with the findings is on screen (offscreen): what the event loop then spends laying out and
    // painting the rows a refresh added is timed apart.
    breaking.resize(900, 400);
    breaking.show();
    QCoreApplication::processEvents();
    double updateSec = 0, applySec = 0, modelSec = 0;
    std::int64_t sink = 0;
    EventBatch batch;
    std::uint64_t next = 0;
    // As a relay flushes: each batch holds the events of its 10 ms, so a call's request and its response
    // usually arrive in different batches (latencies 0.2-20 ms, retries 50 ms later).
    std::multimap<std::int64_t, WireEvent> ahead;
    std::int64_t windowEnd = 0;
    for (int s = 0; s < seconds; ++s) {
        for (int k = 0; k < 100; ++k) {
            windowEnd += 10 * ms;
            EventBatch made;
            for (int c = 0; c < 100; ++c)
                appendCall(made, next++, true);
            for (WireEvent &e : made)
                ahead.emplace(e.tNs, std::move(e));
            batch.clear();
            while (!ahead.empty() && ahead.begin()->first < windowEnd) {
                batch.push_back(std::move(ahead.begin()->second));
                ahead.erase(ahead.begin());
            }
            kept.appendBatch(batch);
            double t0 = threadCpuMs();
            model.appendBatch(batch);
            modelSec += threadCpuMs() - t0;
            StoreChanges changes;
            t0 = threadCpuMs();
            store.apply(batch, &changes);
            applySec += threadCpuMs() - t0;
            t0 = threadCpuMs();
            stats.update(store, changes);
            updateSec += threadCpuMs() - t0;
        }
        double t0 = threadCpuMs();
        sink += refresh(methods, hops, model.stats());
        refreshMs.push_back(threadCpuMs() - t0);
        t0 = threadCpuMs();
        conforming.refresh();
        policyMs.push_back(threadCpuMs() - t0);
        t0 = threadCpuMs();
        breaking.refresh();
        breakingMs.push_back(threadCpuMs() - t0);
        t0 = threadCpuMs();
        QCoreApplication::processEvents();
        shownMs.push_back(threadCpuMs() - t0);
        {
            const TimelineStore &st = model.store();
            const std::int64_t to = st.latestNs(), from = to - 2'000 * ms; // a view following live, 2 s wide
            t0 = threadCpuMs();
            inViewSeen += st.callsOverlapping(from, to);
            inViewMs.push_back(threadCpuMs() - t0);
            t0 = threadCpuMs();
            for (const Call &c : st.calls())
                inViewWalked += c.startNs() <= to && c.endNs().value_or(st.latestNs()) >= from;
            inViewWalkMs.push_back(threadCpuMs() - t0);
        }
        kept.enforceRetention(); // as the window's model does, at most once a second
        t0 = threadCpuMs();
        evicting.refresh();
        evictingMs.push_back(threadCpuMs() - t0);
        updateMs.push_back(updateSec);
        applyMs.push_back(applySec);
        modelMs.push_back(modelSec);
        updateSec = applySec = modelSec = 0;
    }
    if (model.stats().total().calls != stats.total().calls)
        std::printf("   MISMATCH: the model counted %llu calls, the lockstep store %llu\n",
                    (unsigned long long)model.stats().total().calls, (unsigned long long)stats.total().calls);
    std::vector<double> total;
    for (size_t i = 0; i < updateMs.size(); ++i)
        total.push_back(updateMs[i] + refreshMs[i]);
    using bench::percentile;
    std::printf("   per second of traffic (GUI thread CPU, ms)       p50      p90      max\n");
    std::printf("   statistics kept (CallStats::update)        %8.2f %8.2f %8.2f\n", percentile(updateMs, 50),
                percentile(updateMs, 90), percentile(updateMs, 100));
    std::printf("   the dock's refresh (table model, histogram)  %6.2f %8.2f %8.2f   goal <= 5 ms\n",
                percentile(refreshMs, 50), percentile(refreshMs, 90), percentile(refreshMs, 100));
    std::printf("   both: all the statistics cost the GUI thread %6.2f %8.2f %8.2f\n", percentile(total, 50),
                percentile(total, 90), percentile(total, 100));
    std::printf("   baseline: the store's apply()              %8.2f %8.2f %8.2f\n", percentile(applyMs, 50),
                percentile(applyMs, 90), percentile(applyMs, 100));
    std::printf("   the item model's appendBatch (all of it)   %8.2f %8.2f %8.2f\n", percentile(modelMs, 50),
                percentile(modelMs, 90), percentile(modelMs, 100));
    std::printf("   Policy check, calls conform (%llu judged)  %6.2f %8.2f %8.2f   goal <= 5 ms\n",
                (unsigned long long)conforming.check().calls(), percentile(policyMs, 50),
                percentile(policyMs, 90), percentile(policyMs, 100));
    std::printf("   Policy check, %llu findings listed      %8.2f %8.2f %8.2f   goal <= 5 ms\n",
                (unsigned long long)breaking.findings()->model()->rowCount(), percentile(breakingMs, 50),
                percentile(breakingMs, 90), percentile(breakingMs, 100));
    std::printf("   ...its layout and paint, the dock shown     %8.2f %8.2f %8.2f\n", percentile(shownMs, 50),
                percentile(shownMs, 90), percentile(shownMs, 100));
    std::printf(
        "   Policy check, the same, 100k calls kept (%zu evicted, %d listed) %5.2f %8.2f %8.2f   goal <= 5 "
        "ms\n",
        kept.store().evictedCalls(), evicting.findings()->model()->rowCount(), percentile(evictingMs, 50),
        percentile(evictingMs, 90), percentile(evictingMs, 100));
    std::printf("   status bar's calls in view (store's spans)  %8.2f %8.2f %8.2f\n",
                percentile(inViewMs, 50), percentile(inViewMs, 90), percentile(inViewMs, 100));
    std::printf(
        "   baseline: a walk of the calls              %8.2f %8.2f %8.2f   spans / walk at p50: %.2fx%s\n",
        percentile(inViewWalkMs, 50), percentile(inViewWalkMs, 90), percentile(inViewWalkMs, 100),
        percentile(inViewMs, 50) / std::max(1e-9, percentile(inViewWalkMs, 50)),
        inViewSeen == inViewWalked ? "" : "  MISMATCH");
    std::printf("   all statistics / store apply: %.2fx, / item model: %.2fx;  %llu calls counted, %zu kept "
                "(checksum "
                "%lld)\n\n",
                percentile(total, 50) / std::max(1e-9, percentile(applyMs, 50)),
                percentile(total, 50) / std::max(1e-9, percentile(modelMs, 50)),
                (unsigned long long)model.stats().total().calls, model.store().calls().size(),
                (long long)sink % 10);
}

void file(std::uint64_t calls, int rounds)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("calls.rpcscope");
    {
        CaptureFileStream out;
        CaptureInfo info;
        info.recordFrames = true;
        std::string error;
        if (!out.open(path, info, {}, &error)) {
            std::printf("cannot write %s: %s\n", qPrintable(path), error.c_str());
            return;
        }
        out.append(openings());
        EventBatch batch;
        for (std::uint64_t i = 0; i < calls; i += 100) {
            batch.clear();
            for (std::uint64_t c = i; c < std::min(calls, i + 100); ++c)
                appendCall(batch, c, true);
            out.append(batch);
        }
        if (!out.finish(&error)) {
            std::printf("cannot finish %s: %s\n", qPrintable(path), error.c_str());
            return;
        }
    }
    std::printf("2. a file of %llu calls (%.0f MB, with frames): %d interleaved rounds, wall seconds\n",
                (unsigned long long)calls, double(QFileInfo(path).size()) / 1e6, rounds);
    std::vector<double> decodeS, loadS, statsS;
    std::uint64_t counted = 0;
    size_t loadedCalls = 0;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        {
            CaptureInfo info;
            size_t events = 0;
            readCaptureFile(path, &info, [&](EventBatch &&b) { events += b.size(); });
            if (events == 0) std::printf("   nothing decoded\n");
        }
        decodeS.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        t0 = std::chrono::steady_clock::now();
        {
            // Opening it: every batch into a store, frames as recorded.
            CaptureInfo info;
            TimelineStore store;
            readCaptureFile(path, &info, [&](EventBatch &&b) { store.apply(b); });
            loadedCalls = store.calls().size();
        }
        loadS.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        t0 = std::chrono::steady_clock::now();
        {
            StatsFeed feed;
            CaptureInfo info;
            bool first = true;
            readCaptureFile(path, &info, [&](EventBatch &&b) {
                if (first) feed.setInfo(info);
                first = false;
                feed.apply(b);
            });
            counted = feed.stats().total().calls;
            volatile std::int64_t sink = readAll(feed.stats());
            (void)sink;
        }
        statsS.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    using bench::percentile;
    const double d = percentile(decodeS, 50), l = percentile(loadS, 50), s = percentile(statsS, 50);
    std::printf("   decode the file only                  %7.2f s\n", d);
    std::printf("   read it into a store (as opening)     %7.2f s   (%zu calls)\n", l, loadedCalls);
    std::printf("   stats (StatsFeed)                     %7.2f s   (%llu calls counted)\n", s,
                (unsigned long long)counted);
    std::printf("   stats / read into a store: %.2fx (goal <= 1.0);  stats / decode only: %.2fx\n", s / l,
                s / d);
    std::printf("   peak RSS of this process: %ld MB\n", peakRssKb() / 1024);
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    bool quick = false, liveOnly = false, fileOnly = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--live-only") == 0) {
            liveOnly = true;
        } else if (std::strcmp(argv[i], "--file-only") == 0) {
            fileOnly = true;
        } else {
            std::fprintf(stderr,
                         "rpcscope-statsbench: unknown option %s (--quick, --live-only, --file-only)\n",
                         argv[i]);
            return 2;
        }
    }
    if (!fileOnly) live(quick ? 10 : 30);
    if (!liveOnly) file(quick ? 200'000 : 1'000'000, quick ? 2 : 3);
    return 0;
}
