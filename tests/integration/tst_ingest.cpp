// The ingestion endpoint: a real grpc++ client and a plain TCP client report resilience events; accepted ones
// land on the model tied to their call, bad ones are refused with a clear reason and never reach it.

#include "clock.h"
#include "ingest.grpc.pb.h"
#include "ingestserver.h"
#include "labclient.h"
#include "labsession.h"
#include "librarylogs.h"
#include "testnet.h"
#include "timelinestore.h"

#include <QTemporaryFile>
#include <QtTest>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <mutex>

using namespace rpcscope;

namespace {

// Collects what the sink receives, from any thread.
struct Collector
{
    std::mutex mu;
    EventBatch events;
    size_t batches = 0;
    IngestServer::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            events.insert(events.end(), b.begin(), b.end());
            ++batches;
        };
    }
    size_t batchCount()
    {
        std::lock_guard lk(mu);
        return batches;
    }
    size_t labEvents()
    {
        std::lock_guard lk(mu);
        return size_t(std::count_if(events.begin(), events.end(),
                                    [](const WireEvent &e) { return e.kind == EventKind::LabEvent; }));
    }
    EventBatch snapshot()
    {
        std::lock_guard lk(mu);
        return events;
    }
};

ingest::Event makeEvent(const std::string &kind, const std::string &detail, const std::string &callId = {})
{
    ingest::Event e;
    e.set_kind(kind);
    e.set_detail(detail);
    e.set_call_id(callId);
    return e;
}

// Streams `events` and returns the final status and how many the server acknowledged.
grpc::Status report(std::uint16_t port, const std::vector<ingest::Event> &events, std::int64_t *accepted)
{
    auto channel =
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    auto stub = ingest::Ingest::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ingest::ReportReply reply;
    auto writer = stub->ReportEvents(&ctx, &reply);
    for (const auto &e : events)
        if (!writer->Write(e)) break;
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    *accepted = reply.accepted();
    return s;
}

// Streams each of `messages` as the raw bytes of one event, as a client with another (or a broken) protobuf
// library would: the generic stub serializes nothing.
grpc::Status reportRaw(std::uint16_t port, const std::vector<std::string> &messages)
{
    auto channel =
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    grpc::CompletionQueue cq;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto call = stub.PrepareCall(&ctx, "/rpcscope.ingest.Ingest/ReportEvents", &cq);
    auto step = [&cq](auto &&start) {
        start(reinterpret_cast<void *>(1));
        void *tag = nullptr;
        bool ok = false;
        return cq.Next(&tag, &ok) && ok;
    };
    bool open = step([&](void *t) { call->StartCall(t); });
    for (const std::string &m : messages) {
        if (!open) break;
        grpc::Slice slice(m.data(), m.size());
        grpc::ByteBuffer buffer(&slice, 1);
        open = step([&](void *t) { call->Write(buffer, t); });
    }
    if (open) step([&](void *t) { call->WritesDone(t); });
    grpc::ByteBuffer reply;
    step([&](void *t) { call->Read(&reply, t); });
    grpc::Status status;
    step([&](void *t) { call->Finish(&status, t); });
    cq.Shutdown();
    void *tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
    }
    return status;
}

// What this process writes on stderr while `run` runs (the server's threads included).
template <typename F> QByteArray stderrOf(F &&run)
{
    QTemporaryFile file;
    if (!file.open()) return "cannot open a temporary file";
    std::fflush(stderr);
    const int saved = ::dup(STDERR_FILENO);
    ::dup2(file.handle(), STDERR_FILENO);
    run();
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    file.seek(0);
    return file.readAll();
}

// Sends `text` on a fresh TCP connection to the JSON port and reads `lines` answer lines.
QStringList jsonExchange(std::uint16_t port, const std::string &text, int lines)
{
    const int fd = testnet::connectLoopback(port);
    if (fd < 0) return {QStringLiteral("connect failed")};
    testnet::sendAll(fd, text.data(), text.size());
    std::string got;
    const std::int64_t until = steadyNowNs() + 10'000'000'000;
    while (std::count(got.begin(), got.end(), '\n') < lines && steadyNowNs() < until) {
        char buf[4096];
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, size_t(n));
    }
    ::close(fd);
    return QString::fromStdString(got).split('\n', Qt::SkipEmptyParts);
}

} // namespace

