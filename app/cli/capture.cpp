// rpcscope-cli capture: relay and record until the duration ends or a signal, then write the output.

#include "capturefile.h"
#include "capturesession.h"
#include "clock.h"
#include "commands.h"
#include "faultoptions.h"
#include "modelfeed.h"
#include "options.h"
#include "output.h"
#include "residentmemory.h"
#include "threadpriority.h"
#include "timelinemodel.h"
#include "tlsoptions.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <malloc.h>
#include <optional>
#include <unistd.h>

namespace rpcscope {

namespace {

std::atomic<bool> g_stop{false};
void onSignal(int)
{
    g_stop = true;
    // What is left (the model's last batches, the file's end) is done by threads that may be on the idle
    // policy; on a machine kept busy by other work they would finish only seconds later.
    stopUsingIdlePolicy();
}

// What `capture` keeps in memory unless --keep says otherwise: the newest calls within this many MB of
// timeline.
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
        const ProtocolViolation *broken = c.protocolError();
        if (c.decodeError.empty() && !broken) continue;
        if (++wrong <= kShown)
            std::fprintf(
                stderr, "rpcscope-cli: connection %u (%s -> %s): %s\n", c.id, c.client.c_str(),
                c.server.c_str(),
                (c.decodeError.empty() ? describe(*broken) : "not decoded: " + c.decodeError).c_str());
    }
    if (wrong > kShown)
        std::fprintf(stderr, "rpcscope-cli: ... and %d more connections like these (see the file)\n",
                     wrong - kShown);
}

// Once, at the end: the statistics folded the calls of methods (hops) past their row limit into one row.
void reportFoldedStats(const CallStats &stats)
{
    auto say = [&stats](std::uint64_t calls, const char *what, const char *row) {
        if (calls)
            std::fprintf(
                stderr,
                "rpcscope-cli: warning: more than %zu distinct %s: the %llu calls of those seen after "
                "the first %zu count in one statistics row, \"%s\"\n",
                stats.maxKeyedRows(), what, static_cast<unsigned long long>(calls), stats.maxKeyedRows(),
                row);
    };
    say(stats.foldedMethodCalls(), "methods", CallStats::kOtherMethods);
    say(stats.foldedHopCalls(), "hops", CallStats::kOtherHops);
}

// `--proxy [ADDR]`: its address is optional, so it is taken out before the other options are parsed.
std::optional<std::string> takeProxyOption(std::vector<std::string> *args, std::string *error)
{
    std::optional<std::string> proxy;
    std::vector<std::string> rest;
    for (size_t i = 0; i < args->size(); ++i) {
        const std::string &a = (*args)[i];
        if (a != "--proxy") {
            rest.push_back(a);
            continue;
        }
        if (proxy) {
            *error = "option --proxy given twice";
            return {};
        }
        const bool valued = i + 1 < args->size() && (*args)[i + 1].rfind("--", 0) != 0;
        proxy = valued ? (*args)[++i] : std::string("127.0.0.1:0");
    }
    *args = std::move(rest);
    return proxy;
}

HopSpec proxyHop(const std::string &listen)
{
    HopSpec h;
    h.listen = QString::fromStdString(listen);
    h.proxy = true;
    return h;
}

} // namespace

