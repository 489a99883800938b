// rpcscope-viewbench: the swimlane painter at scale (issue 5). Run with `scripts/bench.sh --views`.
//
// A TimelineStore is filled the way a capture fills it, by applying batches of synthetic WireEvents: 100,000
// calls and 300,000 attempts on 64 connections over ~200 s, with HEADERS/DATA frames, messages, trailers,
// PINGs and flow-control stalls. Then, on a 1920x1080 QImage zoomed out to the whole trace:
//   - full repaint: TimelinePainter::paint() with its data caches warm (what every zoom, pan or scroll
//   costs);
//   - first paint of a loaded store: layout, trace extent, overview inputs and marker indexes built as well;
//   - live: the repaint after each relay batch while following a growing capture;
//   - hover repaint: the widget's path (paintCached) with the pointer on another attempt each time;
//   - zoom, pan and scroll repaints through the widget's path;
//   - the model's memory per attempt;
//   - the full repaint, first paint and scroll again in comfortable rows, and grouped with every group
//   folded.
// Every figure is printed next to the same measurement on a 1,000-call store taken in the same run (the ratio
// shows the cost does not grow with the trace) and next to the floor of any repaint: blitting one 1920x1080
// image.

#include "benchtext.h"
#include "clock.h"
#include "stats.h"
#include "timelinepainter.h"
#include "timelinestore.h"
#include "wireevents.h"

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <malloc.h>
#include <queue>
#include <string>
#include <unistd.h>
#include <vector>

using namespace rpcscope;
using namespace rpcscope::bench;

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr int kConnections = 64;
constexpr int kWidth = 1920;
constexpr int kHeight = 1080;

const char *const kMethods[] = {"/shop.Cart/Add",       "/shop.Cart/Get",        "/shop.Catalog/List",
                                "/shop.Catalog/Lookup", "/shop.Payments/Charge", "/shop.Payments/Refund",
                                "/shop.Users/Get",      "/rpcscope.lab.Lab/Call"};

using benchtext::loadAverage;

