// rpcscope: the GUI. Starts the built-in lab (demo server behind a capture proxy) and runs a scenario.

#include "clock.h"
#include "hugepageheap.h"
#include "labsession.h"
#include "librarylogs.h"
#include "loopwatch.h"
#include "mainwindow.h"
#include "modelfeed.h"
#include "modelsink.h"
#include "policydock.h"
#include "residentmemory.h"
#include "stallprobe.h"
#include "statsdock.h"
#include "swimlaneview.h"
#include "timedapplication.h"
#include "timelinemodel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSocketNotifier>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <memory>
#include <unistd.h>

using namespace rpcscope;

namespace {
const char kUsage[] =
    "usage: rpcscope [--scenario NAME] [--no-lab] [--capture [LABEL@]LISTEN=TARGET ... [--record FILE]]\n"
    "                [--workshop] [--dark] [--stats] [--service-config FILE.json]\n"
    "                [--screenshot FILE.png] [--keylog FILE] [FILE.rpcscope | FILE.pcapng | FILE.pcap ...]\n"
    "  --scenario NAME     lab scenario to run at start and on 'Run again' (default retry-basic)\n"
    "  --no-lab            do not start the built-in lab\n"
    "  --capture SPEC      start capturing your own service at once: a proxy on LISTEN relaying to TARGET,\n"
    "                      named LABEL on the timeline (repeat it for every hop of a chain); the lab "
    "scenario\n"
    "                      is then not run at start\n"
    "  --record FILE       with --capture: also write everything it records to FILE (.rpcscope) as it "
    "comes,\n"
    "                      through FILE.partial until the capture stops (a crash leaves that, readable)\n"
    "  FILE                open a capture file instead of running a scenario; several files are merged\n"
    "                      onto one timeline (aligned by their wall-clock origins)\n"
    "  --keylog FILE       an NSS key log (SSLKEYLOGFILE) that decrypts the TLS in the pcap FILE opened\n"
    "  --workshop          large text in the whole window and thick bars, readable on a projector\n"
    "  --dark              dark theme for the whole window\n"
    "  --stats             show the Statistics dock (Ctrl+Shift+T) in front of the Calls table\n"
    "  --service-config FILE  judge the calls against this service config (the client's retry policy)\n"
    "                      and show the Policy check dock (Ctrl+Shift+V) in front of the Calls table\n"
    "  --screenshot FILE   run the scenario, select its last attempt (the inspector shows it),\n"
    "                      save the window as PNG, and quit\n"
    "Headless use: rpcscope-cli --help\n";

// SIGINT, SIGTERM or SIGHUP (a terminal's Ctrl+C, a kill, the terminal closed) quit the way closing the
// window does, without asking: a running capture stops and its recording is finished. The handler only writes
// a byte; the event loop reads it.
int g_signalPipe[2] = {-1, -1};
bool g_quitBySignal = false;

void onQuitSignal(int)
{
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = write(g_signalPipe[1], &byte, 1);
}

bool haveDisplay()
{
    const QByteArray platform = qgetenv("QT_QPA_PLATFORM");
    if (!platform.isEmpty()) return true;
    return !qgetenv("DISPLAY").isEmpty() || !qgetenv("WAYLAND_DISPLAY").isEmpty();
}
} // namespace

