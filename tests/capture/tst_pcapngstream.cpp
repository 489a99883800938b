// The pcapng export streamed: the same bytes as the writer that held the whole capture (kept as a reference
// in pcapngreference.cpp), for captures that fit its windows; and what it holds stays within those windows
// however long the capture is. Captures are synthesized: connections of gRPC calls with split header blocks,
// messages over several DATA frames, kept and cut payloads, HPACK table size changes, pings, resets and
// GOAWAYs, interleaved across connections, with the server's events out of time order against the client's
// (as kernel receive times make them).

#include "pcapngreference.h"
#include "pcapngwriter.h"
#include "synthcapture.h"

#include <QtTest>

using namespace rpcscope;
using testsynth::Generator;
using testsynth::Synth;

namespace {

struct Streamed
{
    std::string bytes;
    PcapngStreamWriter::Stats stats;
};

Streamed stream(const CaptureData &data, PcapngStreamWriter::Limits limits)
{
    Streamed s;
    PcapngStreamWriter w(
        data.info.originNs, data.info.originWallNs,
        [&s](const char *bytes, size_t size) {
            s.bytes.append(bytes, size);
            return true;
        },
        limits);
    for (const EventBatch &b : data.batches)
        w.add(b);
    w.finish();
    s.stats = w.stats();
    return s;
}

size_t eventCount(const CaptureData &d)
{
    size_t n = 0;
    for (const EventBatch &b : d.batches)
        n += b.size();
    return n;
}

} // namespace

class TestPcapngStream : public QObject
{
    Q_OBJECT

private slots:
    // Any capture that fits the windows: the bytes the whole-capture writer wrote.
    void sameBytesAsWholeCapture_data()
    {
        QTest::addColumn<unsigned>("seed");
        QTest::addColumn<int>("connections");
        QTest::addColumn<int>("concurrent");
        for (unsigned seed = 1; seed <= 40; ++seed)
            QTest::addRow("seed %u", seed) << seed << int(1 + seed % 6) << int(1 + seed % 3);
    }
    void sameBytesAsWholeCapture()
    {
        QFETCH(unsigned, seed);
        QFETCH(int, connections);
        QFETCH(int, concurrent);
        Synth s;
        s.connections = connections;
        s.concurrent = concurrent;
        const CaptureData data = Generator(seed, s).run();
        const std::string whole = reference::wholeCapturePcapng(data);
        QVERIFY(whole.size() > 1000);
        QVERIFY(captureToPcapng(data) == whole);
        const Streamed streamed = stream(data, {});
        QCOMPARE(streamed.stats.forcedFrames, 0u);
        QCOMPARE(streamed.stats.lateSegments, 0u);
        QCOMPARE(streamed.bytes.size(), whole.size());
        QVERIFY(streamed.bytes == whole);
    }

