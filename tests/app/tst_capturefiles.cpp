// Capture files and exports end to end: real lab runs saved as .rpcscope and reopened, the pcapng export read
// by tshark, and rpcscope-cli's convert with its errors.

#include "captureio.h"
#include "clock.h"
#include "jsonexport.h"
#include "labclient.h"
#include "labserver.h"
#include "labsession.h"
#include "modelsink.h"
#include "runtool.h"
#include "timelinemodel.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <csignal>
#include <map>
#include <set>
#include <thread>

using namespace rpcscope;

namespace {

using testtool::cli;
using testtool::Result;
using testtool::runTool;

// A scenario run through the lab's capture relay into a TimelineModel, the way rpcscope-cli run does it.
struct LiveRun
{
    TimelineModel model;
    CaptureData data;
};

bool runLive(const std::string &name, LiveRun *run, std::string *error)
{
    const lab::Scenario *scenario = lab::findScenario(name);
    if (!scenario) {
        *error = "no scenario " + name;
        return false;
    }
    run->model.setOrigin(steadyNowNs(), wallNowNs());
    lab::LabSession lab;
    if (!lab.start(queuedSinkTo(&run->model), error)) return false;
    const lab::ScenarioResult result = lab.run(*scenario);
    lab.stop();
    QCoreApplication::sendPostedEvents();
    ModelFeed::of(&run->model)->drainAll();
    if (!result.expectationHeld) {
        *error = result.summary;
        return false;
    }
    run->data = captureFromLog(run->model.store(), run->model.eventLog());
    return true;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeAll(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

// tshark's dissection of a pcapng: HTTP/2 frame types, header values and gRPC messages, decoding every server
// port the capture used as HTTP/2.
struct TsharkView
{
    std::map<int, int> frameTypes;
    QStringList headerValues;
    int grpcMessages = 0;
};

bool tshark(const QString &program, const QString &file, const TimelineStore &store, TsharkView *view,
            QString *error)
{
    QStringList args{"-r", file};
    std::set<QString> ports;
    for (const Connection &c : store.connections())
        ports.insert(QString::fromStdString(c.server).section(':', -1));
    for (const QString &port : ports)
        args << "-d" << QStringLiteral("tcp.port==%1,http2").arg(port);
    args << "-T"
         << "fields"
         << "-E"
         << "separator=|"
         << "-E"
         << "aggregator=;"
         << "-e"
         << "http2.type"
         << "-e"
         << "http2.header.value"
         << "-e"
         << "grpc.message_length";
    const Result r = runTool(program, args);
    if (r.code != 0) {
        *error = QStringLiteral("tshark exited %1: %2").arg(r.code).arg(r.err);
        return false;
    }
    for (const QString &line : r.out.split('\n', Qt::SkipEmptyParts)) {
        const QStringList fields = line.split('|');
        if (fields.size() < 3) continue;
        for (const QString &t : fields[0].split(';', Qt::SkipEmptyParts))
            ++view->frameTypes[t.toInt()];
        view->headerValues << fields[1].split(';', Qt::SkipEmptyParts);
        view->grpcMessages += int(fields[2].split(';', Qt::SkipEmptyParts).size());
    }
    return true;
}

// Adds secrets to every request header block, as a client with credentials would send them.
void addCredentials(CaptureData *data)
{
    for (EventBatch &b : data->batches)
        for (WireEvent &e : b)
            if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer) {
                e.headers.push_back({"authorization", "Bearer tok-1234567890"});
                e.headers.push_back({"cookie", "sid=cookie-abcdef"});
                e.headers.push_back({"x-tenant-secret", "tenant-zyxwvu"});
            }
}

} // namespace

class TestCaptureFiles : public QObject
{
    Q_OBJECT
private slots:
    void liveRoundTrip_data()
    {
        QTest::addColumn<QString>("scenario");
        // Unary retries; 100 and 300 KiB messages; breaker lab events and fast failures.
        QTest::newRow("retry-basic") << "retry-basic";
        QTest::newRow("retry-buffer") << "retry-buffer";
        QTest::newRow("circuit-breaker") << "circuit-breaker";
        // Three capture hops, calls nested by traceparent.
        QTest::newRow("deadline-chain") << "deadline-chain";
    }

