// .rpcscope capture files: every event field survives a round trip, a reopened file rebuilds the same
// timeline, damaged files say what is wrong, and the Chrome trace and OTLP exports parse into what their
// readers expect.

#include "capture.pb.h"
#include "capturecodec.h"
#include "capturefile.h"
#include "chrometrace.h"
#include "filewrite.h"
#include "jsonexport.h"
#include "otlpexport.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sys/stat.h>

using namespace rpcscope;

// The capture file stores every field of WireEvent and GrpcFields (capturecodec.cpp: toMessage, the direct
// encoder and decodeEvent; and resources/proto/capture.proto). A field added to either changes its size:
// store it in the file too, set it in sampleBatches() below, then update these numbers.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(GrpcFields) == 280, "GrpcFields changed: store the new field in the capture file");
static_assert(sizeof(WireEvent) == 576, "WireEvent changed: store the new field in the capture file");
#endif

namespace {
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t t0 = 5'000'000'000;

WireEvent ev(EventKind kind, std::uint32_t conn, Direction dir, std::int64_t t)
{
    return testev::event(kind, conn, 0, t, dir);
}

WireEvent frame(std::uint32_t conn, Direction dir, std::int64_t t, std::uint8_t type, std::uint32_t stream,
                std::uint8_t flags = 0, std::uint32_t length = 0)
{
    WireEvent e = testev::frame(conn, stream, t, dir, type, 0, length);
    e.flags = flags;
    return e;
}

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &callId,
                  int previous)
{
    WireEvent e = ev(EventKind::Headers, conn, Direction::ClientToServer, t);
    e.stream = stream;
    e.headers = {{":method", "POST"},
                 {":path", "/pkg.Svc/Do"},
                 {"content-type", "application/grpc"},
                 {"authorization", "Bearer s3cr3t-token"},
                 {"cookie", "session=abc123"},
                 {"x-api-key", "key-xyz"}};
    e.grpc.path = "/pkg.Svc/Do";
    e.grpc.timeoutNs = 500 * ms;
    if (previous > 0) e.grpc.previousAttempts = previous;
    e.grpc.callId = callId;
    e.grpc.retryInitialMs = 50;
    e.grpc.retryMultiplier = 2;
    e.grpc.retryMaxMs = 1000;
    e.grpc.traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    e.grpc.parentSpanId = "00f067aa0ba902b7";
    return e;
}

WireEvent trailers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, int status)
{
    WireEvent e = ev(EventKind::Headers, conn, Direction::ServerToClient, t);
    e.stream = stream;
    e.endStream = true;
    e.headers = {{":status", "200"}, {"grpc-status", std::to_string(status)}, {"grpc-message", "try again"}};
    e.grpc.httpStatus = 200;
    e.grpc.status = status;
    e.grpc.message = "try again";
    if (status == 14) e.grpc.pushbackMs = 20;
    return e;
}

// A capture touching every event kind and every WireEvent field: two calls (one retried after a pushback,
// one transparently retried after REFUSED_STREAM), settings, pings, a stall, notices, a lab event.
std::vector<EventBatch> sampleBatches()
{
    std::vector<EventBatch> batches(3);
    WireEvent open = ev(EventKind::ConnectionOpened, 1, Direction::ClientToServer, t0);
    open.about = PeerNames{"127.0.0.1:40000", "127.0.0.1:50051"};
    open.label = "A->B";
    batches[0].push_back(open);
    WireEvent settings = frame(1, Direction::ClientToServer, t0 + 1000, FrameSettings, 0, 0, 12);
    settings.settings = {{4, 1 << 20}, {1, 4096}};
    batches[0].push_back(settings);
    batches[0].push_back(frame(1, Direction::ClientToServer, t0 + 2000, FrameHeaders, 1, FlagEndHeaders, 80));
    batches[0].push_back(request(1, 1, t0 + 2000, "call-a", 0));
    batches[0].push_back(frame(1, Direction::ClientToServer, t0 + 3000, FrameData, 1, 0, 10));
    WireEvent msg = ev(EventKind::Message, 1, Direction::ClientToServer, t0 + 3000);
    msg.stream = 1;
    msg.length = 5;
    msg.payload = std::string("\x08\x01\x10\x00\xff", 5);
    msg.compressed = true;
    batches[0].push_back(msg);
    WireEvent ping = frame(1, Direction::ServerToClient, t0 + 4000, FramePing, 0, FlagAck, 8);
    ping.pingData = 0x0102030405060708ull;
    ping.rttNs = 77'000;
    batches[0].push_back(ping);

    batches[1].push_back(frame(1, Direction::ServerToClient, t0 + 10 * ms, FrameHeaders, 1,
                               FlagEndHeaders | FlagEndStream, 20));
    batches[1].push_back(trailers(1, 1, t0 + 10 * ms, 14));
    WireEvent stall = ev(EventKind::FlowStallBegin, 1, Direction::ClientToServer, t0 + 11 * ms);
    stall.stream = 3;
    batches[1].push_back(stall);
    WireEvent notice = ev(EventKind::Notice, 1, Direction::ServerToClient, t0 + 11 * ms);
    notice.reason = "header list cut at 65536 bytes";
    batches[1].push_back(notice);
    WireEvent broken = ev(EventKind::Notice, 1, Direction::ClientToServer, t0 + 11 * ms);
    broken.about = ProtocolViolation{Direction::ClientToServer, "WINDOW_UPDATE of 0 on stream 3", 1};
    broken.reason = describe(*broken.violation());
    batches[1].push_back(broken);
    WireEvent lab = ev(EventKind::LabEvent, 0, Direction::ClientToServer, t0 + 12 * ms);
    lab.about = LabDecision{"breaker", "closed -> open"};
    lab.grpc.callId = "call-a";
    batches[1].push_back(lab);
    batches[1].push_back(
        frame(1, Direction::ClientToServer, t0 + 30 * ms, FrameHeaders, 3, FlagEndHeaders, 80));
    WireEvent retry = request(1, 3, t0 + 30 * ms, "call-a", 1);
    retry.hpackUnknown = true;
    retry.truncated = true;
    batches[1].push_back(retry);

    WireEvent stallEnd = ev(EventKind::FlowStallEnd, 1, Direction::ClientToServer, t0 + 31 * ms);
    stallEnd.stream = 3;
    batches[2].push_back(stallEnd);
    WireEvent wu = frame(1, Direction::ServerToClient, t0 + 31 * ms, FrameWindowUpdate, 3, 0, 4);
    wu.windowIncrement = 65535;
    batches[2].push_back(wu);
    batches[2].push_back(frame(1, Direction::ServerToClient, t0 + 40 * ms, FrameHeaders, 3,
                               FlagEndHeaders | FlagEndStream, 20));
    batches[2].push_back(trailers(1, 3, t0 + 40 * ms, 0));
    // A call without a call id, refused by the transport and repeated without counting as a retry.
    batches[2].push_back(
        frame(1, Direction::ClientToServer, t0 + 50 * ms, FrameHeaders, 5, FlagEndHeaders, 80));
    batches[2].push_back(request(1, 5, t0 + 50 * ms, "call-b", 0));
    WireEvent rst = frame(1, Direction::ServerToClient, t0 + 51 * ms, FrameRstStream, 5, 0, 4);
    rst.errorCode = 7; // REFUSED_STREAM
    batches[2].push_back(rst);
    batches[2].push_back(
        frame(1, Direction::ClientToServer, t0 + 52 * ms, FrameHeaders, 7, FlagEndHeaders, 80));
    batches[2].push_back(request(1, 7, t0 + 52 * ms, "call-b", 0));
    WireEvent goaway = frame(1, Direction::ServerToClient, t0 + 60 * ms, FrameGoaway, 0, 0, 13);
    goaway.lastStreamId = 7;
    goaway.errorCode = 0;
    goaway.reason = "bye";
    batches[2].push_back(goaway);
    WireEvent err = ev(EventKind::DecodeError, 1, Direction::ServerToClient, t0 + 61 * ms);
    err.reason = "HPACK error";
    batches[2].push_back(err);
    WireEvent closed = ev(EventKind::ConnectionClosed, 1, Direction::ClientToServer, t0 + 70 * ms);
    closed.reason = "closed by client";
    batches[2].push_back(closed);
    return batches;
}

