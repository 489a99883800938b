// rpcscope-cli: headless capture and lab runs. Links no QtWidgets.

#include "captureio.h"
#include "clidecode.h"
#include "climerge.h"
#include "clock.h"
#include "jsonexport.h"
#include "labsession.h"
#include "modelsink.h"
#include "relay.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QSaveFile>
#include <QTimer>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

using namespace rpcscope;

namespace {

const char kUsage[] =
    "usage:\n"
    "  rpcscope-cli list\n"
    "      List the lab scenarios and their parameters.\n"
    "  rpcscope-cli run NAME [--set KEY=VALUE ...] [--json FILE] [--png FILE] [--svg FILE] [--frames]\n"
    "                   [--out FILE [--to FORMAT]]\n"
    "      Run a lab scenario headless through the capture proxy, with its parameters changed by --set.\n"
    "      Exits 1 if its expected outcome did not hold. --out also writes the capture in any format below.\n"
    "  rpcscope-cli capture [--listen HOST:PORT] --target HOST:PORT --out FILE [--to FORMAT] [--duration SECONDS]\n"
    "                       [--frames] [--allow-remote] [--max-header-list BYTES] [--max-message-keep BYTES]\n"
    "                       [--keep MB] [--progress]\n"
    "      Relay and record until the duration ends or SIGINT/SIGTERM/SIGHUP, then write FILE (FILE.json: the JSON,\n"
    "      FILE.rpcscope: a capture file to reopen or convert later).\n"
    "      --keep bounds the memory of a long capture: the newest calls within MB of timeline are kept\n"
    "      (default 1024; 0 keeps everything), and a warning says how many of the oldest were dropped.\n"
    "      An .rpcscope FILE is written as the capture goes (as FILE.partial until it ends) and gets every\n"
    "      call whatever --keep drops; a kill leaves FILE.partial, which opens as a truncated capture.\n"
    "      Once a second it shows its progress (calls, connections, memory, bytes written) on stderr: on a\n"
    "      terminal as one line rewritten in place, elsewhere only with --progress, as a line each.\n"
    "      --listen defaults to 127.0.0.1:0; port 0 picks a free port, printed as 'listening on HOST:PORT'.\n"
    "      Listening on a non-loopback address needs --allow-remote.\n"
    "      Decoding limits: --max-header-list (default 65536) cuts longer header lists, --max-message-keep\n"
    "      (default 65536) bounds the bytes of each gRPC message kept for inspection.\n"
    "  rpcscope-cli convert IN OUT [--to FORMAT] [--frames] [--no-redact] [--redact NAME ...] [--port PORT]\n"
    "      Convert a capture file to OUT. IN is an .rpcscope file, or a pcap/pcapng of h2c (cleartext HTTP/2)\n"
    "      traffic, whose TCP connections are reassembled and decoded; --port names the HTTP/2 server port\n"
    "      (detected from the client preface otherwise).\n"
    "  rpcscope-cli merge IN1 IN2 ... --out OUT [--to FORMAT] [--offset FILE=OFFSET ...] [--label FILE=NAME ...]\n"
    "                     [--png FILE] [--svg FILE] [--frames] [--no-redact] [--redact NAME ...] [--port PORT]\n"
    "      Merge captures (from agents on several hosts) onto one timeline, aligned by their wall-clock origins,\n"
    "      into OUT. Each file's lanes carry its label (its file name, or --label FILE=NAME). --offset moves one\n"
    "      file's events, e.g. --offset edge.rpcscope=+12.5ms (ns, us, ms, s), to make up for clocks that\n"
    "      disagree. FILE is an input's path, file name or label. A bad argument or unreadable input exits 2.\n"
    "  rpcscope-cli decode IN [--proto FILE ...] [--proto-path DIR ...] [--reflect HOST:PORT ...] [--out FILE]\n"
    "  rpcscope-cli decode --method /PKG.SERVICE/METHOD [--response] --hex HEX [--proto ...] [--reflect ...]\n"
    "      Decode the gRPC messages kept in capture IN (or one message given in hex) to a JSON document on\n"
    "      stdout or in FILE: JSON with the schemas of --proto files (imports found in the --proto-path\n"
    "      directories, as protoc's -I) or fetched by gRPC server reflection from --reflect; raw protobuf fields\n"
    "      and hex without one. A .proto that does not load exits 2 naming FILE:LINE:COLUMN; a --reflect server\n"
    "      that cannot be asked exits 1.\n"
    "  --frames   also write every HTTP/2 frame into the JSON\n"
    "  --to FORMAT  rpcscope, json (rpcscope-json), chrome (Chrome trace event JSON for Perfetto and\n"
    "             chrome://tracing), otlp (OTLP/JSON spans), pcapng (for Wireshark); without it the name of\n"
    "             OUT decides: .rpcscope, .json, .chrome.json or .trace.json, .otlp.json, .pcapng\n"
    "  --redact NAME  also mask this header's values (repeatable); authorization, proxy-authorization, cookie\n"
    "             and set-cookie are always masked in what is written, unless --no-redact\n";

std::atomic<bool> g_stop{false};
void onSignal(int)
{
    g_stop = true;
}

QtMessageHandler g_defaultHandler = nullptr;
// The offscreen platform warns about a missing XDG_RUNTIME_DIR on servers; it does not matter to a CLI.
void quietOffscreen(QtMsgType type, const QMessageLogContext &ctx, const QString &msg)
{
    if (msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")))
        return;
    g_defaultHandler(type, ctx, msg);
}

int usageError(const std::string &message)
{
    std::fprintf(stderr, "rpcscope-cli: %s\n(rpcscope-cli --help shows the usage)\n", message.c_str());
    return 2;
}

// "--flag value" options; flags listed in `bare` take no value. Anything else is an error.
bool parseOptions(const std::vector<std::string> &args, const std::set<std::string> &valued,
                  const std::set<std::string> &bare, std::map<std::string, std::string> *out, std::string *error)
{
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (bare.count(a)) {
            // not = "1": GCC 12 warns a false -Wrestrict on a one-character assignment (bug 105329)
            (*out)[a].assign(1, '1');
        } else if (valued.count(a)) {
            if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
                *error = "option " + a + " needs a value";
                return false;
            }
            if (out->count(a)) {
                *error = "option " + a + " given twice ('" + (*out)[a] + "' and '" + args[i + 1] + "')";
                return false;
            }
            (*out)[a] = args[++i];
        } else {
            *error = "unknown option '" + a + "'";
            return false;
        }
    }
    return true;
}

