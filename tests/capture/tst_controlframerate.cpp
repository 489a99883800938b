// Control-frame floods become counted runs: the decoder emits the first frames of each 100 ms window and one
// run for the rest, the counts add up to the frames on the wire, and a run survives the model, the capture
// file and the JSON export with its count and times.

#include "capturefile.h"
#include "capturereader.h"
#include "capturewriter.h"
#include "h2decoder.h"
#include "jsonexport.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QJsonArray>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t us = 1'000;
constexpr std::int64_t ms = 1'000'000;

std::string frameBytes(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                       const std::string &payload)
{
    std::string f;
    const auto len = std::uint32_t(payload.size());
    f += char(len >> 16);
    f += char(len >> 8);
    f += char(len);
    f += char(type);
    f += char(flags);
    for (int shift : {24, 16, 8, 0})
        f += char(stream >> shift);
    return f + payload;
}

std::string ping(std::uint64_t data, bool ack = false)
{
    std::string p;
    for (int shift = 56; shift >= 0; shift -= 8)
        p += char(data >> shift);
    return frameBytes(FramePing, ack ? FlagAck : 0, 0, p);
}

void feed(H2Decoder &d, const std::string &bytes, std::int64_t t, EventBatch &out)
{
    d.feed(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size(), t, 1, out);
}

// Frames of this type the events stand for: single ones count 1, runs their count.
size_t framesOf(const EventBatch &events, std::uint8_t type, size_t *records = nullptr,
                size_t *runs = nullptr)
{
    size_t n = 0;
    for (const WireEvent &e : events) {
        if (e.kind != EventKind::Frame || e.frameType != type) continue;
        const FrameRun *run = e.frameRun();
        n += run ? run->count : 1;
        if (records) ++*records;
        if (runs && run) ++*runs;
    }
    return n;
}
} // namespace