    void liveRoundTrip()
    {
        QFETCH(QString, scenario);
        LiveRun live;
        std::string error;
        QVERIFY2(runLive(scenario.toStdString(), &live, &error), error.c_str());
        const TimelineStore &store = live.model.store();
        QVERIFY(!store.calls().empty());
        QVERIFY(live.data.eventCount() > 0);
        const EventLog &log = live.model.eventLog();
        qInfo("%zu events kept in %zu bytes (%.0f bytes per event; a WireEvent is %zu)", log.eventCount(),
              log.encodedBytes(), double(log.encodedBytes()) / double(log.eventCount()), sizeof(WireEvent));

        QTemporaryDir dir;
        const QString path = dir.filePath("live.rpcscope");
        QVERIFY2(exportCapture(live.data, FileFormat::Rpcscope, path, {}, &error), error.c_str());
        CaptureData back;
        const CaptureReadResult r = loadCapture(path, &back);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineStore reopened;
        replayCapture(back, reopened);
        // The same model: every call, attempt, gap, stall, ping, lab event and frame.
        QCOMPARE(timelineToJsonBytes(reopened, true), timelineToJsonBytes(store, true));
        QCOMPARE(reopened.calls().size(), store.calls().size());
        if (scenario == "circuit-breaker") QVERIFY(!reopened.labEvents().empty());
        if (scenario == "retry-buffer") // request messages of 100 and 300 KiB, kept up to 64 KiB each
            QVERIFY(readAll(path).size() > 4 * 64 * 1024);
    }

    void pcapngReadByTshark_data()
    {
        QTest::addColumn<QString>("scenario");
        QTest::newRow("retry-basic") << "retry-basic";
        QTest::newRow("retry-buffer") << "retry-buffer"; // DATA frames of 16 KiB, messages over many frames
        QTest::newRow("server-streaming-retry") << "server-streaming-retry";
    }

    void pcapngReadByTshark()
    {
        const QString program = QStandardPaths::findExecutable("tshark");
        if (program.isEmpty())
            QSKIP("tshark is not installed (Debian package tshark; scripts/setup.sh installs it): pcapng "
                  "export "
                  "not checked against Wireshark's dissector");
        QFETCH(QString, scenario);
        LiveRun live;
        std::string error;
        QVERIFY2(runLive(scenario.toStdString(), &live, &error), error.c_str());
        const TimelineStore &store = live.model.store();
        std::map<int, int> recorded;
        for (const FrameRecord &f : store.frames())
            ++recorded[f.type];
        int messages = 0;
        for (const EventBatch &b : live.data.batches)
            for (const WireEvent &e : b)
                messages += e.kind == EventKind::Message;

        QTemporaryDir dir;
        const QString path = dir.filePath("export.pcapng");
        QVERIFY2(exportCapture(live.data, FileFormat::Pcapng, path, {}, &error), error.c_str());
        TsharkView view;
        QString why;
        QVERIFY2(tshark(program, path, store, &view, &why), qPrintable(why));
        qInfo("%s: rpcscope recorded %d HEADERS, %d DATA, %d gRPC messages; tshark counts %d HEADERS, %d "
              "DATA, %d "
              "gRPC messages",
              qPrintable(scenario), recorded[FrameHeaders], recorded[FrameData], messages, view.frameTypes[1],
              view.frameTypes[0], view.grpcMessages);
        QVERIFY(recorded[FrameHeaders] > 0 && recorded[FrameData] > 0);
        QCOMPARE(view.frameTypes[FrameHeaders], recorded[FrameHeaders]);
        QCOMPARE(view.frameTypes[FrameData], recorded[FrameData]);
        QCOMPARE(view.grpcMessages, messages);
        // Every other frame type too.
        for (const auto &[type, n] : recorded)
            QVERIFY2(view.frameTypes[type] == n,
                     qPrintable(QStringLiteral("frame type %1: tshark %2, rpcscope %3")
                                    .arg(type)
                                    .arg(view.frameTypes[type])
                                    .arg(n)));
        QVERIFY(view.headerValues.contains(QStringLiteral("/rpcscope.lab.Lab/Call")) ||
                view.headerValues.join(' ').contains(QStringLiteral("/rpcscope.lab.Lab/")));
    }

