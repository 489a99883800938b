// Merging captures (model/capturemerge.h) on hand-built event streams: the time base, per-file offsets,
// connection and call ids kept apart, lane labels, the CLI's offset syntax, and what happens with an empty
// capture, a capture without a wall clock, clashing labels and clocks too far apart. tests/app/tst_merge.cpp
// does the same with real captures of a deadline chain that crosses two capture sessions.

#include "capturemerge.h"
#include "clock.h"
#include "timelinestore.h"
#include "wireevents.h"

#include <QtTest>
#include <limits>
#include <set>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t kWall = 1'700'000'000'000'000'000; // 2023-11-14, ns since the epoch

WireEvent opened(std::uint32_t conn, std::int64_t t, const std::string &label)
{
    return testev::opened(conn, t, "127.0.0.1:4000" + std::to_string(conn), "127.0.0.1:50051", label);
}

WireEvent request(std::uint32_t conn, std::int64_t t, const std::string &callId)
{
    WireEvent e = testev::event(EventKind::Headers, conn, 1, t);
    e.grpc.path = "/pkg.Svc/Do";
    e.grpc.callId = callId;
    e.grpc.timeoutNs = 500 * ms;
    return e;
}

WireEvent trailers(std::uint32_t conn, std::int64_t t, int status)
{
    WireEvent e = testev::event(EventKind::Headers, conn, 1, t, Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

WireEvent labEvent(std::int64_t t, const std::string &callId)
{
    WireEvent e;
    e.kind = EventKind::LabEvent;
    e.tNs = t;
    e.about = LabDecision{"breaker", "closed -> open"};
    e.grpc.callId = callId;
    return e;
}

// A capture on its own steady clock: origin `steady`, taken at wall clock `wall`; one call "order-1" on
// connection `conn` from +10 ms to +30 ms, a lab event about it, and (when asked) a second connection.
CaptureData capture(std::int64_t steady, std::int64_t wall, std::uint32_t conn, const std::string &hop,
                    bool second = false)
{
    CaptureData d;
    d.info.hasOrigin = true;
    d.info.originNs = steady;
    d.info.originWallNs = wall;
    d.info.writer = "test";
    d.batches.push_back({opened(conn, steady + 1 * ms, hop), request(conn, steady + 10 * ms, "order-1")});
    d.batches.push_back({labEvent(steady + 20 * ms, "order-1"), trailers(conn, steady + 30 * ms, 0)});
    if (second)
        d.batches.push_back({opened(conn + 1, steady + 40 * ms, {}),
                             request(conn + 1, steady + 41 * ms, "order-2"),
                             trailers(conn + 1, steady + 45 * ms, 14)});
    return d;
}

std::vector<WireEvent> flat(const CaptureData &d)
{
    std::vector<WireEvent> out;
    for (const EventBatch &b : d.batches)
        out.insert(out.end(), b.begin(), b.end());
    return out;
}

// The merged events that came from connection ids in (lo, hi], or lab events (connection 0) when lo == hi ==
// 0.
std::vector<WireEvent> eventsOn(const CaptureData &d, std::uint32_t lo, std::uint32_t hi)
{
    std::vector<WireEvent> out;
    for (const WireEvent &e : flat(d))
        if ((lo == 0 && hi == 0) ? e.connection == 0 : (e.connection > lo && e.connection <= hi))
            out.push_back(e);
    return out;
}

// A capture made as it is read: `n` calls, one connection each, produced one event at a time, counting how
// many events it has handed out.
class CountingSource : public MergeSource
{
public:
    CountingSource(std::int64_t steady, std::int64_t n, std::int64_t *pulled)
        : m_steady(steady), m_n(n), m_pulled(pulled)
    {
    }
    const WireEvent *head() override
    {
        if (m_i >= 3 * m_n) return nullptr;
        if (!m_ready) {
            const std::int64_t call = m_i / 3, t = m_steady + m_i * 1000;
            const std::uint32_t conn = std::uint32_t(call + 1);
            m_event = m_i % 3 == 0   ? opened(conn, t, {})
                      : m_i % 3 == 1 ? request(conn, t, std::string(1, 'c') += std::to_string(call))
                                     : trailers(conn, t, 0);
            m_ready = true;
            ++*m_pulled;
        }
        return &m_event;
    }
    void pop() override
    {
        ++m_i;
        m_ready = false;
    }

private:
    std::int64_t m_steady, m_n, *m_pulled, m_i = 0;
    bool m_ready = false;
    WireEvent m_event;
};
} // namespace

class TestCaptureMerge : public QObject
{
    Q_OBJECT
private slots:
    // A capture's origin pairs the two clocks at one instant (clock.h): a thread preempted between the reads
    // must not shift the file's place on the wall clock. Scripted clocks, each read taking 100 ns, the wall
    // clock exactly `offset` ahead of the steady one.
    void originPairsTheClocksAtOneInstant()
    {
        const std::int64_t offset = 1'700'000'000'000 * ms;
        std::int64_t now = 10 * ms; // true time, in steady terms
        int wallReads = 0;
        auto wall = [&] {
            const std::int64_t t = now + offset;
            now += 100;
            ++wallReads;
            return t;
        };
        // The first try is preempted for 5 ms right after its steady read; the second is not.
        auto preempted = [&] {
            const std::int64_t t = now;
            now += 100;
            if (wallReads == 1) now += 5 * ms;
            return t;
        };
        const ClockPair p = clockPairFrom(preempted, wall);
        QCOMPARE(wallReads, 4); // a second try, and no third
        QVERIFY2(std::abs(p.wallNs - p.steadyNs - offset) <= 100,
                 qPrintable(QStringLiteral("%1 ns off").arg(p.wallNs - p.steadyNs - offset)));

        // The wall clock set back a minute between the first try's two reads: that try says nothing.
        wallReads = 0;
        auto steady = [&] {
            const std::int64_t t = now;
            now += 100;
            return t;
        };
        auto setBack = [&] {
            const std::int64_t t = now + offset - (wallReads == 1 ? 60'000 * ms : 0);
            now += 100;
            ++wallReads;
            return t;
        };
        const ClockPair q = clockPairFrom(steady, setBack);
        QCOMPARE(wallReads, 4);
        QVERIFY2(std::abs(q.wallNs - q.steadyNs - offset) <= 100,
                 qPrintable(QStringLiteral("%1 ns off").arg(q.wallNs - q.steadyNs - offset)));
    }

    void alignsByWallClockAcrossUnrelatedSteadyClocks()
    {
        // Two hosts: the edge booted 1000 s before its capture, the backend 5 h; the backend's capture
        // started 30 ms (wall clock) after the edge's.
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A", true);
        const CaptureData backend = capture(18'000'000 * ms, kWall + 30 * ms, 1, "B->C");
        CaptureData merged;
        const MergeResult r = mergeCaptures({{&backend, "backend", 0}, {&edge, "edge", 0}}, &merged);
        QVERIFY2(r.ok, r.error.c_str());
        // The earliest wall-clock origin is the reference, whatever the order given.
        QCOMPARE(r.reference, size_t(1));
        QCOMPARE(merged.info.originNs, edge.info.originNs);
        QCOMPARE(merged.info.originWallNs, kWall);
        QVERIFY(merged.info.hasOrigin);
        QCOMPARE(r.shiftNs[1], std::int64_t(0));
        QCOMPARE(r.shiftNs[0], 1000'000 * ms + 30 * ms - 18'000'000 * ms);
        QCOMPARE(merged.eventCount(), edge.eventCount() + backend.eventCount());

        // Connection ids: the first file (backend, id 1) keeps its own, the edge's follow.
        QCOMPARE(r.connectionBase[0], std::uint32_t(0));
        QCOMPARE(r.connectionBase[1], std::uint32_t(1));
        TimelineStore store;
        store.setOrigin(merged.info.originNs, merged.info.originWallNs);
        for (const EventBatch &b : merged.batches)
            store.apply(b);
        QCOMPARE(int(store.connections().size()), 3);
        std::set<std::uint32_t> ids;
        for (const Connection &c : store.connections())
            ids.insert(c.id);
        QCOMPARE(ids, (std::set<std::uint32_t>{1, 2, 3}));

        // The backend's order-1 starts 10 ms after its origin, which is 30 ms after the edge's: +40 ms.
        // The edge's order-1 came second, so its id is the one renamed.
        const auto backendCall = store.callIndex("order-1");
        const auto edgeCall = store.callIndex("edge/order-1");
        QVERIFY(backendCall && edgeCall);
        QCOMPARE(store.calls()[*backendCall].startNs() - merged.info.originNs, 40 * ms);
        QCOMPARE(store.calls()[*edgeCall].startNs() - merged.info.originNs, 10 * ms);
        QVERIFY(store.callIndex("order-2")); // not taken by the backend: unchanged
        // Every lane says which file it came from.
        QCOMPARE(QString::fromStdString(store.calls()[*backendCall].hop), QStringLiteral("backend: B->C"));
        QCOMPARE(QString::fromStdString(store.calls()[*edgeCall].hop), QStringLiteral("edge: client->A"));
        QCOMPARE(QString::fromStdString(store.calls()[*store.callIndex("order-2")].hop),
                 QStringLiteral("edge"));
        // The lab events follow their calls' new ids.
        std::multiset<std::string> labCalls;
        for (const LabEventRecord &e : store.labEvents())
            labCalls.insert(e.callId);
        QCOMPARE(labCalls, (std::multiset<std::string>{"edge/order-1", "order-1"}));
        // Merged events are in time order across files here (each file is).
        const auto events = flat(merged);
        for (size_t i = 1; i < events.size(); ++i)
            QVERIFY(events[i - 1].tNs <= events[i].tNs);
    }

    void offsetMovesExactlyThatFile()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A", true);
        const CaptureData backend = capture(18'000'000 * ms, kWall + 30 * ms, 1, "B->C");
        CaptureData before, after;
        QVERIFY(mergeCaptures({{&edge, "edge", 0}, {&backend, "backend", 0}}, &before).ok);
        const std::int64_t x = 12'500'000; // +12.5 ms
        const MergeResult r = mergeCaptures({{&edge, "edge", 0}, {&backend, "backend", x}}, &after);
        QVERIFY(r.ok);
        QCOMPARE(after.info.originNs, before.info.originNs);
        QCOMPARE(after.info.originWallNs, before.info.originWallNs);
        // The edge's events (connections 1, 2): unchanged. The backend's (3): exactly +x.
        const auto edgeBefore = eventsOn(before, 0, 2), edgeAfter = eventsOn(after, 0, 2);
        QCOMPARE(edgeAfter.size(), size_t(6));
        QVERIFY(edgeAfter == edgeBefore);
        const auto backendBefore = eventsOn(before, 2, 3), backendAfter = eventsOn(after, 2, 3);
        QCOMPARE(backendAfter.size(), size_t(3));
        for (size_t i = 0; i < backendAfter.size(); ++i) {
            WireEvent moved = backendBefore[i];
            moved.tNs += x;
            QVERIFY(backendAfter[i] == moved);
        }
        // A negative offset on the reference file moves it alone too; the origin stays.
        CaptureData earlier;
        const MergeResult r2 = mergeCaptures({{&edge, "edge", -5 * ms}, {&backend, "backend", 0}}, &earlier);
        QVERIFY(r2.ok);
        QCOMPARE(earlier.info.originNs, before.info.originNs);
        QCOMPARE(eventsOn(earlier, 2, 3).front().tNs, backendBefore.front().tNs);
        QCOMPARE(eventsOn(earlier, 0, 2).front().tNs, edgeBefore.front().tNs - 5 * ms);
    }

    void oneFileWithoutLabelIsItself()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 7, "client->A", true);
        CaptureData merged;
        const MergeResult r = mergeCaptures({{&edge, {}, 0}}, &merged);
        QVERIFY(r.ok);
        QVERIFY(flat(merged) == flat(edge));
        QCOMPARE(merged.info.originNs, edge.info.originNs);
        QCOMPARE(merged.info.originWallNs, edge.info.originWallNs);
        QVERIFY(r.notes.empty());
    }

    void selfMergeKeepsTheCopiesApart()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A", true);
        CaptureData merged;
        const MergeResult r = mergeCaptures({{&edge, "edge", 0}, {&edge, "edge (2)", 0}}, &merged);
        QVERIFY2(r.ok, r.error.c_str());
        TimelineStore store;
        for (const EventBatch &b : merged.batches)
            store.apply(b);
        QCOMPARE(int(store.calls().size()), 4);
        QCOMPARE(int(store.connections().size()), 4);
        for (const char *key : {"order-1", "order-2", "edge (2)/order-1", "edge (2)/order-2"})
            QVERIFY2(store.callIndex(key), key);
        // Both copies end as they did: nothing was grouped across them.
        for (const Call &c : store.calls())
            QCOMPARE(int(c.attempts.size()), 1);
    }

    void emptyCaptureChangesNothing()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A");
        CaptureData empty; // a session that recorded nothing, started earlier than the edge's
        empty.info.hasOrigin = true;
        empty.info.originNs = 77 * ms;
        empty.info.originWallNs = kWall - 3600'000 * ms;
        CaptureData merged;
        const MergeResult r = mergeCaptures({{&empty, "idle", 0}, {&edge, "edge", 0}}, &merged);
        QVERIFY2(r.ok, r.error.c_str());
        QCOMPARE(r.reference, size_t(1));
        QCOMPARE(merged.info.originNs, edge.info.originNs);
        QCOMPARE(merged.info.originWallNs, edge.info.originWallNs);
        QCOMPARE(merged.eventCount(), edge.eventCount());
        QCOMPARE(int(r.notes.size()), 1);
        QCOMPARE(QString::fromStdString(r.notes[0]), QStringLiteral("idle holds no events"));
        // Only empty captures: nothing to show, still no error, and the origin says when.
        CaptureData none;
        const MergeResult r2 = mergeCaptures({{&empty, "idle", 0}, {&empty, "idle (2)", 0}}, &none);
        QVERIFY(r2.ok);
        QCOMPARE(none.eventCount(), size_t(0));
        QCOMPARE(none.info.originWallNs, empty.info.originWallNs);
    }

    void captureWithoutWallClockStartsWithTheReference()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A");
        CaptureData noWall = capture(42 * ms, 0, 1, "B->C");
        noWall.info.hasOrigin = false; // as a store that was never given an origin: its first event is
        CaptureData merged;
        const MergeResult r = mergeCaptures({{&edge, "edge", 0}, {&noWall, "old-agent", 0}}, &merged);
        QVERIFY2(r.ok, r.error.c_str());
        QCOMPARE(int(r.notes.size()), 1);
        QVERIFY2(r.notes[0].find("old-agent has no wall-clock origin") == 0, r.notes[0].c_str());
        // Its first event (its origin, then) lands on the edge's origin.
        QCOMPARE(eventsOn(merged, 1, 2).front().tNs, edge.info.originNs);
    }

    void badInputsAreErrors()
    {
        const CaptureData edge = capture(1000'000 * ms, kWall, 1, "client->A");
        CaptureData out;
        MergeResult r = mergeCaptures({}, &out);
        QVERIFY(!r.ok);
        QCOMPARE(QString::fromStdString(r.error), QStringLiteral("nothing to merge: no captures given"));
        r = mergeCaptures({{&edge, "x", 0}, {&edge, "x", 0}}, &out);
        QVERIFY(!r.ok);
        QVERIFY2(r.error.find("two captures are labelled 'x'") == 0, r.error.c_str());

        // A damaged file's wall clock, a century and a half from the other's: an error, never an overflow.
        CaptureData far = capture(0, 5'000'000'000'000'000'000, 1, "B->C");
        CaptureData early = capture(0, 1, 1, "A");
        r = mergeCaptures({{&early, "early", 0}, {&far, "far", 0}}, &out);
        QVERIFY(!r.ok);
        QVERIFY2(r.error.find("cannot place far on the common time base") == 0, r.error.c_str());
        r = mergeCaptures({{&edge, "edge", 0}, {&edge, "again", std::numeric_limits<std::int64_t>::max()}},
                          &out);
        QVERIFY(!r.ok);

        // Connection ids that cannot be kept apart in 32 bits.
        const CaptureData high = capture(0, kWall, std::numeric_limits<std::uint32_t>::max() - 1, "A", true);
        r = mergeCaptures({{&high, "high", 0}, {&edge, "edge", 0}}, &out);
        QVERIFY(!r.ok);
        QVERIFY2(r.error.find("connection ids run out") != std::string::npos, r.error.c_str());
    }

    // The streamed merge gives the batches of the merge in memory.
    void streamedMergeIsTheSame()
    {
        const CaptureData edge = capture(5 * ms, kWall, 1, "client->A", true);
        const CaptureData backend = capture(900 * ms, kWall + 3 * ms, 1, "B->C", true);
        CaptureData whole;
        const MergeResult expected =
            mergeCaptures({{&edge, "edge", 0}, {&backend, "backend", 2 * ms}}, &whole);
        QVERIFY(expected.ok);

        std::vector<MergeFacts> facts(2);
        facts[0].info = edge.info;
        facts[1].info = backend.info;
        for (const EventBatch &b : edge.batches)
            facts[0].add(b);
        for (const EventBatch &b : backend.batches)
            facts[1].add(b);
        struct Flat : MergeSource
        {
            explicit Flat(const CaptureData &d) : events(flat(d)) {}
            const WireEvent *head() override { return i < events.size() ? &events[i] : nullptr; }
            void pop() override { ++i; }
            std::vector<WireEvent> events;
            size_t i = 0;
        } a(edge), b(backend);
        CaptureData streamed;
        const MergeResult r = mergeCaptureStreams(
            {{&facts[0], &a, "edge", 0}, {&facts[1], &b, "backend", 2 * ms}}, &streamed.info,
            [&](EventBatch &&batch) { streamed.batches.push_back(std::move(batch)); });
        QVERIFY(r.ok);
        QCOMPARE(r.shiftNs, expected.shiftNs);
        QCOMPARE(r.connectionBase, expected.connectionBase);
        QCOMPARE(streamed.info.originNs, whole.info.originNs);
        QCOMPARE(streamed.info.originWallNs, whole.info.originWallNs);
        QCOMPARE(streamed.batches.size(), whole.batches.size());
        QCOMPARE(flat(streamed).size(), flat(whole).size());
        const auto x = flat(streamed), y = flat(whole);
        for (size_t i = 0; i < x.size(); ++i) {
            QCOMPARE(x[i].tNs, y[i].tNs);
            QCOMPARE(x[i].connection, y[i].connection);
            QCOMPARE(x[i].grpc.callId, y[i].grpc.callId);
            QCOMPARE(x[i].label, y[i].label);
        }
    }

    // What the streamed merge holds does not grow with its inputs: at any batch it hands over, it has taken
    // from the inputs at most that batch and one event per input more than it has handed over.
    void streamedMergeHoldsOneBatch_data()
    {
        QTest::addColumn<int>("calls");
        QTest::newRow("10k calls") << 10'000;
        QTest::newRow("100k calls") << 100'000;
    }
    void streamedMergeHoldsOneBatch()
    {
        QFETCH(int, calls);
        std::int64_t pulled = 0;
        CountingSource a(0, calls, &pulled), b(500, calls, &pulled);
        std::vector<MergeFacts> facts(2);
        for (MergeFacts &f : facts) {
            f.info.hasOrigin = true;
            f.info.originWallNs = kWall;
            f.events = size_t(3 * calls);
            f.minT = 0;
            f.maxT = 3 * std::int64_t(calls) * 1000 + 500;
            f.maxConnection = std::uint32_t(calls);
        }
        std::int64_t handed = 0, mostAhead = 0;
        size_t largest = 0;
        CaptureInfo info;
        const MergeResult r = mergeCaptureStreams({{&facts[0], &a, "a", 0}, {&facts[1], &b, "b", 0}}, &info,
                                                  [&](EventBatch &&batch) {
                                                      mostAhead = std::max(mostAhead, pulled - handed);
                                                      handed += std::int64_t(batch.size());
                                                      largest = std::max(largest, batch.size());
                                                  });
        QVERIFY(r.ok);
        QCOMPARE(handed, 6 * std::int64_t(calls));
        QVERIFY(largest <= 4096);
        QVERIFY2(mostAhead <= std::int64_t(largest) + 2, qPrintable(QString::number(mostAhead)));
    }

    void progressCanCancel()
    {
        CaptureData big;
        big.info.hasOrigin = true;
        big.info.originWallNs = kWall;
        EventBatch b;
        for (int i = 0; i < 100'000; ++i)
            // std::string(1, 'c') += ... rather than "c" + ...: the latter trips GCC 12's false -Wrestrict
            // (bug 105329).
            b.push_back(request(1, i, std::string(1, 'c') += std::to_string(i)));
        big.batches.push_back(std::move(b));
        CaptureData out;
        int calls = 0;
        const MergeResult r =
            mergeCaptures({{&big, "big", 0}}, &out, [&](std::int64_t done, std::int64_t total) {
                ++calls;
                return done < total / 2;
            });
        QVERIFY(!r.ok);
        QCOMPARE(QString::fromStdString(r.error), QStringLiteral("cancelled"));
        QVERIFY(calls >= 3);
        QCOMPARE(out.eventCount(), size_t(0));
    }

    void offsetSyntax_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("ns");
        QTest::addColumn<QString>("error");
        QTest::newRow("ms fraction") << "+12.5ms" << qint64(12'500'000) << "";
        QTest::newRow("negative us") << "-3us" << qint64(-3'000) << "";
        QTest::newRow("micro sign") << "2\u00b5s" << qint64(2'000) << "";
        QTest::newRow("seconds") << "0.25s" << qint64(250'000'000) << "";
        QTest::newRow("ns") << "7ns" << qint64(7) << "";
        QTest::newRow("tenth of a ms") << "0.1ms" << qint64(100'000) << "";
        QTest::newRow("a day") << "-86400s" << qint64(-86'400'000'000'000) << "";
        QTest::newRow("no unit") << "12.5" << qint64(0)
                                 << "bad offset '12.5': give a unit: ns, us, ms or s (for example +12.5ms)";
        QTest::newRow("bad unit") << "3h" << qint64(0)
                                  << "bad offset '3h': unknown unit 'h' (ns, us, ms or s)";
        QTest::newRow("space") << "3 ms" << qint64(0)
                               << "bad offset '3 ms': unknown unit ' ms' (ns, us, ms or s)";
        QTest::newRow("no number")
            << "+ms" << qint64(0)
            << "bad offset '+ms': expected a number with a unit, for example +12.5ms or -3us";
        QTest::newRow("exponent") << "1e3ms" << qint64(0)
                                  << "bad offset '1e3ms': unknown unit 'e3ms' (ns, us, ms or s)";
        QTest::newRow("too far") << "86401s" << qint64(0) << "bad offset '86401s': more than a day";
        QTest::newRow("empty") << "" << qint64(0)
                               << "bad offset '': expected a number with a unit, for example +12.5ms or -3us";
    }

    void offsetSyntax()
    {
        QFETCH(QString, text);
        QFETCH(qint64, ns);
        QFETCH(QString, error);
        std::int64_t got = -1;
        std::string why;
        const bool ok = parseMergeOffset(text.toStdString(), &got, &why);
        QCOMPARE(ok, error.isEmpty());
        if (ok)
            QCOMPARE(got, std::int64_t(ns));
        else
            QCOMPARE(QString::fromStdString(why), error);
    }

    void defaultLabels()
    {
        QCOMPARE(QString::fromStdString(defaultMergeLabel("agents/edge.rpcscope", {})),
                 QStringLiteral("edge"));
        QCOMPARE(QString::fromStdString(defaultMergeLabel("dump.pcapng", {})), QStringLiteral("dump"));
        QCOMPARE(QString::fromStdString(defaultMergeLabel("host.a.json", {})), QStringLiteral("host.a"));
        QCOMPARE(QString::fromStdString(defaultMergeLabel("edge.rpcscope", {"edge", "edge (2)"})),
                 QStringLiteral("edge (3)"));
        QCOMPARE(QString::fromStdString(defaultMergeLabel("dir/", {})), QStringLiteral("capture"));
    }
};

QTEST_GUILESS_MAIN(TestCaptureMerge)
#include "tst_capturemerge.moc"
