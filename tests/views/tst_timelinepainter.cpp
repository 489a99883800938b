// TimelinePainter and its paint passes: what each lane, band and marker draws, and hit-testing.
#include "renderfixture.h"

#include <QPainter>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

class TestTimelinePainter : public QObject
{
    Q_OBJECT
private slots:
    void gapLabelsAndColours()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const Call &call = model.store().calls()[0];

        // Comfortable rows: a row per attempt, each gap labelled above its bar (compactRowGapsAndDeadline has
        // the one-row picture).
        TimelinePainter painter(&model.store());
        TimelinePainter::Options options{QStringLiteral("test"), true};
        options.density = LaneDensity::Comfortable;
        painter.setOptions(options);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        QImage img(rect.size().toSize(), QImage::Format_RGB32);
        img.fill(Qt::white);
        {
            QPainter p(&img);
            painter.paint(&p, rect);
        }

        // Two gap labels, carrying the measured gaps, with text actually drawn inside them.
        const auto &labels = painter.gapLabels();
        QCOMPARE(int(labels.size()), 2);
        QCOMPARE(labels[0].gapNs, 50 * ms);
        QCOMPARE(labels[1].gapNs, 96 * ms);
        for (const auto &l : labels) {
            QVERIFY(rect.contains(l.rect));
            QVERIFY2(countDark(img, l.rect.toRect()) > 20, "gap label region has no text");
        }
        // The first label sits between the end of attempt 1 and the start of attempt 2.
        const TimeAxis ax = painter.axis(rect);
        QVERIFY(labels[0].rect.center().x() > ax.timeToX(12 * ms));
        QVERIFY(labels[0].rect.center().x() < ax.timeToX(62 * ms));