    // The pcapng export imported again (libpcap, TCP reassembly, the live decoder) gives the same calls,
    // attempts and gaps: the packets carry the capture's own nanosecond times.
    void pcapngImportsBack()
    {
        LiveRun live;
        std::string error;
        QVERIFY2(runLive("retry-basic", &live, &error), error.c_str());
        QTemporaryDir dir;
        const QString path = dir.filePath("export.pcapng");
        QVERIFY2(exportCapture(live.data, FileFormat::Pcapng, path, {}, &error), error.c_str());
        CaptureData imported;
        const CaptureReadResult r = loadCapture(path, &imported);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineStore store;
        replayCapture(imported, store);
        const TimelineStore &want = live.model.store();
        QCOMPARE(store.calls().size(), want.calls().size());
        QCOMPARE(store.frames().size(), want.frames().size());
        for (size_t i = 0; i < want.calls().size(); ++i) {
            const Call &a = want.calls()[i], &b = store.calls()[i];
            QCOMPARE(b.key, a.key);
            QCOMPARE(b.attempts.size(), a.attempts.size());
            const auto ga = a.gapsNs(), gb = b.gapsNs();
            for (size_t g = 0; g < ga.size(); ++g)
                QVERIFY(ga[g] && gb[g] && std::llabs(*ga[g] - *gb[g]) < 1'000'000);
            for (size_t k = 0; k < a.attempts.size(); ++k)
                QCOMPARE(b.attempts[k].status, a.attempts[k].status);
        }
    }

    void pcapngRedaction()
    {
        const QString program = QStandardPaths::findExecutable("tshark");
        if (program.isEmpty())
            QSKIP("tshark is not installed: the header values of the pcapng export cannot be read back");
        LiveRun live;
        std::string error;
        QVERIFY2(runLive("retry-basic", &live, &error), error.c_str());
        addCredentials(&live.data);
        QTemporaryDir dir;
        ExportOptions options;
        options.redaction.extraNames = {"X-Tenant-Secret"};
        const QString masked = dir.filePath("masked.pcapng"), plain = dir.filePath("plain.pcapng");
        QVERIFY2(exportCapture(live.data, FileFormat::Pcapng, masked, options, &error), error.c_str());
        options.redaction.enabled = false;
        QVERIFY2(exportCapture(live.data, FileFormat::Pcapng, plain, options, &error), error.c_str());

        TsharkView view;
        QString why;
        QVERIFY2(tshark(program, masked, live.model.store(), &view, &why), qPrintable(why));
        const QString values = view.headerValues.join('\n');
        for (const char *secret : {"tok-1234567890", "cookie-abcdef", "tenant-zyxwvu"})
            QVERIFY2(!values.contains(secret), secret);
        QCOMPARE(int(view.headerValues.count(QString::fromLatin1(kRedactedValue))), 3 * 3);

        TsharkView open;
        QVERIFY2(tshark(program, plain, live.model.store(), &open, &why), qPrintable(why));
        QVERIFY(open.headerValues.contains("Bearer tok-1234567890"));
        QVERIFY(open.headerValues.contains("tenant-zyxwvu"));
    }

