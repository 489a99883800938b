// The swimlane widget: zoom, pan, fit, live follow, selection, folding, and following retention.
#include "renderfixture.h"
#include "swimlaneview.h"

#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

class TestSwimlaneView : public QObject
{
    Q_OBJECT
private slots:
    // Workshop type on a projector-sized window: the label column gives way so the time axis keeps two
    // thirds of the width; on a wide window, and in normal type, it is the default again.
    void labelColumnGivesWayToLargeType()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(rendertest::scene());
        SwimlaneView view(&model);
        view.resize(1280, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const int normal = view.timelinePainter().metrics().labelWidth;
        view.setWorkshop(true);
        const LaneMetrics &m = view.timelinePainter().metrics();
        QVERIFY2(
            m.labelWidth <= view.canvas().width() / 3 + 1,
            qPrintable(QStringLiteral("labels %1 px of %2").arg(m.labelWidth).arg(view.canvas().width())));
        QVERIFY(m.labelWidth >= int(TimelinePainter::kMinLabelWidth * TimelinePainter::kWorkshopScale) - 1);
        view.resize(3000, 700);
        QCOMPARE(view.timelinePainter().metrics().labelWidth,
                 LaneMetrics::scaled(TimelinePainter::kWorkshopScale).labelWidth);
        view.setWorkshop(false);
        view.resize(1280, 700);
        QCOMPARE(view.timelinePainter().metrics().labelWidth, normal);
    }

    // Retention evicting calls under a live view: the view follows each eviction without rebuilding, and what
    // it then shows - lanes, ranges, connection marks, selection - is exactly what a view built afresh on the
    // same store shows. A pinned call and one still in flight stay among the evicted ones.
    void viewFollowsEviction()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        const WireEvent open = opened(1);
        auto frame = [](std::uint8_t type, std::uint32_t stream, std::int64_t t) {
            return testev::frame(1, stream, t, Direction::ClientToServer, type, 0, 10);
        };
        // A call still in flight through every eviction.
        model.appendBatch({open, req(1, 0, std::nullopt, "long", 100000 * ms), frame(FrameHeaders, 1, 0)});
        RetentionPolicy policy;
        policy.maxCalls = 60;
        model.setRetention(policy);
        QImage img(view.size(), QImage::Format_ARGB32_Premultiplied);
        std::uint32_t stream = 3;
        QSignalSpy evictions(&model, &TimelineModel::callsEvicted);
        for (int batch = 0; batch < 30; ++batch) {
            EventBatch b;
            b.push_back(frame(FrameSettings, 0, batch * 100 * ms)); // a mark on the connection lane
            for (int i = 0; i < 10; ++i) {
                const int n = batch * 10 + i;
                const std::int64_t t = batch * 100 * ms + i * 9 * ms;
                const std::string id = "c" + std::to_string(n);
                b.push_back(frame(FrameHeaders, stream, t));
                b.push_back(req(stream, t, std::nullopt, id, 500 * ms));
                b.push_back(frame(FrameData, stream, t + ms));
                b.push_back(end(stream, t + 2 * ms, 14));
                stream += 2;
                if (n % 3 == 0) { // a retry
                    b.push_back(frame(FrameHeaders, stream, t + 5 * ms));
                    b.push_back(req(stream, t + 5 * ms, 1, id, 495 * ms));
                    b.push_back(end(stream, t + 7 * ms, 0));
                    stream += 2;
                }
            }
            model.appendBatch(b);
            if (batch == 1) {
                // Pin c12 and select an attempt of c19: both must be followed up the list.
                model.setPinned(int(*model.store().callIndex("c12")), true);
                view.selectAttempt(int(*model.store().callIndex("c18")), 1);
            }
            view.render(&img); // paints (and so brings the view's caches up to date) after every batch
        }
        QVERIFY(evictions.count() >= 10);
        QVERIFY(model.store().evictedCalls() > 200);
        QVERIFY(model.store().callIndex("long"));
        QVERIFY(model.store().callIndex("c12"));
        QVERIFY(!model.store().callIndex("c0"));
        QVERIFY(!model.store().callIndex("c18")); // evicted with the selection on it
        QVERIFY(!view.selectedAttempt());