bool writeFile(const QString &name, const QByteArray &bytes, std::string *error)
{
    QSaveFile f(name); // atomic: a temporary file renamed over the target
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
        *error = "cannot write " + name.toStdString() + ": " + f.errorString().toStdString();
        return false;
    }
    return true;
}

// Every file named by --json, --out, --png or --svg can be written: checked before any work is done, so that a
// long capture is never made only to be lost at the end.
bool outputsWritable(const std::map<std::string, std::string> &opts, std::string *error)
{
    for (const char *flag : {"--json", "--out", "--png", "--svg"}) {
        auto it = opts.find(flag);
        if (it == opts.end())
            continue;
        if (it->second.empty()) {
            *error = std::string(flag) + " needs a file name, got an empty one";
            return false;
        }
        const QFileInfo file(QString::fromStdString(it->second));
        if (file.exists() && !file.isDir() && !file.isFile()) { // a device, a FIFO, a socket (links followed)
            *error = "cannot write " + it->second + ": it is not a regular file";
            return false;
        }
        if (file.isDir()) {
            *error = "cannot write " + it->second + ": it is a directory";
            return false;
        }
        if (!file.absoluteDir().exists()) {
            *error = "cannot write " + it->second + ": there is no directory " +
                     QDir::toNativeSeparators(file.absolutePath()).toStdString();
            return false;
        }
        QSaveFile probe(file.absoluteFilePath()); // a temporary file beside the target, removed again
        if (!probe.open(QIODevice::WriteOnly)) {
            *error = "cannot write " + it->second + ": " + probe.errorString().toStdString();
            return false;
        }
        probe.cancelWriting();
    }
    return true;
}