class TestControlFrameRate : public QObject
{
    Q_OBJECT
private slots:
    void pingFloodBecomesRuns()
    {
        H2Decoder d(Direction::ClientToServer);
        EventBatch out;
        feed(d, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frameBytes(FrameSettings, 0, 0, {}), 0, out);
        // 10,000 PINGs, one every 100 us: 1 s, ten windows of 1,000.
        constexpr int kPings = 10'000;
        for (int i = 0; i < kPings; ++i)
            feed(d, ping(std::uint64_t(i)), ms + i * 100 * us, out);
        // A slow PING long after: a frame of its own, and it flushes the last run.
        feed(d, ping(99'999), 5'000 * ms, out);
        size_t records = 0, runs = 0;
        QCOMPARE(framesOf(out, FramePing, &records, &runs), size_t(kPings + 1));
        // Per window 16 single frames and one run: about 170, against 10,001 without runs.
        QVERIFY2(records <= 11 * (ControlFrameRate::kPerWindow + 1) + 1,
                 qPrintable(QString::number(records)));
        QVERIFY(runs >= 9);
        for (const WireEvent &e : out)
            if (const FrameRun *run = e.frameRun()) {
                QVERIFY(run->count > 0);
                QVERIFY(run->firstNs <= e.tNs);
                QVERIFY(e.tNs - run->firstNs < ControlFrameRate::kWindowNs);
                QCOMPARE(run->bytes, std::uint64_t(run->count) * 8);
            }
        // finish() gives the run still pending.
        EventBatch more;
        for (int i = 0; i < 100; ++i)
            feed(d, ping(std::uint64_t(i)), 6'000 * ms + i * us, more);
        QCOMPARE(framesOf(more, FramePing), size_t(ControlFrameRate::kPerWindow));
        d.finish(6'001 * ms, more);
        QCOMPARE(framesOf(more, FramePing), size_t(100));
    }

    void ordinaryFramesStayFrames()
    {
        // DATA, HEADERS and RST_STREAM are never folded, and a CONTINUATION with a payload neither.
        ControlFrameRate rate;
        EventBatch out;
        for (int i = 0; i < 1'000; ++i) {
            WireEvent e = testev::frame(1, 1, i * us, Direction::ClientToServer, FrameData, 0, 10);
            rate.flush(e.tNs, out);
            QVERIFY(rate.admit(e));
            e.frameType = FrameRstStream;
            QVERIFY(rate.admit(e));
            e.frameType = FrameContinuation;
            QVERIFY(rate.admit(e));
        }
        QVERIFY(out.empty());
        // WINDOW_UPDATEs of a burst of large messages stay single up to their own, larger, rate.
        size_t single = 0;
        for (std::uint32_t i = 0; i < 1'000; ++i) {
            WireEvent e = testev::frame(1, 2 * (i % 8) + 1, 10 * ms + i * us, Direction::ServerToClient,
                                        FrameWindowUpdate, 0, 4);
            rate.flush(e.tNs, out);
            single += rate.admit(e);
        }
        rate.flush(INT64_MAX, out, true);
        QCOMPARE(single, size_t(ControlFrameRate::kWindowUpdatesPerWindow));
        QCOMPARE(out.size(), size_t(1));
        QCOMPARE(out[0].frameRun()->count, 1'000u - ControlFrameRate::kWindowUpdatesPerWindow);
        QCOMPARE(out[0].stream, 0u); // several streams: the run is the connection's
    }

    void runsThroughModelFileAndJson()
    {
        EventBatch batch{testev::opened(1, 0)};
        WireEvent run = testev::frame(1, 0, 90 * ms, Direction::ClientToServer, FramePing, 0, 8);
        run.about = FrameRun{5'000, 10 * ms, 40'000};
        batch.push_back(run);
        batch.push_back(testev::frame(1, 0, 95 * ms, Direction::ClientToServer, FramePing, 0, 8));
        TimelineModel model;
        model.appendBatch(batch);
        const auto &frames = model.store().frames();
        QCOMPARE(frames.size(), size_t(2));
        QCOMPARE(frames[0].count, 5'000u);
        QVERIFY(frames[0].isRun());
        QCOMPARE(frames[0].firstNs(), 10 * ms);
        QCOMPARE(frames[0].length, 40'000u);
        QVERIFY(!frames[1].isRun());
        // A run's PINGs pair with no ACK one by one: none of them is left open.
        QCOMPARE(model.store().connections()[0].openPings.size(), size_t(1));

        // The file: written from the event log, read back, the same run.
        CaptureData back;
        const QByteArray bytes = captureToBytes(captureFromLog(model.store(), model.eventLog()), Redaction{});
        QCOMPARE(readCaptureBytes(bytes, QStringLiteral("runs.rpcscope"), &back).status,
                 CaptureReadResult::Ok);
        TimelineStore replayed;
        replayCapture(back, replayed);
        QCOMPARE(replayed.frames().size(), size_t(2));
        QCOMPARE(replayed.frames()[0].count, 5'000u);
        QCOMPARE(replayed.frames()[0].firstNs(), 10 * ms);

        // JSON: the run's count and first time.
        const QJsonArray json = timelineToJson(model.store(), true)["frames"].toArray();
        QCOMPARE(json.size(), 2);
        QCOMPARE(json[0]["count"].toInteger(), 5'000);
        QCOMPARE(json[0]["first_t_ns"].toInteger(), 10 * ms);
        QVERIFY(!json[1].toObject().contains("count"));
    }

    void runFromAFileIsChecked()
    {
        // A run whose first frame follows its last is corrupt, not a run backwards in time.
        WireEvent run = testev::frame(1, 0, 10 * ms, Direction::ClientToServer, FramePing, 0, 8);
        run.about = FrameRun{3, 20 * ms, 24};
        CaptureData data;
        data.batches.push_back({testev::opened(1, 0), run});
        const QByteArray bytes = captureToBytes(data, Redaction{});
        CaptureData back;
        const CaptureReadResult r = readCaptureBytes(bytes, QStringLiteral("bad.rpcscope"), &back);
        QVERIFY2(r.status == CaptureReadResult::Corrupt, r.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestControlFrameRate)
#include "tst_controlframerate.moc"
