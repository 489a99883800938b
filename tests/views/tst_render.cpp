#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QPainter>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

WireEvent headers(std::uint32_t stream, std::int64_t t, Direction dir)
{
    WireEvent e;
    e.kind = EventKind::Headers;
    e.connection = 1;
    e.stream = stream;
    e.tNs = t;
    e.dir = dir;
    return e;
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
    WireEvent open;
    open.kind = EventKind::ConnectionOpened;
    open.connection = 1;
    return {open,
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

        // Status colours where the bars are: attempt 3 is OK, attempt 1 UNAVAILABLE, call 2 DEADLINE_EXCEEDED.
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
        QCOMPARE(countColor(img, QRect(0, 60, img.width(), int(rect.height()) - 100), TimelinePainter::statusColor(open)),
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
        const qint64 anchor = view.timelinePainter().axis(view.rect()).xToTime(at.x());
        QWheelEvent wheel(at, view.mapToGlobal(at), {}, {0, 120}, Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(&view, &wheel);
        const qint64 zoomed = view.timelinePainter().rangeEnd() - view.timelinePainter().rangeStart();
        QVERIFY(zoomed < span);
        QVERIFY(!view.followsLive());
        QVERIFY(std::abs(view.timelinePainter().axis(view.rect()).xToTime(at.x()) - anchor) < zoomed / 500);

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
        QVERIFY(countColor(shot, shot.rect(), TimelinePainter::statusColor(model.store().calls()[0].attempts[2])) > 10);
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
        QCOMPARE(ax.tickStepNs(100), qint64(500'000));          // 250 µs raw -> 500 µs
        QCOMPARE(TimeAxis({0, 1e6, 0}).tickStepNs(110), qint64(200'000'000)); // 110 ms raw -> 200 ms
    }
};

QTEST_MAIN(TestRender)
#include "tst_render.moc"