// --to, or else the name of --out; empty error when it is known.
FileFormat outputFormat(const std::map<std::string, std::string> &opts, std::string *error)
{
    if (auto to = opts.find("--to"); to != opts.end()) {
        const FileFormat f = formatFromName(to->second);
        if (f == FileFormat::Unknown)
            *error = "unknown format '" + to->second + "' (known: " + formatNames() + ")";
        return f;
    }
    auto out = opts.find("--out");
    if (out == opts.end())
        return FileFormat::Unknown;
    const FileFormat f = formatFromPath(QString::fromStdString(out->second));
    if (f == FileFormat::Unknown)
        *error = "cannot tell the format of '" + out->second + "' from its name; add --to FORMAT (" + formatNames() +
                 ")";
    return f;
}

// "--redact NAME" may repeat: taken out of args before the other options are parsed.
Redaction takeRedaction(std::vector<std::string> *args, std::string *error)
{
    Redaction r;
    std::vector<std::string> rest;
    for (size_t i = 0; i < args->size(); ++i) {
        const std::string &a = (*args)[i];
        if (a == "--redact") {
            if (i + 1 >= args->size() || (*args)[i + 1].rfind("--", 0) == 0 || (*args)[i + 1].empty()) {
                *error = "option --redact needs a header name";
                return r;
            }
            r.extraNames.push_back((*args)[++i]);
        } else if (a == "--no-redact") {
            r.enabled = false;
        } else {
            rest.push_back(a);
        }
    }
    *args = std::move(rest);
    return r;
}

bool writeOutputs(const TimelineModel &model, const std::map<std::string, std::string> &opts, const QString &title,
                  const Redaction &redaction, std::string *error)
{
    if (auto it = opts.find("--json"); it != opts.end())
        if (!writeFile(QString::fromStdString(it->second), timelineToJsonBytes(model.store(), opts.count("--frames")),
                       error))
            return false;
    if (auto it = opts.find("--out"); it != opts.end()) {
        const FileFormat format = outputFormat(opts, error);
        ExportOptions options;
        options.redaction = redaction;
        options.withFrames = opts.count("--frames");
        if (!exportSession(model.store(), model.eventLog(), format, QString::fromStdString(it->second), options,
                           error, "rpcscope-cli"))
            return false;
    }
    // Pictures nest chains (calls made while serving another under it) whenever the capture has any.
    TimelinePainter::Options picture{title, true};
    for (const Call &c : model.store().calls())
        if (c.parentCall)
            picture.grouping = LaneGrouping::Chain;
    if (auto it = opts.find("--png"); it != opts.end()) {
        const QImage image = TimelinePainter::renderImage(model.store(), 1400, picture);
        if (!image.save(QString::fromStdString(it->second), "PNG")) {
            *error = "cannot write " + it->second;
            return false;
        }
    }
    if (auto it = opts.find("--svg"); it != opts.end())
        if (!TimelinePainter::renderSvg(model.store(), 1400, picture, QString::fromStdString(it->second))) {
            *error = "cannot write " + it->second;
            return false;
        }
    return true;
}

int cmdList()
{
    int width = 0;
    for (const lab::Scenario &s : lab::allScenarios())
        width = std::max(width, int(s.name.size()));
    for (const lab::Scenario &s : lab::allScenarios()) {
        std::printf("%-*s  %s\n", width, s.name.c_str(), s.title.c_str());
        for (const lab::ScenarioParam &p : s.params)
            std::printf("%-*s    --set %s=%s  %s\n", width, "", p.key.c_str(), p.defaultValue.c_str(),
                        p.description.c_str());
    }
    return 0;
}

