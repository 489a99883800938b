// The rates strip: exact counts from RateBins at a few bucket widths, incremental counting against a rebuild
// (after batches and after retention evicted calls), a drag across the strip zooming the view, and the strip
// in a PNG and an SVG export.
#include "faultevents.h"
#include "ratebins.h"
#include "ratestrippass.h"
#include "renderfixture.h"
#include "swimlaneview.h"
#include "timelinestyle.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {
constexpr std::int64_t us = 1'000;

WireEvent rst(std::uint32_t stream, std::int64_t t, std::uint32_t code)
{
    return testev::frame(1, stream, t, Direction::ServerToClient, FrameRstStream, code, 4);
}

// Known calls, in the batches a capture would deliver them in:
// - a: 1.2 ms to 5 ms, OK;
// - b: starts at 3.5 ms, UNAVAILABLE at 12.5 ms (a failure), retried at 15 ms (a retry), UNAVAILABLE at
// 20 ms (a failure, and a failed call);
// - c: starts at 25 ms and stays in flight;
// - d: starts at 30 ms, refused (REFUSED_STREAM) at 30.5 ms, replayed transparently at 31 ms (neither a
// failure nor a retry: the client never saw the refusal), OK at 40 ms.
std::vector<EventBatch> batches()
{
    return {{opened(1), req(1, 1200 * us, std::nullopt, "a", 5000 * ms)},
            {req(3, 3500 * us, std::nullopt, "b", 5000 * ms), end(1, 5 * ms, 0)},
            {end(3, 12500 * us, 14)},
            {req(5, 15 * ms, 1, "b", 4980 * ms)},
            {end(5, 20 * ms, 14), req(7, 25 * ms, std::nullopt, "c", 5000 * ms)},
            {req(9, 30 * ms, std::nullopt, "d", 5000 * ms), rst(9, 30500 * us, 7)},
            {req(11, 31 * ms, std::nullopt, "d", 5000 * ms)},
            {end(11, 40 * ms, 0)}};
}

TimelineStore storeOf(const std::vector<EventBatch> &list)
{
    TimelineStore store;
    store.setOrigin(0, 0);
    for (const EventBatch &b : list)
        store.apply(b);
    return store;
}

// Every bin of every level over the scene's span (and a little before and after).
void compareBins(const RateBins &a, const RateBins &b)
{
    for (int level = 0; level < RateBins::kLevels; ++level)
        for (std::int64_t i = -3; i < 200 * ms / RateBins::levelNs(level) + 3; ++i)
            if (!(a.bin(level, i) == b.bin(level, i))) {
                const RateBins::Bin x = a.bin(level, i), y = b.bin(level, i);
                QFAIL(qPrintable(QStringLiteral("level %1 bin %2: calls %3/%4 failures %5/%6 retries %7/%8 "
                                                "transparent %9/%10 flight %11/%12 %13/%14")
                                     .arg(level)
                                     .arg(i)
                                     .arg(x.calls)
                                     .arg(y.calls)
                                     .arg(x.failures)
                                     .arg(y.failures)
                                     .arg(x.retries)
                                     .arg(y.retries)
                                     .arg(x.transparent)
                                     .arg(y.transparent)
                                     .arg(x.flightDelta)
                                     .arg(y.flightDelta)
                                     .arg(x.flightNs)
                                     .arg(y.flightNs)));
            }
}

// Pixels of exactly this colour in r.
int pixels(const QImage &img, const QRect &r, const QColor &c)
{
    int n = 0;
    const QRect in = r.intersected(img.rect());
    for (int y = in.top(); y <= in.bottom(); ++y)
        for (int x = in.left(); x <= in.right(); ++x)
            n += img.pixelColor(x, y).rgb() == c.rgb();
    return n;
}
} // namespace

