// One memory budget that tells the truth: what a capture holds besides calls (a PING flood on a connection
// without any, long header lists of streams that never end) stays inside retention's budget, what went is
// said in a note, and the reported memory follows what the allocator really gave.

#include "eventlog.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QtTest>
#include <malloc.h>
#include <memory>
#include <vector>

using namespace rpcscope;

namespace {
constexpr std::int64_t us = 1'000;
constexpr std::int64_t ms = 1'000'000;

size_t heapInUse()
{
    malloc_trim(0);
    return mallinfo2().uordblks;
}

// Whether glibc's allocator counts what it hands out: under AddressSanitizer (scripts/sanitize.sh) malloc is
// the sanitizer's and mallinfo2() says 0, so there is nothing to compare the model's figure with.
bool allocatorCounts()
{
    // Small blocks, as the model's: a large one may be mapped apart from the heap mallinfo2() counts.
    const size_t before = heapInUse();
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 4096; ++i)
        blocks.push_back(std::make_unique<char[]>(256));
    return heapInUse() >= before + blocks.size() * 256;
}

WireEvent request(std::uint32_t stream, std::int64_t t, size_t headerBytes)
{
    WireEvent e = testev::event(EventKind::Headers, 1, stream, t);
    e.grpc.path = "/shop.Cart/Get";
    e.grpc.callId = "call-" + std::to_string(stream);
    e.headers.push_back({":path", "/shop.Cart/Get"});
    // HPACK lets a few bytes on the wire repeat a long indexed header: 64 KiB of list from 16 KiB.
    for (size_t n = 0; n < headerBytes; n += 1'000)
        e.headers.push_back({"x-filler-" + std::to_string(n), std::string(990, 'v')});
    return e;
}

// The i-th of a session's unary calls on connection 1, a millisecond apart: its request, HEADERS and DATA
// frames and trailers.
void appendCall(TimelineModel &model, int i)
{
    const std::int64_t t = ms + i * ms;
    const std::uint32_t s = std::uint32_t(2 * i + 1);
    model.appendBatch({request(s, t, 200),
                       testev::frame(1, s, t + 1, Direction::ClientToServer, FrameHeaders, 4, 40),
                       testev::frame(1, s, t + 2, Direction::ServerToClient, FrameData, 0, 20),
                       testev::trailers(1, s, t + 3, 0)});
}
} // namespace

