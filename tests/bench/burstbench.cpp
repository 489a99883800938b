// rpcscope-burstbench: the real window (offscreen) capturing with its ingestion endpoint, under a burst of
// JSON-lines events (scripts/bench.sh --burst; 2,000,000 events, --quick 200,000). Measured from outside the
// process, so any build of the window can be compared (--gui PATH): the longest stretch its GUI thread ran
// without waiting in its event loop (no input, repaint or quit is handled meanwhile), the time from SIGINT to
// exit (after the burst and in the middle of one), peak RSS against the retention budget, and the events/s
// applied. The baseline is the same window idle in the same run.

#include "burstprobe.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QThread>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

namespace {

constexpr double kRetentionMb = 512; // the window's default retention ("keep 512 MB")

struct App
{
    std::unique_ptr<QProcess> process = std::make_unique<QProcess>();
    pid_t pid = 0;
    std::uint16_t jsonPort = 0;
};

std::optional<App> startApp(const QString &gui)
{
    static const burstprobe::Target target;
    App app;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("RPCSCOPE_LOOP_REPORT"), QStringLiteral("1"));
    app.process->setProcessEnvironment(env);
    app.process->start(
        gui, {"--no-lab", "--capture", QStringLiteral("burst@127.0.0.1:0=127.0.0.1:%1").arg(target.port)});
    if (!app.process->waitForStarted()) return std::nullopt;
    app.pid = pid_t(app.process->processId());
    QString out;
    QElapsedTimer t;
    t.start();
    while (!out.contains("capturing") && t.elapsed() < 20'000) {
        app.process->waitForReadyRead(100);
        out += QString::fromUtf8(app.process->readAllStandardOutput());
    }
    QThread::msleep(300);
    out += QString::fromUtf8(app.process->readAllStandardOutput());
    const auto m = QRegularExpression(R"(JSON lines on 127\.0\.0\.1:(\d+))").match(out);
    app.jsonPort = m.hasMatch() ? std::uint16_t(m.captured(1).toUInt())
                                : burstprobe::findJsonPort(burstprobe::listeningPorts(app.pid));
    if (!app.jsonPort) return std::nullopt;
    return app;
}

// SIGINT, then the seconds until the process is gone; killed past `capSeconds` (returned as negative).
double quitTime(App &app, double capSeconds)
{
    QElapsedTimer t;
    t.start();
    ::kill(app.pid, SIGINT);
    if (app.process->waitForFinished(int(capSeconds * 1000))) return double(t.nsecsElapsed()) / 1e9;
    app.process->kill();
    app.process->waitForFinished();
    return -capSeconds;
}

// What the window said at its exit about its event loop (a build that has RPCSCOPE_LOOP_REPORT).
struct LoopReport
{
    QString loopGap = QStringLiteral("n/a"), repaintWait = QStringLiteral("n/a"),
            repaints = QStringLiteral("n/a"), gapCpu = QStringLiteral("n/a"), mostCpu = QStringLiteral("n/a"),
            withStart = QStringLiteral("n/a");
};

LoopReport loopReport(App &app)
{
    LoopReport r;
    const QString err = QString::fromUtf8(app.process->readAllStandardError());
    // With RPCSCOPE_STALLS=MS set, the window names its steps that took that long: passed on.
    for (const QString &line : err.split(QLatin1Char('\n')))
        if (line.startsWith(QStringLiteral("rpcscope: stall:")))
            std::fprintf(stderr, "%s\n", qPrintable(line));
    const auto m =
        QRegularExpression(
            R"(longest event-loop gap (\d+) ms, longest wait for a repaint (\d+) ms, (\d+) repaints)")
            .match(err);
    if (m.hasMatch()) {
        r.loopGap = m.captured(1) + QStringLiteral(" ms");
        r.repaintWait = m.captured(2) + QStringLiteral(" ms");
        r.repaints = m.captured(3);
    }
    // A build that also times the GUI thread's CPU in its gaps (a shared machine stretches the wall time).
    const auto c =
        QRegularExpression(
            R"((\d+) ms of that gap on the CPU; most CPU between two turns (\d+) ms \(in a gap of (\d+) ms\))")
            .match(err);
    if (c.hasMatch()) {
        r.gapCpu = c.captured(1) + QStringLiteral(" ms");
        r.mostCpu = c.captured(2) + QStringLiteral(" ms (gap %1 ms)").arg(c.captured(3));
    }
    // A build that counts the burst's figures from its first append says the whole run's apart: the window's
    // own start (its first layout and paint) is one long turn that is no part of the burst.
    const auto w =
        QRegularExpression(R"(with the window's start: longest gap (\d+) ms \((\d+) ms on the CPU\), )"
                           R"(most CPU between two turns (\d+) ms)")
            .match(err);
    if (w.hasMatch()) r.withStart = QStringLiteral("%1 ms / %2 ms").arg(w.captured(1), w.captured(3));
    return r;
}

