#include "attemptinspector.h"
#include "headerlog.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"
#include "wireevents.h"

#include <QPainter>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QXmlStreamReader>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

// A connection with no addresses, opened at 0.
WireEvent opened(std::uint32_t conn)
{
    return testev::event(EventKind::ConnectionOpened, conn, 0, 0);
}

WireEvent headers(std::uint32_t stream, std::int64_t t, Direction dir)
{
    return testev::event(EventKind::Headers, 1, stream, t, dir);
}

WireEvent req(std::uint32_t stream, std::int64_t t, std::optional<int> prev, const std::string &id,
              std::int64_t timeout)
{
    WireEvent e = headers(stream, t, Direction::ClientToServer);
    e.grpc.path = "/rpcscope.lab.Lab/Call";
    e.grpc.previousAttempts = prev;
    e.grpc.callId = id;
    e.grpc.timeoutNs = timeout;
    return e;
}

WireEvent end(std::uint32_t stream, std::int64_t t, int status)
{
    WireEvent e = headers(stream, t, Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

// retry-basic plus a second call that runs into its 120 ms deadline, so a deadline line is in range.
EventBatch scene()
{
    return {opened(1),
            req(1, 10 * ms, std::nullopt, "retry-basic-1", 5000 * ms),
            end(1, 12 * ms, 14),
            req(3, 62 * ms, 1, "retry-basic-1", 4940 * ms),
            end(3, 64 * ms, 14),
            req(5, 160 * ms, 2, "retry-basic-1", 4840 * ms),
            end(5, 170 * ms, 0),
            req(7, 20 * ms, std::nullopt, "deadline-1", 120 * ms),
            end(7, 140 * ms, 4)};
}

int countColor(const QImage &img, const QRect &r, QColor c)
{
    int n = 0;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            n += QColor(img.pixel(x, y)).rgb() == c.rgb();
    return n;
}

int countDark(const QImage &img, const QRect &r)
{
    int n = 0;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            n += qGray(img.pixel(x, y)) < 140;
    return n;
}

WireEvent frame(std::uint32_t stream, std::int64_t t, Direction dir, std::uint8_t type,
                std::uint32_t value = 0)
{
    return testev::frame(1, stream, t, dir, type, value);
}

WireEvent labEvent(std::int64_t t, const std::string &kind, const std::string &detail,
                   const std::string &call = {})
{
    WireEvent e;
    e.kind = EventKind::LabEvent;
    e.tNs = t;
    e.text = kind;
    e.text2 = detail;
    e.grpc.callId = call;
    return e;
}

QImage render(TimelinePainter &painter, const QRectF &rect)
{
    QImage img(rect.size().toSize(), QImage::Format_RGB32);
    img.fill(Qt::white);
    QPainter p(&img);
    painter.paint(&p, rect);
    return img;
}

// The fraction of pixels of colour c in r (exact match).
bool hasColor(const QImage &img, const QRect &r, QColor c, int atLeast = 1)
{
    return countColor(img, r, c) >= atLeast;
}
} // namespace

class TestRender : public QObject
{
    Q_OBJECT
private slots:
    void gapLabelsAndColours()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const Call &call = model.store().calls()[0];

        TimelinePainter painter(&model.store());
        painter.setOptions({QStringLiteral("test"), true});
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
            // std::string(1, 'c') += ... rather than "c" + ...: the latter trips GCC 12's false -Wrestrict (bug 105329).
            b.push_back(req(std::uint32_t(2 * i + 1), i * 10 * ms, std::nullopt, std::string(1, 'c') += std::to_string(i),
                            5000 * ms));
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
        const double x = painter.axis(QRectF(0, 0, 1200, img.height())).timeToX(model.store().retentionCutNs());
        // The ruler (below the title) carries the red cut line and its label; before eviction there was none.
        QVERIFY(countColor(img, QRect(int(x) - 2, 0, 5, 70), red) >= 10);
        QVERIFY(countColor(before, QRect(0, 0, 1200, 70), red) == 0);
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
        auto hop = [](std::uint32_t conn, std::int64_t t0, std::int64_t t1, const std::string &id, const char *span) {
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
            if (view.timelinePainter().hitTest(QPointF(20, y), view.canvas()).kind == TimelinePainter::Hit::CallHeader)
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

        // Wheel up zooms in around the cursor and leaves follow mode.
        const QPointF at(600, 200);
        const qint64 anchor = view.timelinePainter().axis(view.canvas()).xToTime(at.x());
        QWheelEvent wheel(at, view.mapToGlobal(at), {}, {0, 120}, Qt::NoButton, Qt::NoModifier,
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

    void timeAxisRoundTrip()
    {
        const TimeAxis ax{1'000'000, 2500.0, 230};
        QCOMPARE(ax.timeToX(1'000'000), 230.0);
        QVERIFY(std::abs(ax.xToTime(ax.timeToX(123'456'789)) - 123'456'789) <= 1);
        QCOMPARE(ax.xToTime(230 + 4), qint64(1'010'000));
        QCOMPARE(formatTick(40'000'000, 20'000'000), QStringLiteral("40 ms"));
        QCOMPARE(formatTick(1'200'000'000, 200'000'000), QStringLiteral("1.2 s"));
        QCOMPARE(formatTick(300'000'000, 100'000'000), QStringLiteral("300 ms"));
        QCOMPARE(formatTick(2'500'000, 500'000), QStringLiteral("2.5 ms"));
        QCOMPARE(formatTick(7'000, 1'000), QStringLiteral("7 µs"));
        QCOMPARE(ax.tickStepNs(100), qint64(500'000));                        // 250 µs raw -> 500 µs
        QCOMPARE(TimeAxis({0, 1e6, 0}).tickStepNs(110), qint64(200'000'000)); // 110 ms raw -> 200 ms
    }

    void layoutBinarySearchAndFilter()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const LaneMetrics m = LaneMetrics::scaled(1.0);
        TimelineLayout layout;
        layout.build(model.store(), LaneGrouping::None, {}, m, true);
        // One connection lane, then the two calls in start order.
        QCOMPARE(int(layout.blocks().size()), 3);
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::ConnectionLane);
        QCOMPARE(layout.blocks()[1].kind, LaneBlock::CallLane);
        QCOMPARE(layout.callLanes(), size_t(2));
        const LaneBlock &second = layout.blocks()[2];
        QCOMPARE(second.h, double(m.callHeader + m.attemptHeight));
        QCOMPARE(layout.blockAt(second.y + 1), size_t(2));
        QCOMPARE(layout.firstVisible(second.y - 1), size_t(2)); // in the spacing above it
        QCOMPARE(layout.firstVisible(layout.height() + 100), layout.blocks().size());
        QCOMPARE(layout.blockOfCall(1), size_t(2));

        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("status:deadline")),
                     m, false);
        QCOMPARE(layout.callLanes(), size_t(1));
        QCOMPARE(layout.blocks()[0].index, 1u);
        QCOMPARE(layout.blockOfCall(0), layout.blocks().size());
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("status:failed")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(1));
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("retry-basic")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(1));
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("method:Nope")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(0));

        layout.build(model.store(), LaneGrouping::Method, {}, m, true);
        QCOMPARE(int(layout.groups().size()), 1);
        QCOMPARE(layout.groups()[0].calls, size_t(2));
        QCOMPARE(layout.groups()[0].failed, size_t(1));
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::GroupHeader);
        layout.build(model.store(), LaneGrouping::Connection, {}, m, true);
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::ConnectionLane); // the connection heads its calls
        QCOMPARE(layout.callLanes(), size_t(2));

        const LaneFilter f = LaneFilter::parse(QStringLiteral("method:Call status:OK slow path"));
        QCOMPARE(f.method, QStringLiteral("Call"));
        QCOMPARE(f.status, QStringLiteral("OK"));
        QCOMPARE(f.text, QStringLiteral("slow path"));
    }

    void hitTesting()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
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
        // Between the bars of one row (in the gap) there is nothing to hit.
        const TimeAxis ax = painter.axis(rect);
        const QRectF second = painter.attemptRect(0, 1, rect);
        QCOMPARE(painter.hitTest(QPointF(ax.timeToX(37 * ms), second.center().y()), rect).kind,
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
        TimelinePainter::Options o;
        o.filter = LaneFilter::parse(QStringLiteral("status:deadline"));
        painter.setOptions(o);
        QVERIFY(painter.attemptRect(0, 0, rect).isEmpty());
        QCOMPARE(painter.hitTest(painter.attemptRect(1, 0, rect).center(), rect).call, size_t(1));
    }

    void zoomControlSignals()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1000, 500);
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

    void gapBracketBetweenAttempts()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
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
        broken.text = "protocol error by the server: PING of 4 bytes, not 8 (FRAME_SIZE_ERROR)";
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

    void exportSizesAndSvg()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter::Options o;
        o.title = QStringLiteral("export test");
        const QImage one = TimelinePainter::renderImage(model.store(), 800, o, 1.0);
        const QImage two = TimelinePainter::renderImage(model.store(), 800, o, 2.0);
        QCOMPARE(one.width(), 800);
        QCOMPARE(two.width(), 1600);
        QCOMPARE(two.height(), one.height() * 2);
        QCOMPARE(two.devicePixelRatio(), 2.0);
        // Exports always carry the title, time range and legend.
        TimelinePainter check(&model.store());
        TimelinePainter::Options withLegend = o;
        withLegend.legend = true;
        check.setOptions(withLegend);
        QCOMPARE(one.height(), check.contentHeight(800) + 8);
        // The visible range only: the same size, another time span in the title.
        const QImage part =
            TimelinePainter::renderImage(model.store(), 800, o, 1.0, std::pair{0 * ms, 70 * ms});
        QCOMPARE(part.size(), one.size());
        QVERIFY(part != one);

        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("t.svg"));
        QVERIFY(TimelinePainter::renderSvg(model.store(), 1000, o, file));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray svg = f.readAll();
        QXmlStreamReader xml(svg);
        int elements = 0;
        while (!xml.atEnd())
            if (xml.readNext() == QXmlStreamReader::StartElement) ++elements;
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY(elements > 50);
        for (const char *label : {"export test", "retry-basic-1", "backoff 50.0 ms", "deadline +120.0 ms",
                                  "UNAVAILABLE", "call deadline", "from capture start"})
            QVERIFY2(svg.contains(label), label);
    }

    void themesAndWorkshop()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        const int normal = [&] {
            painter.setOptions(o);
            return painter.contentHeight();
        }();
        o.workshop = true;
        o.dark = true;
        painter.setOptions(o);
        QVERIFY(painter.contentHeight() > normal * 3 / 2);
        QVERIFY(painter.labelWidth() > TimelinePainter::kLabelWidth);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1400, painter.contentHeight());
        const QImage img = render(painter, rect);
        QCOMPARE(QColor(img.pixel(int(rect.width()) - 3, int(rect.height()) - 3)).rgb(),
                 TimelineTheme::dark().background.rgb());
        // Bars are thicker: the OK bar of attempt 3 is at least 24 px tall.
        const QRectF bar = painter.attemptRect(0, 2, rect);
        QVERIFY(bar.height() >= 24);
        QCOMPARE(QColor(img.pixel(int(bar.right()) - 3, int(bar.top()) + 2)).rgb(),
                 TimelinePainter::statusColor(model.store().calls()[0].attempts[2]).rgb());
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

    void inspectorShowsHeadersAndFrames()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        HeaderLog log;
        const WireEvent open = opened(1);
        WireEvent r = req(1, 10 * ms, std::nullopt, "i-1", 500 * ms);
        r.headers = {
            {":path", "/rpcscope.lab.Lab/Call"}, {"grpc-timeout", "500m"}, {"rpcscope-call-id", "i-1"}};
        WireEvent t = end(1, 20 * ms, 14);
        t.headers = {{"grpc-status", "14"}, {"grpc-message", "down"}};
        const EventBatch b{open, frame(1, 10 * ms, Direction::ClientToServer, FrameHeaders), r,
                           frame(1, 20 * ms, Direction::ServerToClient, FrameHeaders), t};
        log.record(b);
        model.appendBatch(b);
        AttemptInspector inspector(&model.store(), &log);
        inspector.showAttempt(0, 0);
        QTreeWidget *tree = inspector.tree();
        auto find = [&](const QString &text) {
            return !tree->findItems(text, Qt::MatchStartsWith | Qt::MatchRecursive, 0).isEmpty();
        };
        QVERIFY(find(QStringLiteral("Request headers")));
        QVERIFY(find(QStringLiteral("Trailers-Only response")));
        QVERIFY(find(QStringLiteral("rpcscope-call-id")));
        QVERIFY(find(QStringLiteral("grpc-status")));
        QVERIFY(find(QStringLiteral("Frames (2")));
        QVERIFY(find(QStringLiteral("duration")));
        inspector.showAttempt(-1, -1);
        QCOMPARE(tree->topLevelItemCount(), 0);

        // The log forgets the oldest streams first.
        HeaderLog small(1);
        small.record(b);
        WireEvent other = r;
        other.stream = 3;
        small.record({other});
        QVERIFY(!small.blocks(1, 1));
        QVERIFY(small.blocks(1, 3));
    }

    // A stream above a GOAWAY's last-stream-id: the inspector says the server never processed it.
    void inspectorShowsARefusedStream()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        WireEvent goaway = frame(0, 12 * ms, Direction::ServerToClient, FrameGoaway);
        goaway.lastStreamId = 0;
        model.appendBatch({opened(1), req(1, 10 * ms, std::nullopt, "g-1", 500 * ms), goaway});
        AttemptInspector inspector(&model.store(), nullptr);
        inspector.showAttempt(0, 0);
        const auto rows = inspector.tree()->findItems(QStringLiteral("GOAWAY"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rows.size(), 1);
        QVERIFY2(rows[0]->text(1).startsWith(QStringLiteral("not processed")), qPrintable(rows[0]->text(1)));
        QVERIFY2(rows[0]->text(1).endsWith(QStringLiteral("NO_ERROR (0)")), qPrintable(rows[0]->text(1)));
        QVERIFY(inspector.tree()
                    ->findItems(QStringLiteral("RST_STREAM"), Qt::MatchExactly | Qt::MatchRecursive, 0)
                    .isEmpty());
    }

    void incrementalCachesMatchRebuild()
    {
        // The widget's painter follows each batch from the calls it touched; a fresh painter rebuilds from
        // every call. Both must draw the same picture, including a call that gains attempts in a later batch.
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        const EventBatch all = scene();
        const std::vector<EventBatch> batches = {{all[0], all[1], all[2], all[7]},
                                                 {all[3]},
                                                 {all[4], all[5]},
                                                 {all[6], all[8]},
                                                 {req(9, 400 * ms, std::nullopt, "late-1", 1000 * ms)},
                                                 {end(9, 410 * ms, 0)}};
        for (const EventBatch &b : batches) {
            model.appendBatch(b);
            TimelinePainter fresh(&model.store());
            TimelinePainter &live = view.timelinePainter();
            QCOMPARE(live.fullRange(), fresh.fullRange());
            fresh.setOptions(live.options());
            fresh.setRange(live.rangeStart(), live.rangeEnd());
            QCOMPARE(live.layout().blocks().size(), fresh.layout().blocks().size());
            for (size_t i = 0; i < fresh.layout().blocks().size(); ++i) {
                QCOMPARE(live.layout().blocks()[i].y, fresh.layout().blocks()[i].y);
                QCOMPARE(live.layout().blocks()[i].h, fresh.layout().blocks()[i].h);
            }
            const QRectF rect(0, 0, 1200, 700);
            QCOMPARE(render(live, rect), render(fresh, rect));
        }
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

QTEST_MAIN(TestRender)
#include "tst_render.moc"
