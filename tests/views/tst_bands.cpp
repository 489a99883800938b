// The policy band and the markers: every breaker state visible at fit, clustered markers, the legend built
// from what was drawn, middle-elided connection names, round wall-clock ticks, and the tooltip of every kind
// of thing the timeline draws.
#include "breakerband.h"
#include "calllanepass.h"
#include "connectionlanepass.h"
#include "legendpass.h"
#include "markerspass.h"
#include "paintcontext.h"
#include "renderfixture.h"
#include "swimlaneview.h"
#include "timelinetheme.h"
#include "timelinetooltips.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QtTest>
#include <numeric>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {
constexpr std::int64_t s = 1'000'000'000;

// Two one-attempt calls 10 s apart and a breaker that is half-open for 1 ms in between.
EventBatch breakerTrace()
{
    EventBatch b{opened(1),
                 req(1, 0, std::nullopt, "a-1", 5 * s),
                 end(1, 1 * ms, 0),
                 labEvent(2 * s, "breaker", "closed -> open"),
                 labEvent(3 * s, "fast-fail", "breaker open", "ff-1"),
                 labEvent(5 * s, "breaker", "open -> half-open"),
                 labEvent(5 * s + 1 * ms, "breaker", "half-open -> closed"),
                 req(3, 10 * s, std::nullopt, "b-1", 5 * s),
                 end(3, 10 * s + 1 * ms, 0)};
    return b;
}

// The longest run of colour c along row y within [x1, x2].
int longestRun(const QImage &img, int y, int x1, int x2, const QColor &c)
{
    int best = 0, run = 0;
    for (int x = std::max(0, x1); x <= std::min(img.width() - 1, x2); ++x) {
        run = QColor(img.pixel(x, y)).rgb() == c.rgb() ? run + 1 : 0;
        best = std::max(best, run);
    }
    return best;
}

int bandMid(const TimelinePainter &painter)
{
    return painter.metrics().rulerHeight + painter.metrics().bandHeight / 2;
}
// The render fixture's scene in a model, and a painter of it in workshop type over [from, to].
struct WorkshopScene
{
    TimelineModel model;
    TimelinePainter painter{&model.store()};
    WorkshopScene(qint64 from, qint64 to)
    {
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter::Options o;
        o.workshop = true;
        painter.setOptions(o);
        painter.setRange(from, to);
    }
};

} // namespace

// The render fixture's scene in a model, and a view of it at 1200x700 with a header row and a row per
// attempt (comfortable density).
struct SceneView
{
    SceneView()
    {
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        view.setDensity(LaneDensity::Comfortable);
        view.resize(1200, 700);
    }
    TimelineModel model;
    SwimlaneView view{&model};
};

class TestBands : public QObject
{
    Q_OBJECT
private slots:
    void halfOpenAtLeastSixPixelsAtFit_data()
    {
        QTest::addColumn<bool>("workshop");
        QTest::addColumn<bool>("dark");
        QTest::newRow("plain") << false << false;
        QTest::newRow("workshop") << true << false;
        QTest::newRow("dark workshop") << true << true;
    }
    void halfOpenAtLeastSixPixelsAtFit()
    {
        QFETCH(bool, workshop);
        QFETCH(bool, dark);
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(breakerTrace());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.workshop = workshop;
        o.dark = dark;
        o.legend = true;
        painter.setOptions(o);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        QVERIFY(hi - lo > 10 * s); // 1 ms is far below a pixel: ~7 µs per pixel... times a thousand
        const QRectF rect(0, 0, 1400, painter.contentHeight(1400));
        const QImage img = render(painter, rect);
        const TimelineTheme &th = painter.theme();
        const TimeAxis ax = painter.axis(rect);
        QVERIFY(ax.nsPerPx > 1 * ms); // the state is shorter than a pixel
        const int y = bandMid(painter);
        const double x = ax.timeToX(5 * s);
        // The half-open span itself: at least 6 px (more in workshop mode), right where it happened.
        const int minWidth = workshop ? 9 : 6;
        const int run = longestRun(img, y, int(x) - 1, int(x) + minWidth + 1, th.breakerHalfOpen);
        QVERIFY2(run >= minWidth, qPrintable(QStringLiteral("half-open is %1 px wide").arg(run)));
        // Its name, on a tag of its colour just after it (the span is too narrow to hold it).
        const QRect tag(int(x) + minWidth + 1, y - 6, 90 * (workshop ? 2 : 1), 12);
        QVERIFY(countColor(img, tag, th.breakerHalfOpen) > 150);
        int text = 0;
        for (int ty = tag.top(); ty <= tag.bottom(); ++ty)
            for (int tx = tag.left(); tx <= tag.right(); ++tx)
                text += QColor(img.pixel(tx, ty)).rgb() == th.text.rgb() ||
                        std::abs(qGray(img.pixel(tx, ty)) - qGray(th.text.rgb())) < 40;
        QVERIFY2(text > 20, "the half-open tag has no words on it");
        // A mark at each transition, in the strip above the states.
        const int bandTop = painter.metrics().rulerHeight + 1;
        for (const std::int64_t t : {2 * s, 5 * s, 5 * s + 1 * ms}) {
            const int tx = int(std::round(ax.timeToX(t)));
            QVERIFY2(hasColor(img, QRect(tx - 1, bandTop, 3, 2), th.text),
                     qPrintable(QStringLiteral("no transition mark at %1 s").arg(double(t) / 1e9)));
        }
        // The legend has a colour for it and says so.
        QVERIFY(painter.legendEntries().contains(QStringLiteral("breaker half-open")));
        const int legendTop = int(rect.height()) - painter.legendHeight(rect.width());
        QVERIFY(countColor(img, QRect(0, legendTop, img.width(), img.height() - legendTop),
                           th.breakerHalfOpen) > 100);
        // Pointing at it names it, with its times.
        const auto hit = painter.hitTest(QPointF(x + 2, y), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::BandSegment);
        QCOMPARE(hit.state, QStringLiteral("half-open"));
        QCOMPARE(hit.fromNs, 5 * s);
        QCOMPARE(hit.toNs, 5 * s + 1 * ms);
        const QString tip =
            TimelineToolTips::bandSegment(model.store(), hit.state, hit.fromNs, hit.toNs, hit.current);
        QVERIFY(tip.contains(QStringLiteral("half-open")));
        QVERIFY(tip.contains(QStringLiteral("lasted <b>1.00 ms</b>")));
        QVERIFY(tip.contains(QStringLiteral("from 5.000 s to 5.001 s")));
        // The state that is still current says so.
        const auto closed = painter.hitTest(QPointF(ax.timeToX(8 * s), y), rect);
        QCOMPARE(closed.kind, TimelinePainter::Hit::BandSegment);
        QCOMPARE(closed.state, QStringLiteral("closed"));
        QVERIFY(closed.current);
        QVERIFY(TimelineToolTips::bandSegment(model.store(), closed.state, closed.fromNs, closed.toNs, true)
                    .contains(QStringLiteral("still closed")));
        // A transition mark is a target of its own: the lab event that caused it.
        const auto mark = painter.hitTest(QPointF(ax.timeToX(2 * s), bandTop + 2), rect);
        QCOMPARE(mark.kind, TimelinePainter::Hit::LabEvent);
        QCOMPARE(mark.labEvent->detail, std::string("closed -> open"));
    }