QString seconds(double s)
{
    if (s < 0) return QStringLiteral("> %1 s (killed)").arg(-s, 0, 'f', 0);
    return s < 1 ? QStringLiteral("%1 ms").arg(s * 1000, 0, 'f', 0)
                 : QStringLiteral("%1 s").arg(s, 0, 'f', 2);
}

QString mb(std::uint64_t bytes)
{
    return QStringLiteral("%1 MB").arg(double(bytes) / (1 << 20), 0, 'f', 0);
}

void row(const char *what, const QString &idle, const QString &burst)
{
    std::printf("| %-52s | %-18s | %-26s |\n", what, qPrintable(idle), qPrintable(burst));
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication qapp(argc, argv);
    bool quick = false;
    int events = 0;
    double cap = 0;
    QString gui = QStringLiteral(RPCSCOPE_GUI);
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!std::strcmp(argv[i], "--gui") && i + 1 < argc) {
            gui = QString::fromLocal8Bit(argv[++i]);
        } else if (!std::strcmp(argv[i], "--events") && i + 1 < argc) {
            events = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--cap") && i + 1 < argc) {
            cap = std::atof(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: rpcscope-burstbench [--quick] [--events N] [--cap SECONDS] [--gui "
                                 "PATH-TO-rpcscope]\n");
            return 2;
        }
    }
    if (events <= 0) events = quick ? 200'000 : 2'000'000;
    // An old build may not catch up at all: given up after this.
    const double settleCap = cap > 0 ? cap : quick ? 120 : 900;

    // Where the time goes, on stderr as it passes: a run that takes far longer than its burst says which step
    // waited (a window slow to start, a burst never all answered, a GUI thread that never settles).
    QElapsedTimer total;
    total.start();
    auto phase = [&total](const char *what) {
        std::fprintf(stderr, "rpcscope-burstbench: %5.1f s: %s\n", double(total.elapsed()) / 1000, what);
    };

    // Baseline: the same window, capturing, idle.
    auto idle = startApp(gui);
    phase("idle window started");
    if (!idle) {
        std::fprintf(stderr, "rpcscope-burstbench: cannot start %s with its ingestion endpoint\n",
                     qPrintable(gui));
        return 1;
    }
    double idleLoop = 0;
    {
        burstprobe::LoopWatch watch(idle->pid);
        QThread::msleep(2000);
        idleLoop = watch.longestBusySeconds();
    }
    const std::uint64_t idleRss = burstprobe::peakRss(idle->pid);
    const double idleQuit = quitTime(*idle, 30);
    const LoopReport idleReport = loopReport(*idle);
    phase("idle window measured and quit");

    // The burst, to the end: how long the GUI thread went without a turn, when it had applied everything
    // (its CPU use settles), then SIGINT.
    auto app = startApp(gui);
    if (!app) return 1;
    phase("window for the burst started");
    QElapsedTimer clock;
    clock.start();
    double longest = 0, written = 0, settled = -1;
    std::uint64_t rss = 0;
    {
        burstprobe::LoopWatch watch(app->pid);
        burstprobe::Burst burst(app->jsonPort, events);
        double lastCpu = burstprobe::mainThreadCpuSeconds(app->pid);
        double lastAt = 0, busy = 0;
        const char *stopped = nullptr;
        while (clock.elapsed() < settleCap * 1000) {
            QThread::msleep(100);
            const std::uint64_t nowRss = burstprobe::peakRss(app->pid);
            if (nowRss == 0) { // gone: nothing more will be answered
                stopped = "the window exited during the burst";
                break;
            }
            rss = std::max(rss, nowRss);
            if (burst.writeDone() && written == 0) {
                written = double(clock.nsecsElapsed()) / 1e9;
                phase("burst handed over");
            }
            if (burst.writeDone() && burst.written() < events) {
                stopped = "the endpoint closed the connection before the burst was sent";
                break;
            }
            const double now = double(clock.nsecsElapsed()) / 1e9;
            if (now - lastAt >= 0.5) {
                const double cpu = burstprobe::mainThreadCpuSeconds(app->pid);
                busy = (cpu - lastCpu) / (now - lastAt);
                // Everything written and answered, and the GUI thread under 10% busy for half a second.
                if (burst.writeDone() && burst.answered() >= events && busy < 0.1) {
                    settled = now;
                    phase("burst applied, GUI thread settled");
                    break;
                }
                lastCpu = cpu;
                lastAt = now;
            }
        }
        if (settled < 0)
            std::fprintf(stderr,
                         "rpcscope-burstbench: did not settle: %s; %d of %d events written, %d answered, GUI "
                         "thread %.0f%% busy\n",
                         stopped ? stopped : "gave up waiting (--cap)", burst.written(), events,
                         burst.answered(), busy * 100);
        longest = watch.longestBusySeconds();
    }
    rss = std::max(rss, burstprobe::peakRss(app->pid));
    const double quitAfter = quitTime(*app, 30);
    const LoopReport burstReport = loopReport(*app);
    phase("window for the burst quit");

    // SIGINT in the middle of a burst: half of it handed over (or 20 s).
    auto mid = startApp(gui);
    if (!mid) return 1;
    double midQuit = 0, midLongest = 0;
    int midWritten = 0;
    {
        burstprobe::LoopWatch watch(mid->pid);
        burstprobe::Burst burst(mid->jsonPort, events);
        QElapsedTimer t;
        t.start();
        while (burst.written() < events / 2 && !burst.writeDone() && t.elapsed() < 20'000)
            QThread::msleep(5);
        midWritten = burst.written();
        midLongest = watch.longestBusySeconds();
        midQuit = quitTime(*mid, 30);
    }
    const LoopReport midReport = loopReport(*mid);
    phase("SIGINT in the middle of a burst measured");

    std::printf("rpcscope-burstbench: %d JSON-lines events to %s, offscreen, retention %g MB\n\n", events,
                qPrintable(gui), kRetentionMb);
    row("", QStringLiteral("idle window"), QStringLiteral("burst"));
    row("----------------------------------------------------", QStringLiteral("------------------"),
        QStringLiteral("--------------------------"));
    row("longest event-loop gap (window; from 1st append)", idleReport.loopGap, burstReport.loopGap);
    row("  of which the GUI thread's CPU", idleReport.gapCpu, burstReport.gapCpu);
    row("most GUI-thread CPU between two loop turns", idleReport.mostCpu, burstReport.mostCpu);
    row("  the same with the window's start (gap / CPU)", idleReport.withStart, burstReport.withStart);
    row("longest wait from an append to its repaint", idleReport.repaintWait,
        burstReport.repaintWait + QStringLiteral(" (%1 repaints)").arg(burstReport.repaints));
    row("longest GUI-thread stretch never waiting (from /proc)", seconds(idleLoop), seconds(longest));
    row("burst handed over (TCP)", QStringLiteral("-"),
        written > 0 ? seconds(written) : QStringLiteral("not done"));
    row("all applied (GUI thread settled)", QStringLiteral("-"),
        settled > 0 ? seconds(settled) : QStringLiteral("> %1 s").arg(settleCap));
    row("events/s applied", QStringLiteral("-"),
        settled > 0 ? QStringLiteral("%1").arg(double(events) / settled, 0, 'f', 0)
                    : QStringLiteral("< %1").arg(double(events) / settleCap, 0, 'f', 0));
    row("peak RSS (budget: retention)", mb(idleRss), mb(rss) + QStringLiteral(" / %1 MB").arg(kRetentionMb));
    row("SIGINT to exit, after the burst", seconds(idleQuit), seconds(quitAfter));
    row("SIGINT to exit, in the middle of a burst", QStringLiteral("-"),
        seconds(midQuit) + QStringLiteral(" (%1 sent)").arg(midWritten));
    row("  longest stretch never waiting before that SIGINT", QStringLiteral("-"), seconds(midLongest));
    row("  longest event-loop gap until that exit", QStringLiteral("-"), midReport.loopGap);
    return 0;
}