int cmdRun(const std::vector<std::string> &args)
{
    if (args.empty() || args[0].rfind("--", 0) == 0)
        return usageError("run needs a scenario name (rpcscope-cli list shows them)");
    const lab::Scenario *scenario = lab::findScenario(args[0]);
    if (!scenario)
        return usageError("unknown scenario '" + args[0] + "' (rpcscope-cli list shows them)");
    std::map<std::string, std::string> opts;
    std::string error;
    // --set may repeat, so it is taken out before the other options are parsed.
    std::map<std::string, std::string> overrides;
    std::vector<std::string> rest;
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] != "--set") {
            rest.push_back(args[i]);
            continue;
        }
        const std::string kv = i + 1 < args.size() ? args[++i] : std::string();
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            return usageError("--set needs KEY=VALUE, got '" + kv + "'");
        overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    const Redaction redaction = takeRedaction(&rest, &error);
    if (!error.empty())
        return usageError(error);
    if (!parseOptions(rest, {"--json", "--png", "--svg", "--out", "--to"}, {"--frames"}, &opts, &error))
        return usageError(error);
    if (opts.count("--to") && !opts.count("--out"))
        return usageError("--to needs --out");
    if (outputFormat(opts, &error), !error.empty())
        return usageError(error);
    lab::ScenarioParams params;
    if (!scenario->resolveParams(overrides, &params, &error))
        return usageError(error);
    if (!outputsWritable(opts, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 2;
    }

    TimelineModel model;
    model.setOrigin(steadyNowNs(), wallNowNs());
    lab::LabSession lab;
    if (!lab.start(queuedSinkTo(&model), &error)) {
        std::fprintf(stderr, "rpcscope-cli: could not start the lab: %s\n", error.c_str());
        return 1;
    }
    const lab::ScenarioResult result = lab.run(*scenario, params);
    lab.stop(); // flushes every decoded event into the model's queue
    QCoreApplication::sendPostedEvents();

    if (!writeOutputs(model, opts, QStringLiteral("rpcscope — %1").arg(QString::fromStdString(scenario->name)),
                      redaction, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    std::printf("%s: %s\n", scenario->name.c_str(), result.summary.c_str());
    if (!result.expectationHeld) {
        std::fprintf(stderr, "rpcscope-cli: %s: expected outcome did not hold: %s\n", scenario->name.c_str(),
                     result.summary.c_str());
        return 1;
    }
    return 0;
}

// What `capture` keeps in memory unless --keep says otherwise: the newest calls within this many MB of timeline.
constexpr size_t kDefaultCaptureKeepMb = 1024;

// The capture's one-line result on stdout, and on stderr every connection that went wrong on the wire (not
// HTTP/2, undecodable, or a peer that broke a rule), so a look at the terminal says what the file holds.
void reportCaptured(const TimelineStore &store, size_t calls, const std::string &out)
{
    const size_t conns = store.connections().size();
    std::printf("captured %zu %s on %zu %s into %s\n", calls, calls == 1 ? "call" : "calls", conns,
                conns == 1 ? "connection" : "connections", out.c_str());
    constexpr int kShown = 5;
    int wrong = 0;
    for (const Connection &c : store.connections()) {
        const std::string *broken = c.protocolError();
        if (c.decodeError.empty() && !broken)
            continue;
        if (++wrong <= kShown)
            std::fprintf(stderr, "rpcscope-cli: connection %u (%s -> %s): %s\n", c.id, c.client.c_str(),
                         c.server.c_str(), c.decodeError.empty() ? broken->c_str()
                                                                  : ("not decoded: " + c.decodeError).c_str());
    }
    if (wrong > kShown)
        std::fprintf(stderr, "rpcscope-cli: ... and %d more connections like these (see the file)\n", wrong - kShown);
}

int cmdCapture(std::vector<std::string> args)
{
    std::map<std::string, std::string> opts;
    std::string error;
    const Redaction redaction = takeRedaction(&args, &error);
    if (!error.empty())
        return usageError(error);
    if (!parseOptions(args,
                      {"--listen", "--target", "--out", "--to", "--duration", "--max-header-list", "--max-message-keep",
                       "--keep"},
                      {"--frames", "--allow-remote", "--progress"}, &opts, &error))
        return usageError(error);
    DecoderLimits limits;
    for (auto [flag, field] : {std::pair{"--max-header-list", &limits.maxHeaderListBytes},
                               std::pair{"--max-message-keep", &limits.maxMessageKeepBytes}}) {
        if (!opts.count(flag))
            continue;
        bool ok = false;
        const qulonglong v = QString::fromStdString(opts[flag]).toULongLong(&ok);
        if (!ok || v > (1u << 30))
            return usageError(std::string(flag) + " needs a byte count up to 1073741824, got '" + opts[flag] + "'");
        *field = size_t(v);
    }
    for (const char *required : {"--target", "--out"})
        if (!opts.count(required))
            return usageError(std::string("capture needs ") + required);
    if (outputFormat(opts, &error), !error.empty())
        return usageError(error);
    HostPort listen, target;
    if (!parseHostPort(opts.count("--listen") ? opts["--listen"] : "127.0.0.1:0", &listen, &error) ||
        !parseHostPort(opts["--target"], &target, &error))
        return usageError(error);
    if (!isLoopbackHost(listen.host)) {
        // An address this machine cannot listen on (unresolvable, not its own, in use) is said as such first.
        if (!canListen(listen, &error)) {
            std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
            return 1;
        }
        // The proxy forwards anything to the target and records it: on a reachable address that is an open relay.
        if (!opts.count("--allow-remote"))
            return usageError("listening on " + listen.toString() +
                              " would expose the proxy beyond this machine; pass --allow-remote to do it anyway");
        std::fprintf(stderr, "rpcscope-cli: warning: listening on %s, reachable from other machines\n",
                     listen.toString().c_str());
    }
    if (target.port == 0)
        return usageError("target port must not be 0");
    double duration = 0;
    if (opts.count("--duration")) {
        bool ok = false;
        duration = QString::fromStdString(opts["--duration"]).toDouble(&ok);
        if (!ok || !std::isfinite(duration) || duration <= 0)
            return usageError("--duration needs a positive number of seconds, got '" + opts["--duration"] + "'");
        if (duration > 366 * 86400.0) // beyond that the end time overflows; without --duration it runs until a signal
            return usageError("--duration is at most 31622400 seconds (a year); leave it out to capture until "
                              "SIGINT, SIGTERM or SIGHUP, got '" + opts["--duration"] + "'");
    }
    // Memory: like the GUI, a long capture keeps the newest calls within a budget (0: keep everything).
    size_t keepMb = kDefaultCaptureKeepMb;
    if (opts.count("--keep")) {
        bool ok = false;
        const qulonglong v = QString::fromStdString(opts["--keep"]).toULongLong(&ok);
        if (!ok || v > (1u << 20))
            return usageError("--keep needs a number of megabytes (0 keeps everything), got '" + opts["--keep"] + "'");
        keepMb = size_t(v);
    }
    if (!outputsWritable(opts, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 2;
    }
    if (!probeTarget(target, 2000, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }

    TimelineModel model;
    model.setOrigin(steadyNowNs(), wallNowNs());
    if (keepMb) {
        RetentionPolicy keep;
        keep.maxBytes = keepMb << 20;
        model.setRetention(keep);
    }
    // An .rpcscope output is written as the capture goes: it gets every call whatever --keep drops from
    // memory, and a kill or a crash leaves a readable .partial file with everything up to then.
    const QString out = QString::fromStdString(opts["--out"]);
    std::unique_ptr<CaptureFileStream> stream;
    if (outputFormat(opts, &error) == FileFormat::Rpcscope) {
        stream = std::make_unique<CaptureFileStream>();
        CaptureInfo info = captureInfoOf(model.store());
        info.writer = "rpcscope-cli";
        if (!stream->open(out, info, redaction, &error)) {
            std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
            return 2;
        }
    }
    bool toldFailure = false;
    auto toFile = [s = stream.get(), told = &toldFailure](const EventBatch &batch) {
        if (!s->append(batch) && !*told) {
            *told = true;
            std::fprintf(stderr, "rpcscope-cli: warning: %s; the capture goes on in memory\n", s->error().c_str());
        }
    };
    Relay relay;
    relay.setDecoderLimits(limits);
    if (!relay.start(listen, target, stream ? queuedSinkTo(&model, toFile) : queuedSinkTo(&model), &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    // Before it says where it listens: whoever starts it may stop it as soon as it has read that line.
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal); // its terminal closed: finish the output all the same
    std::signal(SIGXFSZ, SIG_IGN); // past a file-size limit a write fails and says so, rather than killing the capture
    std::printf("listening on %s\n", relay.listenAddress().toString().c_str());
    if (stream)
        std::printf("writing %s as the capture goes; it becomes %s when the capture ends\n",
                    qPrintable(QDir::toNativeSeparators(stream->partialPath())), qPrintable(QDir::toNativeSeparators(out)));
    std::fflush(stdout);

    const std::int64_t startedAt = steadyNowNs();
    const std::int64_t endAt = duration > 0 ? startedAt + std::int64_t(duration * 1e9) : 0;
    // Progress, once a second: on a terminal one line rewritten in place; with --progress elsewhere, a line each.
    const bool terminal = isatty(STDERR_FILENO);
    const bool progress = terminal || opts.count("--progress");
    std::int64_t nextProgress = startedAt + 1'000'000'000;
    bool progressShown = false;
    auto mb = [](double bytes) {
        return bytes < (1 << 20) ? QString::number(std::ceil(bytes / 1024)) + QStringLiteral(" KB")
                                 : QString::number(bytes / (1 << 20), 'f', 1) + QStringLiteral(" MB");
    };
    QTimer poll;
    QObject::connect(&poll, &QTimer::timeout, [&] {
        const std::int64_t now = steadyNowNs();
        if (g_stop || (endAt && now >= endAt)) {
            QCoreApplication::quit();
            return;
        }
        if (!progress || now < nextProgress)
            return;
        nextProgress = now + 1'000'000'000;
        const size_t seen = model.store().calls().size() + model.store().evictedCalls();
        QString line = QStringLiteral("capturing %1 s: %2 %3 on %4 %5, %6 in memory")
                           .arg((now - startedAt) / 1'000'000'000)
                           .arg(seen)
                           .arg(seen == 1 ? "call" : "calls")
                           .arg(model.store().connections().size())
                           .arg(model.store().connections().size() == 1 ? "connection" : "connections")
                           .arg(mb(double(model.memoryBytes())));
        if (stream)
            line += stream->failed() ? QStringLiteral(", file stopped")
                                     : QStringLiteral(", %1 written").arg(mb(double(stream->bytesWritten())));
        if (terminal)
            std::fprintf(stderr, "\r%s\033[K", qPrintable(line)); // rewritten in place; \033[K clears the rest
        else
            std::fprintf(stderr, "%s\n", qPrintable(line));
        progressShown = true;
    });
    poll.start(20);
    QCoreApplication::exec();

    if (progressShown && terminal)
        std::fputc('\n', stderr); // the messages below start on a line of their own
    relay.stop();
    QCoreApplication::sendPostedEvents();
    // Calls seen, including those --keep dropped from memory.
    const size_t calls = model.store().calls().size() + model.store().evictedCalls();
    // If the output went away during the capture (its directory removed, the disk full...), the capture is not
    // lost: it goes to the temporary directory as a capture file to convert later.
    const QString rescue = QDir(QDir::tempPath())
                               .filePath(QStringLiteral("rpcscope-capture-%1.rpcscope")
                                             .arg(QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss-zzz")));
    auto rescued = [&](bool saved, const std::string &why, size_t n, const std::string &rescueError) {
        if (saved)
            std::fprintf(stderr, "rpcscope-cli: %s; the capture (%zu %s) was saved to %s instead\n", why.c_str(), n,
                         n == 1 ? "call" : "calls", qPrintable(QDir::toNativeSeparators(rescue)));
        else
            std::fprintf(stderr, "rpcscope-cli: %s; saving it to %s failed too: %s\n", why.c_str(),
                         qPrintable(QDir::toNativeSeparators(rescue)), rescueError.c_str());
        return 1;
    };
    if (stream && !stream->failed()) {
        if (!stream->finish(&error)) {
            std::string rescueError;
            return rescued(stream->copyTo(rescue, &rescueError), error, calls, rescueError);
        }
        reportCaptured(model.store(), calls, opts["--out"]);
        return 0;
    }
    if (stream) // writing failed part way: what was written stays, and what memory kept is saved below
        std::fprintf(stderr, "rpcscope-cli: the capture written up to the failure stays in %s\n",
                     qPrintable(QDir::toNativeSeparators(stream->partialPath())));
    if (!writeOutputs(model, opts, {}, redaction, &error)) {
        std::string rescueError;
        ExportOptions options;
        options.redaction = redaction;
        options.withFrames = true;
        const bool saved = exportSession(model.store(), model.eventLog(), FileFormat::Rpcscope, rescue, options,
                                         &rescueError, "rpcscope-cli");
        return rescued(saved, error, model.store().calls().size(), rescueError);
    }
    reportCaptured(model.store(), model.store().calls().size(), opts["--out"]);
    if (const size_t evicted = model.store().evictedCalls())
        std::fprintf(stderr,
                     "rpcscope-cli: warning: the %zu oldest calls were dropped to keep the capture within %zu MB; "
                     "--keep 0 keeps everything\n",
                     evicted, keepMb);
    return 0;
}

int cmdConvert(std::vector<std::string> args)
{
    std::string error;
    const Redaction redaction = takeRedaction(&args, &error);
    if (!error.empty())
        return usageError(error);
    std::vector<std::string> files, rest;
    for (size_t i = 0; i < args.size(); ++i) {
        if ((args[i] == "--to" || args[i] == "--port") && i + 1 < args.size()) {
            rest.push_back(args[i]);
            rest.push_back(args[++i]);
        } else if (args[i].rfind("--", 0) == 0 || args[i].empty()) {
            rest.push_back(args[i]);
        } else {
            files.push_back(args[i]);
        }
    }
    if (files.size() != 2)
        return usageError("convert needs an input and an output file, got " + std::to_string(files.size()) +
                          (files.size() == 1 ? " file" : " files"));
    std::map<std::string, std::string> opts;
    if (!parseOptions(rest, {"--to", "--port"}, {"--frames"}, &opts, &error))
        return usageError(error);
    LoadOptions load;
    if (opts.count("--port")) {
        bool ok = false;
        const uint port = QString::fromStdString(opts["--port"]).toUInt(&ok);
        if (!ok || port == 0 || port > 65535)
            return usageError("--port needs a TCP port (1-65535), got '" + opts["--port"] + "'");
        load.serverPort = std::uint16_t(port);
    }
    opts["--out"] = files[1];
    const FileFormat format = outputFormat(opts, &error);
    if (!error.empty())
        return usageError(error);

    CaptureData data;
    const CaptureReadResult read = loadCapture(QString::fromStdString(files[0]), &data, {}, load);
    if (!read.usable()) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", read.message.c_str());
        return 1;
    }
    if (read.status == CaptureReadResult::Truncated)
        std::fprintf(stderr, "rpcscope-cli: warning: %s\n", read.message.c_str());
    for (const std::string &note : read.notes)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
    ExportOptions options;
    options.redaction = redaction;
    options.withFrames = opts.count("--frames");
    if (!exportCapture(data, format, QString::fromStdString(files[1]), options, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    std::printf("converted %s (%zu events) to %s (%s)\n", files[0].c_str(), data.eventCount(), files[1].c_str(),
                formatName(format));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    // Headless by construction: the painter needs a QGuiApplication for fonts, never a display.
    qputenv("QT_QPA_PLATFORM", "offscreen");
    g_defaultHandler = qInstallMessageHandler(quietOffscreen);
    QGuiApplication app(argc, argv);
    const std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "list")
        return args.empty() ? cmdList() : usageError("list takes no options");
    if (cmd == "run")
        return cmdRun(args);
    if (cmd == "capture")
        return cmdCapture(args);
    if (cmd == "convert")
        return cmdConvert(args);
    if (cmd == "merge")
        return cmdMerge(args);
    if (cmd == "decode")
        return cmdDecode(args);
    return usageError("unknown command '" + cmd + "'");
}