    // The circuit-breaker scenario's story at workshop size in a window a presenter uses: closed, open, a
    // failed probe's half-open, open again, a probe that closes it. Every state is named, in order, without
    // overlap, each name inside its state or right after it (on a tag): before, a too-narrow "closed" was
    // put over the open state after it and took its name's place, and so did each probe's "half-open".
    void breakerStoryNamesEveryState_data()
    {
        QTest::addColumn<bool>("workshop");
        QTest::addColumn<int>("width");
        QTest::addColumn<bool>("allNamed");
        QTest::newRow("workshop, 1000 px") << true << 1000 << true;
        QTest::newRow("workshop, 1300 px") << true << 1300 << true;
        QTest::newRow("workshop, 1800 px") << true << 1800 << true;
        QTest::newRow("workshop, 700 px") << true << 700 << false;
        QTest::newRow("normal, 500 px") << false << 500 << false;
        QTest::newRow("normal, 1000 px") << false << 1000 << true;
    }
    void breakerStoryNamesEveryState()
    {
        QFETCH(bool, workshop);
        QFETCH(int, width);
        QFETCH(bool, allNamed);
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b{opened(1),
                     labEvent(100 * ms, "breaker", "closed -> open"),
                     labEvent(300 * ms, "breaker", "open -> half-open"),
                     labEvent(301 * ms, "breaker", "half-open -> open"),
                     labEvent(550 * ms, "breaker", "open -> half-open"),
                     labEvent(551 * ms, "breaker", "half-open -> closed")};
        for (int c = 0; c < 40; ++c) {
            const std::uint32_t stream = std::uint32_t(1 + 2 * c);
            b.push_back(req(stream, c * 25 * ms, std::nullopt, "cb-" + std::to_string(c + 1), 5000 * ms));
            b.push_back(end(stream, c * 25 * ms + 1 * ms, c < 4 ? 14 : 0));
        }
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.workshop = workshop;
        painter.setOptions(o);
        painter.setRange(0, 1000 * ms);
        const QRectF rect(0, 0, width, painter.contentHeight(width));
        const auto recorded = recordPainted(painter, width);
        const TextRecorder &device = *recorded;
        const TimeAxis ax = painter.axis(rect);
        const QStringList states{"closed", "open", "half-open", "open", "half-open", "closed"};
        const std::vector<std::int64_t> from{0, 100 * ms, 300 * ms, 301 * ms, 550 * ms, 551 * ms};
        const double minWidth = workshop ? 2.2 * 6 : 6;
        auto span = [&](int i) {
            const double x1 = ax.timeToX(from[size_t(i)]);
            const double to = i + 1 < states.size() ? ax.timeToX(from[size_t(i) + 1]) : rect.right();
            return std::pair{x1, std::max(to, x1 + minWidth)};
        };
        const double bandTop = painter.metrics().rulerHeight,
                     bandBottom = bandTop + painter.metrics().bandHeight;
        // Each name drawn in the band, matched to the state it starts in or right after (a tag).
        int last = -1, named = 0;
        double lastRight = -1;
        QStringList drawn;
        for (const TextRecorder::Text &t : device.texts()) {
            if (t.rect.center().y() <= bandTop || t.rect.center().y() >= bandBottom ||
                t.rect.left() <= ax.left)
                continue;
            drawn << t.text;
            int state = -1;
            for (int i = states.size() - 1; i > last && state < 0; --i)
                if (states[i] == t.text && t.rect.left() >= span(i).first &&
                    t.rect.left() <= span(i).second + 4)
                    state = i;
            const QString where =
                QStringLiteral("\"%1\" at %2 to %3 px").arg(t.text).arg(t.rect.left()).arg(t.rect.right());
            QVERIFY2(state > last, qPrintable(where + ": in no state of that name after the last one named"));
            const auto [x1, x2] = span(state);
            QVERIFY2(
                t.rect.left() >= x2 || t.rect.right() <= x2,
                qPrintable(where + QStringLiteral(": runs out of its state (%1 to %2 px)").arg(x1).arg(x2)));
            QVERIFY2(t.rect.left() > lastRight, qPrintable(where + ": overlaps the name before it"));
            last = state;
            lastRight = t.rect.right();
            ++named;
            // The story's last state has room enough not to need the smallest type.
            if (workshop && state + 1 == states.size() && allNamed)
                QVERIFY2(t.rect.height() > QFontMetricsF(PaintContext::scaledFont(11, 1)).height(),
                         qPrintable(where + ": in reduced type"));
        }
        if (allNamed) QCOMPARE(drawn, states);
        QVERIFY(named >= 3);
    }

    void markersCluster()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b = scene();
        // Twelve rejections within 120 µs (well under a pixel) on the band, three hedges on a lane.
        for (int i = 0; i < 12; ++i)
            b.push_back(labEvent(25 * ms + i * 10'000, "bulkhead-rejected", std::to_string(i) + " in flight",
                                 "never-sent-" + std::to_string(i)));
        for (int i = 0; i < 3; ++i)
            b.push_back(labEvent(14 * ms + i * 20'000, "hedge-fired", "after 4 ms", "retry-basic-1"));
        b.push_back(labEvent(100 * ms, "health", "SERVING"));
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.legend = true;
        painter.setOptions(o);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight(1200));
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);