int cmdCapture(std::vector<std::string> args)
{
    std::map<std::string, std::string> opts;
    std::string error;
    const Redaction redaction = takeRedaction(&args, &error);
    if (!error.empty()) return usageError(error);
    const std::shared_ptr<FaultSet> faults = takeFaults(&args, &error);
    if (!error.empty()) { // one line: the rule and what is wrong with it
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 2;
    }
    const std::optional<std::string> proxyListen = takeProxyOption(&args, &error);
    if (!error.empty()) return usageError(error);
    if (!parseOptions(args,
                      {"--listen", "--target", "--out", "--to", "--duration", "--max-header-list",
                       "--max-message-keep", "--keep", "--target-ca", "--target-cert", "--target-key",
                       "--keylog"},
                      {"--frames", "--allow-remote", "--progress", "--tls-intercept", "--target-insecure"},
                      &opts, &error))
        return usageError(error);
    TlsInterceptOptions tls;
    if (!tlsInterceptOptions(opts, &tls, &error)) return usageError(error);
    DecoderLimits limits;
    for (auto [flag, field] : {std::pair{"--max-header-list", &limits.maxHeaderListBytes},
                               std::pair{"--max-message-keep", &limits.maxMessageKeepBytes}}) {
        if (!opts.count(flag)) continue;
        bool ok = false;
        const qulonglong v = QString::fromStdString(opts[flag]).toULongLong(&ok);
        if (!ok || v > (1u << 30))
            return usageError(std::string(flag) + " needs a byte count up to 1073741824, got '" + opts[flag] +
                              "'");
        *field = size_t(v);
    }
    if (!opts.count("--target") && !proxyListen)
        return usageError(
            "capture needs --target HOST:PORT, or --proxy to serve clients that read grpc_proxy");
    if (!opts.count("--out")) return usageError("capture needs --out");
    if (opts.count("--listen") && !opts.count("--target"))
        return usageError(
            "--listen is where the hop to --target listens; the proxy's address goes after --proxy");
    if (proxyListen) {
        HostPort at;
        if (!parseHostPort(*proxyListen, &at, &error)) return usageError("--proxy: " + error);
        if (!isLoopbackHost(at.host)) {
            if (!canListen(at, &error)) {
                std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
                return 1;
            }
            // Worse than an open relay: an open proxy to anywhere.
            if (!opts.count("--allow-remote"))
                return usageError("a proxy on " + at.toString() +
                                  " would let other machines reach anything this one can; pass "
                                  "--allow-remote to do it anyway");
            std::fprintf(stderr,
                         "rpcscope-cli: warning: proxy listening on %s, reachable from other machines\n",
                         at.toString().c_str());
        }
    }
    const bool direct = opts.count("--target");
    if (outputFormat(opts, &error), !error.empty()) return usageError(error);
    HostPort listen, target;
    if (direct &&
        (!parseHostPort(opts.count("--listen") ? opts["--listen"] : "127.0.0.1:0", &listen, &error) ||
         !parseHostPort(opts["--target"], &target, &error)))
        return usageError(error);
    if (direct && !isLoopbackHost(listen.host)) {
        // An address this machine cannot listen on (unresolvable, not its own, in use) is said as such first.
        if (!canListen(listen, &error)) {
            std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
            return 1;
        }
        // The proxy forwards anything to the target and records it: on a reachable address that is an open
        // relay.
        if (!opts.count("--allow-remote"))
            return usageError(
                "listening on " + listen.toString() +
                " would expose the proxy beyond this machine; pass --allow-remote to do it anyway");
        std::fprintf(stderr, "rpcscope-cli: warning: listening on %s, reachable from other machines\n",
                     listen.toString().c_str());
    }
    if (direct && target.port == 0) return usageError("target port must not be 0");
    double duration = 0;
    if (opts.count("--duration")) {
        bool ok = false;
        duration = QString::fromStdString(opts["--duration"]).toDouble(&ok);
        if (!ok || !std::isfinite(duration) || duration <= 0)
            return usageError("--duration needs a positive number of seconds, got '" + opts["--duration"] +
                              "'");
        // Beyond that the end time overflows; without --duration it runs until a signal.
        if (duration > 366 * 86400.0)
            return usageError(
                "--duration is at most 31622400 seconds (a year); leave it out to capture until "
                "SIGINT, SIGTERM or SIGHUP, got '" +
                opts["--duration"] + "'");
    }
    // Memory: like the GUI, a long capture keeps the newest calls within a budget (0: keep everything).
    size_t keepMb = kDefaultCaptureKeepMb;
    if (opts.count("--keep")) {
        bool ok = false;
        const qulonglong v = QString::fromStdString(opts["--keep"]).toULongLong(&ok);
        if (!ok || v > (1u << 20))
            return usageError("--keep needs a number of megabytes (0 keeps everything), got '" +
                              opts["--keep"] + "'");
        keepMb = size_t(v);
    }
    if (!outputsWritable(opts, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 2;
    }
    if (direct && !probeTarget(target, 2000, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }

    // Blocks of 4 MiB and more (the model's merged appends, a big decoded batch) get pages of their own,
    // given back when freed. Left to itself glibc raises that threshold to the largest block freed so far,
    // after which those batches come from the arenas and leave them fragmented at the flood's high-water
    // mark.
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    // Fixing that threshold also fixes the trim threshold at its 128 KiB default: each batch a decoder thread
    // hands over (its events, their encoding for the file) is freed, the arena's top given back to the
    // system, and the next batch faults the same pages in again. That was 39% of the decoder thread's time
    // under sequential unary calls, about 20 us a call. Up to 4 MiB free at an arena's top stays mapped
    // (malloc_trim below still gives back what evictions free).
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
    TimelineModel model;
    if (keepMb) {
        RetentionPolicy keep;
        keep.maxBytes = keepMb << 20;
        model.setRetention(keep);
    }
    // The GUI's capture session, with one unnamed hop and no ingestion endpoint.
    CaptureSession session(&model);
    session.setDecoderLimits(limits);
    session.setIngestEnabled(false);
    session.setFaults(faults);
    // `capture` runs one unnamed hop, and the proxy's hops are named after their targets: a rule for another
    // name would silently never act.
    for (size_t i = 0; faults && !proxyListen && i < faults->size(); ++i)
        if (!faults->rule(i).hop.empty())
            std::fprintf(stderr,
                         "rpcscope-cli: warning: fault rule %zu names the hop '%s', but capture has one "
                         "unnamed hop: it never applies\n",
                         i + 1, faults->rule(i).hop.c_str());
    // An .rpcscope output is written as the capture goes: it gets every call whatever --keep drops from
    // memory, and a kill or a crash leaves a readable .partial file with everything up to then.
    const QString out = QString::fromStdString(opts["--out"]);
    const bool recording = outputFormat(opts, &error) == FileFormat::Rpcscope;
    if (recording) {
        session.setRecordTo(out, redaction, "rpcscope-cli");
        // The file gets every message's kept bytes as the capture goes, so the timeline in memory keeps none:
        // a second copy of them (64 KiB of a large message) only grew the memory and the budget's count, and
        // touching that much new memory cost a stream of large messages more CPU than decoding it. Should the
        // file stop, the messages from then on keep their bytes again (tellFailure), for the capture saved
        // from memory.
        model.setEventPayloadBudget(0);
    }
    std::vector<HopSpec> hops;
    if (direct)
        hops.push_back({QString(),
                        QString::fromStdString(opts.count("--listen") ? opts["--listen"] : "127.0.0.1:0"),
                        QString::fromStdString(opts["--target"]), false, tls});
    if (proxyListen) {
        // --tls-intercept applies to the proxy's tunnels too: those that start TLS are intercepted.
        hops.push_back(proxyHop(*proxyListen));
        hops.back().tls = tls;
    }
    QString startError;
    CaptureStartError failure;
    if (!session.start(hops, opts.count("--allow-remote"), &startError, &failure)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", qPrintable(failure.reason));
        return failure.stage == CaptureStartError::Recording ? 2 : 1;
    }
    // What the process comes to hold beyond what the model counts (the allocator's free memory after a churn
    // of records, say) counts against --keep too, above the process as it stands now, before any traffic.
    if (keepMb) countResidentMemory(&model, residentBytes());
    // This thread applies the decoded batches to the model and prints progress: like the decoder's, that work
    // waits behind the relay's threads, which session.start() has started at the process's priority (and
    // which start whatever relays they need themselves: a CONNECT target's, an intercepted connection's).
    lowerThisThreadsPriority();
    // Writing happens on the relay's thread; the warning is said here, as soon as the poll below sees it.
    bool toldFailure = false;
    auto tellFailure = [&toldFailure, &model](const QString &why) {
        if (!why.isEmpty() && !toldFailure) {
            toldFailure = true;
            model.setEventPayloadBudget(EventLog::kDefaultPayloadBudget);
            std::fprintf(stderr, "rpcscope-cli: warning: %s; the capture goes on in memory\n",
                         qPrintable(why));
        }
    };
    // Before it says where it listens: whoever starts it may stop it as soon as it has read that line.
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal); // its terminal closed: finish the output all the same
    // Past a file-size limit a write fails and says so, rather than killing the capture.
    std::signal(SIGXFSZ, SIG_IGN);
    for (const CaptureSession::RunningHop &h : session.hops())
        if (h.proxy)
            std::printf("proxy listening on %s (clients: grpc_proxy=http://%s)\n", qPrintable(h.listen),
                        qPrintable(h.listen));
        else
            std::printf("listening on %s\n", qPrintable(h.listen));
    if (recording)
        std::printf("writing %s as the capture goes; it becomes %s when the capture ends\n",
                    qPrintable(QDir::toNativeSeparators(session.recordingPartialPath())),
                    qPrintable(QDir::toNativeSeparators(out)));
    std::fflush(stdout);

    const std::int64_t startedAt = steadyNowNs();
    const std::int64_t endAt = duration > 0 ? startedAt + std::int64_t(duration * 1e9) : 0;
    // Progress, once a second: on a terminal one line rewritten in place; with --progress elsewhere, a line
    // each.
    const bool terminal = isatty(STDERR_FILENO);
    const bool progress = terminal || opts.count("--progress");
    std::int64_t nextProgress = startedAt + 1'000'000'000;
    bool progressShown = false;
    auto mb = [](double bytes) {
        return bytes < (1 << 20) ? QString::number(std::ceil(bytes / 1024)) + QStringLiteral(" KB")
                                 : QString::number(bytes / (1 << 20), 'f', 1) + QStringLiteral(" MB");
    };
    // Retention frees what it evicts, but glibc keeps freed memory in its arenas (one per thread that
    // allocated it) instead of giving it back, so the process would grow to its high-water mark and stay
    // there: RSS would no longer follow what the capture holds and --keep reports. After a cut, give the
    // free pages back, at most every kTrimIntervalNs (a trim walks the arenas' free lists: a few ms).
    constexpr std::int64_t kTrimIntervalNs = 100'000'000;
    bool evictedSinceTrim = false;
    std::int64_t nextTrim = 0;
    QObject::connect(&model, &TimelineModel::callsEvicted, [&] { evictedSinceTrim = true; });
    // The figure a progress line reports is the most the capture held since the line before, looked at every
    // kHeldSampleNs: what it holds swings within a second (the feed's queue fills while the model applies a
    // batch, a batch is encoded for the file), and RSS keeps the peak of those swings, not the moment a line
    // happens to be printed at. Each look is O(calls / 64), so not at every poll.
    constexpr std::int64_t kHeldSampleNs = 100'000'000;
    size_t heldSinceLine = 0;
    std::int64_t nextHeldSample = 0;
    QTimer poll;
    QObject::connect(&poll, &QTimer::timeout, [&] {
        const std::int64_t now = steadyNowNs();
        if (progress && now >= nextHeldSample) {
            nextHeldSample = now + kHeldSampleNs;
            heldSinceLine = std::max(heldSinceLine, model.memoryBytes());
        }
        if (evictedSinceTrim && now >= nextTrim) {
            evictedSinceTrim = false;
            nextTrim = now + kTrimIntervalNs;
            malloc_trim(0);
        }
        if (g_stop || (endAt && now >= endAt)) {
            stopUsingIdlePolicy();
            QCoreApplication::quit();
            return;
        }
        const QString fileError = recording ? session.recordingError() : QString();
        tellFailure(fileError);
        if (!progress || now < nextProgress) return;
        nextProgress = now + 1'000'000'000;
        const size_t held = std::max(heldSinceLine, model.memoryBytes());
        heldSinceLine = 0;
        const size_t seen = model.store().calls().size() + model.store().evictedCalls();
        QString line = QStringLiteral("capturing %1 s: %2 %3 on %4 %5, %6 in memory")
                           .arg((now - startedAt) / 1'000'000'000)
                           .arg(seen)
                           .arg(seen == 1 ? "call" : "calls")
                           .arg(model.store().connections().size())
                           .arg(model.store().connections().size() == 1 ? "connection" : "connections")
                           .arg(mb(double(held)));
        if (recording)
            line += !fileError.isEmpty()
                        ? QStringLiteral(", file stopped")
                        : QStringLiteral(", %1 written").arg(mb(double(session.recordingBytesWritten())));
        if (terminal) // rewritten in place; \033[K clears the rest
            std::fprintf(stderr, "\r%s\033[K", qPrintable(line));
        else
            std::fprintf(stderr, "%s\n", qPrintable(line));
        progressShown = true;
    });
    poll.start(20);
    QCoreApplication::exec();

    if (progressShown && terminal)
        std::fputc('\n', stderr); // the messages below start on a line of their own
    const std::unique_ptr<CaptureFileStream> stream = session.stopAndTakeRecording();
    if (faults) reportFaultHits(*faults);
    if (stream) tellFailure(QString::fromStdString(stream->error()));
    QCoreApplication::sendPostedEvents();
    ModelFeed::of(&model)->drainAll();
    // Calls seen, including those --keep dropped from memory.
    const size_t calls = model.store().calls().size() + model.store().evictedCalls();
    // If the output went away during the capture (its directory removed, the disk full...), the capture is
    // not lost: it goes to the temporary directory as a capture file to convert later.
    const QString rescue =
        QDir(QDir::tempPath())
            .filePath(QStringLiteral("rpcscope-capture-%1.rpcscope")
                          .arg(QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss-zzz")));
    auto rescued = [&](bool saved, const std::string &why, size_t n, const std::string &rescueError) {
        if (saved)
            std::fprintf(stderr, "rpcscope-cli: %s; the capture (%zu %s) was saved to %s instead\n",
                         why.c_str(), n, n == 1 ? "call" : "calls",
                         qPrintable(QDir::toNativeSeparators(rescue)));
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
        reportFoldedStats(model.stats());
        if (const std::uint64_t shed = ModelFeed::of(&model)->shedEvents())
            // The count above is the timeline's; the file was written before the feed and has every call.
            std::fprintf(
                stderr,
                "rpcscope-cli: warning: %llu events did not reach the timeline in memory while it fell "
                "behind, so it counts fewer calls than %s holds\n",
                static_cast<unsigned long long>(shed), opts["--out"].c_str());
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
        const bool saved = exportSession(model.store(), model.eventLog(), FileFormat::Rpcscope, rescue,
                                         options, &rescueError, "rpcscope-cli");
        return rescued(saved, error, model.store().calls().size(), rescueError);
    }
    reportCaptured(model.store(), model.store().calls().size(), opts["--out"]);
    reportFoldedStats(model.stats());
    if (const std::uint64_t shed = ModelFeed::of(&model)->shedEvents())
        std::fprintf(stderr,
                     "rpcscope-cli: warning: %llu events did not reach the timeline while it fell behind; "
                     "they are not in %s (an .rpcscope output, written as the capture goes, gets them all)\n",
                     static_cast<unsigned long long>(shed), opts["--out"].c_str());
    if (const size_t evicted = model.store().evictedCalls())
        std::fprintf(
            stderr,
            "rpcscope-cli: warning: the %zu oldest calls were dropped to keep the capture within %zu MB; "
            "--keep 0 keeps everything\n",
            evicted, keepMb);
    if (const std::string note = model.store().retentionNote(); !note.empty())
        std::fprintf(stderr, "rpcscope-cli: warning: %s, to keep the capture within %zu MB\n", note.c_str(),
                     keepMb);
    return 0;
}

} // namespace rpcscope