size_t heapInUse()
{
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

// Emits the events of one synthetic capture in time order: each call's events go into a min-heap and are
// released once no later call can produce an earlier event, so the whole capture never sits in memory.
class SyntheticCapture
{
public:
    // Calls [first, first + calls); a continuation (first > 0) opens no connections and uses new stream ids.
    explicit SyntheticCapture(int calls, int first = 0) : m_calls(calls), m_first(first) {}

    void run(const std::function<void(const EventBatch &)> &apply)
    {
        std::uint64_t rng = 0x9e3779b97f4a7c15ull;
        auto next = [&] {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            return rng;
        };
        std::vector<std::uint32_t> nextStream(kConnections + 1, 1 + 2 * 5 * std::uint32_t(m_first));
        for (int c = 1; c <= kConnections && m_first == 0; ++c) {
            WireEvent open;
            open.kind = EventKind::ConnectionOpened;
            open.connection = std::uint32_t(c);
            open.tNs = c * 1000;
            open.about =
                PeerNames{"10.0.0." + std::to_string(c) + ":5" + std::to_string(1000 + c), "10.0.1.1:50051"};
            push(std::move(open));
            for (Direction d : {Direction::ClientToServer, Direction::ServerToClient})
                push(frame(std::uint32_t(c), 0, c * 1000 + 10, d, FrameSettings, 0, 18));
        }
        const int attemptsFor[4] = {1, 2, 4, 5}; // 3 on average: 300,000 attempts for 100,000 calls
        for (int i = m_first; i < m_first + m_calls; ++i) {
            const std::int64_t start = 1 * kMs + std::int64_t(i) * 2 * kMs + std::int64_t(next() % kMs);
            flushBefore(start, apply);
            const std::uint32_t conn = std::uint32_t(1 + next() % kConnections);
            const int attempts = attemptsFor[i % 4];
            const std::string method = kMethods[next() % std::size(kMethods)];
            const std::string id = "call-" + std::to_string(i);
            const bool deadlineCall = i % 97 == 5;
            std::int64_t t = start;
            for (int k = 0; k < attempts; ++k) {
                const std::uint32_t stream = nextStream[conn];
                nextStream[conn] += 2;
                const bool last = k + 1 == attempts;
                const int status = !last ? 14 : deadlineCall ? 4 : (i % 13 == 0 ? 13 : 0);
                const std::int64_t duration = (2 + std::int64_t(next() % 7)) * kMs;

                WireEvent req;
                req.kind = EventKind::Headers;
                req.connection = conn;
                req.stream = stream;
                req.tNs = t;
                req.headers = {{":method", "POST"}, {":path", method}, {"content-type", "application/grpc"}};
                req.grpc.path = method;
                req.grpc.callId = id;
                req.grpc.timeoutNs = 1000 * kMs - (t - start);
                if (k > 0) req.grpc.previousAttempts = k;
                req.grpc.retryInitialMs = 50;
                req.grpc.retryMultiplier = 2;
                req.grpc.retryMaxMs = 1000;
                push(frame(conn, stream, t, Direction::ClientToServer, FrameHeaders, FlagEndHeaders, 60));
                push(std::move(req));
                push(frame(conn, stream, t + 20'000, Direction::ClientToServer, FrameData, FlagEndStream,
                           105));
                push(message(conn, stream, t + 20'000, Direction::ClientToServer, 100));
                const std::int64_t end = t + duration;
                if (status == 0) {
                    WireEvent resp;
                    resp.kind = EventKind::Headers;
                    resp.dir = Direction::ServerToClient;
                    resp.connection = conn;
                    resp.stream = stream;
                    resp.tNs = end - 300'000;
                    resp.grpc.httpStatus = 200;
                    push(frame(conn, stream, resp.tNs, Direction::ServerToClient, FrameHeaders,
                               FlagEndHeaders, 20));
                    push(std::move(resp));
                    push(frame(conn, stream, end - 200'000, Direction::ServerToClient, FrameData, 0, 205));
                    push(message(conn, stream, end - 200'000, Direction::ServerToClient, 200));
                }
                WireEvent trailers;
                trailers.kind = EventKind::Headers;
                trailers.dir = Direction::ServerToClient;
                trailers.connection = conn;
                trailers.stream = stream;
                trailers.tNs = end;
                trailers.endStream = true;
                trailers.grpc.status = status;
                if (status != 0) trailers.grpc.message = "synthetic failure";
                push(frame(conn, stream, end, Direction::ServerToClient, FrameHeaders,
                           FlagEndHeaders | FlagEndStream, 30));
                push(std::move(trailers));
                t = end + (50 * kMs << std::min(k, 3)) * (8 + std::int64_t(next() % 5)) / 10;
            }
            // Keepalive: a PING answered every few calls on the call's connection, a stall now and then.
            if (i % 16 == 0) {
                WireEvent ack =
                    frame(conn, 0, start + 400'000, Direction::ServerToClient, FramePing, FlagAck, 8);
                ack.rttNs = 150'000 + std::int64_t(next() % 300'000);
                push(std::move(ack));
            }
            if (i % 500 == 0) {
                WireEvent b;
                b.kind = EventKind::FlowStallBegin;
                b.connection = conn;
                b.tNs = start + 100'000;
                WireEvent e = b;
                e.kind = EventKind::FlowStallEnd;
                e.tNs = start + 3 * kMs;
                push(std::move(b));
                push(std::move(e));
            }
        }
        flushBefore(std::numeric_limits<std::int64_t>::max(), apply);
    }

private:
    static WireEvent frame(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir,
                           std::uint8_t type, std::uint8_t flags, std::uint32_t length)
    {
        WireEvent f = testev::frame(conn, stream, t, dir, type, 0, length);
        f.flags = flags;
        return f;
    }
    static WireEvent message(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir,
                             std::uint32_t length)
    {
        WireEvent m = testev::event(EventKind::Message, conn, stream, t, dir);
        m.length = length;
        return m;
    }
    void push(WireEvent &&e) { m_heap.push({e.tNs, m_seq++, std::move(e)}); }
    void flushBefore(std::int64_t t, const std::function<void(const EventBatch &)> &apply)
    {
        while (!m_heap.empty() && m_heap.top().t < t) {
            m_batch.push_back(std::move(const_cast<Pending &>(m_heap.top()).e));
            m_heap.pop();
            // Relay-sized batches, as the app applies them.
            if (m_batch.size() == 4096) {
                apply(m_batch);
                m_batch.clear();
            }
        }
        if (t == std::numeric_limits<std::int64_t>::max() && !m_batch.empty()) {
            apply(m_batch);
            m_batch.clear();
        }
    }

    struct Pending
    {
        std::int64_t t;
        std::uint64_t seq;
        WireEvent e;
        bool operator>(const Pending &o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    int m_calls;
    int m_first;
    std::uint64_t m_seq = 0;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> m_heap;
    EventBatch m_batch;
};

double msSince(std::int64_t t0)
{
    return double(steadyNowNs() - t0) / 1e6;
}

// Median milliseconds of `reps` runs of f(i).
double medianMs(int reps, const std::function<void(int)> &f)
{
    std::vector<double> v;
    for (int i = 0; i < reps; ++i) {
        const std::int64_t t0 = steadyNowNs();
        f(i);
        v.push_back(msSince(t0));
    }
    return median(v);
}

struct Figures
{
    size_t calls = 0, attempts = 0, frames = 0;
    double firstPaint = 0, fullRepaint = 0, hover = 0, zoom = 0, pan = 0, scroll = 0;
};

// What follow mode costs while a capture grows: a relay flush (~16 ms of traffic, here 8 new calls) is
// applied, then the widget refits the range and repaints. Only the repaint is timed.
double liveAppendMs(TimelineStore &store, int reps)
{
    QImage screen(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
    const QRectF rect(0, 0, kWidth, kHeight);
    TimelinePainter painter(&store);
    TimelinePainter::Options o;
    o.legend = true;
    painter.setOptions(o);
    {
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    }
    int next = int(store.calls().size());
    std::vector<double> v;
    for (int i = 0; i < reps; ++i) {
        SyntheticCapture(8, next).run([&](const EventBatch &b) {
            // As the widget does: the painter hears which calls the batch touched.
            const std::uint64_t before = store.generation();
            StoreChanges ch;
            store.apply(b, &ch);
            painter.noteChanges(before, ch);
        });
        next += 8;
        const std::int64_t t0 = steadyNowNs();
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
        p.end();
        v.push_back(msSince(t0));
    }
    return median(v);
}

// The full repaint grouped by method with every group folded into its row of counts (which walks every call
// of the group in view).
double foldedGroupsMs(const TimelineStore &store, int reps)
{
    QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
    const QRectF rect(0, 0, kWidth, kHeight);
    TimelinePainter painter(&store);
    TimelinePainter::Options o;
    o.legend = true;
    o.grouping = LaneGrouping::Method;
    for (const char *m : kMethods)
        o.filter.foldedGroups.insert(QString::fromLatin1(m));
    painter.setOptions(o);
    const auto [lo, hi] = painter.fullRange();
    painter.setRange(lo, hi);
    {
        QPainter p(&image);
        painter.paint(&p, rect);
    }
    return medianMs(reps, [&](int) {
        QPainter p(&image);
        painter.paint(&p, rect);
    });
}

Figures measure(const TimelineStore &store, int reps, LaneDensity density = LaneDensity::Compact)
{
    Figures f;
    f.calls = store.calls().size();
    for (const Call &c : store.calls())
        f.attempts += c.attempts.size();
    f.frames = store.frames().size();

    QImage image(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
    const QRectF rect(0, 0, kWidth, kHeight);
    TimelinePainter painter(&store);
    TimelinePainter::Options o;
    o.legend = true;
    o.density = density;
    painter.setOptions(o);
    const auto [lo, hi] = painter.fullRange();
    painter.setRange(lo, hi);

    f.firstPaint = medianMs(std::max(3, reps / 10), [&](int) {
        painter.invalidate();
        QPainter p(&image);
        painter.paint(&p, rect);
    });
    f.fullRepaint = medianMs(reps, [&](int) {
        QPainter p(&image);
        painter.paint(&p, rect);
    });

    // The widget's path: hover moves over the attempts in view, the lanes come from the cached image.
    QImage screen(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
    {
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    }
    std::vector<QPointF> targets;
    for (size_t call = 0; call < 12 && call < store.calls().size(); ++call)
        for (size_t k = 0; k < store.calls()[call].attempts.size(); ++k)
            targets.push_back(painter.attemptRect(call, k, rect).center());
    f.hover = medianMs(reps * 4, [&](int i) {
        const TimelinePainter::Hit hit = painter.hitTest(targets[size_t(i) % targets.size()], rect);
        painter.setHover(std::pair{hit.call, hit.attempt});
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    });
    painter.setHover(std::nullopt);

    // Zoom: 1.15x per step at the centre, in from the whole trace and back out.
    const qint64 centre = (lo + hi) / 2;
    f.zoom = medianMs(reps, [&](int i) {
        const int depth = i % 60 < 30 ? i % 30 : 30 - i % 30; // down and back up
        const double span = double(hi - lo) / std::pow(1.15, depth);
        painter.setRange(centre - qint64(span / 2), centre + qint64(span / 2));
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    });
    // Pan: at 1/20 of the trace, an eighth of the width per step.
    const qint64 span = (hi - lo) / 20;
    f.pan = medianMs(reps, [&](int i) {
        const qint64 start = lo + qint64(i) * span / 8;
        painter.setRange(start, start + span);
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    });
    painter.setRange(lo, hi);
    f.scroll = medianMs(reps, [&](int i) {
        painter.setScrollY(i * 300);
        QPainter p(&screen);
        painter.paintCached(&p, rect, 1.0);
    });
    return f;
}

} // namespace

int main(int argc, char **argv)
{
    bool quick = false;
    const char *png = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!std::strcmp(argv[i], "--png") && i + 1 < argc) {
            png = argv[++i];
        } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::printf(
                "usage: rpcscope-viewbench [--quick] [--png FILE]\n"
                "  Paints a 100,000-call, 300,000-attempt timeline on a 1920x1080 image and prints one\n"
                "  table of repaint times and model memory (--quick: fewer repetitions).\n"
                "  --png FILE  also save the 100,000-call picture it measures\n");
            return 0;
        } else {
            std::fprintf(stderr, "rpcscope-viewbench: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QGuiApplication app(argc, argv);
    const std::string loadBefore = loadAverage();
    const std::int64_t runStart = steadyNowNs();
    const int reps = quick ? 20 : 100;

    std::fprintf(stderr, "rpcscope-viewbench: building a 100,000-call store from synthetic wire events\n");
    TimelineStore big;
    const size_t heapBefore = heapInUse();
    const std::int64_t fillStart = steadyNowNs();
    SyntheticCapture(100'000).run([&](const EventBatch &b) { big.apply(b); });
    const double fillMs = msSince(fillStart);
    const size_t bigBytes = heapInUse() - heapBefore;

    TimelineStore noFrames;
    noFrames.setRecordFrames(false);
    const size_t heapBefore2 = heapInUse();
    SyntheticCapture(100'000).run([&](const EventBatch &b) { noFrames.apply(b); });
    const size_t noFramesBytes = heapInUse() - heapBefore2;

    TimelineStore small;
    SyntheticCapture(1'000).run([&](const EventBatch &b) { small.apply(b); });

    // The floor of any repaint: one 1920x1080 image drawn onto another.
    QImage a(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied),
        b(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
    a.fill(Qt::white);
    const double blit = medianMs(reps, [&](int) {
        QPainter p(&b);
        p.drawImage(0, 0, a);
    });

    if (png) {
        QImage shot(kWidth, kHeight, QImage::Format_ARGB32_Premultiplied);
        TimelinePainter painter(&big);
        TimelinePainter::Options o;
        o.legend = true;
        painter.setOptions(o);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        QPainter p(&shot);
        painter.paint(&p, QRectF(0, 0, kWidth, kHeight));
        p.end();
        shot.save(QString::fromLocal8Bit(png));
    }
    std::fprintf(stderr, "rpcscope-viewbench: painting\n");
    const Figures s = measure(small, reps);
    const Figures f = measure(big, reps);
    // Compact rows are the default; the comfortable layout (a header and a row per attempt) for comparison.
    const Figures sc = measure(small, reps, LaneDensity::Comfortable);
    const Figures fc = measure(big, reps, LaneDensity::Comfortable);
    const double foldedSmall = foldedGroupsMs(small, reps);
    const double foldedBig = foldedGroupsMs(big, reps);
    // Last: it grows the stores.
    const double liveSmall = liveAppendMs(small, reps / 2);
    const double liveBig = liveAppendMs(big, reps / 2);

    std::printf("rpcscope-viewbench%s: %ld s, %ld cores, load average %s before, %s after\n",
                quick ? " --quick" : "", long((steadyNowNs() - runStart) / 1'000'000'000),
                sysconf(_SC_NPROCESSORS_ONLN), loadBefore.c_str(), loadAverage().c_str());
    std::printf(
        "store: %zu calls, %zu attempts, %zu frames, %zu connections (built from wire events in %.0f ms)\n",
        f.calls, f.attempts, f.frames, big.connections().size(), fillMs);
    std::printf("%-58s | %10s | %22s | %7s | %9s | %s\n", "measurement (1920x1080, median)", "100k calls",
                "1k calls (same run)", "ratio", "goal", "met?");
    std::printf("%s\n", std::string(128, '-').c_str());
    auto row = [&](const char *what, double big, double small, const char *goal, double limit) {
        std::printf("%-58s | %7.2f ms | %19.2f ms | %7.2f | %9s | %s\n", what, big, small, big / small, goal,
                    limit <= 0 ? "" : (big <= limit ? "met" : "missed"));
    };
    row("full repaint, whole trace (paint(), data caches warm)", f.fullRepaint, s.fullRepaint, "<= 16 ms",
        16);
    row("  the same, comfortable rows", fc.fullRepaint, sc.fullRepaint, "<= 16 ms", 16);
    row("  the same, grouped by method, every group folded", foldedBig, foldedSmall, "<= 16 ms", 16);
    row("first paint of a loaded store (every cache built)", f.firstPaint, s.firstPaint, "", 0);
    row("  the same, comfortable rows", fc.firstPaint, sc.firstPaint, "", 0);
    row("hover repaint (hit test + cached lanes + overlay)", f.hover, s.hover, "<= 2 ms", 2);
    row("live: repaint after a batch of 8 new calls (follow mode)", liveBig, liveSmall, "<= 16 ms", 16);
    row("zoom repaint (1.15x per step, in and out)", f.zoom, s.zoom, "<= 16 ms", 16);
    row("pan repaint (1/8 width per step at 1/20 of the trace)", f.pan, s.pan, "<= 16 ms", 16);
    row("vertical scroll repaint (300 px per step)", f.scroll, s.scroll, "<= 16 ms", 16);
    row("  the same, comfortable rows", fc.scroll, sc.scroll, "<= 16 ms", 16);
    std::printf("%-58s | %7.2f ms | %22s | %7s | %9s |\n", "floor: blit one 1920x1080 image", blit, "", "",
                "");
    std::printf("%-58s | %7.2f    | %22s | %7s | %9s |\n", "full repaint / blit floor", f.fullRepaint / blit,
                "", "", "");
    std::printf("%-58s | %7.0f B  | %22s | %7s | %9s |\n",
                "model memory per attempt, frames recorded (GUI default)",
                double(bigBytes) / double(f.attempts), "", "", "");
    std::printf("%-58s | %7.0f B  | %22s | %7s | %9s |\n", "model memory per attempt, frames not recorded",
                double(noFramesBytes) / double(f.attempts), "", "", "");
    std::printf(
        "- memory: heap in use (mallinfo2) before and after applying the capture, vector slack included; "
        "sizeof(Call) = %zu, sizeof(Attempt) = %zu, sizeof(FrameRecord) = %zu, %.1f frames per attempt\n",
        sizeof(Call), sizeof(Attempt), sizeof(FrameRecord), double(f.frames) / double(f.attempts));
    std::printf("- rows are compact (a call on one row, the default) unless a row says otherwise\n");
    std::printf(
        "- zoom/pan/scroll go through the widget's path (paintCached): each step re-renders the lanes and, "
        "for zoom and pan, the overview's histogram over all %zu attempts\n",
        f.attempts);
    return 0;
}