        std::vector<const LabEventRecord *> band;
        for (const LabEventRecord &e : model.store().labEvents())
            if (e.kind == "bulkhead-rejected" || e.kind == "health") band.push_back(&e);
        const auto clusters = MarkersPass::clusters(band, ax, 1.0, ax.left, rect.right());
        QCOMPARE(int(clusters.size()), 2); // the twelve as one, the health check on its own
        QCOMPARE(int(clusters[0].events.size()), 12);
        QCOMPARE(MarkersPass::label(clusters[0], false), QStringLiteral("×12 bulkhead rejected"));
        QCOMPARE(MarkersPass::label(clusters[1], false), QStringLiteral("health"));
        // Zoomed in far enough, they come apart.
        TimeAxis close = ax;
        close.nsPerPx = 1000;
        QCOMPARE(int(MarkersPass::clusters(band, close, 1.0, -1e9, 1e9).size()), 13);
        // Out of time order, the clusters view their own sorted copy, which moves with them: the same
        // clusters, their markers in time order.
        std::vector<const LabEventRecord *> reversed(band.rbegin(), band.rend());
        MarkersPass::Clusters moved;
        moved = MarkersPass::clusters(reversed, ax, 1.0, ax.left, rect.right());
        QCOMPARE(int(moved.size()), 2);
        QCOMPARE(int(moved[0].events.size()), 12);
        QCOMPARE(moved[0].events.front(), band.front());
        QCOMPARE(moved[0].events.back(), band[11]);
        QCOMPARE(moved[1].events.front()->kind, std::string("health"));

        // The band's cluster is one target listing what it holds.
        const auto hit = painter.hitTest(QPointF(ax.timeToX(25 * ms) + 1, bandMid(painter)), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::MarkerCluster);
        QCOMPARE(int(hit.events.size()), 12);
        const QString tip = TimelineToolTips::cluster(model.store(), hit.events);
        QVERIFY(tip.contains(QStringLiteral("<b>12 events</b>")));
        QCOMPARE(tip.count(QStringLiteral("bulkhead-rejected")), TimelineToolTips::kClusterLines);
        QVERIFY(tip.contains(QStringLiteral("and 4 more")));
        QVERIFY(tip.contains(QStringLiteral("0 in flight")));
        QVERIFY(!tip.contains(QStringLiteral("11 in flight")));