    // With windows far smaller than the capture, a long capture of well-formed connections still comes out
    // as the whole-capture writer wrote it, and what the writer held at most does not grow with its length.
    void heldStaysWithinWindows()
    {
        PcapngStreamWriter::Limits small{256u << 10, 256u << 10};
        Synth s;
        s.calls = 8;
        s.concurrent = 3;
        s.connections = 20;
        const CaptureData shortCapture = Generator(7, s).run();
        s.connections = 160;
        const CaptureData longCapture = Generator(7, s).run();
        QVERIFY(eventCount(longCapture) > 7 * eventCount(shortCapture));

        const Streamed a = stream(shortCapture, small);
        const Streamed b = stream(longCapture, small);
        QVERIFY(b.bytes.size() > 7 * a.bytes.size());
        QVERIFY(b.bytes.size() > 8 * (small.heldBytes + small.reorderBytes)); // far larger than the windows
        QVERIFY(b.bytes == reference::wholeCapturePcapng(longCapture));
        QCOMPARE(b.stats.forcedFrames, 0u);
        QCOMPARE(b.stats.lateSegments, 0u);
        qInfo("held at most: %llu events, %llu bytes, %llu bytes of segments (capture: %zu events, %zu bytes "
              "of "
              "pcapng)",
              static_cast<unsigned long long>(b.stats.peakHeldEvents),
              static_cast<unsigned long long>(b.stats.peakHeldBytes),
              static_cast<unsigned long long>(b.stats.peakReorderBytes), eventCount(longCapture),
              b.bytes.size());
        // Within the windows (plus the one event or segment that crosses them).
        QVERIFY(b.stats.peakHeldBytes <= small.heldBytes + (128u << 10));
        QVERIFY(b.stats.peakReorderBytes <= small.reorderBytes + (128u << 10));

        // Left to itself (a held window as large as the capture), the writer holds what the connections
        // open at once have in flight: for each direction a message (at most 70,005 bytes with its prefix)
        // and what 64 KiB of taken bytes a stream keeps before it drops them; never more for a longer
        // capture.
        const PcapngStreamWriter::Limits wide{64u << 20, 256u << 10};
        const Streamed c = stream(shortCapture, wide), d = stream(longCapture, wide);
        QVERIFY(d.bytes == b.bytes);
        const std::uint64_t bound = std::uint64_t(s.concurrent) * 2 * (70'005 + 65'536) + (64u << 10);
        qInfo("without forcing: held at most %llu bytes for %zu events, %llu for %zu (bound %llu)",
              static_cast<unsigned long long>(c.stats.peakHeldBytes), eventCount(shortCapture),
              static_cast<unsigned long long>(d.stats.peakHeldBytes), eventCount(longCapture),
              static_cast<unsigned long long>(bound));
        QVERIFY(c.stats.peakHeldBytes <= bound);
        QVERIFY(d.stats.peakHeldBytes <= bound);
        QVERIFY(d.stats.peakHeldEvents <= std::uint64_t(s.concurrent) * 64);
        QVERIFY(d.bytes.size() > 30 * bound);
    }

    // A capture whose frames were not kept: messages no DATA frame takes. They are dropped past the window
    // rather than held to the end.
    void messagesWithoutFramesAreNotHeld()
    {
        PcapngStreamWriter::Limits small{256u << 10, 256u << 10};
        Synth s;
        s.frames = false;
        s.connections = 200;
        s.concurrent = 200; // all open at once: nothing closes before the end
        const CaptureData data = Generator(3, s).run();
        const Streamed streamed = stream(data, small);
        QVERIFY(streamed.stats.peakHeldBytes <= small.heldBytes + (128u << 10));
        // Only handshakes, prefaces and FINs: no frame was recorded.
        QVERIFY(streamed.bytes == reference::wholeCapturePcapng(data));
    }

    // A frame whose bytes never come (a DATA frame of a stream no message was decoded on) is written once
    // the window is full, with zeros, and the rest follows in order.
    void framesWaitingTooLongAreWritten()
    {
        CaptureData data;
        data.info.hasOrigin = true;
        EventBatch b;
        WireEvent open;
        open.kind = EventKind::ConnectionOpened;
        open.connection = 1;
        b.push_back(open);
        for (int i = 0; i < 2000; ++i) {
            WireEvent f;
            f.kind = EventKind::Frame;
            f.connection = 1;
            f.frameType = FrameData;
            f.stream = 1;
            f.length = 1000;
            f.tNs = i;
            b.push_back(f);
        }
        data.batches.push_back(std::move(b));
        const Streamed streamed = stream(data, {64u << 10, 64u << 10});
        QVERIFY(streamed.stats.forcedFrames > 1000);
        QVERIFY(streamed.stats.peakHeldBytes <= (64u << 10) + 1024);
        QVERIFY(streamed.bytes == reference::wholeCapturePcapng(data));
    }

    // A failing output stops the writer.
    void outputErrorStops()
    {
        Synth s;
        const CaptureData data = Generator(5, s).run();
        int calls = 0;
        PcapngStreamWriter w(0, 0, [&calls](const char *, size_t) { return ++calls < 1; }, {});
        bool ok = true;
        for (const EventBatch &b : data.batches)
            ok = w.add(b) && ok;
        ok = w.finish() && ok;
        QVERIFY(!ok);
        QCOMPARE(calls, 1);
    }
};

QTEST_GUILESS_MAIN(TestPcapngStream)
#include "tst_pcapngstream.moc"