        // Status colours where the bars are: attempt 3 is OK, attempt 1 UNAVAILABLE, call 2
        // DEADLINE_EXCEEDED.
        const QColor ok = TimelinePainter::statusColor(call.attempts[2]);
        const QColor unavailable = TimelinePainter::statusColor(call.attempts[0]);
        const QColor deadline = TimelinePainter::statusColor(model.store().calls()[1].attempts[0]);
        QVERIFY(ok != unavailable && ok != deadline && unavailable != deadline);
        const int barY = int(labels[1].rect.bottom()) + 8; // the bar row of attempt 3
        const int okX = int(ax.timeToX(165 * ms));
        QCOMPARE(QColor(img.pixel(okX, barY)).rgb(), ok.rgb());
        QVERIFY(countColor(img, img.rect(), unavailable) > 40);
        QVERIFY(countColor(img, img.rect(), deadline) > 100);
        // An in-flight colour must not appear: every attempt has ended.
        Attempt open;
        QCOMPARE(countColor(
                     img,
                     QRect(0, 60, img.width(), int(rect.height()) - 60 - painter.legendHeight(rect.width())),
                     TimelinePainter::statusColor(open)),
                 0);
    }

    // Compact rows (the default): retry-basic's three attempts share one row with its backoff gaps between
    // them, labelled inside the gap; the deadline call's dashed line runs through its own row.
    void compactRowGapsAndDeadline()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        QCOMPARE(painter.options().density, LaneDensity::Compact);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1400, painter.contentHeight());
        const QImage img = render(painter, rect);
        QVERIFY(painter.layout().oneRow(0) && painter.layout().oneRow(1));
        const double rowTop = painter.headerHeight() + painter.laneY(0);
        const double rowH = painter.metrics().rowHeight;
        QCOMPARE(painter.layout().blocks()[painter.layout().blockOfCall(0)].h, rowH);
        for (size_t k = 0; k < 3; ++k) {
            const QRectF bar = painter.attemptRect(0, k, rect);
            QVERIFY(bar.top() > rowTop && bar.bottom() < rowTop + rowH);
            QCOMPARE(QColor(img.pixel(bar.center().toPoint())).rgb(),
                     TimelinePainter::statusColor(model.store().calls()[0].attempts[k]).rgb());
            const auto hit = painter.hitTest(bar.center(), rect);
            QCOMPARE(hit.kind, TimelinePainter::Hit::Attempt);
            QCOMPARE(hit.attempt, k);
        }
        // The gaps: labelled inside the row, between the bars they separate, with text drawn.
        const auto &labels = painter.gapLabels();
        QCOMPARE(int(labels.size()), 2);
        QCOMPARE(labels[0].gapNs, 50 * ms);
        QCOMPARE(labels[1].gapNs, 96 * ms);
        for (size_t i = 0; i < 2; ++i) {
            const GapLabel &l = labels[i];
            QVERIFY(l.rect.top() >= rowTop - 0.5 && l.rect.bottom() <= rowTop + rowH + 0.5);
            QVERIFY(l.rect.left() > painter.attemptRect(0, i, rect).right());
            QVERIFY(l.rect.right() < painter.attemptRect(0, i + 1, rect).left());
            QVERIFY2(countDark(img, l.rect.toRect()) > 20, "gap label region has no text");
        }
        // Between the bars, a click hits the call, not an attempt.
        const TimeAxis ax = painter.axis(rect);
        QCOMPARE(painter.hitTest(QPointF(ax.timeToX(37 * ms), rowTop + rowH / 2), rect).kind,
                 TimelinePainter::Hit::CallHeader);
        // The deadline call: its 120 ms deadline (at 140 ms) dashed through its row.
        const double top1 = painter.headerHeight() + painter.laneY(1);
        const QColor red(0xc6, 0x28, 0x28);
        const int x = int(ax.timeToX(140 * ms));
        QVERIFY(countColor(img, QRect(x - 2, int(top1), 5, int(rowH)), red) >= 4);
        // Comfortable rows bring back a header and a row per attempt.
        TimelinePainter::Options o;
        o.density = LaneDensity::Comfortable;
        painter.setOptions(o);
        QVERIFY(!painter.layout().oneRow(0));
        QCOMPARE(painter.layout().blocks()[painter.layout().blockOfCall(0)].h,
                 double(painter.metrics().callHeader + 3 * painter.metrics().attemptHeight));
    }

    void deadlineLineInRange()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const QImage img = TimelinePainter::renderImage(model.store(), 1200, {});
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const double x = painter.axis(QRectF(0, 0, 1200, img.height())).timeToX(140 * ms);
        // The deadline of call 2 (20 ms + 120 ms) is drawn as a red dashed line in its lane.
        const QColor red(0xc6, 0x28, 0x28);
        QVERIFY(countColor(img, QRect(int(x) - 2, 0, 5, img.height()), red) > 10);
    }

    // Where retention cut is marked on the ruler, in the deadline red, at the end of the latest evicted call.
    void retentionCutMarked()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        const WireEvent open = opened(1);
        EventBatch b{open};
        for (int i = 0; i < 40; ++i) {
            // std::string(1, 'c') += ... rather than "c" + ...: the latter trips GCC 12's false -Wrestrict
            // (bug 105329).
            b.push_back(req(std::uint32_t(2 * i + 1), i * 10 * ms, std::nullopt,
                            std::string(1, 'c') += std::to_string(i), 5000 * ms));
            b.push_back(end(std::uint32_t(2 * i + 1), i * 10 * ms + 5 * ms, 0));
        }
        model.appendBatch(b);
        const QImage before = TimelinePainter::renderImage(model.store(), 1200, {});
        RetentionPolicy keep10;
        keep10.maxCalls = 10;
        model.setRetention(keep10);
        QVERIFY(model.store().evictedCalls() >= 30);
        TimelinePainter painter(&model.store());
        const qint64 lo = model.store().retentionCutNs() - 20 * ms, hi = painter.fullRange().second;
        painter.setRange(lo, hi);
        const QImage img = TimelinePainter::renderImage(model.store(), 1200, {}, 1.0, std::pair{lo, hi});
        const QColor red(0xc6, 0x28, 0x28);
        const double x =
            painter.axis(QRectF(0, 0, 1200, img.height())).timeToX(model.store().retentionCutNs());
        // The ruler (below the title) carries the red cut line and its label; before eviction there was none.
        QVERIFY(countColor(img, QRect(int(x) - 2, 0, 5, 70), red) >= 10);
        QVERIFY(countColor(before, QRect(0, 0, 1200, 70), red) == 0);
    }

    void hitTesting()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        // Comfortable rows, a row per attempt (compactRowGapsAndDeadline hit-tests one row).
        TimelinePainter painter(&model.store());
        TimelinePainter::Options comfortable;
        comfortable.density = LaneDensity::Comfortable;
        painter.setOptions(comfortable);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, 700);
        for (size_t k = 0; k < 3; ++k) {
            const QRectF bar = painter.attemptRect(0, k, rect);
            QVERIFY(!bar.isEmpty());
            const auto hit = painter.hitTest(bar.center(), rect);
            QCOMPARE(hit.kind, TimelinePainter::Hit::Attempt);
            QCOMPARE(hit.call, size_t(0));
            QCOMPARE(hit.attempt, k);
            // Over the label column, the whole row is the target.
            const auto label = painter.hitTest(QPointF(40, bar.center().y()), rect);
            QCOMPARE(label.kind, TimelinePainter::Hit::Attempt);
            QCOMPARE(label.attempt, k);
        }
        // Between the bars of one row is the backoff gap before its attempt; before the gap, nothing.
        const TimeAxis ax = painter.axis(rect);
        const QRectF second = painter.attemptRect(0, 1, rect);
        const auto gap = painter.hitTest(QPointF(ax.timeToX(37 * ms), second.center().y()), rect);
        QCOMPARE(gap.kind, TimelinePainter::Hit::Gap);
        QCOMPARE(gap.attempt, size_t(1));
        QCOMPARE(painter.hitTest(QPointF(ax.timeToX(5 * ms), second.center().y()), rect).kind,
                 TimelinePainter::Hit::None);
        QCOMPARE(painter.hitTest(QPointF(600, painter.attemptRect(0, 0, rect).top() - 20), rect).kind,
                 TimelinePainter::Hit::CallHeader);
        QCOMPARE(painter.hitTest(QPointF(600, 5), rect).kind, TimelinePainter::Hit::None); // the ruler
        // Scrolling moves the targets with the lanes.
        painter.setScrollY(40);
        const QRectF scrolled = painter.attemptRect(0, 0, rect);
        painter.setScrollY(0);
        QCOMPARE(painter.attemptRect(0, 0, rect).top() - 40, scrolled.top());
        // A filtered-out lane cannot be hit.
        TimelinePainter::Options o = comfortable;
        o.filter = LaneFilter::parse(QStringLiteral("status:deadline"));
        painter.setOptions(o);
        QVERIFY(painter.attemptRect(0, 0, rect).isEmpty());
        QCOMPARE(painter.hitTest(painter.attemptRect(1, 0, rect).center(), rect).call, size_t(1));
    }

    void gapBracketBetweenAttempts()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options comfortable;
        comfortable.density = LaneDensity::Comfortable;
        painter.setOptions(comfortable);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const QColor gap = TimelineTheme::light().gap;
        // The bracket of gap 1 runs along the middle of attempt 2's row, from the end of attempt 1 (12 ms) to
        // the start of attempt 2 (62 ms), with its ends as short vertical ticks.
        const QRectF bar2 = painter.attemptRect(0, 1, rect);
        const int cy = int(bar2.center().y());
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(37 * ms)) - 3, cy - 1, 7, 3), gap, 3));
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(12 * ms)) - 1, cy - 6, 3, 4), gap, 2));
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(62 * ms)) - 2, cy - 6, 3, 4), gap, 2));
        // ... and not beyond its ends.
        QVERIFY(!hasColor(img, QRect(int(ax.timeToX(5 * ms)), cy, 1, 1), gap));
    }

    void breakerSpanInItsColour()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b = scene();
        b.push_back(labEvent(30 * ms, "breaker", "closed -> open"));
        b.push_back(labEvent(100 * ms, "breaker", "open -> half-open"));
        b.push_back(labEvent(110 * ms, "breaker", "half-open -> closed"));
        b.push_back(labEvent(50 * ms, "fast-fail", "breaker open", "ff-1"));
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const TimelineTheme &th = TimelineTheme::light();
        const int bandMid = TimelinePainter::kRulerHeight + TimelinePainter::kBandHeight / 2;
        QCOMPARE(QColor(img.pixel(int(ax.timeToX(75 * ms)), bandMid)).rgb(), th.breakerOpen.rgb());
        QCOMPARE(QColor(img.pixel(int(ax.timeToX(20 * ms)), bandMid)).rgb(), th.breakerClosed.rgb());
        QCOMPARE(QColor(img.pixel(int(ax.timeToX(140 * ms)), bandMid)).rgb(), th.breakerClosed.rgb());
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(104 * ms)), bandMid - 2, 2, 4), th.breakerHalfOpen));
        // The fast failure is a red tick at the bottom of the band.
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(50 * ms)) - 1, bandMid, 3, 12), th.deadline, 3));
    }

    void connectionLaneMarkers()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b = scene();
        b.push_back(frame(0, 90 * ms, Direction::ServerToClient, FrameGoaway));
        WireEvent ack = frame(0, 120 * ms, Direction::ServerToClient, FramePing);
        ack.flags = FlagAck;
        ack.rttNs = 4 * ms;
        b.push_back(ack);
        b.push_back(frame(3, 64 * ms, Direction::ServerToClient, FrameRstStream, 7));
        std::stable_sort(b.begin(), b.end(),
                         [](const WireEvent &x, const WireEvent &y) { return x.tNs < y.tNs; });
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const TimelineTheme &th = TimelineTheme::light();
        const LaneBlock &lane = painter.layout().blocks()[0];
        QCOMPARE(lane.kind, LaneBlock::ConnectionLane);
        const int top = painter.headerHeight() + int(lane.y);
        const int h = int(lane.h);
        const int gx = int(std::floor(ax.timeToX(90 * ms)));
        QVERIFY(hasColor(img, QRect(gx, top + 2, 3, h - 4), th.goaway, h));
        QVERIFY(!hasColor(img, QRect(gx - 30, top + 2, 20, h - 4), th.goaway));
        const int px = int(std::floor(ax.timeToX(120 * ms)));
        QVERIFY(hasColor(img, QRect(px, top + h / 2, 1, h / 2), th.ping, 4));
        // The PING's round trip is drawn back from its ACK.
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(118 * ms)), top + h - 8, 1, 4), th.ping));
        QVERIFY(hasColor(img, QRect(int(std::floor(ax.timeToX(64 * ms))), top + 3, 2, h - 6), th.rst, 8));
        // The label says who it is, in plain colours: nothing went wrong on the wire.
        const QRect subtitle(10, top + h / 2, painter.labelWidth() - 14, h / 2 - 1);
        QVERIFY(!hasColor(img, subtitle, th.rst));

        // A peer that broke an HTTP/2 rule: the subtitle says so, in the error colour.
        WireEvent broken = testev::event(EventKind::Notice, 1, 0, 95 * ms);
        broken.about = ProtocolViolation{Direction::ServerToClient, "PING of 4 bytes, not 8", 6};
        broken.reason = describe(*broken.violation());
        model.appendBatch({broken});
        QVERIFY(model.store().connections()[0].protocolError());
        const QImage marked = render(painter, rect);
        QVERIFY(hasColor(marked, subtitle, th.rst, 5));
    }

    void attemptTimeoutMarkerAndTransparentRetry()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        const WireEvent open = opened(1);
        // Attempt 2 carries its own, shorter grpc-timeout (40 ms) than the call's deadline (1 s).
        model.appendBatch({open, req(1, 10 * ms, std::nullopt, "t-1", 1000 * ms), end(1, 20 * ms, 14),
                           req(3, 40 * ms, 1, "t-1", 40 * ms), end(3, 80 * ms, 4)});
        // A refused stream repeated without a higher grpc-previous-rpc-attempts: a transparent retry.
        WireEvent rst = frame(5, 110 * ms, Direction::ServerToClient, FrameRstStream, 7);
        model.appendBatch({req(5, 100 * ms, std::nullopt, "tr-1", 1000 * ms), rst,
                           req(7, 112 * ms, std::nullopt, "tr-1", 1000 * ms), end(7, 130 * ms, 0)});
        const Call &tr = model.store().calls()[1];
        QVERIFY(!tr.transparentRetry(0));
        QVERIFY(tr.transparentRetry(1));
        QVERIFY(!model.store().calls()[0].transparentRetry(1));

        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, 140 * ms);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const QRectF bar = painter.attemptRect(0, 1, rect);
        const int tx = int(ax.timeToX(80 * ms));
        QVERIFY(hasColor(img, QRect(tx - 1, int(bar.top()) - 5, 6, 4), TimelineTheme::light().deadline, 6));
        // The transparent retry's bar is hatched: OK green with white stripes.
        const QRectF tbar = painter.attemptRect(1, 1, rect);
        const QRect inner = tbar.toRect().adjusted(2, 2, -2, -2);
        QVERIFY(hasColor(img, inner, TimelinePainter::statusColor(tr.attempts[1]), 5));
        QVERIFY(countColor(img, inner, TimelinePainter::statusColor(tr.attempts[1])) <
                inner.width() * inner.height());
    }

    void policyMarkersOnLanesAndBand()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b = scene();
        b.push_back(labEvent(15 * ms, "hedge-fired", "after 5 ms", "retry-basic-1"));
        b.push_back(labEvent(25 * ms, "bulkhead-rejected", "3 in flight", "never-sent"));
        model.appendBatch(b);
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const QColor marker = TimelineTheme::light().labMarker;
        // The bulkhead rejection never reached the wire: it goes on the policy band below the ruler.
        QVERIFY(hasColor(img,
                         QRect(int(ax.timeToX(25 * ms)) - 3, TimelinePainter::kRulerHeight, 7,
                               TimelinePainter::kBandHeight),
                         marker, 5));
        // The hedge is on its call's lane.
        const double laneTop = painter.headerHeight() + painter.laneY(0);
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(15 * ms)) - 3, int(laneTop), 7, 140), marker, 5));
        // Both can be pointed at (their tooltips say what they are).
        const auto band =
            painter.hitTest(QPointF(ax.timeToX(25 * ms) + 2,
                                    TimelinePainter::kRulerHeight + TimelinePainter::kBandHeight / 2),
                            rect);
        QCOMPARE(band.kind, TimelinePainter::Hit::LabEvent);
        QCOMPARE(band.labEvent->kind, std::string("bulkhead-rejected"));
        const auto lane = painter.hitTest(
            QPointF(ax.timeToX(15 * ms), laneTop + TimelinePainter::kCallHeaderHeight + 6), rect);
        QCOMPARE(lane.kind, TimelinePainter::Hit::LabEvent);
        QCOMPARE(lane.labEvent->detail, std::string("after 5 ms"));
    }

    void highDpiCachedPaintMatches()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 900, 500);
        // At a device pixel ratio of 2 the cached image has twice the pixels, and the bar lands where paint()
        // puts it.
        QImage screen(QSize(1800, 1000), QImage::Format_ARGB32_Premultiplied);
        screen.setDevicePixelRatio(2.0);
        {
            QPainter p(&screen);
            painter.paintCached(&p, rect, 2.0);
        }
        const QRectF bar = painter.attemptRect(0, 2, rect);
        QCOMPARE(QColor(screen.pixel(int(bar.right() * 2) - 4, int(bar.top() * 2) + 3)).rgb(),
                 TimelinePainter::statusColor(model.store().calls()[0].attempts[2]).rgb());
    }

    void phasesAndFrameTicksWhenZoomedIn()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        const WireEvent open = opened(1);
        WireEvent respHeaders = headers(1, 40 * ms, Direction::ServerToClient);
        WireEvent trailerFrame = frame(1, 80 * ms, Direction::ServerToClient, FrameHeaders);
        trailerFrame.flags = FlagEndStream | FlagEndHeaders;
        // Request headers and message by 20 ms, the server works until 40 ms, responds until 80 ms.
        model.appendBatch({open, frame(1, 0, Direction::ClientToServer, FrameHeaders),
                           req(1, 0, std::nullopt, "p-1", 1000 * ms),
                           frame(1, 20 * ms, Direction::ClientToServer, FrameData),
                           frame(1, 40 * ms, Direction::ServerToClient, FrameHeaders), respHeaders,
                           frame(1, 60 * ms, Direction::ServerToClient, FrameData), trailerFrame,
                           end(1, 80 * ms, 0)});
        TimelinePainter painter(&model.store());
        painter.setRange(-5 * ms, 85 * ms);
        const QRectF rect(0, 0, 1200, painter.contentHeight());
        const QImage img = render(painter, rect);
        const TimeAxis ax = painter.axis(rect);
        const TimelineTheme &th = TimelineTheme::light();
        const QRectF bar = painter.attemptRect(0, 0, rect);
        const int stripY = int(bar.bottom()) - 2;
        QCOMPARE(QColor(img.pixel(int(ax.timeToX(10 * ms)), stripY)).rgb(), th.phaseRequest.rgb());
        QCOMPARE(QColor(img.pixel(int(ax.timeToX(70 * ms)), stripY)).rgb(), th.phaseResponse.rgb());
        // Server working: the status colour lightened, neither request nor response.
        const QRgb working = img.pixel(int(ax.timeToX(30 * ms)), stripY);
        QVERIFY(working != th.phaseRequest.rgb() && working != th.phaseResponse.rgb());
        QVERIFY(working != TimelinePainter::statusColor(model.store().calls()[0].attempts[0]).rgb());
        // Frame ticks: the request's above the bar, the response's below it.
        QVERIFY(hasColor(img, QRect(int(ax.timeToX(20 * ms)) - 1, int(bar.top()) - 4, 3, 3), th.frameTick));
        QVERIFY(
            hasColor(img, QRect(int(ax.timeToX(60 * ms)) - 1, int(bar.bottom()) + 1, 3, 3), th.frameTick));
        QVERIFY(
            !hasColor(img, QRect(int(ax.timeToX(50 * ms)) - 1, int(bar.bottom()) + 1, 3, 3), th.frameTick));
    }
};

QTEST_MAIN(TestTimelinePainter)
#include "tst_timelinepainter.moc"