CaptureData sampleCapture(TimelineModel &model)
{
    model.setOrigin(t0 - ms, 1'700'000'000'000'000'000);
    for (const EventBatch &b : sampleBatches())
        model.appendBatch(b);
    return captureFromLog(model.store(), model.eventLog());
}

QByteArray jsonOf(const CaptureData &data)
{
    TimelineStore store;
    replayCapture(data, store);
    return timelineToJsonBytes(store, true);
}

Redaction noRedaction()
{
    Redaction r;
    r.enabled = false;
    return r;
}

QJsonObject parseJson(const QByteArray &bytes)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError) qWarning() << "JSON parse error" << error.errorString();
    return doc.object();
}

QString attrString(const QJsonArray &attrs, const QString &key, QString *type = nullptr)
{
    for (const auto &a : attrs) {
        const QJsonObject o = a.toObject();
        if (o["key"].toString() != key) continue;
        const QJsonObject v = o["value"].toObject();
        if (type) *type = v.keys().value(0);
        const QJsonValue inner = v.begin().value();
        return inner.isBool() ? (inner.toBool() ? "true" : "false") : inner.toVariant().toString();
    }
    return {};
}

// Events with every field drawn at random, each kind and each `about` alternative, values at the edges of
// their types (negative times, int32 minima, -0.0, empty and long strings): what the direct encoder must
// write exactly as protobuf does.
EventBatch randomEvents(size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    auto pick = [&](std::uint64_t below) { return rng() % below; };
    auto text = [&](size_t most) {
        std::string s(pick(most + 1), '\0');
        for (char &c : s)
            c = char(pick(256));
        return s;
    };
    auto u32 = [&] { return pick(3) == 0 ? 0u : std::uint32_t(rng() >> pick(32)); };
    auto i64 = [&] {
        switch (pick(4)) {
        case 0:
            return std::int64_t(0);
        case 1:
            return -std::int64_t(pick(1'000'000'000));
        case 2:
            return std::int64_t(rng() >> 1);
        default:
            return std::numeric_limits<std::int64_t>::min();
        }
    };
    auto i32 = [&] {
        const int choices[] = {
            0, 1, -1, 200, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()};
        return choices[pick(6)];
    };
    auto real = [&] {
        const double choices[] = {0.0, -0.0, 50.0, 1.5e300, -2.0, 1e-320};
        return choices[pick(6)];
    };
    EventBatch out;
    for (size_t i = 0; i < n; ++i) {
        WireEvent e;
        e.kind = EventKind(pick(size_t(EventKind::LabEvent) + 1));
        e.connection = u32();
        e.dir = Direction(pick(2));
        e.tNs = i64();
        e.stream = u32();
        e.frameType = std::uint8_t(pick(256));
        e.flags = std::uint8_t(pick(256));
        e.length = u32();
        e.errorCode = u32();
        e.endStream = pick(2);
        e.compressed = pick(2);
        for (size_t h = pick(5); h > 0; --h) {
            const char *names[] = {"authorization", "X-Secret", ":path", "", "grpc-status"};
            e.headers.push_back({pick(2) ? std::string(names[pick(5)]) : text(20), text(pick(8) ? 40 : 300)});
        }
        if (pick(2)) {
            GrpcFields &g = e.grpc;
            g.path = text(30);
            if (pick(2)) g.timeoutNs = i64();
            if (pick(2)) g.previousAttempts = i32();
            if (pick(2)) g.httpStatus = i32();
            if (pick(2)) g.status = i32();
            if (pick(2)) g.message = text(pick(2) ? 0 : 200);
            if (pick(2)) g.pushbackMs = i64();
            g.callId = text(12);
            g.encoding = text(5);
            g.retryInitialMs = real();
            g.retryMultiplier = real();
            g.retryMaxMs = real();
            g.traceId = text(32);
            g.parentSpanId = text(16);
        }
        e.hpackUnknown = pick(2);
        e.truncated = pick(2);
        e.payload = text(pick(4) ? 20 : 400);
        e.lastStreamId = u32();
        e.windowIncrement = u32();
        e.pingData = pick(2) ? rng() : 0;
        e.rttNs = pick(3) ? -1 : i64();
        for (size_t k = pick(4); k > 0; --k)
            e.settings.emplace_back(std::uint16_t(pick(65536)), u32());
        e.label = text(10);
        e.reason = text(pick(2) ? 0 : 60);
        switch (pick(6)) {
        case 0:
            break;
        case 1:
            e.about = PeerNames{text(20), text(20)};
            break;
        case 2:
            e.about = LabDecision{text(10), text(30)};
            break;
        case 3:
            e.about = ProtocolViolation{Direction(pick(2)), text(30), u32()};
            break;
        case 4:
            e.about = FrameRun{u32(), i64(), rng() >> pick(64)};
            break;
        default:
            e.about = FaultInjection{u32(), text(40)};
            break;
        }
        out.push_back(std::move(e));
    }
    return out;
}

// What protobuf's own serializer writes for the batch.
std::string protobufBytes(std::span<const WireEvent> events, const Redaction *redaction)
{
    capture::EventBatch b;
    for (const WireEvent &e : events)
        toMessage(e, redaction && redaction->enabled ? redaction : nullptr, b.add_events());
    return b.SerializeAsString();
}
} // namespace

class TestCaptureFile : public QObject
{
    Q_OBJECT
private slots:
    void everyFieldRoundTrips()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        QCOMPARE(data.batches.size(), size_t(3));
        QVERIFY(model.store().calls().size() == 2);

        CaptureData back;
        const CaptureReadResult r =
            readCaptureBytes(captureToBytes(data, noRedaction()), QStringLiteral("sample.rpcscope"), &back);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        QVERIFY(back.batches == data.batches); // WireEvent ==: every field, in order
        QCOMPARE(back.info.originNs, data.info.originNs);
        QCOMPARE(back.info.originWallNs, data.info.originWallNs);
        QCOMPARE(back.info.hasOrigin, true);
        QVERIFY(back.info.redactedHeaders.empty());

        // Reopened, the timeline is the live one.
        QCOMPARE(jsonOf(back), timelineToJsonBytes(model.store(), true));

        // Saved straight from the session's event log, it is the same capture, masked the same way.
        QTemporaryDir dir;
        std::string error;
        for (bool redact : {false, true}) {
            Redaction redaction;
            redaction.enabled = redact;
            const QString fromLog = dir.filePath("log.rpcscope"), fromData = dir.filePath("data.rpcscope");
            QVERIFY2(
                writeCaptureFile(fromLog, captureInfoOf(model.store()), model.eventLog(), redaction, &error),
                error.c_str());
            QVERIFY2(writeCaptureFile(fromData, data, redaction, &error), error.c_str());
            CaptureData a, b;
            QCOMPARE(readCaptureFile(fromLog, &a).status, CaptureReadResult::Ok);
            QCOMPARE(readCaptureFile(fromData, &b).status, CaptureReadResult::Ok);
            QVERIFY(a.batches == b.batches);
            QCOMPARE(a.info.redactedHeaders, b.info.redactedHeaders);
            QCOMPARE(a.batches == data.batches, !redact);
        }
    }

    // A file written before a broken rule had fields of its own holds only its sentence: it reads back as the
    // structured value, so the connection still says who broke HTTP/2; any other notice stays a plain one.
    void olderFilesGiveTheRuleFromItsSentence()
    {
        WireEvent legacy = ev(EventKind::Notice, 1, Direction::ServerToClient, t0);
        legacy.reason = "protocol error by the server: PING of 4 bytes, not 8 (FRAME_SIZE_ERROR)";
        WireEvent plain = ev(EventKind::Notice, 1, Direction::ServerToClient, t0);
        plain.reason = "protocol error by the server: no code here";
        const std::string bytes = encodeBatch({legacy, plain});
        EventBatch back;
        QVERIFY(decodeBatch(bytes.data(), bytes.size(), &back));
        QCOMPARE(back.size(), size_t(2));
        QVERIFY(back[0].violation());
        QCOMPARE(back[0].violation()->by, Direction::ServerToClient);
        QCOMPARE(back[0].violation()->rule, std::string("PING of 4 bytes, not 8"));
        QCOMPARE(back[0].violation()->errorCode, 6u);
        QCOMPARE(back[0].reason, legacy.reason);
        QVERIFY(!back[1].violation());
        QCOMPARE(back[1].reason, plain.reason);
    }

    // A batch is built in an arena of blocks up to 64 KiB: one larger than many blocks, with strings past the
    // small-string buffer and a payload larger than a block, encodes what it holds, every field, in order.
    void largeBatchRoundTrips()
    {
        EventBatch batch;
        for (int i = 0; i < 3000; ++i) {
            WireEvent e =
                request(1, std::uint32_t(2 * i + 1), t0 + i * ms, "call-" + std::to_string(i), i % 3);
            e.headers.push_back({"x-long", std::string(size_t(40 + i % 200), char('a' + i % 26))});
            batch.push_back(std::move(e));
            WireEvent lab = ev(EventKind::LabEvent, 1, Direction::ClientToServer, t0 + i * ms + 1);
            lab.about =
                LabDecision{i % 10 == 0 ? "bulkhead-rejected" : "custom", "event " + std::to_string(i)};
            batch.push_back(std::move(lab));
        }
        WireEvent big = ev(EventKind::Message, 1, Direction::ServerToClient, t0 + 5000 * ms);
        big.stream = 1;
        big.payload = std::string(size_t(200) << 10, '\x5a');
        big.length = std::uint32_t(big.payload.size());
        batch.push_back(big);
        const std::string bytes = encodeBatch(batch);
        QVERIFY(bytes.size() > size_t(1) << 20);
        EventBatch back;
        QVERIFY(decodeBatch(bytes.data(), bytes.size(), &back));
        QCOMPARE(back.size(), batch.size());
        QVERIFY(back == batch); // WireEvent ==: every field
        // The same batch encodes to the same bytes every time.
        QCOMPARE(encodeBatch(batch), bytes);
    }

    // The file's encoder writes the wire format itself: for every field of every kind of event, with and
    // without redaction, its bytes are protobuf's for the same events, and they read back as those events.
    void directEncodingIsProtobufs()
    {
        EventBatch events = randomEvents(4000, 20261203);
        for (const EventBatch &b : sampleBatches())
            events.insert(events.end(), b.begin(), b.end());
        Redaction masking;
        masking.extraNames = {"x-secret"};
        const Redaction off = noRedaction();
        size_t masked = 0;
        const Redaction *redactions[] = {nullptr, &off, &masking};
        for (const Redaction *redaction : redactions) {
            for (size_t from = 0, size = 1; from < events.size(); from += size, size = size * 3 % 97 + 1) {
                const auto part =
                    std::span<const WireEvent>(events).subspan(from, std::min(size, events.size() - from));
                const std::string direct = encodeEvents(part, redaction);
                const std::string reference = protobufBytes(part, redaction);
                if (direct != reference) {
                    size_t at = 0;
                    while (at < direct.size() && at < reference.size() && direct[at] == reference[at])
                        ++at;
                    QFAIL(qPrintable(
                        QStringLiteral("events %1 to %2: %3 bytes, protobuf's %4, first difference at %5")
                            .arg(from)
                            .arg(from + part.size())
                            .arg(direct.size())
                            .arg(reference.size())
                            .arg(at)));
                }
                if (redaction == &masking) masked += QByteArray::fromStdString(direct).count(kRedactedValue);
            }
        }
        QVERIFY2(masked > 100, "the random headers were masked");
        // Every alternative of `about`, and presence without a value (an empty grpc-message, zero timeouts).
        const std::string sample = encodeEvents(sampleBatches()[1]);
        EventBatch back;
        QVERIFY(decodeBatch(sample.data(), sample.size(), &back));
        QVERIFY(back == sampleBatches()[1]);
        WireEvent present = ev(EventKind::Headers, 1, Direction::ServerToClient, t0);
        present.grpc.message = "";
        present.grpc.timeoutNs = 0;
        present.grpc.status = 0;
        const std::string one = encodeEvents(std::span<const WireEvent>(&present, 1));
        QCOMPARE(one, protobufBytes(std::span<const WireEvent>(&present, 1), nullptr));
        back.clear();
        QVERIFY(decodeBatch(one.data(), one.size(), &back));
        QCOMPARE(back.size(), size_t(1));
        QVERIFY(back[0].grpc.message && back[0].grpc.message->empty());
        QCOMPARE(back[0].grpc.timeoutNs, std::optional<std::int64_t>(0));
        QCOMPARE(back[0].grpc.status, std::optional<int>(0));
    }

    void modelReplay()
    {
        TimelineModel live;
        const CaptureData data = sampleCapture(live);
        TimelineModel opened;
        QAbstractItemModelTester tester(&opened, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy reset(&opened, &QAbstractItemModel::modelReset);
        QSignalSpy changed(&opened, &TimelineModel::timelineChanged);
        opened.replay(data);
        QCOMPARE(reset.count(), 1);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(opened.rowCount(), live.rowCount());
        QCOMPARE(opened.rowCount(opened.index(0, 0)), live.rowCount(live.index(0, 0)));
        QCOMPARE(timelineToJsonBytes(opened.store(), true), timelineToJsonBytes(live.store(), true));
        // Saved again, it is the same capture.
        QVERIFY(captureFromLog(opened.store(), opened.eventLog()).batches == data.batches);
    }

    void redactionMasksHeaderValuesOnly()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        Redaction redaction;
        redaction.extraNames = {"X-Api-Key"};
        const QByteArray bytes = captureToBytes(data, redaction);
        for (const char *secret : {"s3cr3t-token", "session=abc123", "key-xyz"})
            QVERIFY2(!bytes.contains(secret), secret);
        CaptureData back;
        QCOMPARE(readCaptureBytes(bytes, "r", &back).status, CaptureReadResult::Ok);
        int masked = 0;
        for (const EventBatch &b : back.batches)
            for (const WireEvent &e : b)
                for (const Header &h : e.headers)
                    if (h.name == "authorization" || h.name == "cookie" || h.name == "x-api-key") {
                        QCOMPARE(h.value, std::string(kRedactedValue));
                        ++masked;
                    }
        QCOMPARE(masked, 4 * 3);
        QVERIFY(std::count(back.info.redactedHeaders.begin(), back.info.redactedHeaders.end(), "x-api-key") ==
                1);
        // The timeline does not depend on masked values.
        QCOMPARE(jsonOf(back), timelineToJsonBytes(model.store(), true));

        const QByteArray plain = captureToBytes(data, noRedaction());
        QVERIFY(plain.contains("s3cr3t-token") && plain.contains("key-xyz"));
    }

    void badFiles_data()
    {
        TimelineModel model;
        const QByteArray good = captureToBytes(sampleCapture(model), noRedaction());
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("batchesLoaded");

        QTest::newRow("empty") << QByteArray() << int(CaptureReadResult::Failed) << "is empty" << 0;
        QTest::newRow("json") << QByteArray("{\"format\":\"rpcscope-json\"}")
                              << int(CaptureReadResult::Failed)
                              << "is not an rpcscope capture file (it looks like JSON)" << 0;
        QTest::newRow("pcapng") << QByteArray("\x0a\x0d\x0d\x0a\x1c\x00\x00\x00", 8)
                                << int(CaptureReadResult::Failed)
                                << "not an rpcscope capture file (it is a pcapng" << 0;
        QTest::newRow("text") << QByteArray("hello world\n") << int(CaptureReadResult::Failed)
                              << "is not an rpcscope capture file" << 0;
        QTest::newRow("magic only") << good.left(6) << int(CaptureReadResult::Failed)
                                    << "truncated: it ends inside the file header" << 0;
        QByteArray future = good;
        future[8] = 2;
        QTest::newRow("future version") << future << int(CaptureReadResult::Failed)
                                        << "written by a newer rpcscope (capture format version 2" << 0;
        QTest::newRow("no records") << good.left(12) << int(CaptureReadResult::Failed)
                                    << "truncated right after the file header" << 0;

        // Record boundaries, to cut and damage the file at known places.
        std::vector<int> ends;
        for (int pos = 12; pos < good.size();) {
            quint64 len = 0;
            int shift = 0;
            while (true) {
                const quint8 b = quint8(good[pos++]);
                len |= quint64(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) break;
            }
            pos += int(len) + 4;
            ends.push_back(pos);
        }
        QCOMPARE(ends.size(), size_t(5)); // header, 3 batches, footer
        QTest::newRow("truncated mid-record") << good.left(ends[2] + 7) << int(CaptureReadResult::Truncated)
                                              << "is truncated inside record 3" << 2;
        QTest::newRow("truncated at a record boundary")
            << good.left(ends[3]) << int(CaptureReadResult::Truncated) << "its end record is missing" << 3;
        QByteArray flipped = good;
        flipped[ends[1] + 20] = char(flipped[ends[1] + 20] ^ 0x40);
        QTest::newRow("corrupt") << flipped << int(CaptureReadResult::Corrupt) << "record 2 at byte" << 1;
        QTest::newRow("trailing garbage") << good + "junk" << int(CaptureReadResult::Corrupt)
                                          << "4 unexpected bytes after its end record" << 3;
        QByteArray hugeLength = good.left(ends[0]);
        hugeLength.append("\xff\xff\xff\xff\x7f", 5);
        QTest::newRow("absurd length")
            << hugeLength << int(CaptureReadResult::Corrupt) << "more than any record can hold" << 0;
        QByteArray badHeader = good;
        badHeader[14] = char(badHeader[14] ^ 0x01);
        QTest::newRow("corrupt header")
            << badHeader << int(CaptureReadResult::Failed) << "fails its checksum" << 0;

        // Values no clock or decoder gives, well framed and checksummed: the model's arithmetic would
        // overflow on them (events.h), so they are refused, and the batches before them kept.
        auto damaged = [&](const std::function<void(CaptureData &)> &change) {
            TimelineModel m;
            CaptureData d = sampleCapture(m);
            change(d);
            return captureToBytes(d, noRedaction());
        };
        QTest::newRow("event decades from the origin")
            << damaged([](CaptureData &d) { d.batches[1][0].tNs += 20 * 31'557'600'000'000'000; })
            << int(CaptureReadResult::Corrupt) << "more than 9.5 years from the capture's origin" << 1;
        QTest::newRow("origin out of range")
            << damaged([](CaptureData &d) { d.info.originWallNs = std::numeric_limits<std::int64_t>::max(); })
            << int(CaptureReadResult::Failed) << "has an origin out of range" << 0;
        QTest::newRow("grpc-timeout out of range") << damaged([](CaptureData &d) {
            for (WireEvent &e : d.batches[2])
                if (e.grpc.timeoutNs) e.grpc.timeoutNs = kMaxTimeoutNs + 1;
        }) << int(CaptureReadResult::Corrupt) << "holds an event this version does not know"
                                                   << 2;
        // protobuf would refuse these as strings with a line of its own on stderr; the reader names them.
        QTest::newRow("writer not UTF-8")
            << damaged([](CaptureData &d) { d.info.writer = "rpcscope \xc3\x28"; })
            << int(CaptureReadResult::Failed)
            << "is corrupt: record 0 at byte 12 (the file header) names its writer in bytes that are not "
               "UTF-8"
            << 0;
        QTest::newRow("redacted header not UTF-8")
            << damaged([](CaptureData &d) {
                   d.info.redactedHeaders = {"authorization", "x-\xff"};
               })
            << int(CaptureReadResult::Failed)
            << "(the file header) lists a redacted header name that is not UTF-8" << 0;
        QTest::newRow("retry policy not a number") << damaged([](CaptureData &d) {
            for (WireEvent &e : d.batches[2])
                if (e.grpc.retryMultiplier > 0) e.grpc.retryMultiplier = std::nan("");
        }) << int(CaptureReadResult::Corrupt) << "holds an event this version does not know"
                                                   << 2;
    }

    void badFiles()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, status);
        QFETCH(QString, message);
        QFETCH(int, batchesLoaded);
        QTemporaryDir dir;
        const QString path = dir.filePath("bad.rpcscope");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
        f.close();

        CaptureData data;
        const CaptureReadResult r = readCaptureFile(path, &data);
        QCOMPARE(int(r.status), status);
        QVERIFY2(QString::fromStdString(r.message).contains(message), r.message.c_str());
        QVERIFY2(QString::fromStdString(r.message).contains(path), r.message.c_str());
        QVERIFY(!QString::fromStdString(r.message).contains('\n'));
        QCOMPARE(int(data.batches.size()), batchesLoaded);
        if (r.status == CaptureReadResult::Truncated) {
            QVERIFY(r.usable());
            QVERIFY2(r.message.find("loaded the intact " + std::to_string(batchesLoaded)) !=
                         std::string::npos,
                     r.message.c_str());
            // What is intact replays into a timeline.
            TimelineStore store;
            replayCapture(data, store);
            QVERIFY(!store.connections().empty());
        }
    }

    // A disk that is full says so in the system's words: "No space left on device", not "Unknown error".
    void fullDiskSaysWhy()
    {
        QFile full(QStringLiteral("/dev/full"));
        if (!full.open(QIODevice::WriteOnly)) QSKIP("no /dev/full here");
        std::string why;
        QVERIFY(!writeAll(full, QByteArray(100000, 'x'), &why));
        QCOMPARE(QString::fromStdString(why), QString::fromLocal8Bit(std::strerror(ENOSPC)));
        // Buffered, the write succeeds and the flush fails: the same reason.
        QFile buffered(QStringLiteral("/dev/full"));
        QVERIFY(buffered.open(QIODevice::WriteOnly));
        QVERIFY(writeAll(buffered, QByteArray(100, 'x'), &why));
        errno = 0;
        QVERIFY(!buffered.flush());
        QCOMPARE(QString::fromStdString(writeFailure(buffered, errno)),
                 QString::fromLocal8Bit(std::strerror(ENOSPC)));
    }

    // Every cut and every single damaged byte of a real file is reported, never loaded as if whole.
    void everyCutAndEveryFlippedByte()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        const QByteArray good = captureToBytes(data, noRedaction());
        CaptureData back;
        for (qsizetype n = 0; n < good.size(); ++n) {
            const CaptureReadResult r = readCaptureBytes(good.left(n), "cut", &back);
            QVERIFY2(
                r.status == CaptureReadResult::Truncated || r.status == CaptureReadResult::Failed,
                qPrintable(QStringLiteral("cut at %1: %2").arg(n).arg(QString::fromStdString(r.message))));
            QVERIFY(back.batches.size() <= data.batches.size());
            for (size_t b = 0; b < back.batches.size(); ++b)
                QVERIFY(back.batches[b] == data.batches[b]); // what loads is what was written
        }
        for (qsizetype i = 0; i < good.size(); ++i) {
            QByteArray bad = good;
            bad[i] = char(bad[i] ^ (1 << (i % 8)));
            const CaptureReadResult r = readCaptureBytes(bad, "flip", &back);
            QVERIFY2(r.status != CaptureReadResult::Ok,
                     qPrintable(QStringLiteral("byte %1 flipped, read as whole").arg(i)));
            for (size_t b = 0; b < back.batches.size(); ++b)
                QVERIFY(back.batches[b] == data.batches[b]);
        }
    }

    void missingFileAndDirectory()
    {
        QTemporaryDir dir;
        CaptureData data;
        CaptureReadResult r = readCaptureFile(dir.filePath("nope.rpcscope"), &data);
        QCOMPARE(r.status, CaptureReadResult::Failed);
        QVERIFY2(r.message.find("cannot open") != std::string::npos, r.message.c_str());
        r = readCaptureFile(dir.path(), &data);
        QCOMPARE(r.status, CaptureReadResult::Failed);
    }

    void progressAndCancel()
    {
        // About 6 MiB of message payloads, so progress is reported several times.
        CaptureData big;
        big.info.hasOrigin = true;
        for (int b = 0; b < 100; ++b) {
            EventBatch batch;
            WireEvent m = ev(EventKind::Message, 1, Direction::ClientToServer, t0 + b);
            m.length = 64 * 1024;
            m.payload = std::string(64 * 1024, char('a' + b % 26));
            batch.push_back(m);
            big.batches.push_back(batch);
        }
        QTemporaryDir dir;
        const QString path = dir.filePath("big.rpcscope");
        std::vector<std::int64_t> seen;
        std::string error;
        QVERIFY2(writeCaptureFile(path, big, {}, &error,
                                  [&](std::int64_t done, std::int64_t total) {
                                      seen.push_back(done);
                                      return done <= total && total == 100; // events
                                  }),
                 error.c_str());
        QVERIFY(seen.size() >= 5);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));

        seen.clear();
        CaptureData back;
        CaptureReadResult r = readCaptureFile(path, &back, [&](std::int64_t done, std::int64_t total) {
            seen.push_back(done);
            return true;
        });
        QCOMPARE(r.status, CaptureReadResult::Ok);
        QVERIFY(seen.size() >= 5);
        QCOMPARE(seen.back(), QFileInfo(path).size());
        QVERIFY(back.batches == big.batches);

        int calls = 0;
        r = readCaptureFile(path, &back, [&](std::int64_t, std::int64_t) { return ++calls < 2; });
        QCOMPARE(r.status, CaptureReadResult::Cancelled);
        QVERIFY(!r.usable());
        QVERIFY2(r.message.find("cancelled") != std::string::npos, r.message.c_str());
    }

    void saveIsAtomic()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        QTemporaryDir dir;
        const QString path = dir.filePath("session.rpcscope");
        std::string error;
        QVERIFY2(writeCaptureFile(path, data, {}, &error), error.c_str());
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray before = f.readAll();
        f.close();

        // A save cancelled half-way leaves the previous file untouched and no temporary file behind.
        CaptureData big = data;
        for (int i = 0; i < 40; ++i) {
            WireEvent m = ev(EventKind::Message, 1, Direction::ClientToServer, t0);
            m.payload = std::string(128 * 1024, 'x');
            big.batches.push_back({m});
        }
        QVERIFY(!writeCaptureFile(path, big, {}, &error,
                                  [](std::int64_t done, std::int64_t total) { return done < total / 2; }));
        QCOMPARE(error, std::string("cancelled"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), before);
        f.close();
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"session.rpcscope"});

        QVERIFY(!writeCaptureFile(dir.filePath("missing/dir/x.rpcscope"), data, {}, &error));
        QVERIFY2(error.find("cannot write") != std::string::npos, error.c_str());
    }

    // Written batch by batch as a capture goes, the file is the same capture as one saved at once, masked
    // the same way; before finish() it reads as truncated, with every batch appended so far.
    void streamedFileIsTheSameCapture()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        QTemporaryDir dir;
        for (bool redact : {false, true}) {
            Redaction redaction;
            redaction.enabled = redact;
            const QString streamed = dir.filePath("streamed.rpcscope"),
                          saved = dir.filePath("saved.rpcscope");
            std::string error;
            CaptureFileStream stream;
            QVERIFY2(stream.open(streamed, data.info, redaction, &error), error.c_str());
            QCOMPARE(stream.partialPath(), streamed + ".partial");
            for (size_t i = 0; i < data.batches.size(); ++i) {
                QVERIFY(stream.append(data.batches[i]));
                QVERIFY(stream.append({})); // an empty batch is not written
                CaptureData sofar;
                const CaptureReadResult r = readCaptureFile(stream.partialPath(), &sofar);
                QVERIFY2(r.status == CaptureReadResult::Truncated, r.message.c_str());
                QCOMPARE(sofar.batches.size(), i + 1);
            }
            QCOMPARE(QFile::exists(streamed),
                     redact); // the first round's file stays until finish() replaces it
            QVERIFY2(stream.finish(&error), error.c_str());
            QVERIFY(!QFile::exists(stream.partialPath()));
            QVERIFY(!stream.append(data.batches[0])); // finished: nothing more goes in
            QVERIFY2(writeCaptureFile(saved, data, redaction, &error), error.c_str());
            CaptureData a, b;
            const CaptureReadResult ra = readCaptureFile(streamed, &a);
            QVERIFY2(ra.status == CaptureReadResult::Ok, ra.message.c_str());
            QCOMPARE(readCaptureFile(saved, &b).status, CaptureReadResult::Ok);
            QVERIFY(a.batches == b.batches);
            QCOMPARE(a.batches == data.batches, !redact);
            QCOMPARE(a.info.redactedHeaders, b.info.redactedHeaders);
            QCOMPARE(a.info.originNs, data.info.originNs);
            QCOMPARE(jsonOf(a), jsonOf(b));
        }
        // No directory to write in: open() says so, naming the file.
        CaptureFileStream nowhere;
        std::string error;
        QVERIFY(!nowhere.open(dir.filePath("missing/x.rpcscope"), data.info, {}, &error));
        QVERIFY2(error.find("cannot write " + dir.filePath("missing/x.rpcscope.partial").toStdString()) == 0,
                 error.c_str());
        QVERIFY(nowhere.failed());
    }

    // A link is written through (the link stays, its target gets the capture), as QSaveFile does for the
    // other formats; a FIFO or a device is refused, never replaced by the finished file.
    void streamedFileThroughALinkAndOntoAFifo()
    {
        TimelineModel model;
        const CaptureData data = sampleCapture(model);
        QTemporaryDir dir;
        const QString target = dir.filePath("target.rpcscope"), link = dir.filePath("link.rpcscope");
        QVERIFY(QFile::link(target, link)); // dangling until the capture finishes
        std::string error;
        {
            CaptureFileStream stream;
            QVERIFY2(stream.open(link, data.info, {}, &error), error.c_str());
            QCOMPARE(stream.partialPath(), target + ".partial");
            QVERIFY(stream.append(data.batches[0]));
            QVERIFY2(stream.finish(&error), error.c_str());
        }
        QVERIFY(QFileInfo(link).isSymLink());
        CaptureData got;
        const CaptureReadResult r = readCaptureFile(target, &got);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        QCOMPARE(got.batches.size(), size_t(1));

        const QString fifo = dir.filePath("fifo.rpcscope");
        QCOMPARE(mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        CaptureFileStream stream;
        QVERIFY(!stream.open(fifo, data.info, {}, &error));
        QVERIFY2(error == "cannot write " + fifo.toStdString() + ": it is not a regular file", error.c_str());
        QVERIFY(!QFile::exists(fifo + ".partial"));
        QVERIFY(!QFileInfo(fifo).isFile()); // still the FIFO

        // Nor is one read from: opening a FIFO would wait for a writer that never comes.
        CaptureData readBack;
        const CaptureReadResult fromFifo = readCaptureFile(fifo, &readBack);
        QCOMPARE(fromFifo.status, CaptureReadResult::Failed);
        QVERIFY2(fromFifo.message == "cannot read " + fifo.toStdString() +
                                         ": it is not a regular file (a device, pipe or socket)",
                 fromFifo.message.c_str());
    }

    void eventLogBoundsPayloadsWithoutChangingTheModel()
    {
        TimelineModel model;
        for (const EventBatch &b : sampleBatches())
            model.appendBatch(b);
        const std::uint64_t generation = model.eventLog().generation();
        QVERIFY(generation > 0);
        size_t events = 0;
        for (const EventBatch &b : sampleBatches())
            events += b.size();
        QCOMPARE(model.eventLog().eventCount(), events);

        EventLog small;
        small.setPayloadBudget(2);
        for (const EventBatch &b : sampleBatches())
            small.append(b);
        QCOMPARE(small.droppedPayloadBytes(), size_t(5));
        CaptureData data = captureFromLog(model.store(), small);
        QCOMPARE(jsonOf(data), jsonOf(captureFromLog(model.store(), model.eventLog())));

        model.clear();
        QVERIFY(model.eventLog().isEmpty());
        QVERIFY(model.eventLog().generation() != generation);
    }

    void chromeTrace()
    {
        TimelineModel model;
        sampleCapture(model);
        const TimelineStore &store = model.store();
        const QJsonObject doc = parseJson(timelineToChromeTraceBytes(store));
        QVERIFY(doc["traceEvents"].isArray());
        QCOMPARE(doc["displayTimeUnit"].toString(), QStringLiteral("ms"));

        // Every async begin has its end: same id, category, name and process; never before its begin.
        std::map<QString, double> open;
        std::map<QString, int> begins; // per kind: call, attempt, gap
        int deadlines = 0, labEvents = 0;
        std::set<int> namedProcesses;
        for (const auto &v : doc["traceEvents"].toArray()) {
            const QJsonObject e = v.toObject();
            const QString ph = e["ph"].toString();
            QVERIFY2(e.contains("pid") && e.contains("name"), qPrintable(QJsonDocument(e).toJson()));
            if (ph == "M") {
                if (e["name"] == "process_name") namedProcesses.insert(e["pid"].toInt());
                continue;
            }
            QVERIFY(e["ts"].isDouble());
            const QString key = QStringLiteral("%1|%2|%3|%4")
                                    .arg(e["id"].toString(), e["cat"].toString(), e["name"].toString())
                                    .arg(e["pid"].toInt());
            if (ph == "b") {
                QVERIFY2(!e["id"].toString().isEmpty(), "async slices need ids");
                QVERIFY(!open.count(key));
                QCOMPARE(e["cat"].toString(), QStringLiteral("rpc"));
                open[key] = e["ts"].toDouble();
                ++begins[e["args"].toObject()["kind"].toString()];
            } else if (ph == "e") {
                QVERIFY2(open.count(key), qPrintable(key));
                QVERIFY(e["ts"].toDouble() >= open[key]);
                open.erase(key);
            } else if (ph == "i") {
                QVERIFY(e["s"] == "p" || e["s"] == "g");
                deadlines += e["cat"] == "deadline";
                labEvents += e["cat"] == "lab";
                if (e["cat"] == "deadline") QVERIFY(namedProcesses.count(e["pid"].toInt()));
            } else {
                QFAIL(qPrintable("unexpected phase " + ph));
            }
        }
        QVERIFY(open.empty());

        // A viewer sorts by time (stably): on each call's track every end must close the innermost open
        // slice.
        std::vector<QJsonObject> timed;
        for (const auto &v : doc["traceEvents"].toArray())
            if (v.toObject()["ph"] == "b" || v.toObject()["ph"] == "e") timed.push_back(v.toObject());
        std::stable_sort(timed.begin(), timed.end(), [](const QJsonObject &a, const QJsonObject &b) {
            return a["ts"].toDouble() < b["ts"].toDouble();
        });
        std::map<QString, std::vector<QString>> stacks;
        for (const QJsonObject &e : timed) {
            auto &stack = stacks[e["id"].toString()];
            if (e["ph"] == "b") {
                stack.push_back(e["name"].toString());
            } else {
                QVERIFY(!stack.empty());
                QCOMPARE(e["name"].toString(), stack.back());
                stack.pop_back();
            }
        }
        size_t attempts = 0, gaps = 0;
        for (const Call &c : store.calls()) {
            attempts += c.attempts.size();
            for (const auto &g : c.gapsNs())
                gaps += g.has_value();
        }
        QCOMPARE(begins["call"], int(store.calls().size()));
        QCOMPARE(begins["attempt"], int(attempts));
        QCOMPARE(begins["gap"], int(gaps));
        QCOMPARE(gaps, size_t(2));
        QCOMPARE(deadlines, 2);
        QCOMPARE(labEvents, 1);

        // The first gap of call-a: 20 ms from the first attempt's end (10 ms) to the retry (30 ms).
        for (const auto &v : doc["traceEvents"].toArray()) {
            const QJsonObject e = v.toObject();
            if (e["args"].toObject()["kind"] == "gap" && e["ph"] == "b" && e["pid"].toInt() == 2) {
                QCOMPARE(e["args"].toObject()["gap_ms"].toDouble(), 20.0);
                QCOMPARE(e["ts"].toDouble(), 11000.0); // us from the origin, 1 ms before t0
            }
        }
    }

    void otlp()
    {
        TimelineModel model;
        sampleCapture(model);
        const TimelineStore &store = model.store();
        const QJsonObject doc = parseJson(timelineToOtlpBytes(store));
        const QJsonArray resourceSpans = doc["resourceSpans"].toArray();
        QCOMPARE(resourceSpans.size(), 1);
        QVERIFY(!attrString(resourceSpans[0].toObject()["resource"].toObject()["attributes"].toArray(),
                            "service.name")
                     .isEmpty());
        const QJsonArray scopeSpans = resourceSpans[0].toObject()["scopeSpans"].toArray();
        QCOMPARE(scopeSpans.size(), 1);
        const QJsonArray spans = scopeSpans[0].toObject()["spans"].toArray();
        QCOMPARE(spans.size(), 2 + 4); // two calls, four attempts

        const QRegularExpression traceHex("^[0-9a-f]{32}$"), spanHex("^[0-9a-f]{16}$");
        std::map<QString, QJsonObject> callSpans; // spanId -> span
        std::set<QString> spanIds, traceIds;
        for (const auto &v : spans) {
            const QJsonObject s = v.toObject();
            QVERIFY(traceHex.match(s["traceId"].toString()).hasMatch());
            QVERIFY(spanHex.match(s["spanId"].toString()).hasMatch());
            QVERIFY2(spanIds.insert(s["spanId"].toString()).second, "span ids are unique");
            // 64-bit times are decimal strings in OTLP/JSON.
            bool ok1 = false, ok2 = false;
            const qint64 start = s["startTimeUnixNano"].toString().toLongLong(&ok1);
            const qint64 end = s["endTimeUnixNano"].toString().toLongLong(&ok2);
            QVERIFY(ok1 && ok2 && start <= end && start > 1'600'000'000'000'000'000);
            if (!s.contains("parentSpanId")) {
                QVERIFY(s["name"].toString().startsWith("Sent."));
                QCOMPARE(s["kind"].toInt(), 3);
                callSpans[s["spanId"].toString()] = s;
                traceIds.insert(s["traceId"].toString());
            }
        }
        QCOMPARE(callSpans.size(), size_t(2));
        QCOMPARE(traceIds.size(), size_t(2));

        std::map<QString, std::vector<QJsonObject>> attemptsOf;
        for (const auto &v : spans) {
            const QJsonObject s = v.toObject();
            if (!s.contains("parentSpanId")) continue;
            const QString parent = s["parentSpanId"].toString();
            QVERIFY2(callSpans.count(parent), "an attempt's parent is a call span");
            QCOMPARE(s["traceId"], callSpans[parent]["traceId"]);
            QCOMPARE(s["name"].toString(), QStringLiteral("Attempt.pkg.Svc.Do"));
            QCOMPARE(callSpans[parent]["name"].toString(), QStringLiteral("Sent.pkg.Svc.Do"));
            attemptsOf[parent].push_back(s);
        }
        for (auto &[parent, attempts] : attemptsOf) {
            const QString key = attrString(callSpans[parent]["attributes"].toArray(), "rpcscope.call.key");
            QCOMPARE(attempts.size(), size_t(2));
            QString type;
            const QJsonArray first = attempts[0]["attributes"].toArray(),
                             second = attempts[1]["attributes"].toArray();
            QCOMPARE(attrString(first, "previous-rpc-attempts", &type), QStringLiteral("0"));
            QCOMPARE(type, QStringLiteral("intValue"));
            QCOMPARE(attrString(first, "transparent-retry", &type), QStringLiteral("false"));
            QCOMPARE(type, QStringLiteral("boolValue"));
            if (key == "call-a") {
                // Retried by policy after UNAVAILABLE: counted, not transparent; the span status says so.
                QCOMPARE(attrString(second, "previous-rpc-attempts"), QStringLiteral("1"));
                QCOMPARE(attrString(second, "transparent-retry"), QStringLiteral("false"));
                QCOMPARE(attempts[0]["status"].toObject()["code"].toInt(), 2);
                QVERIFY(attempts[0]["status"].toObject()["message"].toString().startsWith("UNAVAILABLE"));
                QCOMPARE(attrString(first, "rpc.grpc.status_code"), QStringLiteral("14"));
                QCOMPARE(attempts[1]["status"].toObject()["code"].toInt(), 0);
                QCOMPARE(callSpans[parent]["events"].toArray().size(), 1); // the backoff
            } else {
                QCOMPARE(key, QStringLiteral("call-b"));
                // REFUSED_STREAM, repeated with the same grpc-previous-rpc-attempts: a transparent retry.
                QCOMPARE(attrString(second, "previous-rpc-attempts"), QStringLiteral("0"));
                QCOMPARE(attrString(second, "transparent-retry"), QStringLiteral("true"));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestCaptureFile)
#include "tst_capturefile.moc"