class TestRateStrip : public QObject
{
    Q_OBJECT
private slots:
    void failedAttemptsCountWhenTheCallEndsOk()
    {
        // A verify-policy call: its first attempt aborted by a fault rule before the server saw it (zero
        // length, at 10 ms), its second failed by the server (at 30 ms), its third OK. The client got OK, but
        // the strip's failures/s must still show the two failures a retry hid, or a retry storm reads as
        // calm.
        const EventBatch batch{opened(1),
                               req(1, 10 * ms, std::nullopt, "p-1", 5000 * ms),
                               end(1, 10 * ms, 14),
                               testev::injectedNotice(1, 1, 10 * ms, 1, "abort status=14 before"),
                               req(3, 20 * ms, 1, "p-1", 4990 * ms),
                               end(3, 30 * ms, 14),
                               req(5, 40 * ms, 2, "p-1", 4970 * ms),
                               end(5, 45 * ms, 0)};
        TimelineStore store;
        store.setOrigin(0, 0);
        store.apply(batch);
        QCOMPARE(store.calls().size(), size_t(1));
        QVERIFY(store.calls()[0].attempts[0].injected());
        RateBins rates;
        rates.sync(store);
        const auto fine = rates.buckets(0, 50 * ms, 1 * ms);
        std::int64_t failures = 0, failedCalls = 0;
        for (size_t i = 0; i < fine.size(); ++i) {
            QCOMPARE(fine[i].failures, (i == 10 || i == 30) ? 1 : 0);
            failures += fine[i].failures;
            failedCalls += fine[i].failedCalls;
        }
        QCOMPARE(failures, 2);
        QCOMPARE(failedCalls, 0);

        // Followed batch by batch, the same counts: each attempt's failure at its end, once.
        TimelineStore live;
        live.setOrigin(0, 0);
        RateBins followed;
        for (const WireEvent &e : batch) {
            StoreChanges changes;
            live.apply({e}, &changes);
            followed.sync(live, &changes);
        }
        compareBins(followed, rates);

        // The strip draws it, and its tooltip tells the failures from the calls that failed.
        TimelinePainter::Options options;
        options.title = QStringLiteral("failed attempts");
        options.rates = true;
        const QImage img = TimelinePainter::renderImage(store, 1400, options);
        if (!qEnvironmentVariableIsEmpty("RPCSCOPE_SHOT_DIR"))
            img.save(QDir(qEnvironmentVariable("RPCSCOPE_SHOT_DIR"))
                         .filePath(QStringLiteral("failed-attempts.png")));
        TimelinePainter painter(&store);
        painter.setOptions(options);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, img.width(), img.height());
        const QRectF strip = painter.rateStripRect(rect);
        const TimeAxis ax = painter.axis(rect);
        const double rowH = strip.height() / 4;
        const QRect failuresRow(int(ax.left), int(strip.top() + rowH), int(rect.width() - ax.left),
                                int(rowH * 0.6));
        QVERIFY2(pixels(img, failuresRow, painter.theme().rateFailures) > 10, "no failures drawn");
        const PaintContext ctx = painter.context(rect);
        const QString tip = RateStripPass::toolTip(ctx, ax.timeToX(10 * ms + ms / 2));
        QVERIFY2(tip.contains(QStringLiteral("failed attempts: 1")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("calls failed: 0")), qPrintable(tip));
    }

    void exactCountsAtSeveralWidths()
    {
        const std::vector<EventBatch> list = batches();
        const TimelineStore store = storeOf(list);
        RateBins rates;
        rates.sync(store);
        QCOMPARE(rates.totalCalls(), 4);
        QVERIFY(store.calls()[3].transparentRetry(1));

        // 1 ms buckets: each event in its own.
        const auto fine = rates.buckets(0, 50 * ms, 1 * ms);
        QCOMPARE(fine.size(), size_t(50));
        auto at = [&](size_t i) { return fine[i]; };
        for (size_t i = 0; i < fine.size(); ++i) {
            QCOMPARE(fine[i].startNs, qint64(i) * ms);
            QCOMPARE(fine[i].calls, (i == 1 || i == 3 || i == 25 || i == 30) ? 1 : 0);
            QCOMPARE(fine[i].failures, (i == 12 || i == 20) ? 1 : 0);
            QCOMPARE(fine[i].failedCalls, i == 20 ? 1 : 0);
            QCOMPARE(fine[i].retries, i == 15 ? 1 : 0);
            QCOMPARE(fine[i].transparent, i == 31 ? 1 : 0);
        }
        QCOMPARE(at(1).perSecond(at(1).calls), 1000.0);
        // In flight: a from 1.2 ms (0.8 of bucket 1), b from 3.5 ms; a ends at 5 ms.
        QCOMPARE(at(1).inFlight, 0.8);
        QCOMPARE(at(2).inFlight, 1.0);
        QCOMPARE(at(3).inFlight, 1.5);
        QCOMPARE(at(4).inFlight, 2.0);
        QCOMPARE(at(5).inFlight, 1.0);

        // 5 ms (five 1 ms bins a bucket), 10 ms (one 10 ms bin) and 20 ms (two).
        const auto five = rates.buckets(0, 50 * ms, 5 * ms);
        QCOMPARE(five.size(), size_t(10));
        QCOMPARE(five[0].calls, 2);
        QCOMPARE(five[0].inFlight, (3.8 + 1.5) / 5);
        QCOMPARE(five[3].retries, 1);
        QCOMPARE(five[2].failures, 1);
        QCOMPARE(five[2].failedCalls, 0);
        QCOMPARE(five[4].failures, 1);
        QCOMPARE(five[4].failedCalls, 1);
        QCOMPARE(five[6].transparent, 1);
        const auto ten = rates.buckets(0, 50 * ms, 10 * ms);
        QCOMPARE(ten.size(), size_t(5));
        const std::int64_t calls10[] = {2, 0, 1, 1, 0}, failures10[] = {0, 1, 1, 0, 0},
                           retries10[] = {0, 1, 0, 0, 0}, transparent10[] = {0, 0, 0, 1, 0};
        const double flight10[] = {(3.8 + 6.5) / 10, 1.0, 0.5, 2.0, 1.0};
        for (size_t i = 0; i < ten.size(); ++i) {
            QCOMPARE(ten[i].calls, calls10[i]);
            QCOMPARE(ten[i].failures, failures10[i]);
            QCOMPARE(ten[i].retries, retries10[i]);
            QCOMPARE(ten[i].transparent, transparent10[i]);
            QVERIFY2(qAbs(ten[i].inFlight - flight10[i]) < 1e-9,
                     qPrintable(QString::number(ten[i].inFlight)));
        }
        QCOMPARE(ten[0].perSecond(ten[0].calls), 200.0);
        const auto twenty = rates.buckets(0, 40 * ms, 20 * ms);
        QCOMPARE(twenty.size(), size_t(2));
        QCOMPARE(twenty[0].calls, 2);
        QCOMPARE(twenty[0].retries, 1);
        QCOMPARE(twenty[0].failures, 1);
        QCOMPARE(twenty[1].calls, 2);
        QCOMPARE(twenty[1].failures, 1);
        QVERIFY(qAbs(twenty[1].inFlight - (0.5 + 2.0) / 2) < 1e-9);
        // A range that starts later still knows what is in flight at its start (c, open since 25 ms).
        const auto late = rates.buckets(45 * ms, 46 * ms, 1 * ms);
        QCOMPARE(late.size(), size_t(1));
        QCOMPARE(late[0].inFlight, 1.0);

        QCOMPARE(RateBins::bucketWidth(0), 1 * ms);
        QCOMPARE(RateBins::bucketWidth(1.5 * ms), 2 * ms);
        QCOMPARE(RateBins::bucketWidth(2.5 * ms), 5 * ms);
        QCOMPARE(RateBins::bucketWidth(11 * ms), 20 * ms);
        QCOMPARE(RateBins::bucketWidth(3e9), 5'000'000'000LL);
        // Values as the label column and the tooltip give them.
        QCOMPARE(RateStripPass::formatValue(0), QStringLiteral("0"));
        QCOMPARE(RateStripPass::formatValue(0.012), QStringLiteral("0.012"));
        QCOMPARE(RateStripPass::formatValue(2.5), QStringLiteral("2.5"));
        QCOMPARE(RateStripPass::formatValue(12.4), QStringLiteral("12"));
        QCOMPARE(RateStripPass::formatValue(1250), QStringLiteral("1,250"));
        QCOMPARE(RateStripPass::formatValue(12345), QStringLiteral("12.3k"));
    }

    void incrementalMatchesRebuild()
    {
        // Batch by batch, from what each batch changed: b's failure moves from 12.5 ms to 20 ms when its
        // retry comes, d's first attempt becomes a transparent retry's predecessor.
        const std::vector<EventBatch> list = batches();
        TimelineStore store;
        store.setOrigin(0, 0);
        RateBins live;
        for (const EventBatch &b : list) {
            StoreChanges changes;
            store.apply(b, &changes);
            live.sync(store, &changes);
            RateBins rebuilt;
            rebuilt.sync(store);
            compareBins(live, rebuilt);
            QCOMPARE(live.recordedCalls(), store.calls().size());
        }
        RateBins before;
        before.sync(store);

        // Retention evicts a and b (ended, oldest): they stay counted, and a later full sync keeps them.
        RetentionPolicy policy;
        policy.maxCalls = 2;
        policy.evictTo = 1.0;
        const std::vector<size_t> evicted = store.enforce(policy);
        QCOMPARE(evicted, (std::vector<size_t>{0, 1}));
        live.evict(evicted);
        QCOMPARE(live.recordedCalls(), size_t(2));
        compareBins(live, before);
        live.sync(store);
        compareBins(live, before);
        QCOMPARE(live.totalCalls(), 4);
        // A later batch ends c; it is counted once, from its record.
        StoreChanges changes;
        store.apply({end(7, 45 * ms, 0)}, &changes);
        live.sync(store, &changes);
        const auto tail = live.buckets(40 * ms, 50 * ms, 10 * ms);
        QCOMPARE(tail.size(), size_t(1));
        QVERIFY(qAbs(tail[0].inFlight - 0.5) < 1e-9);
        QCOMPARE(live.totalCalls(), 4);
        // A rebuild from the store alone no longer has the evicted calls.
        RateBins fresh;
        fresh.sync(store);
        QCOMPARE(fresh.totalCalls(), 2);
        QCOMPARE(fresh.buckets(0, 10 * ms, 10 * ms).front().calls, 0);
        QCOMPARE(live.buckets(0, 10 * ms, 10 * ms).front().calls, 2);
    }

    void viewFollowsBatchesAndEviction()
    {
        // Through the widget: the index syncs from the model's row signals and follows the model's eviction.
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        for (const EventBatch &b : batches()) {
            model.appendBatch(b);
            view.timelinePainter().fullRange(); // a paint's refresh
        }
        const RateBins &rates = view.timelinePainter().context(view.canvas()).index.rates();
        RateBins rebuilt;
        rebuilt.sync(model.store());
        compareBins(rates, rebuilt);
        RetentionPolicy policy;
        policy.maxCalls = 2;
        policy.evictTo = 1.0;
        model.setRetention(policy); // enforces it at once (in its own small steps)
        QVERIFY(model.store().calls().size() < 4);
        QCOMPARE(model.store().evictedCalls(), 4 - model.store().calls().size());
        view.timelinePainter().fullRange();
        compareBins(view.timelinePainter().context(view.canvas()).index.rates(), rebuilt);
    }

    void dragAcrossTheStripZooms()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (const EventBatch &b : batches())
            model.appendBatch(b);
        TimelinePainter &painter = view.timelinePainter();
        const QRectF strip = painter.rateStripRect(view.canvas());
        QVERIFY2(!strip.isEmpty(), "the strip shows by default when there are calls");
        const TimeAxis ax = painter.axis(view.canvas());
        const int y = int(strip.center().y());
        const QPoint from(int(ax.timeToX(10 * ms)), y), to(int(ax.timeToX(30 * ms)), y);
        QCOMPARE(painter.hitTest(from, view.canvas()).kind, TimelinePainter::Hit::RateStrip);
        // Hovering outlines the bucket under the pointer.
        QTest::mouseMove(&view, from);
        QVERIFY(painter.rateHover().has_value());
        QVERIFY(painter.rateHover()->first <= ax.xToTime(from.x()) &&
                ax.xToTime(from.x()) < painter.rateHover()->second);
        {
            const QImage hovered = view.grab().toImage();
            const double x1 = ax.timeToX(painter.rateHover()->first);
            QVERIFY(pixels(hovered, QRect(int(x1) - 1, int(strip.top()), 3, int(strip.height())),
                           painter.theme().selection) > int(strip.height()) / 2);
        }
        QTest::mousePress(&view, Qt::LeftButton, {}, from);
        QTest::mouseMove(&view, QPoint((from.x() + to.x()) / 2, y));
        QTest::mouseMove(&view, to);
        // The rubber band shows while dragging, over the strip too.
        QVERIFY(view.zoomControl().rubberBand().has_value());
        const QImage during = view.grab().toImage();
        const QColor band = painter.theme().rubberBand;
        QColor over = painter.theme().background;
        // The band's colour over the background, as drawn (source-over).
        const double a = band.alphaF();
        over = QColor::fromRgbF(band.redF() * a + over.redF() * (1 - a),
                                band.greenF() * a + over.greenF() * (1 - a),
                                band.blueF() * a + over.blueF() * (1 - a));
        int tinted = 0;
        for (int x = from.x() + 2; x < to.x() - 2; ++x) {
            const QColor c = during.pixelColor(x, int(strip.top()) + 3); // above every area
            tinted += qAbs(c.red() - over.red()) <= 2 && qAbs(c.green() - over.green()) <= 2 &&
                      qAbs(c.blue() - over.blue()) <= 2;
        }
        QVERIFY2(tinted > (to.x() - from.x()) / 2, qPrintable(QString::number(tinted)));
        QTest::mouseRelease(&view, Qt::LeftButton, {}, to);
        QVERIFY(!view.zoomControl().rubberBand().has_value());
        const qint64 slack = qint64(ax.nsPerPx) + 1;
        QVERIFY2(qAbs(painter.rangeStart() - ax.xToTime(from.x())) <= slack,
                 qPrintable(QString::number(painter.rangeStart())));
        QVERIFY2(qAbs(painter.rangeEnd() - ax.xToTime(to.x())) <= slack,
                 qPrintable(QString::number(painter.rangeEnd())));
        QVERIFY(qAbs(painter.rangeStart() - 10 * ms) <= 2 * slack);
        QVERIFY(qAbs(painter.rangeEnd() - 30 * ms) <= 2 * slack);
        QVERIFY(!view.followsLive());
        // The tooltip names the bucket and its values.
        const TimelinePainter::Hit hit =
            painter.hitTest(QPointF(painter.axis(view.canvas()).timeToX(15500 * us), y), view.canvas());
        QCOMPARE(hit.kind, TimelinePainter::Hit::RateStrip);
        const QString tip = view.toolTipFor(hit);
        QVERIFY2(tip.contains(QStringLiteral("retries: 1")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("calls started: 0")), qPrintable(tip));

        // Hidden, it takes no room and the lanes move up.
        const int header = painter.headerHeight();
        view.setRates(false);
        QVERIFY(painter.rateStripRect(view.canvas()).isEmpty());
        QCOMPARE(painter.headerHeight(), header - int(strip.height()));
    }

    void exportsShowTheStrip()
    {
        const TimelineStore store = storeOf(batches());
        TimelinePainter::Options options;
        options.title = QStringLiteral("rates");
        options.rates = true;
        const QImage with = TimelinePainter::renderImage(store, 1400, options);
        if (!qEnvironmentVariableIsEmpty("RPCSCOPE_SHOT_DIR"))
            with.save(
                QDir(qEnvironmentVariable("RPCSCOPE_SHOT_DIR")).filePath(QStringLiteral("ratestrip.png")));
        options.rates = false;
        const QImage without = TimelinePainter::renderImage(store, 1400, options);
        options.rates = true;
        // The same geometry the export uses.
        TimelinePainter painter(&store);
        painter.setOptions(options);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, with.width(), with.height());
        const QRectF strip = painter.rateStripRect(rect);
        QVERIFY(!strip.isEmpty());
        QCOMPARE(with.height() - without.height(), int(strip.height()));
        const TimelineTheme &th = painter.theme();
        const double rowH = strip.height() / 4;
        const TimeAxis ax = painter.axis(rect);
        // Each row draws its series' line in its colour over the time axis; failures only from b's first
        // attempt's end on.
        const QColor colors[] = {th.rateCalls, th.rateFailures, th.rateRetries, th.rateInFlight};
        for (int row = 0; row < 4; ++row) {
            const QRect plot(int(ax.left), int(strip.top() + row * rowH), int(rect.width() - ax.left),
                             int(rowH));
            QVERIFY2(pixels(with, plot, colors[row]) > 100, qPrintable(QString::number(row)));
        }
        const QRect failuresBeforeB(int(ax.left), int(strip.top() + rowH), int(ax.timeToX(11 * ms) - ax.left),
                                    int(rowH * 0.6));
        QCOMPARE(pixels(with, failuresBeforeB, th.rateFailures), 0);
        // The label column names the rows in their colours.
        QVERIFY(pixels(with, QRect(0, int(strip.top()), int(ax.left), int(strip.height())), th.rateFailures) >
                10);
        // Without it, no retries line there (the other colours are the theme's deadline and request colours).
        QCOMPARE(pixels(without, strip.toRect(), th.rateRetries), 0);

        // Dark and workshop use their theme's colours and the scale.
        options.dark = true;
        options.workshop = true;
        const QImage big = TimelinePainter::renderImage(store, 1400, options);
        painter.setOptions(options);
        const QRectF bigStrip = painter.rateStripRect(QRectF(0, 0, big.width(), big.height()));
        QCOMPARE(int(bigStrip.height()), RateStripPass::height(TimelinePainter::kWorkshopScale));
        QVERIFY(pixels(big, bigStrip.toRect(), TimelineTheme::dark().rateFailures) > 100);

        // SVG: the rows' names are in it.
        QTemporaryDir dir;
        const QString svg = dir.filePath(QStringLiteral("rates.svg"));
        options.dark = options.workshop = false;
        QVERIFY(TimelinePainter::renderSvg(store, 1400, options, svg));
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.contains("failures/s"));
        QVERIFY(text.contains("retries/s"));
    }
};

QTEST_MAIN(TestRateStrip)
#include "tst_ratestrip.moc"