    void cliRunOutAndConvert()
    {
        QTemporaryDir dir;
        const QString json = dir.filePath("live.json"), capture = dir.filePath("live.rpcscope");
        Result r = cli({"run", "retry-basic", "--json", json, "--frames", "--out", capture});
        QVERIFY2(r.code == 0, qPrintable(r.err));

        // Reopened and written as JSON: the document the live run wrote.
        const QString back = dir.filePath("back.json");
        r = cli({"convert", capture, back, "--frames"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("converted") && r.out.contains("(json)"), qPrintable(r.out));
        QCOMPARE(QJsonDocument::fromJson(readAll(back)), QJsonDocument::fromJson(readAll(json)));

        // Every format, by extension and by --to.
        const QString chrome = dir.filePath("t.chrome.json"), otlp = dir.filePath("t.otlp.json"),
                      pcapng = dir.filePath("t.pcapng"), copy = dir.filePath("copy.rpcscope"),
                      forced = dir.filePath("forced.out");
        for (const QString &out : {chrome, otlp, pcapng, copy}) {
            r = cli({"convert", capture, out});
            QVERIFY2(r.code == 0, qPrintable(r.err));
        }
        QVERIFY(QJsonDocument::fromJson(readAll(chrome)).object()["traceEvents"].isArray());
        QVERIFY(QJsonDocument::fromJson(readAll(otlp)).object()["resourceSpans"].isArray());
        QVERIFY(readAll(pcapng).startsWith(QByteArray("\x0a\x0d\x0d\x0a", 4)));
        QVERIFY(readAll(copy).startsWith("RPCSCOPE"));
        r = cli({"convert", capture, forced, "--to", "otlp"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(QJsonDocument::fromJson(readAll(forced)).object()["resourceSpans"].isArray());
        // run --out writes the other formats straight from the session too.
        const QString runOtlp = dir.filePath("run.otlp.json"), runPcap = dir.filePath("run.pcapng");
        r = cli({"run", "retry-basic", "--out", runOtlp});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(QJsonDocument::fromJson(readAll(runOtlp))
                     .object()["resourceSpans"][0]["scopeSpans"][0]["spans"]
                     .toArray()
                     .size(),
                 4); // the call and its three attempts
        r = cli({"run", "retry-basic", "--out", runPcap, "--to", "pcapng"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(readAll(runPcap).startsWith(QByteArray("\x0a\x0d\x0d\x0a", 4)));

        // A packet capture converts too (imported by content, whatever its name).
        r = cli({"convert", pcapng, dir.filePath("imported.json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(QJsonDocument::fromJson(readAll(dir.filePath("imported.json")))
                     .object()["calls"]
                     .toArray()
                     .size(),
                 1);
        r = cli({"convert", copy, dir.filePath("again.json"), "--frames"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(QJsonDocument::fromJson(readAll(dir.filePath("again.json"))),
                 QJsonDocument::fromJson(readAll(json)));
    }

    void cliConvertRedaction()
    {
        LiveRun live;
        std::string error;
        QVERIFY2(runLive("retry-basic", &live, &error), error.c_str());
        addCredentials(&live.data);
        QTemporaryDir dir;
        const QString secrets = dir.filePath("secrets.rpcscope");
        ExportOptions keep;
        keep.redaction.enabled = false;
        QVERIFY2(exportCapture(live.data, FileFormat::Rpcscope, secrets, keep, &error), error.c_str());
        QVERIFY(readAll(secrets).contains("tok-1234567890"));

        const QString masked = dir.filePath("masked.rpcscope"), custom = dir.filePath("custom.rpcscope"),
                      plain = dir.filePath("plain.rpcscope");
        QCOMPARE(cli({"convert", secrets, masked}).code, 0);
        QCOMPARE(cli({"convert", secrets, custom, "--redact", "x-tenant-secret"}).code, 0);
        QCOMPARE(cli({"convert", secrets, plain, "--no-redact"}).code, 0);
        const QByteArray m = readAll(masked), c = readAll(custom), p = readAll(plain);
        QVERIFY(!m.contains("tok-1234567890") && !m.contains("cookie-abcdef") && m.contains("tenant-zyxwvu"));
        QVERIFY(!c.contains("tok-1234567890") && !c.contains("tenant-zyxwvu"));
        QVERIFY(p.contains("tok-1234567890") && p.contains("cookie-abcdef") && p.contains("tenant-zyxwvu"));
        QVERIFY(m.contains(kRedactedValue));
    }

    void cliConvertErrors()
    {
        QTemporaryDir dir;
        const QString good = dir.filePath("good.rpcscope");
        QCOMPARE(cli({"run", "retry-basic", "--out", good}).code, 0);
        const QByteArray bytes = readAll(good);
        QVERIFY(bytes.size() > 100);
        writeAll(dir.filePath("empty.rpcscope"), {});
        writeAll(dir.filePath("doc.json"), "{\"format\":\"rpcscope-json\"}");
        writeAll(dir.filePath("cut.rpcscope"), bytes.left(bytes.size() - 10));
        QByteArray corrupt = bytes;
        corrupt[bytes.size() / 2] = char(corrupt[bytes.size() / 2] ^ 0x20);
        writeAll(dir.filePath("corrupt.rpcscope"), corrupt);
        QByteArray future = bytes;
        future[8] = 9;
        writeAll(dir.filePath("future.rpcscope"), future);

        struct Case
        {
            QStringList args;
            int code;
            QString message;
        };
        const QString out = dir.filePath("out.json");
        const std::vector<Case> cases{
            {{"convert"}, 2, "convert needs an input and an output file, got 0 files"},
            {{"convert", good}, 2, "got 1 file"},
            {{"convert", good, dir.filePath("x.txt")}, 2, "cannot tell the format of"},
            {{"convert", good, out, "--to", "xml"},
             2,
             "unknown format 'xml' (known: rpcscope, json, chrome, otlp"},
            {{"convert", good, out, "--bogus"}, 2, "unknown option '--bogus'"},
            {{"convert", good, out, "--redact"}, 2, "--redact needs a header name"},
            {{"convert", good, out, "--port", "http"}, 2, "--port needs a TCP port"},
            {{"convert", dir.filePath("missing.rpcscope"), out}, 1, "cannot open"},
            {{"convert", dir.filePath("empty.rpcscope"), out}, 1, "is empty"},
            {{"convert", dir.filePath("doc.json"), out},
             1,
             "is not an rpcscope capture file (it looks like JSON)"},
            {{"convert", dir.filePath("corrupt.rpcscope"), out}, 1, "is corrupt"},
            {{"convert", dir.filePath("future.rpcscope"), out}, 1, "written by a newer rpcscope"},
            {{"convert", good, dir.filePath("no/such/dir/out.json")}, 1, "cannot write"},
            {{"run", "retry-basic", "--out", dir.filePath("x.txt")}, 2, "cannot tell the format"},
            {{"run", "retry-basic", "--to", "json"}, 2, "--to needs --out"},
            {{"capture", "--target", "127.0.0.1:1", "--out", dir.filePath("x.bin")},
             2,
             "cannot tell the format"},
        };
        for (const Case &c : cases) {
            const Result r = cli(c.args);
            QVERIFY2(r.code == c.code,
                     qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
            QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + ": " + r.err));
            if (c.code == 1) QCOMPARE(r.err.count('\n'), 1); // one clear line
        }

        // A truncated file converts what is intact, and says so.
        const Result r = cli({"convert", dir.filePath("cut.rpcscope"), out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("warning:") && r.err.contains("is truncated") &&
                     r.err.contains("loaded the intact"),
                 qPrintable(r.err));
        QVERIFY(QJsonDocument::fromJson(readAll(out)).object()["calls"].isArray());
    }

    void cliCaptureToRpcscope()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        QTemporaryDir dir;
        const QString out = dir.filePath("capture.rpcscope");
        QProcess p;
        p.start(QStringLiteral(RPCSCOPE_CLI),
                {"capture", "--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out});
        QVERIFY(p.waitForStarted());
        QString line;
        QTRY_VERIFY_WITH_TIMEOUT((line += QString::fromUtf8(p.readAllStandardOutput())).contains('\n'),
                                 10000);
        const auto m = QRegularExpression(R"(listening on 127\.0\.0\.1:(\d+))").match(line);
        QVERIFY2(m.hasMatch(), qPrintable(line));
        {
            lab::LabClient client(QStringLiteral("127.0.0.1:%1").arg(m.captured(1)).toStdString(), {});
            for (int i = 0; i < 2; ++i) {
                lab::CallRequest req;
                req.set_call_id("file-" + std::to_string(i));
                QCOMPARE(client.call(req, std::chrono::seconds(5)).code, 0);
            }
        }
        ::kill(pid_t(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
        server.stop();

        CaptureData data;
        const CaptureReadResult r = loadCapture(out, &data);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineStore store;
        replayCapture(data, store);
        QCOMPARE(store.calls().size(), size_t(2));
        QCOMPARE(store.calls()[1].key, std::string("file-1"));
        QVERIFY(data.info.originWallNs > 0);
    }
};

QTEST_GUILESS_MAIN(TestCaptureFiles)
#include "tst_capturefiles.moc"