        // A selection on a call that stays moves up with it.
        view.selectAttempt(int(*model.store().callIndex("c295")), 0);
        for (int batch = 30; batch < 33; ++batch) {
            EventBatch b;
            for (int i = 0; i < 10; ++i) {
                const int n = batch * 10 + i;
                const std::int64_t t = batch * 100 * ms + i * 9 * ms;
                b.push_back(req(stream, t, std::nullopt, "c" + std::to_string(n), 500 * ms));
                b.push_back(end(stream, t + 2 * ms, 0));
                stream += 2;
            }
            model.appendBatch(b);
            view.render(&img);
        }
        QVERIFY(view.selectedAttempt());
        QCOMPARE(model.store().calls()[view.selectedAttempt()->first].key, std::string("c295"));
        view.selectAttempt(-1, -1);
        view.render(&img);

        // The followed view shows exactly what a view built afresh on the same store shows.
        SwimlaneView fresh(&model);
        fresh.resize(view.size());
        // Not the rates strip: the followed view still counts the evicted calls there, a fresh one cannot.
        view.setRates(false);
        fresh.setRates(false);
        // Nor the legend's room, which is for what each view has drawn.
        view.timelinePainter().setLegendRoomFromPaints(false);
        fresh.timelinePainter().setLegendRoomFromPaints(false);
        TimelinePainter rebuilt(&model.store());
        const auto range = rebuilt.fullRange();
        view.setRange(range.first, range.second);
        fresh.setRange(range.first, range.second);
        QImage freshImg(fresh.size(), QImage::Format_ARGB32_Premultiplied);
        view.render(&img);
        fresh.render(&freshImg);
        QCOMPARE(img, freshImg);
        // The survivors lead: the in-flight call and the pinned one, then the rest in order.
        const auto &blocks = rebuilt.layout().blocks();
        QCOMPARE(int(blocks.size()), int(model.store().calls().size()) + 1); // + the connection lane
        QCOMPARE(model.store().calls()[0].key, std::string("long"));
        QCOMPARE(model.store().calls()[1].key, std::string("c12"));
    }

    // Nested by chain: calls made while serving another follow it, indented; double-clicking its header folds
    // them away and back.
    void chainNestingFolds()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        EventBatch b;
        for (std::uint32_t c = 1; c <= 3; ++c) {
            const WireEvent open = opened(c);
            b.push_back(open);
        }
        auto hop = [](std::uint32_t conn, std::int64_t t0, std::int64_t t1, const std::string &id,
                      const char *span) {
            WireEvent r = req(1, t0, std::nullopt, id, 500 * ms);
            r.connection = conn;
            r.grpc.traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
            r.grpc.parentSpanId = span;
            WireEvent e = end(1, t1, 0);
            e.connection = conn;
            return EventBatch{r, e};
        };
        for (const auto &part : {hop(1, 10 * ms, 100 * ms, "A", "00f067aa0ba902b7"),
                                 hop(2, 20 * ms, 90 * ms, "B", "00f067aa0ba902b8"),
                                 hop(3, 30 * ms, 80 * ms, "C", "00f067aa0ba902b9")})
            b.insert(b.end(), part.begin(), part.end());
        // An unrelated call that starts between them.
        b.push_back(req(3, 25 * ms, std::nullopt, "other", 500 * ms));
        b.push_back(end(3, 26 * ms, 0));
        model.appendBatch(b);
        QCOMPARE(model.store().nestingDepth(2), 2);

        SwimlaneView view(&model);
        view.resize(1200, 500);
        view.setGrouping(LaneGrouping::Chain);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        // Lanes in chain order: A, B, C (nested), then the unrelated call.
        auto order = [&] {
            std::vector<std::string> keys;
            for (int y = 0; y < view.height(); ++y) {
                const auto hit = view.timelinePainter().hitTest(QPointF(20, y), view.canvas());
                if (hit.kind == TimelinePainter::Hit::CallHeader &&
                    (keys.empty() || keys.back() != model.store().calls()[hit.call].key))
                    keys.push_back(model.store().calls()[hit.call].key);
            }
            return keys;
        };
        QCOMPARE(order(), (std::vector<std::string>{"A", "B", "C", "other"}));
        // Fold A: B and C go, the unrelated call stays; unfold again.
        int headerY = -1;
        for (int y = 0; y < view.height() && headerY < 0; ++y)
            if (view.timelinePainter().hitTest(QPointF(20, y), view.canvas()).kind ==
                TimelinePainter::Hit::CallHeader)
                headerY = y;
        QVERIFY(headerY >= 0);
        QTest::mouseDClick(&view, Qt::LeftButton, {}, QPoint(20, headerY + 2));
        QTRY_COMPARE(order(), (std::vector<std::string>{"A", "other"}));
        QTest::mouseDClick(&view, Qt::LeftButton, {}, QPoint(20, headerY + 2));
        QTRY_COMPARE(order(), (std::vector<std::string>{"A", "B", "C", "other"}));
    }

    void widgetZoomPanFit()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1000, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        model.appendBatch(scene());
        QVERIFY(view.followsLive());
        const qint64 span = view.timelinePainter().rangeEnd() - view.timelinePainter().rangeStart();

        // Ctrl+wheel up zooms in around the cursor and leaves follow mode.
        const QPointF at(600, 200);
        const qint64 anchor = view.timelinePainter().axis(view.canvas()).xToTime(at.x());
        QWheelEvent wheel(at, view.mapToGlobal(at), {}, {0, 120}, Qt::NoButton, Qt::ControlModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(&view, &wheel);
        const qint64 zoomed = view.timelinePainter().rangeEnd() - view.timelinePainter().rangeStart();
        QVERIFY(zoomed < span);
        QVERIFY(!view.followsLive());
        QVERIFY(std::abs(view.timelinePainter().axis(view.canvas()).xToTime(at.x()) - anchor) < zoomed / 500);

        // Dragging right moves the range to earlier times.
        const qint64 before = view.timelinePainter().rangeStart();
        QTest::mousePress(&view, Qt::LeftButton, {}, QPoint(500, 200));
        QTest::mouseMove(&view, QPoint(600, 200));
        QTest::mouseRelease(&view, Qt::LeftButton, {}, QPoint(600, 200));
        QVERIFY(view.timelinePainter().rangeStart() < before);

        // F fits again and resumes following.
        QTest::keyClick(&view, Qt::Key_F);
        QVERIFY(view.followsLive());
        QCOMPARE(view.timelinePainter().rangeEnd() - view.timelinePainter().rangeStart(), span);

        const QImage shot = view.grab().toImage();
        QVERIFY(countColor(shot, shot.rect(),
                           TimelinePainter::statusColor(model.store().calls()[0].attempts[2])) > 10);
    }

    void zoomControlSignals()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1000, 500);
        // Comfortable rows: taller than the view, so the scroll bar shows.
        view.setDensity(LaneDensity::Comfortable);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QSignalSpy range(&view, &SwimlaneView::rangeChanged);
        QSignalSpy follow(&view, &SwimlaneView::followChanged);
        QSignalSpy selected(&view, &SwimlaneView::attemptSelected);
        model.appendBatch(scene());
        QCOMPARE(range.count(), 1); // following: the new data widened the range
        const auto [lo, hi] = view.timelinePainter().fullRange();
        QCOMPARE(range.last().at(0).toLongLong(), lo);
        QCOMPARE(range.last().at(1).toLongLong(), hi);

        // Rubber band (right-drag) zooms to exactly the dragged span and stops following.
        const TimeAxis ax = view.timelinePainter().axis(view.canvas());
        const qint64 t1 = ax.xToTime(400), t2 = ax.xToTime(700);
        QTest::mousePress(&view, Qt::RightButton, {}, QPoint(400, 300));
        QTest::mouseMove(&view, QPoint(550, 300));
        QTest::mouseMove(&view, QPoint(700, 300));
        QTest::mouseRelease(&view, Qt::RightButton, {}, QPoint(700, 300));
        QCOMPARE(range.count(), 2);
        QCOMPARE(range.last().at(0).toLongLong(), t1);
        QCOMPARE(range.last().at(1).toLongLong(), t2);
        QCOMPARE(follow.count(), 1);
        QCOMPARE(follow.last().at(0).toBool(), false);

        // Home keeps the zoom and goes to the start; F fits again; L follows live at the current zoom.
        QTest::keyClick(&view, Qt::Key_Home);
        QCOMPARE(range.last().at(0).toLongLong(), lo);
        QCOMPARE(range.last().at(1).toLongLong() - range.last().at(0).toLongLong(), t2 - t1);
        QTest::keyClick(&view, Qt::Key_End);
        QCOMPARE(range.last().at(1).toLongLong(), hi);
        QTest::keyClick(&view, Qt::Key_F);
        QCOMPARE(follow.last().at(0).toBool(), true);
        QCOMPARE(range.last().at(1).toLongLong() - range.last().at(0).toLongLong(), hi - lo);
        QTest::keyClick(&view, Qt::Key_Minus);
        QVERIFY(!view.followsLive());
        QTest::keyClick(&view, Qt::Key_L);
        QVERIFY(view.isLive());
        QCOMPARE(follow.last().at(0).toBool(), true);
        const int before = range.count();
        model.appendBatch({req(9, 400 * ms, std::nullopt, "late-1", 1000 * ms), end(9, 410 * ms, 0)});
        QVERIFY(range.count() > before);
        QVERIFY(range.last().at(1).toLongLong() > 410 * ms); // the newest call is in view
        QTest::keyClick(&view, Qt::Key_L);
        QVERIFY(!view.followsLive());

        // A click on a bar selects that attempt; a click on empty space clears the selection.
        QTest::keyClick(&view, Qt::Key_F);
        const QRectF bar = view.timelinePainter().attemptRect(0, 2, view.canvas());
        QTest::mouseClick(&view, Qt::LeftButton, {}, bar.center().toPoint());
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.last().at(0).toInt(), 0);
        QCOMPARE(selected.last().at(1).toInt(), 2);
        QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(600, 10));
        QCOMPARE(selected.last().at(0).toInt(), -1);

        // Taller content than the widget: a scroll bar appears beside the lanes, and the painter leaves it
        // room.
        view.resize(1000, 250);
        QCoreApplication::processEvents();
        QVERIFY(view.canvas().width() < 1000);
        QTest::keyClick(&view, Qt::Key_Down);
        QVERIFY(view.timelinePainter().scrollY() > 0);
        QVERIFY(view.connectionToolTip(0).contains(QStringLiteral("connection 1")));

        // The filter field's text reaches the painter's lanes.
        view.setFilterText(QStringLiteral("status:deadline"));
        QCOMPARE(view.timelinePainter().layout().callLanes(), size_t(1));
        view.setFilterText(QString());
        QCOMPARE(view.timelinePainter().layout().callLanes(), size_t(3));

        const QString tip = view.attemptToolTip(0, 0);
        QVERIFY(tip.contains(QStringLiteral("attempt 1 of 3")));
        QVERIFY(tip.contains(QStringLiteral("UNAVAILABLE")));
        QVERIFY(tip.contains(QStringLiteral("grpc-timeout 5.000 s")));
    }
};

QTEST_MAIN(TestSwimlaneView)
#include "tst_swimlaneview.moc"