class TestIngest : public QObject
{
    Q_OBJECT
private slots:
    // A lab call goes through the capture relay while a real grpc++ client reports the breaker transitions
    // around it; the model ties them to that call.
    void grpcEventsTiedToTheirCall()
    {
        Collector wire;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(wire.sink(), &error), error.c_str());
        IngestServer ingestServer;
        QVERIFY2(ingestServer.start(0, 0, wire.sink(), &error), error.c_str());

        lab::LabClient client(session.proxyAddress().toString(), {});
        lab::CallRequest req;
        req.set_call_id("ingest-call-1");
        const auto r = client.call(req, std::chrono::seconds(5));
        QCOMPARE(r.code, 0);
        // A second call carries a W3C traceparent, as a traced service's call would.
        const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        lab::CallRequest traced;
        traced.set_call_id("ingest-call-2");
        QCOMPARE(client.call(traced, std::chrono::seconds(5), {{"traceparent", traceparent}}).code, 0);

        const std::int64_t before = wallNowNs();
        auto open = makeEvent("breaker", "closed -> open", "ingest-call-1");
        open.set_time_unix_nanos(before - 5'000'000); // 5 ms ago, on the wall clock
        open.set_source("checkout/own-breaker");
        auto rejected = makeEvent("rejection", "pool full (10/10)", "ingest-call-1");
        auto custom = makeEvent("custom", "token bucket at 3/10");
        custom.set_label("retry budget");
        custom.set_traceparent(traceparent);
        std::int64_t accepted = 0;
        const grpc::Status s = report(ingestServer.grpcPort(), {open, rejected, custom}, &accepted);
        QVERIFY2(s.ok(), s.error_message().c_str());
        QCOMPARE(accepted, 3);
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(3), 5000);
        session.stop();
        ingestServer.stop();

        TimelineStore store;
        store.apply(wire.snapshot());
        const auto &events = store.labEvents();
        QCOMPARE(events.size(), size_t(3));
        QCOMPARE(QString::fromStdString(events[0].kind), QStringLiteral("breaker"));
        QCOMPARE(QString::fromStdString(events[0].detail),
                 QStringLiteral("closed -> open [checkout/own-breaker]"));
        QCOMPARE(QString::fromStdString(events[1].kind), QStringLiteral("bulkhead-rejected"));
        QCOMPARE(QString::fromStdString(events[2].kind), QStringLiteral("custom"));
        QCOMPARE(QString::fromStdString(events[2].detail),
                 QStringLiteral("retry budget: token bucket at 3/10"));

        // Tied to the call the relay assembled from the wire.
        const auto call = std::find_if(store.calls().begin(), store.calls().end(),
                                       [](const Call &c) { return c.key == "ingest-call-1"; });
        QVERIFY(call != store.calls().end());
        QCOMPARE(events[0].callId, call->key);
        QCOMPARE(events[1].callId, call->key);
        // The one reported with a traceparent is tied to the call that carried it.
        QCOMPARE(QString::fromStdString(events[2].callId), QStringLiteral("ingest-call-2"));

        // The reported wall time became the capture's steady time: 5 ms before the report was sent.
        const std::int64_t sentSteady = store.latestNs();
        QVERIFY2(events[0].tNs < events[1].tNs, "the back-dated transition comes first");
        QVERIFY2(events[0].tNs <= sentSteady, "not in the future");
    }

    void badGrpcEventsRefused_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("detail");
        QTest::addColumn<qint64>("time");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("reason");
        const qint64 now = wallNowNs();
        QTest::newRow("unknown kind")
            << "meltdown"
            << "" << qint64(0) << int(grpc::INVALID_ARGUMENT) << "event 1: unknown kind \"meltdown\"";
        QTest::newRow("breaker detail") << "breaker"
                                        << "closed to open" << qint64(0) << int(grpc::INVALID_ARGUMENT)
                                        << "event 1: a breaker event's detail";
        QTest::newRow("time far in the past") << "rejection"
                                              << "" << now - 3 * 86'400'000'000'000
                                              << int(grpc::INVALID_ARGUMENT) << "event 1: time_unix_nanos";
        QTest::newRow("negative time")
            << "rejection"
            << "" << qint64(-1) << int(grpc::INVALID_ARGUMENT) << "event 1: time_unix_nanos";
        QTest::newRow("detail too long") << "rejection" << QString(2000, 'x') << qint64(0)
                                         << int(grpc::INVALID_ARGUMENT) << "event 1: detail is longer";
        QTest::newRow("message over 16 KiB")
            << "rejection" << QString(20000, 'x') << qint64(0) << int(grpc::RESOURCE_EXHAUSTED) << "";
    }

    // The first bad event ends the stream with a clear status; the good one before it stays accepted.
    void badGrpcEventsRefused()
    {
        QFETCH(QString, kind);
        QFETCH(QString, detail);
        QFETCH(qint64, time);
        QFETCH(int, code);
        QFETCH(QString, reason);
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        auto bad = makeEvent(kind.toStdString(), detail.toStdString());
        bad.set_time_unix_nanos(time);
        std::int64_t accepted = -1;
        const grpc::Status s =
            report(server.grpcPort(), {makeEvent("retry-suppressed", "budget"), bad}, &accepted);
        QCOMPARE(int(s.error_code()), code);
        QVERIFY2(QString::fromStdString(s.error_message()).startsWith(reason), s.error_message().c_str());
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(1), 5000);
        QCOMPARE(QString::fromStdString(wire.snapshot()[0].decision()->kind),
                 QStringLiteral("retry-suppressed"));
        // Still serving after a refusal.
        const grpc::Status again = report(server.grpcPort(), {makeEvent("custom", "x")}, &accepted);
        QCOMPARE(int(again.error_code()), int(grpc::INVALID_ARGUMENT)); // custom needs a label
        QCOMPARE(wire.labEvents(), size_t(1));
        QCOMPARE(server.rejected(), std::uint64_t(code == grpc::RESOURCE_EXHAUSTED ? 1 : 2));
    }

    void malformedGrpcEventsRefused_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("reason");
        const auto event = [](std::initializer_list<std::pair<int, std::string>> fields) {
            QByteArray b; // length-delimited fields, each shorter than 128 bytes
            for (const auto &[number, value] : fields)
                b += char(number << 3 | 2) + QByteArray(1, char(value.size())) +
                     QByteArray::fromStdString(value);
            return b;
        };
        QTest::newRow("not protobuf")
            << QByteArray("\xff\xff\xff", 3)
            << "event 1: not a protobuf ingest.Event: no valid field tag at byte 0 of 3";
        QTest::newRow("field cut short")
            << event({{2, "rejection"}}) + QByteArray("\x1a\x0a"
                                                      "abc",
                                                      5)
            << "event 1: not a protobuf ingest.Event: detail (field 3) starting at byte 11 is cut short or "
               "malformed (the message has 16 bytes)";
        QTest::newRow("kind not UTF-8")
            << event({{2, "rej\xc3\x28"}})
            << "event 1: kind is not valid UTF-8 (a string field of ingest.proto)";
        QTest::newRow("detail not UTF-8")
            << event({{2, "rejection"}, {3, "pool \xff full"}})
            << "event 1: detail is not valid UTF-8 (a string field of ingest.proto)";
        QTest::newRow("overlong UTF-8 source")
            << event({{2, "rejection"}, {7, "\xc0\xaf"}})
            << "event 1: source is not valid UTF-8 (a string field of ingest.proto)";
        QTest::newRow("undefined wire type")
            << QByteArray("\x17", 1)
            << "event 1: not a protobuf ingest.Event: kind (field 2) at byte 0 has wire type 7, which "
               "ingest.Event does not use";
        QTest::newRow("time as a string") // a field of the wrong wire type is an unknown field, then no kind
            << event({{1, "1700000000"}})
            << "event 1: unknown kind \"\" (known: breaker, rejection, retry-suppressed, custom)";
        QTest::newRow("empty message")
            << QByteArray()
            << "event 1: unknown kind \"\" (known: breaker, rejection, retry-suppressed, custom)";
    }

    // Bytes that are not an Event are refused as such, with what is wrong and where, and no protobuf log
    // line on stderr; the good event before them stays accepted.
    void malformedGrpcEventsRefused()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, reason);
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        grpc::Status s;
        const QByteArray logged = stderrOf([&] {
            s = reportRaw(server.grpcPort(),
                          {makeEvent("rejection", "pool full").SerializeAsString(), bytes.toStdString()});
        });
        QCOMPARE(int(s.error_code()), int(grpc::INVALID_ARGUMENT));
        QCOMPARE(QString::fromStdString(s.error_message()), reason);
        QVERIFY2(!logged.contains("libprotobuf"), logged.constData());
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(1), 5000);
        QCOMPARE(server.accepted(), std::uint64_t(1));
        QCOMPARE(server.rejected(), std::uint64_t(1));
        // Still serving, raw or typed.
        QVERIFY(reportRaw(server.grpcPort(), {makeEvent("rejection", "again").SerializeAsString()}).ok());
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(2), 5000);
    }

    // A grpc++ client's own stub sends a string that is not UTF-8 as it is (its library only logs): the
    // endpoint refuses it by name.
    void grpcStubStringNotUtf8()
    {
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        auto bad = makeEvent("custom", "x");
        bad.set_label("caf\xe9");
        std::int64_t accepted = -1;
        grpc::Status s;
        {
            google::protobuf::LogSilencer quiet; // the client's library logs what it sends
            s = report(server.grpcPort(), {makeEvent("retry-suppressed", "budget"), bad}, &accepted);
        }
        QCOMPARE(int(s.error_code()), int(grpc::INVALID_ARGUMENT));
        QCOMPARE(QString::fromStdString(s.error_message()),
                 QStringLiteral("event 1: label is not valid UTF-8 (a string field of ingest.proto)"));
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(1), 5000);
    }

    // The shell-script variant: one JSON object per line, one answer line each.
    void jsonLines()
    {
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        const std::string input =
            "{\"kind\":\"breaker\",\"detail\":\"open -> half-open\",\"call_id\":\"c-7\",\"time_unix_ms\":" +
            std::to_string(wallNowNs() / 1'000'000) + "}\n" + "this is not json\n" +
            "{\"kind\":\"custom\",\"label\":\"deploy\",\"detail\":\"v2 rolled out\"}" + "\r\n" +
            "{\"kind\":\"breaker\",\"detail\":\"open -> closed\",\"colour\":\"red\"}" + "\n" +
            std::string(IngestServer::kMaxLineBytes + 10, 'z') + "\n" + "[\"kind\",\"breaker\"]" + "\n" +
            "{\"kind\":\"rejection\",\"call_id\":\"c-8\",\"time_unix_nanos\":\"" +
            std::to_string(wallNowNs()) + "\"}\n";
        const QStringList answers = jsonExchange(server.jsonPort(), input, 7);
        QCOMPARE(answers.size(), 7);
        QCOMPARE(answers[0], QStringLiteral("ok"));
        QVERIFY2(answers[1].startsWith("error: not JSON"), qPrintable(answers[1]));
        QCOMPARE(answers[2], QStringLiteral("ok"));
        QCOMPARE(answers[3], QStringLiteral("error: unknown field \"colour\""));
        QVERIFY2(answers[4].startsWith("error: line longer than"), qPrintable(answers[4]));
        QCOMPARE(answers[5], QStringLiteral("error: a line must be one JSON object"));
        QCOMPARE(answers[6], QStringLiteral("ok"));
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(3), 5000);
        const EventBatch got = wire.snapshot();
        QCOMPARE(QString::fromStdString(got[0].grpc.callId), QStringLiteral("c-7"));
        QCOMPARE(QString::fromStdString(got[0].decision()->detail), QStringLiteral("open -> half-open"));
        QCOMPARE(QString::fromStdString(got[1].decision()->detail), QStringLiteral("deploy: v2 rolled out"));
        QCOMPARE(QString::fromStdString(got[2].decision()->kind), QStringLiteral("bulkhead-rejected"));
        QCOMPARE(server.accepted(), std::uint64_t(3));
        QCOMPARE(server.rejected(), std::uint64_t(4));
    }

    // The lines of one read reach the sink as one batch, in order: a burst costs the model's queue one push
    // per read, not one per line.
    void jsonLinesBatchedPerRead()
    {
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        constexpr int kLines = 500;
        std::string input;
        for (int i = 0; i < kLines; ++i)
            input += "{\"kind\":\"custom\",\"label\":\"burst\",\"detail\":\"" + std::to_string(i) + "\"}\n";
        const QStringList answers = jsonExchange(server.jsonPort(), input, kLines);
        QCOMPARE(answers.size(), kLines);
        QCOMPARE(answers.count(QStringLiteral("ok")), kLines);
        QTRY_COMPARE_WITH_TIMEOUT(wire.labEvents(), size_t(kLines), 5000);
        QVERIFY2(wire.batchCount() < size_t(kLines) / 4, qPrintable(QString::number(wire.batchCount())));
        const EventBatch got = wire.snapshot();
        for (int i = 0; i < kLines; ++i)
            QCOMPARE(QString::fromStdString(got[size_t(i)].decision()->detail),
                     QStringLiteral("burst: %1").arg(i));
    }

    // Every line gets an answer, a blank one too.
    void jsonEmptyLines()
    {
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        const QStringList answers =
            jsonExchange(server.jsonPort(), "\n   \n\t\r\n{\"kind\":\"rejection\"}\n\r\n", 5);
        const QString empty = QStringLiteral("error: empty line (one JSON object per line)");
        QCOMPARE(answers, (QStringList{empty, empty, empty, "ok", empty}));
        QCOMPARE(server.rejected(), std::uint64_t(4));
    }

    void jsonTimesOutOfRange_data()
    {
        QTest::addColumn<QString>("time");
        QTest::addColumn<QString>("answer");
        const QString nsRange =
            " is not an integer from 0 to 9223372036854775807 (ns since the Unix epoch, or 0 "
            "for now)";
        const QString msRange =
            " is not a number from 0 to 9223372036854 (ms since the Unix epoch, or 0 for now)";
        QTest::newRow("ms 1e300") << "\"time_unix_ms\":1e300"
                                  << "error: time_unix_ms 1.0000000000000001e+300" + msRange;
        QTest::newRow("ms -1e300") << "\"time_unix_ms\":-1e300"
                                   << "error: time_unix_ms -1.0000000000000001e+300" + msRange;
        QTest::newRow("ms just past int64") << "\"time_unix_ms\":9223372036855"
                                            << "error: time_unix_ms 9223372036855" + msRange;
        QTest::newRow("ms negative") << "\"time_unix_ms\":-1"
                                     << "error: time_unix_ms -1" + msRange;
        QTest::newRow("ms string nan") << "\"time_unix_ms\":\"nan\""
                                       << "error: time_unix_ms \"nan\"" + msRange;
        QTest::newRow("ms string inf") << "\"time_unix_ms\":\"inf\""
                                       << "error: time_unix_ms \"inf\"" + msRange;
        QTest::newRow("ms string 1e300") << "\"time_unix_ms\":\"1e300\""
                                         << "error: time_unix_ms \"1e300\"" + msRange;
        QTest::newRow("ms string not a number") << "\"time_unix_ms\":\"soon\""
                                                << "error: time_unix_ms \"soon\"" + msRange;
        QTest::newRow("ns 1e300") << "\"time_unix_nanos\":1e300"
                                  << "error: time_unix_nanos 1.0000000000000001e+300" + nsRange;
        QTest::newRow("ns 2^63") << "\"time_unix_nanos\":9223372036854775808"
                                 << "error: time_unix_nanos 9.2233720368547758e+18" + nsRange;
        QTest::newRow("ns -1e300") << "\"time_unix_nanos\":-1e300"
                                   << "error: time_unix_nanos -1.0000000000000001e+300" + nsRange;
        QTest::newRow("ns string past int64") << "\"time_unix_nanos\":\"99999999999999999999\""
                                              << "error: time_unix_nanos \"99999999999999999999\"" + nsRange;
        QTest::newRow("ns string negative") << "\"time_unix_nanos\":\"-5\""
                                            << "error: time_unix_nanos \"-5\"" + nsRange;
        QTest::newRow("ns string nan") << "\"time_unix_nanos\":\"nan\""
                                       << "error: time_unix_nanos \"nan\"" + nsRange;
        // In range but far from now: the day check speaks.
        QTest::newRow("ms in range, a year ago")
            << QStringLiteral("\"time_unix_ms\":%1").arg(wallNowNs() / 1'000'000 - 365LL * 86'400'000)
            << "error: time_unix_nanos ";
        QTest::newRow("ms now") << QStringLiteral("\"time_unix_ms\":%1").arg(wallNowNs() / 1'000'000) << "ok";
        QTest::newRow("ns now as a string")
            << QStringLiteral("\"time_unix_nanos\":\"%1\"").arg(wallNowNs()) << "ok";
        QTest::newRow("ms 0 is now") << "\"time_unix_ms\":0"
                                     << "ok";
    }

    // A time beyond int64 is refused with the field and its range before any conversion (one would be
    // undefined behaviour), never reported as a wrapped number.
    void jsonTimesOutOfRange()
    {
        QFETCH(QString, time);
        QFETCH(QString, answer);
        Collector wire;
        IngestServer server;
        std::string error;
        QVERIFY2(server.start(0, 0, wire.sink(), &error), error.c_str());
        const QStringList answers =
            jsonExchange(server.jsonPort(), "{\"kind\":\"rejection\"," + time.toStdString() + "}\n", 1);
        QCOMPARE(answers.size(), 1);
        QVERIFY2(answers[0].startsWith(answer), qPrintable(answers[0]));
        QVERIFY2(!answers[0].contains("-9223372036854775808"), qPrintable(answers[0]));
        QCOMPARE(wire.labEvents(), size_t(answer == "ok" ? 1 : 0));
    }

    // With the libraries' lines routed away (as both programs do first), a port in use is said once, in
    // rpcscope's words, and protobuf's complaint about a string that is not UTF-8 stays off stderr too.
    void libraryLinesStayOffStderr()
    {
        routeLibraryLogs();
        IngestServer first, second;
        std::string error;
        QVERIFY2(first.start(0, 0, {}, &error), error.c_str());
        bool started = true;
        const QByteArray logged = stderrOf([&] {
            started = second.start(first.grpcPort(), 0, {}, &error);
            ingest::Event e;
            e.set_kind("caf\xe9");
            ingest::Event back;
            back.ParseFromString(e.SerializeAsString());
        });
        QVERIFY(!started);
        QVERIFY2(QString::fromStdString(error).contains("cannot serve the Ingest gRPC service"),
                 error.c_str());
        QVERIFY2(logged.isEmpty(), logged.constData());
    }

    void portInUseIsAClearError()
    {
        IngestServer first, second;
        std::string error;
        QVERIFY2(first.start(0, 0, {}, &error), error.c_str());
        QVERIFY(!second.start(0, first.jsonPort(), {}, &error));
        QVERIFY2(QString::fromStdString(error).contains("cannot listen for JSON events"), error.c_str());
        QVERIFY(!second.start(first.grpcPort(), 0, {}, &error));
        QVERIFY2(QString::fromStdString(error).contains("cannot serve the Ingest gRPC service"),
                 error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestIngest)
#include "tst_ingest.moc"