class TestMemoryBudget : public QObject
{
    Q_OBJECT
private slots:
    void pingFloodWithoutCallsIsBounded()
    {
        // Before, frames of a connection that carries no call were never evicted: this grew to 40 MB and
        // more.
        constexpr size_t kBudget = size_t(4) << 20;
        TimelineModel model;
        model.setRetention({kBudget, 0, 0});
        model.appendBatch({testev::opened(1, 0)});
        constexpr int kBatches = 2'000, kPerBatch = 200;
        size_t peak = 0;
        for (int b = 0; b < kBatches; ++b) {
            EventBatch batch;
            for (int i = 0; i < kPerBatch; ++i) {
                const std::int64_t t = ms + (std::int64_t(b) * kPerBatch + i) * 10 * us;
                WireEvent e = testev::frame(1, 0, t, Direction::ClientToServer, FramePing, 0, 8);
                e.pingData = std::uint64_t(b * kPerBatch + i);
                batch.push_back(e);
            }
            model.appendBatch(batch);
            peak = std::max(peak, model.memoryBytes());
        }
        qInfo("%d frames; peak %zu bytes reported, %zu kept frames, %zu events in the log",
              kBatches * kPerBatch, peak, model.store().frames().size(), model.eventLog().eventCount());
        // Checked when a twentieth of the budget may have been added: never much over it.
        QVERIFY2(peak <= kBudget * 11 / 10, qPrintable(QString::number(peak)));
        QVERIFY(model.store().frames().size() < size_t(kBatches * kPerBatch) / 4);
        QVERIFY(model.eventLog().eventCount() < size_t(kBatches * kPerBatch) / 4);
        // The newest frames stay, the oldest went.
        QCOMPARE(model.store().frames().back().tNs, ms + (std::int64_t(kBatches) * kPerBatch - 1) * 10 * us);
        QVERIFY(model.store().frames().front().tNs > ms + 2'000 * ms);
        // The note says what and how much.
        const std::string note = model.store().retentionNote();
        QVERIFY2(note.find("retention dropped") == 0 && note.find(" frames (") != std::string::npos &&
                     note.find(" MB) older than ") != std::string::npos,
                 note.c_str());
        QVERIFY(model.store().retentionLoss().frames > size_t(kBatches * kPerBatch) / 2);
        // The connection stays.
        QCOMPARE(model.store().connections().size(), size_t(1));
    }

    void inFlightHeaderListsAreBoundedAndCounted()
    {
        // Streams that never end, each with a 64 KiB header list: kept header bytes are capped per block and
        // counted, and past the budget the oldest in-flight calls go.
        constexpr size_t kBudget = size_t(8) << 20;
        TimelineModel model;
        model.setRetention({kBudget, 0, 0});
        model.appendBatch({testev::opened(1, 0)});
        constexpr int kStreams = 3'000; // 190 MB of header lists
        size_t peak = 0;
        for (int i = 0; i < kStreams; ++i) {
            model.appendBatch({request(std::uint32_t(2 * i + 1), ms + i * ms, 64 * 1024)});
            peak = std::max(peak, model.memoryBytes());
        }
        qInfo("peak %zu bytes reported; %zu calls kept, %zu dropped in flight", peak,
              model.store().calls().size(), model.store().retentionLoss().inFlightCalls);
        QVERIFY2(peak <= kBudget * 11 / 10, qPrintable(QString::number(peak)));
        QVERIFY(model.store().retentionLoss().inFlightCalls > 0);
        QVERIFY(model.store().retentionNote().find("still in flight") != std::string::npos);
        // The newest call stays, in flight.
        QCOMPARE(model.store().calls().back().key, "call-" + std::to_string(2 * (kStreams - 1) + 1));
        // Each block keeps at most the cap, marked truncated; the call's gRPC fields are whole.
        const EventLog &log = model.eventLog();
        bool sawHeaders = false;
        for (size_t b = 0; b < log.batchCount(); ++b)
            for (const WireEvent &e : log.batch(b)) {
                if (e.kind != EventKind::Headers) continue;
                sawHeaders = true;
                size_t bytes = 0;
                for (const Header &h : e.headers)
                    bytes += h.name.size() + h.value.size();
                QVERIFY(bytes <= EventLog::kMaxKeptHeaderBytes);
                QVERIFY(e.truncated);
                QCOMPARE(e.grpc.path, std::string("/shop.Cart/Get"));
            }
        QVERIFY(sawHeaders);
        // A late message or trailers of an evicted stream find no call: nothing is created for them.
        const size_t calls = model.store().calls().size();
        model.appendBatch({testev::trailers(1, 1, ms + kStreams * ms, 0)});
        QCOMPARE(model.store().calls().size(), calls);
    }

    // What others hold (a capture's queue and decoders under a small --keep) may be more than the whole
    // budget: their floors are. Evicting calls cannot bring the session within it then, so the calls keep
    // their quarter of the budget, as the reserve leaves them, instead of going to the last one.
    void callsKeepAQuarterWhateverOthersHold()
    {
        constexpr size_t kBudget = size_t(2) << 20;
        TimelineModel model;
        model.setExternalReserve(kBudget / 4 * 3);
        size_t external = 0;
        model.setExternalBytes([&external] { return external; });
        model.setRetention({kBudget, 0, 0});
        model.appendBatch({testev::opened(1, 0)});
        constexpr int kCalls = 4000;
        for (int i = 0; i < kCalls; ++i) {
            // What the others hold swings around the budget and past it, as a full queue's does.
            external = kBudget / 2 + size_t(i % 5) * kBudget / 4;
            appendCall(model, i);
        }
        external = kBudget * 3 / 2;
        model.enforceRetention();
        const size_t kept = model.store().calls().size();
        const size_t callsBytes = model.memoryBytes() - external - model.stats().rowBytes();
        qInfo("others holding 1.5x the budget: %zu calls kept (%.0f KB), %zu evicted", kept,
              double(callsBytes) / 1024, model.store().evictedCalls());
        QCOMPARE(kept + model.store().evictedCalls(), size_t(kCalls));
        QVERIFY(model.store().evictedCalls() > 0);
        // A quarter of the budget, less what eviction leaves spare below it (it works down to 95% of the
        // budget and, in a step, a little under that) and the statistics' rows: some 400 KB of 512. Counted
        // in full, the others left the calls a twentieth of the budget (about 100 KB) or none.
        QVERIFY2(callsBytes >= kBudget / 6, qPrintable(QString::number(callsBytes)));
        QVERIFY2(callsBytes <= kBudget / 4, qPrintable(QString::number(callsBytes)));
        QCOMPARE(model.store().calls().back().key, "call-" + std::to_string(2 * (kCalls - 1) + 1));
    }

    // What the store itself holds that no eviction frees (its connections: a long-lived client's pool, some
    // hundreds of them) counts with the others, and the calls have the rest. Before, the floor counted in the
    // store's share of the room as if evicting calls freed it: here the calls kept 391 KB and the session
    // held 1.14 times its budget; and where the others left less room (a storm's statistics' rows when a file
    // opens under a small budget), the store's limit fell below its floor and a pass evicted every call.
    void theStoresFloorCountsWithTheOthers()
    {
        constexpr size_t kBudget = size_t(2) << 20;
        TimelineModel model;
        model.setExternalBytes([] { return kBudget / 10 * 7; });
        model.setRetention({kBudget, 0, 0});
        EventBatch opens;
        for (std::uint32_t c = 1; c <= 500; ++c)
            opens.push_back(testev::opened(c, 0, "client-" + std::to_string(c) + std::string(300, 'x')));
        model.appendBatch(opens);
        // The connections in the store and their events in the log: retention keeps both whatever it evicts.
        const size_t connections = model.memoryBytes() - kBudget / 10 * 7;
        size_t floor = 0;
        model.store().approxBytes(&floor);
        QVERIFY2(floor > kBudget / 8, qPrintable(QString::number(floor)));
        constexpr int kCalls = 4000;
        for (int i = 0; i < kCalls; ++i)
            appendCall(model, i);
        model.enforceRetention();
        const size_t kept = model.store().calls().size();
        const size_t callsBytes =
            model.memoryBytes() - kBudget / 10 * 7 - connections - model.stats().rowBytes();
        qInfo("others holding 70%% of the budget, connections %.0f KB of it (%.0f KB in the store): %zu "
              "calls kept "
              "(%.0f KB), %zu evicted",
              double(connections) / 1024, double(floor) / 1024, kept, double(callsBytes) / 1024,
              model.store().evictedCalls());
        QCOMPARE(kept + model.store().evictedCalls(), size_t(kCalls));
        QVERIFY(model.store().evictedCalls() > 0);
        // What the others and the connections leave of the quarter: the log's connection events count as
        // the calls' (the log keeps them whatever it evicts).
        QVERIFY2(callsBytes >= kBudget / 16, qPrintable(QString::number(callsBytes)));
        QVERIFY2(model.memoryBytes() <= kBudget * 11 / 10, qPrintable(QString::number(model.memoryBytes())));
        QCOMPARE(model.store().calls().back().key, "call-" + std::to_string(2 * (kCalls - 1) + 1));
        QCOMPARE(model.store().connections().size(), size_t(500));
        // The recently ended streams the store remembers (up to 1024 of them) are those of the calls kept:
        // an evicted call's went with it.
        size_t floorAfter = 0;
        model.store().approxBytes(&floorAfter);
        QVERIFY2(floorAfter <= floor + kept * 64,
                 qPrintable(QStringLiteral("%1 from %2").arg(floorAfter).arg(floor)));
    }

    // A rapid reset, as the capture's feed hands it over: appends of thousands of streams, each a request's
    // headers and frames and the client's RST_STREAM, with what others hold (the feed's queue, the decoders)
    // at their reserve. After every append, what the session holds stays within the budget: the store, the
    // log and the statistics' records of reset calls go with their calls, past the budget the oldest first.
    void rapidResetStaysWithinTheBudget()
    {
        constexpr size_t kBudget = size_t(16) << 20;
        constexpr size_t kReserve = kBudget / 2;
        TimelineModel model;
        model.setExternalReserve(kReserve);
        size_t external = 0;
        model.setExternalBytes([&external] { return external; });
        model.setRetention({kBudget, 0, 0});
        constexpr int kConnections = 4, kAppends = 60, kStreamsPerAppend = 5'000;
        EventBatch opens;
        for (std::uint32_t c = 1; c <= kConnections; ++c)
            opens.push_back(testev::opened(c, 0, "127.0.0.1:" + std::to_string(5000 + c)));
        model.appendBatch(opens);
        size_t peak = 0, peakModel = 0;
        std::int64_t t = ms;
        std::uint32_t stream = 1;
        for (int a = 0; a < kAppends; ++a) {
            // The others fill up to their reserve and empty again, as a queue does under a flood.
            external = (a % 4) * kReserve / 3;
            EventBatch batch;
            for (int i = 0; i < kStreamsPerAppend; ++i, t += 20 * us) {
                const std::uint32_t conn = std::uint32_t(1 + i % kConnections);
                WireEvent headers = request(stream, t, 0);
                headers.connection = conn;
                headers.grpc.callId.clear(); // a flood names no call id: the stream is the call
                headers.headers = {{":method", "POST"},
                                   {":scheme", "http"},
                                   {":path", "/lab.Lab/Call"},
                                   {":authority", "127.0.0.1:50051"},
                                   {"content-type", "application/grpc"},
                                   {"te", "trailers"}};
                batch.push_back(
                    testev::frame(conn, stream, t, Direction::ClientToServer, FrameHeaders, 0, 60));
                batch.push_back(std::move(headers));
                batch.push_back(
                    testev::frame(conn, stream, t + us, Direction::ClientToServer, FrameRstStream, 8, 4));
                if (conn == kConnections) stream += 2;
            }
            model.appendBatch(batch);
            peak = std::max(peak, model.memoryBytes());
            peakModel = std::max(peakModel, model.memoryBytes() - external);
        }
        qInfo("%d streams reset: peak %.1f MB reported against %zu MB (%.1f MB without the others'); "
              "%zu calls kept, %zu evicted",
              kAppends * kStreamsPerAppend, double(peak) / (1 << 20), kBudget >> 20,
              double(peakModel) / (1 << 20), model.store().calls().size(), model.store().evictedCalls());
        QVERIFY(model.store().evictedCalls() > 0);
        QVERIFY2(peak <= kBudget,
                 qPrintable(QStringLiteral("%1 bytes held against a budget of %2").arg(peak).arg(kBudget)));
    }

    void reportedMemoryFollowsTheAllocator()
    {
        if (!allocatorCounts()) QSKIP("the allocator counts nothing here (AddressSanitizer's malloc)");
        // A large synthetic session: calls with attempts and frames, a flood of one-event batches, lab
        // events. What the model reports must be within a factor of what malloc handed out for it (before,
        // one-event batches and small strings were counted at a third of their cost).
        const size_t before = heapInUse();
        size_t reported = 0;
        {
            TimelineModel model;
            model.appendBatch({testev::opened(1, 0)});
            for (int i = 0; i < 20'000; ++i)
                appendCall(model, i);
            for (int i = 0; i < 200'000; ++i)
                model.appendBatch(
                    {testev::frame(1, 0, 30'000 * ms + i * us, Direction::ClientToServer, FramePing, 0, 8)});
            reported = model.memoryBytes();
            const size_t real = heapInUse() - before;
            qInfo("reported %zu bytes, the allocator %zu: %.2fx", reported, real,
                  double(real) / double(reported));
            QVERIFY2(double(real) <= 1.5 * double(reported) && double(reported) <= 1.5 * double(real),
                     qPrintable(QStringLiteral("reported %1, real %2").arg(reported).arg(real)));
        }
    }

    void statisticsAreCountedAndFollowEviction()
    {
        if (!allocatorCounts()) QSKIP("the allocator counts nothing here (AddressSanitizer's malloc)");
        // Calls in flight (an open-streams flood): the statistics keep a record per call beside the store's,
        // which was not counted (the reported memory was about 0.6 of what the process grew by). Counted now,
        // it must match the allocator, and retention must free the records with their calls, while the rows
        // (which keep evicted calls counted) are left room like the inspector's headers.
        constexpr int kCalls = 30'000;
        auto feed = [](TimelineModel &model, size_t *peak) {
            model.appendBatch({testev::opened(1, 0)});
            for (int i = 0; i < kCalls; i += 100) {
                EventBatch batch;
                for (int k = i; k < i + 100; ++k)
                    batch.push_back(request(std::uint32_t(2 * k + 1), ms + k * us, 0));
                model.appendBatch(batch);
                if (peak) *peak = std::max(*peak, model.memoryBytes());
            }
        };
        const size_t before = heapInUse();
        size_t full = 0, rows = 0, records = 0;
        {
            TimelineModel model;
            feed(model, nullptr);
            full = model.memoryBytes();
            rows = model.stats().rowBytes();
            records = model.stats().callRecordBytes();
            const size_t real = heapInUse() - before;
            qInfo("%d calls in flight: reported %zu bytes (statistics: %zu of records, %zu of rows), the "
                  "allocator %zu: %.2fx",
                  kCalls, full, records, rows, real, double(real) / double(full));
            QCOMPARE(model.store().calls().size(), size_t(kCalls));
            QVERIFY(records >= size_t(kCalls) * 64);
            // Without the records the figure was 0.86 of the allocator's; with them 1.02.
            QVERIFY2(double(real) <= 1.1 * double(full) && double(full) <= 1.1 * double(real),
                     qPrintable(QStringLiteral("reported %1, real %2").arg(full).arg(real)));
        }
        // A third of what evictions can free: the rows stay whole, the calls and their records go.
        const size_t budget = rows + (full - rows) / 3;
        TimelineModel model;
        model.setRetention({budget, 0, 0});
        size_t peak = 0;
        feed(model, &peak);
        QVERIFY2(peak <= budget + budget / 10,
                 qPrintable(QStringLiteral("%1 bytes held against a budget of %2").arg(peak).arg(budget)));
        QVERIFY(model.store().retentionLoss().inFlightCalls > 0);
        QVERIFY2(model.stats().callRecordBytes() < records / 2,
                 qPrintable(QStringLiteral("%1 bytes of statistics records for %2 calls kept of %3")
                                .arg(model.stats().callRecordBytes())
                                .arg(model.store().calls().size())
                                .arg(kCalls)));
        // Evicted calls stay counted.
        QCOMPARE(model.stats().total().calls, std::uint64_t(kCalls));
    }
};

QTEST_GUILESS_MAIN(TestMemoryBudget)
#include "tst_memorybudget.moc"