        // The lane's three hedges likewise.
        const double laneTop = painter.headerHeight() + painter.laneY(0);
        const auto lane = painter.hitTest(
            QPointF(ax.timeToX(14 * ms) + 1, laneTop + painter.metrics().callHeader + 6), rect);
        QCOMPARE(lane.kind, TimelinePainter::Hit::MarkerCluster);
        QCOMPARE(int(lane.events.size()), 3);
        QVERIFY(TimelineToolTips::cluster(model.store(), lane.events).contains(QStringLiteral("3 events")));
        QVERIFY(!TimelineToolTips::cluster(model.store(), lane.events).contains(QStringLiteral("more")));
        // A single marker stays a plain lab event.
        const auto single = painter.hitTest(QPointF(ax.timeToX(100 * ms), bandMid(painter)), rect);
        QCOMPARE(single.kind, TimelinePainter::Hit::LabEvent);
        QCOMPARE(single.labEvent->kind, std::string("health"));
        // Both a cluster and a single marker are drawn, so the legend explains both.
        QVERIFY(painter.legendEntries().contains(QStringLiteral("overlapping events (×N)")));
        QVERIFY(painter.legendEntries().contains(QStringLiteral("policy event")));
        // One ring around the cluster's diamond: marker colour left and right of the diamond itself.
        const int cx = int(ax.timeToX(25 * ms));
        const QColor marker = TimelineTheme::light().labMarker;
        int ring = 0;
        for (int y = bandMid(painter) - 1; y <= bandMid(painter) + 1; ++y)
            for (int x = cx - 8; x <= cx - 6; ++x) {
                const QColor c(img.pixel(x, y));
                ring += std::abs(c.red() - marker.red()) + std::abs(c.green() - marker.green()) +
                            std::abs(c.blue() - marker.blue()) <
                        150;
            }
        QVERIFY2(ring >= 2, "no ring around the cluster's diamond");
    }

    void connectionNamesElideInTheMiddle()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        const std::string label = "HEAD-of-a-relay-hop-with-a-name-far-longer-than-the-label-column-TAIL";
        EventBatch b{testev::opened(1, 0, "127.0.0.1:5000", "127.0.0.1:9000", label),
                     req(1, 10 * ms, std::nullopt, "c-1", 5000 * ms), end(1, 12 * ms, 0)};
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, 600);
        const PaintContext ctx = painter.context(rect);
        const QString title = ConnectionLanePass::title(ctx, 0);
        QVERIFY2(title.startsWith(QStringLiteral("connection 1 ·")), qPrintable(title));
        QVERIFY2(title.endsWith(QStringLiteral("TAIL")), qPrintable(title));
        QVERIFY(title.contains(QChar(0x2026)));
        QVERIFY(QFontMetricsF(ctx.font(12, true)).horizontalAdvance(title) <= painter.labelWidth() - 14);
        // The tooltip has the whole name.
        QVERIFY(TimelineToolTips::connection(model.store(), 0).contains(QString::fromStdString(label)));
        // A short name is left alone.
        TimelineModel shortModel;
        shortModel.setOrigin(0, 0);
        shortModel.appendBatch({testev::opened(1, 0, "a", "b", "front"),
                                req(1, 1 * ms, std::nullopt, "s-1", 0), end(1, 2 * ms, 0)});
        TimelinePainter shortPainter(&shortModel.store());
        QCOMPARE(ConnectionLanePass::title(shortPainter.context(rect), 0),
                 QStringLiteral("connection 1 · front"));
        // In workshop type, a lab hop's name: the connection's number stays whole, the name gives way.
        TimelineModel labModel;
        labModel.setOrigin(0, 0);
        labModel.appendBatch({testev::opened(12, 0, "a", "b", "bulkhead: shared pool of 4 workers"),
                              req(1, 1 * ms, std::nullopt, "s-1", 0), end(1, 2 * ms, 0)});
        TimelinePainter workshop(&labModel.store());
        TimelinePainter::Options o = workshop.options();
        o.workshop = true;
        workshop.setOptions(o);
        const PaintContext wctx = workshop.context(rect);
        const QString shown = ConnectionLanePass::title(wctx, 0);
        QVERIFY2(shown.startsWith(QStringLiteral("connection 12 · bulk")), qPrintable(shown));
        QVERIFY2(shown.endsWith(QStringLiteral("orkers")), qPrintable(shown));
        QVERIFY(QFontMetricsF(wctx.font(12, true)).horizontalAdvance(shown) <= workshop.labelWidth() - 14);
    }

    void wallClockTicksAreRound_data()
    {
        QTest::addColumn<qint64>("from");
        QTest::addColumn<qint64>("to");
        QTest::newRow("seconds") << qint64(0) << qint64(20 * s);
        QTest::newRow("fit") << qint64(0) << qint64(170 * ms);
        QTest::newRow("milliseconds") << qint64(10 * ms + 123'457) << qint64(13 * ms);
        QTest::newRow("microseconds") << qint64(10 * ms + 3'333) << qint64(10 * ms + 40'000);
    }
    void wallClockTicksAreRound()
    {
        QFETCH(qint64, from);
        QFETCH(qint64, to);
        TimelineModel model;
        // The capture started at an odd wall-clock time: 2023-11-14 22:13:20.123456789 UTC.
        const qint64 wall0 = 1'700'000'000'123'456'789;
        model.setOrigin(0, wall0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.wallClock = true;
        painter.setOptions(o);
        painter.setRange(from, to);
        const QRectF rect(0, 0, 1400, 500);
        const std::vector<qint64> ticks = painter.rulerTicks(rect);
        QVERIFY(ticks.size() >= 3);
        const qint64 step = ticks[1] - ticks[0];
        for (size_t i = 0; i < ticks.size(); ++i) {
            QVERIFY(ticks[i] >= from);
            if (i > 0) QCOMPARE(ticks[i] - ticks[i - 1], step);
            QVERIFY2((wall0 + ticks[i]) % step == 0,
                     qPrintable(QStringLiteral("tick at wall %1 ns is not a multiple of %2 ns")
                                    .arg(wall0 + ticks[i])
                                    .arg(step)));
        }
        // Since the capture start instead, the ticks are round offsets from it.
        o.wallClock = false;
        painter.setOptions(o);
        for (const qint64 t : painter.rulerTicks(rect))
            QCOMPARE(t % (painter.rulerTicks(rect)[1] - painter.rulerTicks(rect)[0]), qint64(0));
    }

    // Large type and a wall clock on a narrow view: no round tick fits, and the ruler still says when.
    void rulerNamesItsStartWhenNoTickFits()
    {
        TimelineModel model;
        model.setOrigin(0, 1'700'000'000'123'456'789);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.wallClock = true;
        o.workshop = true;
        painter.setOptions(o);
        painter.setRange(3 * ms, 170 * ms);
        const QRectF rect(0, 0, 700, 300);
        QVERIFY(painter.rulerTicks(rect).empty()); // the case under test
        const QImage img = render(painter, rect);
        const LaneMetrics &m = painter.metrics();
        const QColor text = TimelineTheme::light().text;
        int inked = 0;
        for (int y = 0; y < m.rulerHeight; ++y)
            for (int x = m.labelWidth + 1; x < img.width(); ++x)
                if (QColor(img.pixel(x, y)) == text) ++inked;
        QVERIFY2(inked > 20, qPrintable(QStringLiteral("%1 text pixels in the ruler").arg(inked)));
    }

    // Workshop type on a window of ordinary width: a step sized for the type left one tick ("100 ms") over
    // most of the lane, beside the range's start to the microsecond ("2.89 ms"). A finer step whose labels
    // still keep apart gives the audience a scale to read.
    void workshopRulerKeepsAScale()
    {
        WorkshopScene w(3 * ms, 190 * ms);
        TimelinePainter &painter = w.painter;
        TimelinePainter::Options o = painter.options();
        const QRectF rect(0, 0, 1150, 400);
        const std::vector<qint64> ticks = painter.rulerTicks(rect);
        QVERIFY2(ticks.size() >= 3, qPrintable(QString::number(ticks.size())));
        const qint64 step = ticks[1] - ticks[0];
        QCOMPARE(step, 50 * ms);
        // Apart by more than a label: "150 ms" in the ruler's workshop type.
        const QFontMetricsF fm(PaintContext::scaledFont(12, painter.metrics().scale));
        const double px =
            double(step) / double(190 * ms - 3 * ms) * (rect.width() - painter.metrics().labelWidth);
        QVERIFY2(px > fm.horizontalAdvance(QStringLiteral("150 ms")) + 20,
                 qPrintable(QStringLiteral("%1 px between ticks").arg(px)));
        // The ordinary ruler is as it was: its step leaves room for a few ticks already.
        o.workshop = false;
        painter.setOptions(o);
        QCOMPARE(painter.rulerTicks(rect)[1] - painter.rulerTicks(rect)[0], 50 * ms);
    }

    // A tick near the right edge has its label end at the tick; in workshop type that label would cover the
    // one before it ("1600 m1620 ms"). Across window widths, no label touches another or leaves the ruler,
    // and all but such a last one are drawn.
    void rulerLabelsNeverOverlap()
    {
        WorkshopScene w(1565 * ms, 1625 * ms);
        const TimelinePainter &painter = w.painter;
        int flipped = 0;
        for (int width = 800; width <= 1400; width += 5) {
            const QRectF rect(0, 0, width, 400);
            const std::vector<qint64> ticks = painter.rulerTicks(rect);
            const std::vector<QRectF> labels = painter.rulerLabelRects(rect);
            QVERIFY(labels.size() + 1 >= ticks.size());
            for (size_t i = 0; i < labels.size(); ++i) {
                QVERIFY(labels[i].right() <= rect.right() + 0.5);
                QVERIFY(labels[i].left() >= painter.metrics().labelWidth);
                if (i > 0)
                    QVERIFY2(labels[i].left() > labels[i - 1].right(),
                             qPrintable(QStringLiteral("width %1: label %2 at %3, the one before ends at %4")
                                            .arg(width)
                                            .arg(i)
                                            .arg(labels[i].left())
                                            .arg(labels[i - 1].right())));
            }
            flipped += labels.size() < ticks.size();
        }
        QVERIFY2(flipped > 0, "no width put a tick close enough to the edge to test");
    }

    // Names too long for the label column (workshop type) are cut where lanes are alike, not where they
    // differ: a lane's name at its start (behind its marks), a connection's peers to its server.
    void longNamesKeepWhatTellsThemApart()
    {
        const QFontMetricsF fm(PaintContext::scaledFont(13, 2.2, true));
        const double width = fm.horizontalAdvance(QStringLiteral("deadline-chain-2"));
        const QString child = CallLanePass::fittedName(fm, QStringLiteral("deadline-chain-2>B"), width);
        QVERIFY2(child.startsWith(QStringLiteral("…")) && child.endsWith(QStringLiteral("chain-2>B")),
                 qPrintable(child));
        QVERIFY(fm.horizontalAdvance(child) <= width);
        const QString marked = CallLanePass::fittedName(fm, QStringLiteral("▸ ★ max-attempts-4-12"), width);
        QVERIFY2(marked.startsWith(QStringLiteral("▸ ★ …")) && marked.endsWith(QStringLiteral("-4-12")),
                 qPrintable(marked));
        QCOMPARE(CallLanePass::fittedName(fm, QStringLiteral("short"), width), QStringLiteral("short"));
        // A compact row: the attempt count stays beside a name that gives up its start for it, as on the
        // storm's shorter names; with one attempt the method shows only where there is room.
        const QFontMetricsF smallFm(PaintContext::scaledFont(11, 2.2));
        Call storm;
        storm.key = "retry-storm-12";
        storm.method = "/rpcscope.lab.Lab/Call";
        storm.attempts.resize(4);
        const double rowColumn = fm.horizontalAdvance(QStringLiteral("▸ retry-storm-7")) +
                                 smallFm.horizontalAdvance(QStringLiteral("×4")) + 12;
        const CallLanePass::RowLabel row = CallLanePass::rowLabel(fm, smallFm, storm, rowColumn, 2.2);
        QCOMPARE(row.side, QStringLiteral("×4"));
        QVERIFY2(row.name.startsWith(QStringLiteral("▸ …")) && row.name.endsWith(QStringLiteral("storm-12")),
                 qPrintable(row.name));
        storm.attempts.resize(1);
        QVERIFY(CallLanePass::rowLabel(fm, smallFm, storm, rowColumn, 2.2).side.isEmpty());
        QCOMPARE(CallLanePass::rowLabel(fm, smallFm, storm, 4 * rowColumn, 2.2).side, QStringLiteral("Call"));

        const QFontMetricsF subFm(PaintContext::scaledFont(11, 2.2));
        Connection conn;
        conn.client = "127.0.0.1:48304";
        conn.server = "127.0.0.1:44757";
        const double column = subFm.horizontalAdvance(QStringLiteral("127.0.0.1:48304 → 127"));
        QCOMPARE(ConnectionLanePass::shownSubtitle(subFm, &conn, column),
                 QStringLiteral("→ 127.0.0.1:44757"));
        QCOMPARE(ConnectionLanePass::shownSubtitle(subFm, &conn, 4 * column),
                 QStringLiteral("127.0.0.1:48304 → 127.0.0.1:44757"));
        QCOMPARE(ConnectionLanePass::shownSubtitle(subFm, nullptr, column),
                 QStringLiteral("all in one lane"));
        // What went wrong keeps its start.
        conn.decodeError = "not HTTP/2: the client spoke HTTP/1.1";
        QVERIFY(ConnectionLanePass::shownSubtitle(subFm, &conn, column)
                    .startsWith(QStringLiteral("undecodable")));
    }

    // A breaker that opened as the run ended (breaker-retry): its narrow state at the view's right edge is
    // named on a tag left of it, over the end of the closed state, instead of not at all.
    void aStateAtTheRightEdgeIsNamedBeforeIt_data()
    {
        QTest::addColumn<bool>("workshop");
        QTest::newRow("workshop") << true;
        QTest::newRow("normal") << false;
    }
    void aStateAtTheRightEdgeIsNamedBeforeIt()
    {
        QFETCH(bool, workshop);
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), req(1, 5 * ms, std::nullopt, "a-1", 5000 * ms), end(1, 6 * ms, 0),
                           labEvent(995 * ms, "breaker", "closed -> open")});
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.workshop = workshop;
        painter.setOptions(o);
        painter.setRange(0, 1000 * ms);
        const QRectF rect(0, 0, 1000, painter.contentHeight(1000));
        const auto recorded = recordPainted(painter, 1000);
        const TextRecorder &device = *recorded;
        const TimeAxis ax = painter.axis(rect);
        const double bandTop = painter.metrics().rulerHeight,
                     bandBottom = bandTop + painter.metrics().bandHeight;
        std::vector<TextRecorder::Text> names;
        for (const TextRecorder::Text &t : device.texts())
            if (t.rect.center().y() > bandTop && t.rect.center().y() < bandBottom && t.rect.left() > ax.left)
                names.push_back(t);
        QCOMPARE(names.size(), size_t(2));
        QCOMPARE(names[0].text, QStringLiteral("closed"));
        QCOMPARE(names[1].text, QStringLiteral("open"));
        // The open state is drawn at least its least width, against the right edge.
        const double openLeft =
            std::min(ax.timeToX(995 * ms), rect.right() - BreakerBand::minWidth(workshop ? 2.2 : 1));
        const QString where = QStringLiteral("\"open\" at %1 to %2 px, its state from %3 px")
                                  .arg(names[1].rect.left())
                                  .arg(names[1].rect.right())
                                  .arg(openLeft);
        QVERIFY2(names[1].rect.right() <= openLeft && names[1].rect.right() >= openLeft - 8,
                 qPrintable(where));
        QVERIFY2(names[0].rect.right() < names[1].rect.left(), qPrintable(where));
    }

    // A call's hop is named once: "hop 1" for the capture dialog's default label (it read "hop hop 1"), "hop
    // front" for a label of one's own; the same in its tooltip.
    void aHopIsNamedOnce()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        WireEvent first = opened(1), second = testev::opened(2, 0);
        first.label = "hop 1";
        second.label = "front";
        WireEvent a = req(1, 5 * ms, std::nullopt, "a-1", 5000 * ms),
                  b = req(1, 7 * ms, std::nullopt, "b-1", 5000 * ms);
        b.connection = 2;
        WireEvent aEnd = end(1, 6 * ms, 0), bEnd = end(1, 8 * ms, 0);
        bEnd.connection = 2;
        model.appendBatch({first, second, a, b, aEnd, bEnd});
        QCOMPARE(model.store().calls().size(), size_t(2));
        TimelinePainter painter(&model.store());
        painter.setRange(0, 20 * ms);
        const auto recorded = recordPainted(painter, 1200);
        const TextRecorder &device = *recorded;
        QStringList tails;
        for (const TextRecorder::Text &t : device.texts())
            if (t.text.contains(QStringLiteral("hop")) && !t.text.startsWith(QStringLiteral("connection")))
                tails << t.text;
        QVERIFY2(tails.size() == 2 && tails[0].endsWith(QStringLiteral(" · hop 1")) &&
                     tails[1].endsWith(QStringLiteral(" · hop front")),
                 qPrintable(tails.join(QStringLiteral(" | "))));
        const QString tip = TimelineToolTips::call(model.store(), 0);
        QVERIFY2(tip.contains(QStringLiteral("hop 1")) && !tip.contains(QStringLiteral("hop hop")),
                 qPrintable(tip));
    }

    // An answer injected at once is stamped with the request's read: the call's length is zero, and the lane
    // says none (it read "injected · UNAVAILABLE 0 ns"), in compact rows and in the header of comfortable
    // ones.
    void aCallOfZeroLengthGivesNoLength_data()
    {
        QTest::addColumn<bool>("comfortable");
        QTest::newRow("compact") << false;
        QTest::newRow("comfortable") << true;
    }
    void aCallOfZeroLengthGivesNoLength()
    {
        QFETCH(bool, comfortable);
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), req(1, 5 * ms, std::nullopt, "zero-1", 5000 * ms), end(1, 5 * ms, 14),
                           req(3, 8 * ms, std::nullopt, "some-1", 5000 * ms), end(3, 9 * ms, 14)});
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        o.density = comfortable ? LaneDensity::Comfortable : LaneDensity::Compact;
        painter.setOptions(o);
        painter.setRange(0, 20 * ms);
        const auto recorded = recordPainted(painter, 1200);
        QStringList texts;
        for (const TextRecorder::Text &t : recorded->texts())
            texts << t.text;
        QVERIFY2(std::none_of(texts.begin(), texts.end(),
                              [](const QString &t) { return t.contains(QStringLiteral("0 ns")); }),
                 qPrintable(texts.join(QStringLiteral(" | "))));
        // The other call's length is still there.
        QVERIFY2(std::any_of(texts.begin(), texts.end(),
                             [](const QString &t) { return t.contains(QStringLiteral("1.00 ms")); }),
                 qPrintable(texts.join(QStringLiteral(" | "))));
    }

    // Control frames folded into runs say how many of what; "flood" is said of PINGs, not of WINDOW_UPDATEs,
    // which a busy connection sends two for each call (a plain grpc++ client's 300 quick calls read
    // "WINDOW_UPDATE × 345 (flood)").
    void foldedFramesAreNamedForWhatTheyAre()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        WireEvent updates = testev::frame(1, 0, 80 * ms, Direction::ClientToServer, FrameWindowUpdate);
        updates.about = FrameRun{345, 10 * ms, 345 * 4};
        WireEvent pings = testev::frame(1, 0, 190 * ms, Direction::ServerToClient, FramePing);
        pings.about = FrameRun{900, 120 * ms, 900 * 8};
        model.appendBatch(
            {opened(1), req(1, 5 * ms, std::nullopt, "a-1", 5000 * ms), end(1, 6 * ms, 0), updates, pings});
        TimelinePainter painter(&model.store());
        painter.setRange(0, 200 * ms);
        const auto recorded = recordPainted(painter, 1200);
        const TextRecorder &device = *recorded;
        QStringList runs;
        for (const TextRecorder::Text &t : device.texts())
            if (t.text.contains(QStringLiteral(" × "))) runs << t.text;
        runs.sort();
        QCOMPARE(runs, QStringList({"PING × 900 (flood)", "WINDOW_UPDATE × 345"}));
    }

    // A flood on a connection without calls, seconds after them: the fit shows it, and a zoom onto it stays
    // (it is not "nothing in this range").
    void fitAndZoomReachAnotherConnectionsFrames()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        model.appendBatch({testev::opened(2, 9000 * ms),
                           testev::frame(2, 0, 9000 * ms, Direction::ClientToServer, FramePing),
                           testev::frame(2, 0, 9100 * ms, Direction::ClientToServer, FramePing)});
        SwimlaneView view(&model);
        view.resize(1200, 600);
        TimelinePainter &painter = view.timelinePainter();
        const auto [lo, hi] = painter.fullRange();
        QVERIFY2(lo <= 10 * ms && hi >= 9100 * ms, qPrintable(QStringLiteral("%1..%2").arg(lo).arg(hi)));

        QSignalSpy refitted(&view, &SwimlaneView::refitted);
        QSignalSpy ranges(&view, &SwimlaneView::rangeChanged);
        view.setRange(8950 * ms, 9150 * ms);
        model.appendBatch({testev::frame(2, 0, 9120 * ms, Direction::ClientToServer, FramePing)});
        QCOMPARE(refitted.size(), 0);
        QCOMPARE(ranges.last().at(0).toLongLong(), 8950 * ms);
        // A range with nothing at all still fits the whole run.
        view.setRange(60'000 * ms, 61'000 * ms);
        model.appendBatch({testev::frame(2, 0, 9130 * ms, Direction::ClientToServer, FramePing)});
        QCOMPARE(refitted.size(), 1);
    }

    // A lane that comes in above what the user scrolled to (a new connection's, above every call) does not
    // push it down: the call at the top stays where it was.
    void newLanesAboveKeepTheTopLaneInPlace()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch calls{opened(1)};
        for (int i = 0; i < 40; ++i) {
            const auto stream = std::uint32_t(2 * i + 1);
            calls.push_back(req(stream, i * 10 * ms, std::nullopt, "c-" + std::to_string(i), 5000 * ms));
            calls.push_back(end(stream, i * 10 * ms + ms, 0));
        }
        model.appendBatch(calls);
        SwimlaneView view(&model);
        view.resize(1000, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        TimelinePainter &painter = view.timelinePainter();
        const size_t call = 20;
        view.zoomControl().setScrollY(int(painter.laneY(call)) + 5);
        view.repaint();
        const int scrolled = view.zoomControl().scrollY();
        const double before = painter.laneY(call) - scrolled;
        WireEvent request = testev::event(EventKind::Headers, 2, 1, 500 * ms, Direction::ClientToServer);
        request.grpc.path = "/rpcscope.lab.Lab/Call";
        request.grpc.callId = "on-2";
        model.appendBatch({testev::event(EventKind::ConnectionOpened, 2, 0, 500 * ms), request});
        QVERIFY2(view.zoomControl().scrollY() > scrolled, "the new connection's lane is above the calls");
        QCOMPARE(painter.laneY(call) - view.zoomControl().scrollY(), before);
        view.repaint();
        // The user's own scroll since the last paint is left alone.
        view.zoomControl().setScrollY(int(painter.laneY(call - 5)));
        const int own = view.zoomControl().scrollY();
        WireEvent third = request;
        third.connection = 3;
        third.grpc.callId = "on-3";
        model.appendBatch({testev::event(EventKind::ConnectionOpened, 3, 0, 600 * ms), third});
        QCOMPARE(view.zoomControl().scrollY(), own);
    }

    // A retry the client chose not to make gets a row of its own where the next attempt would have been: a
    // cross at the time the client decided, its reason beside it, and the reason whole on hover. Its words
    // once sat at a fixed place in the header, over the call's summary.
    void suppressedRetryHasItsOwnRow()
    {
        SceneView fixture;
        SwimlaneView &view = fixture.view;
        TimelineModel &model = fixture.model;
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        TimelinePainter &painter = view.timelinePainter();
        const LaneMetrics &m = painter.metrics();
        auto laneHeight = [&](size_t call) {
            const TimelineLayout &lay = painter.layout();
            return lay.blocks()[lay.blockOfCall(call)].h;
        };
        const double plain = laneHeight(1);
        const double otherPlain = laneHeight(0);
        // Arriving in a batch of its own, after the lanes were laid out (the client decides after the
        // attempt ended), as the lab and an ingesting app report it.
        model.appendBatch({labEvent(150 * ms, "retry-suppressed",
                                    "next wait 80 ms exceeds the remaining 0 ms", "deadline-1")});
        view.repaint();
        QCOMPARE(laneHeight(1), plain + m.attemptHeight);
        QCOMPARE(laneHeight(0), otherPlain);
        QVERIFY(painter.layout().laneY(1) > painter.layout().laneY(0));

        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect = view.canvas();
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const QRectF attempt = painter.attemptRect(1, 0, rect);
        const double rowTop = attempt.top() - m.barOffset(false) + m.attemptHeight;
        // The deadline's red, text's edges blended into the background included.
        const QColor deadline = painter.theme().deadline;
        auto redsIn = [](const QImage &image, const QRect &r) {
            int n = 0;
            for (int y = r.top(); y <= r.bottom(); ++y)
                for (int x = r.left(); x <= r.right(); ++x) {
                    const QColor c(image.pixel(x, y));
                    n += c.red() > 120 && c.red() - c.green() > 60 && c.red() - c.blue() > 60 &&
                         std::abs(c.green() - c.blue()) < 40;
                }
            return n;
        };
        auto reds = [&](const QRect &r) { return redsIn(img, r); };
        QVERIFY(deadline.red() - deadline.green() > 60);
        // The row's label and its cross and reason, in the deadline's colour; nothing of it in the header.
        const QRect row = QRect(int(rect.left()), int(rowTop), int(rect.width()), int(m.attemptHeight) - 2);
        QVERIFY(reds(QRect(row.left(), row.top(), int(ax.left - rect.left()), row.height())) > 30);
        const double x = ax.timeToX(150 * ms);
        QVERIFY(reds(QRect(int(x) - 5, row.top(), 11, row.height())) > 10);
        // The reason left of the cross (the view's edge is close on its right), clear of the deadline line.
        QVERIFY(reds(QRect(int(ax.left), row.top(), int(ax.timeToX(140 * ms) - ax.left) - 4, row.height())) >
                150);
        const double header = attempt.top() - m.barOffset(false) - m.callHeader;
        const QRect headerBox(int(ax.left), int(header) + 2, int(ax.timeToX(140 * ms) - ax.left) - 130,
                              int(m.callHeader) - 4);
        QCOMPARE(reds(headerBox), 0);

        const auto hit = painter.hitTest(QPointF(x - 40, rowTop + m.attemptHeight / 2), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::LabEvent);
        QVERIFY(hit.labEvent && hit.labEvent->kind == "retry-suppressed");
        const QString tip = view.toolTipFor(hit);
        QVERIFY2(tip.contains(QStringLiteral("next wait 80 ms exceeds the remaining 0 ms")), qPrintable(tip));
        // The attempt above it is still itself.
        QCOMPARE(painter.hitTest(attempt.center(), rect).kind, TimelinePainter::Hit::Attempt);

        // Zoomed in before the client decided: the cross waits at the view's edge, whole, clear of the edge's
        // last 8 px as the deadline's arrow is.
        painter.setRange(lo, 100 * ms);
        const QImage zoomed = render(painter, rect);
        const QRectF attemptZoomed = painter.attemptRect(1, 0, rect);
        const int rowTopZoomed = int(attemptZoomed.top() - m.barOffset(false) + m.attemptHeight);
        const int edge = int(rect.right());
        QVERIFY(redsIn(zoomed, QRect(edge - 28, rowTopZoomed, 20, int(m.attemptHeight) - 2)) > 10);
        QCOMPARE(redsIn(zoomed, QRect(edge - 6, rowTopZoomed, 6, int(m.attemptHeight) - 2)), 0);
    }

    // Lanes go in the order the calls started, whatever order the calls came in: another hop's decoder behind
    // hands over a call that started before calls already on screen.
    void lanesInStartOrder()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), req(1, 10 * ms, std::nullopt, "a", 5000 * ms),
                           req(3, 30 * ms, std::nullopt, "b", 5000 * ms),
                           req(5, 40 * ms, std::nullopt, "c", 5000 * ms)});
        SwimlaneView view(&model);
        view.resize(1000, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        TimelinePainter &painter = view.timelinePainter();
        auto order = [&] {
            const auto &calls = model.store().calls();
            std::vector<size_t> idx(calls.size());
            std::iota(idx.begin(), idx.end(), size_t(0));
            std::sort(idx.begin(), idx.end(),
                      [&](size_t x, size_t y) { return painter.laneY(x) < painter.laneY(y); });
            QStringList keys;
            for (size_t i : idx)
                keys << QString::fromStdString(calls[i].key);
            return keys;
        };
        QCOMPARE(order(), QStringList({"a", "b", "c"}));
        // Late, in a batch of its own: placed among the lanes there (the layout follows the batch).
        model.appendBatch({req(7, 20 * ms, std::nullopt, "late", 5000 * ms), end(7, 21 * ms, 0)});
        view.repaint();
        QCOMPARE(order(), QStringList({"a", "late", "b", "c"}));
        // The lanes below it moved down by its height; none overlaps another, and each call finds its lane.
        const TimelineLayout &lay = painter.layout();
        auto consistent = [&] {
            for (size_t b = 1; b < lay.blocks().size(); ++b)
                if (lay.blocks()[b].y < lay.blocks()[b - 1].y + lay.blocks()[b - 1].h) return false;
            for (size_t b = 0; b < lay.blocks().size(); ++b)
                if (lay.blocks()[b].kind == LaneBlock::CallLane &&
                    lay.blockOfCall(lay.blocks()[b].index) != b)
                    return false;
            return true;
        };
        QVERIFY(consistent());
        // A first copy that came late moves its call's start: the call's lane goes up (the layout follows
        // the batch, no rebuild).
        model.appendBatch({req(9, 5 * ms, std::nullopt, "c", 5000 * ms)});
        view.repaint();
        QCOMPARE(order(), QStringList({"c", "a", "late", "b"}));
        QVERIFY(consistent());
        // Grouped by method, the group's calls in start order too.
        view.setGrouping(LaneGrouping::Method);
        view.repaint();
        QCOMPARE(order(), QStringList({"c", "a", "late", "b"}));
    }

    void legendListsWhatWasDrawn()
    {
        // A retry story: statuses, backoff gaps, deadlines, one connection.
        TimelineModel retry;
        retry.setOrigin(0, 0);
        retry.appendBatch(scene());
        TimelinePainter painter(&retry.store());
        TimelinePainter::Options o;
        o.legend = true;
        painter.setOptions(o);
        auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        QRectF rect(0, 0, 1200, painter.contentHeight(1200));
        QImage img = render(painter, rect);
        QCOMPARE(painter.legendEntries(), QStringList({"OK", "UNAVAILABLE", "DEADLINE_EXCEEDED",
                                                       "backoff gap", "call deadline", "connection open"}));
        // Each status colour named is in the picture above the legend; one not named is not.
        const QRect lanes(0, 0, img.width(), int(rect.height()) - painter.legendHeight(rect.width()));
        for (const std::int64_t status : {0, 14, 4}) {
            Attempt a;
            a.endNs = 1;
            a.status = int(status);
            QVERIFY(hasColor(img, lanes, TimelinePainter::statusColor(a), 10));
        }
        Attempt open;
        QVERIFY(!hasColor(img, lanes, TimelinePainter::statusColor(open)));

        // Zoomed to the first attempt only: no deadline line, gap or OK bar is drawn, so none is listed.
        painter.setRange(5 * ms, 11'500'000);
        img = render(painter, rect);
        const QStringList zoomed = painter.legendEntries();
        QVERIFY2(!zoomed.contains(QStringLiteral("OK")), qPrintable(zoomed.join(", ")));
        QVERIFY(!zoomed.contains(QStringLiteral("DEADLINE_EXCEEDED")));
        QVERIFY(!zoomed.contains(QStringLiteral("backoff gap")));
        QVERIFY(zoomed.contains(QStringLiteral("UNAVAILABLE")));
        QVERIFY(zoomed.contains(QStringLiteral("call deadline"))); // the arrows at the edge

        // A breaker story: its states, transitions and fast failures, and none of the retry story's marks.
        TimelineModel breaker;
        breaker.setOrigin(0, 0);
        breaker.appendBatch(breakerTrace());
        TimelinePainter bp(&breaker.store());
        bp.setOptions(o);
        std::tie(lo, hi) = bp.fullRange();
        bp.setRange(lo, hi);
        rect = QRectF(0, 0, 1400, bp.contentHeight(1400));
        render(bp, rect);
        QCOMPARE(bp.legendEntries(), QStringList({"OK", "call deadline", "connection open", "breaker closed",
                                                  "breaker open", "breaker half-open", "breaker transition",
                                                  "failed fast (breaker open, never sent)"}));
        QCOMPARE(LegendPass::entries(bp.drawnUse()), bp.legendEntries());
    }

    void tooltipsForEveryHitKind()
    {
        // A header row and a row per attempt; one-row lanes' hover is in tst_timelinepainter.
        SceneView fixture;
        SwimlaneView &view = fixture.view;
        TimelinePainter &painter = view.timelinePainter();
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect = view.canvas();
        render(painter, rect); // gap labels are where the last paint put them
        const TimeAxis ax = painter.axis(rect);

        // A call's header: the call's summary.
        const QRectF first = painter.attemptRect(0, 0, rect);
        auto hit = painter.hitTest(QPointF(600, first.top() - 20), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::CallHeader);
        QString tip = view.toolTipFor(hit);
        QVERIFY2(tip.contains(QStringLiteral("retry-basic-1")) &&
                     tip.contains(QStringLiteral("after 3 attempts")) &&
                     tip.contains(QStringLiteral("<b>OK</b>")) && tip.contains(QStringLiteral("2 retries")),
                 qPrintable(tip));

        // A retry the client chose not to make is in its call's summary too.
        TimelineModel suppressed;
        suppressed.setOrigin(0, 0);
        EventBatch sb = scene();
        sb.push_back(labEvent(180 * ms, "retry-suppressed", "retry budget spent", "deadline-1"));
        suppressed.appendBatch(sb);
        QVERIFY(TimelineToolTips::call(suppressed.store(), 1)
                    .contains(QStringLiteral("<b>retry suppressed:</b> retry budget spent")));
        QVERIFY(!TimelineToolTips::call(suppressed.store(), 0).contains(QStringLiteral("suppressed")));

        // A backoff gap: the measured gap between the attempts.
        const QRectF second = painter.attemptRect(0, 1, rect);
        hit = painter.hitTest(QPointF(ax.timeToX(37 * ms), second.center().y()), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::Gap);
        tip = view.toolTipFor(hit);
        QVERIFY2(tip.contains(QStringLiteral("before attempt 2: <b>50.0 ms</b>")) &&
                     tip.contains(QStringLiteral("from 12.0 ms")) &&
                     tip.contains(QStringLiteral("to 62.0 ms")),
                 qPrintable(tip));
        // ... and over its label too.
        const GapLabel &label = painter.gapLabels().front();
        hit = painter.hitTest(label.rect.center(), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::Gap);
        QCOMPARE(hit.attempt, label.attempt);

        // Without the client's policy there is no range to measure it against, and the tooltip says so.
        QVERIFY(tip.contains(QStringLiteral("did not say its retry policy")));

        // The deadline line of the call that ran into it: the deadline, the budget and how much was used.
        const double deadlineLane = painter.headerHeight() + painter.laneY(1);
        hit = painter.hitTest(QPointF(ax.timeToX(140 * ms) + 2, deadlineLane + 4), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::Deadline);
        QCOMPARE(hit.call, size_t(1));
        tip = view.toolTipFor(hit);
        QVERIFY2(tip.contains(QStringLiteral("at 140.0 ms")) &&
                     tip.contains(QStringLiteral("budget 120.0 ms")) &&
                     tip.contains(QStringLiteral("<b>100%</b> of its budget")) &&
                     tip.contains(QStringLiteral("ran out")),
                 qPrintable(tip));
        // The bar under the line still wins over it.
        hit = painter.hitTest(painter.attemptRect(1, 0, rect).center(), rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::Attempt);

        // Nothing under the pointer: no tooltip.
        QVERIFY(view.toolTipFor(TimelinePainter::Hit{}).isEmpty());
        // A band segment and a cluster through the view too.
        TimelinePainter::Hit segment;
        segment.kind = TimelinePainter::Hit::BandSegment;
        segment.state = QStringLiteral("open");
        segment.fromNs = 10 * ms;
        segment.toNs = 40 * ms;
        QVERIFY(view.toolTipFor(segment).contains(QStringLiteral("lasted <b>30.0 ms</b>")));
        LabEventRecord e1{1 * ms, "hedge-fired", "after 1 ms", "x-1", {}};
        LabEventRecord e2{2 * ms, "hedge-cancelled", "", "x-1", {}};
        TimelinePainter::Hit cluster;
        cluster.kind = TimelinePainter::Hit::MarkerCluster;
        cluster.events = {&e1, &e2};
        tip = view.toolTipFor(cluster);
        QVERIFY(tip.contains(QStringLiteral("<b>2 events</b>")) &&
                tip.contains(QStringLiteral("hedge-cancelled")));
    }
};

QTEST_MAIN(TestBands)
#include "tst_bands.moc"