int main(int argc, char **argv)
{
    restartWithHugePageHeap(argv); // first: asked for, it starts the program over
    routeLibraryLogs();            // stderr carries rpcscope's own one-line messages only
    // Two arenas, not one per thread that ever allocated (gRPC's, the relays', the decoders'): events made on
    // those threads are freed on this one, and every arena keeps its own free memory at its own high-water
    // mark. Blocks of 4 MiB and more (merged appends) get pages of their own, given back when freed, as in
    // rpcscope-cli capture, and up to 4 MiB free at an arena's top stays mapped, also as there (a decoder
    // thread's batches would otherwise fault their pages in anew every time).
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
    QString scenario = QStringLiteral("retry-basic");
    QString screenshot;
    bool withLab = true;
    bool workshop = false;
    bool dark = false;
    bool stats = false;
    QString serviceConfig;
    std::vector<HopSpec> hops;
    QString record;
    QStringList openPaths;
    QString keylog;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (!std::strcmp(a, "--no-lab")) {
            withLab = false;
        } else if (!std::strcmp(a, "--workshop")) {
            workshop = true;
        } else if (!std::strcmp(a, "--dark")) {
            dark = true;
        } else if (!std::strcmp(a, "--stats")) {
            stats = true;
        } else if (!std::strcmp(a, "--service-config") && i + 1 < argc) {
            serviceConfig = QString::fromLocal8Bit(argv[++i]);
        } else if (!std::strcmp(a, "--scenario") && i + 1 < argc) {
            scenario = QString::fromLocal8Bit(argv[++i]);
        } else if (!std::strcmp(a, "--screenshot") && i + 1 < argc) {
            screenshot = QString::fromLocal8Bit(argv[++i]);
        } else if (!std::strcmp(a, "--capture") && i + 1 < argc) {
            HopSpec hop;
            QString error;
            if (!CaptureSession::parseHopSpec(QString::fromLocal8Bit(argv[++i]), &hop, &error)) {
                std::fprintf(stderr, "rpcscope: %s\n", qPrintable(error));
                return 2;
            }
            hops.push_back(hop);
        } else if (!std::strcmp(a, "--keylog") && i + 1 < argc) {
            keylog = QString::fromLocal8Bit(argv[++i]);
        } else if (!std::strcmp(a, "--record") && i + 1 < argc) {
            record = QString::fromLocal8Bit(argv[++i]); // the session adds ".rpcscope" when it is missing
        } else if (a[0] != '-') {
            openPaths << QString::fromLocal8Bit(a);
        } else {
            std::fprintf(stderr, "rpcscope: unknown or incomplete option '%s'\n%s", a, kUsage);
            return 2;
        }
    }
    if (!record.isEmpty() && hops.empty()) {
        std::fprintf(stderr,
                     "rpcscope: --record needs --capture: it records a capture of your own service\n");
        return 2;
    }
    if (!lab::findScenario(scenario.toStdString())) {
        std::fprintf(stderr, "rpcscope: unknown scenario '%s' (rpcscope-cli list shows them)\n",
                     qPrintable(scenario));
        return 2;
    }
    if (!haveDisplay()) {
        std::fprintf(stderr, "rpcscope: no display (DISPLAY is not set); for headless use run "
                             "'rpcscope-cli run retry-basic --json out.json --png out.png'\n");
        return 3;
    }

    TimedApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("rpcscope"));
    QApplication::setOrganizationName(QStringLiteral("rpcscope"));

    std::unique_ptr<QSocketNotifier> quitOnSignal;
    if (pipe2(g_signalPipe, O_CLOEXEC | O_NONBLOCK) == 0) {
        quitOnSignal = std::make_unique<QSocketNotifier>(g_signalPipe[0], QSocketNotifier::Read);
        QObject::connect(quitOnSignal.get(), &QSocketNotifier::activated, [] {
            char byte;
            while (read(g_signalPipe[0], &byte, 1) > 0) {
            }
            std::fprintf(stderr, "rpcscope: quitting on a signal\n");
            g_quitBySignal = true;
            QApplication::exit(0); // not quit(): that would let the window ask about unsaved changes
        });
        for (int sig : {SIGINT, SIGTERM, SIGHUP})
            std::signal(sig, onQuitSignal);
    }

    TimelineModel model;
    model.setOrigin(clockPairNow());
    model.setKeepHeaders(true); // the inspector's header blocks and messages
    // No malloc_trim after retention's cuts. It gave the freed blocks of millions of small records back to
    // the system, but it walks every free block of the heap holding the allocator's lock: in a 2 M-event
    // burst each one took 50-190 ms of the GUI thread's CPU, and on a thread of its own up to a second during
    // which the GUI thread waited at its next allocation (a 979 ms loop gap, and a SIGINT that took as long).
    // The blocks a cut frees are what the next records reuse, and retention counts them meanwhile (the
    // resident memory beyond what the model counts, below), so RSS stays within the budget without the trim;
    // it settles at the burst's high-water mark instead of some 70 MB under it. Retention's budget is what
    // the window takes, as the system counts it: what the model counts of itself is most of it, but not the
    // window's own baseline (libraries, fonts, the views' indices) nor the free memory the allocator has not
    // given back yet (app/core/residentmemory.h): all of RSS counts, from 0.
    countResidentMemory(&model, 0);
    // With RPCSCOPE_STALLS: once a second, what the model counts against what the kernel says, to find memory
    // that lingers or is not counted. What the allocator says only with RPCSCOPE_STALLS_MALLOC=1: mallinfo2
    // walks every free block while it holds the allocator's lock, some 50 ms of the GUI thread's CPU a second
    // after a burst's evictions, so the report would be the largest stall it reports.
    QTimer memoryReport;
    memoryReport.setObjectName(QStringLiteral("memory report"));
    if (StallProbe::threshold() >= 0) {
        const bool withMalloc = qEnvironmentVariableIntValue("RPCSCOPE_STALLS_MALLOC") > 0;
        QObject::connect(&memoryReport, &QTimer::timeout, &model, [&model, withMalloc] {
            char allocator[160] = "";
            if (withMalloc) {
                const struct mallinfo2 mi = ::mallinfo2();
                std::snprintf(allocator, sizeof allocator,
                              "; malloc in use %zu MB, free %zu MB, mmapped %zu MB",
                              (mi.uordblks + mi.hblkhd) >> 20, mi.fordblks >> 20, mi.hblkhd >> 20);
            }
            const long rssKb = long(residentBytes() / 1024);
            std::fprintf(stderr,
                         "rpcscope: stall: memory: rss %ld MB; model %zu MB (store %zu, log %zu)%s; %zu lab "
                         "events\n",
                         rssKb / 1024, model.memoryBytes() >> 20, model.store().approxBytes() >> 20,
                         model.eventLog().memoryBytes() >> 20, allocator, model.store().labEvents().size());
        });
        memoryReport.start(1000);
    }
    const Relay::Sink sink = queuedSinkTo(&model);
    lab::LabSession labSession;
    if (withLab) {
        std::string error;
        if (!labSession.start(sink, &error)) {
            std::fprintf(stderr, "rpcscope: could not start the lab: %s\n", error.c_str());
            return 1;
        }
    }

    int rc = 0;
    {
        MainWindow window(&model, withLab ? &labSession : nullptr, scenario);
        window.setWorkshop(workshop);
        window.setDark(dark);
        window.setPromptOnClose(screenshot.isEmpty());
        window.show();
        if (stats) window.showStatistics(true);
        if (!serviceConfig.isEmpty()) {
            QFile f(serviceConfig);
            QString error;
            if (!f.open(QIODevice::ReadOnly)) error = f.errorString();
            if (error.isEmpty())
                window.policyDock()->setServiceConfig(QString::fromUtf8(f.readAll()), &error);
            if (!error.isEmpty()) {
                std::fprintf(stderr, "rpcscope: %s: %s\n", qPrintable(serviceConfig), qPrintable(error));
                return 2;
            }
            window.showPolicyCheck(true);
        }
        // For scripts/bench.sh --burst: how the GUI thread kept up, said at the exit.
        std::unique_ptr<LoopWatch> loopWatch;
        if (!qEnvironmentVariableIsEmpty("RPCSCOPE_LOOP_REPORT"))
            loopWatch = std::make_unique<LoopWatch>(window.swimlanes(), ModelFeed::of(&model));
        if (!screenshot.isEmpty()) {
            QObject::connect(
                &window, &MainWindow::scenarioFinished, &window, [&](bool held, const QString &) {
                    // The decoder flushes within 16 ms; give the last batch and a repaint time to land.
                    QTimer::singleShot(300, &window, [&, held] {
                        const auto &calls = model.store().calls();
                        if (!calls.empty())
                            window.swimlanes()->selectAttempt(int(calls.size()) - 1,
                                                              int(calls.back().attempts.size()) - 1);
                        window.statsDock()->refresh(); // its timer may not have seen the last batch
                        window.policyDock()->refresh();
                        if (!window.grab().save(screenshot)) {
                            std::fprintf(stderr, "rpcscope: cannot write %s\n", qPrintable(screenshot));
                            rc = 1;
                        } else if (!held) {
                            rc = 1;
                        }
                        QApplication::quit();
                    });
                });
        }
        if (!hops.empty()) {
            QString error;
            window.captureSession()->setRecordTo(record);
            if (!window.startCapture(hops, &error)) {
                std::fprintf(stderr, "rpcscope: cannot start the capture: %s\n", qPrintable(error));
                return 1;
            }
            for (const CaptureSession::RunningHop &h : window.captureSession()->hops())
                std::printf("capturing %s: point clients at %s (relays to %s)\n", qPrintable(h.label),
                            qPrintable(h.listen), qPrintable(h.target));
            if (!window.captureSession()->ingestJsonAddress().isEmpty())
                std::printf("ingesting events: gRPC on %s, JSON lines on %s\n",
                            qPrintable(window.captureSession()->ingestGrpcAddress()),
                            qPrintable(window.captureSession()->ingestJsonAddress()));
            std::fflush(stdout);
        } else if (!openPaths.isEmpty()) {
            QString error;
            const bool opened =
                openPaths.size() == 1
                    ? window.openFile(openPaths.front(), &error, !screenshot.isEmpty(), keylog)
                    : window.addToTimeline(openPaths, &error, !screenshot.isEmpty(), true);
            if (!opened) {
                std::fprintf(stderr, "rpcscope: %s\n", qPrintable(error));
                return 1;
            }
            // Opened, but with something to know (cut short, a damaged record): the window shows it in a
            // dialog; a screenshot has no one to show it to, so it goes to stderr.
            if (!error.isEmpty() && !screenshot.isEmpty())
                std::fprintf(stderr, "rpcscope: warning: %s\n", qPrintable(error));
            if (!screenshot.isEmpty())
                QTimer::singleShot(300, &window, [&] {
                    window.policyDock()->refresh();
                    if (!window.grab().save(screenshot)) {
                        std::fprintf(stderr, "rpcscope: cannot write %s\n", qPrintable(screenshot));
                        rc = 1;
                    }
                    QApplication::quit();
                });
        } else if (withLab) {
            QTimer::singleShot(0, &window, &MainWindow::runScenario);
        }
        const int exec = app.exec();
        if (rc == 0) rc = exec;
        if (loopWatch) std::fprintf(stderr, "rpcscope: %s\n", qPrintable(loopWatch->report()));
        // What a burst cut short by the signal left behind: applied, still queued (dropped now) or refused.
        if (g_quitBySignal && window.captureSession() && window.captureSession()->isRunning()) {
            const ModelFeed *feed = ModelFeed::of(&model);
            std::fprintf(stderr,
                         "rpcscope: the timeline applied %llu events; %zu queued were dropped; the ingestion "
                         "endpoint refused %llu (the model was behind)\n",
                         static_cast<unsigned long long>(feed->appliedEvents()), feed->queuedEvents(),
                         static_cast<unsigned long long>(window.captureSession()->ingestPushedBack()));
        }
    }
    labSession.stop();
    if (g_quitBySignal) {
        // The window is gone, its capture file closed. Freeing a full timeline (millions of small records
        // after a burst) block by block took seconds on a busy machine, past the 2 s a signal may take to
        // quit: the system takes the memory back at once.
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(rc);
    }
    return rc;
}
