// Dense lanes in the real main window: how many calls a 1600x1000 window shows with its default docks,
// compact and comfortable rows, a call's attempts shown and folded, groups folded into a row of counts, the
// label column dragged, workshop mode's text size at 1920x1080, and workshop mode's room for the timeline,
// its legend, ruler caption and inspector at 1600x1000.
#include "../views/renderfixture.h"
#include "attemptinspector.h"
#include "clock.h"
#include "labsession.h"
#include "legendpass.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "swimlaneview.h"
#include "wireevents.h"

#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QSettings>
#include <QSignalSpy>
#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {

// n calls of one attempt each, 25 ms apart (the circuit breaker's shape): every fourth fails UNAVAILABLE.
EventBatch oneAttemptCalls(int n)
{
    EventBatch b{opened(1)};
    for (int i = 0; i < n; ++i) {
        const std::uint32_t stream = 1 + 2 * std::uint32_t(i);
        const std::int64_t t = 10 * ms + i * 25 * ms;
        b.push_back(req(stream, t, std::nullopt, "call-" + std::to_string(i + 1), 5000 * ms));
        b.push_back(end(stream, t + ms / 2, i % 4 == 3 ? 14 : 0));
    }
    return b;
}

// Call lanes wholly inside the lanes' part of the canvas (below the ruler and bands, above the legend).
int visibleCalls(SwimlaneView *view)
{
    TimelinePainter &p = view->timelinePainter();
    const QRectF canvas = view->canvas();
    const double top = p.headerHeight();
    const double bottom = canvas.height() - (p.options().legend ? p.legendHeight(canvas.width()) : 0);
    int n = 0;
    for (const LaneBlock &b : p.layout().blocks()) {
        if (b.kind != LaneBlock::CallLane) continue;
        const double y = top - p.scrollY() + b.y;
        n += y >= top && y + b.h <= bottom;
    }
    return n;
}

QComboBox *combo(MainWindow &window, const char *name)
{
    return window.findChild<QComboBox *>(QString::fromLatin1(name));
}

} // namespace

class TestDensity : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_density"));
        QSettings().clear();
    }

    void oneAttemptCallsFit()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("circuit-breaker"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        model.appendBatch(oneAttemptCalls(40));
        SwimlaneView *view = window.swimlanes();
        view->fitAll();
        QTRY_COMPARE(int(model.store().calls().size()), 40);
        QCOMPARE(view->timelinePainter().options().density, LaneDensity::Compact);
        const int compact = visibleCalls(view);
        QVERIFY2(compact >= 25, qPrintable(QStringLiteral("%1 calls visible").arg(compact)));
        // Each on one row: the bar shares the row with the name.
        QVERIFY(view->timelinePainter().layout().oneRow(0));
        const QRectF bar = view->timelinePainter().attemptRect(0, 0, view->canvas());
        const double laneTop = view->timelinePainter().headerHeight() + view->timelinePainter().laneY(0);
        QVERIFY(bar.top() > laneTop && bar.bottom() < laneTop + view->timelinePainter().metrics().rowHeight);

        // Comfortable rows (the old look) from the toolbar: a header and a row per attempt, far fewer calls.
        combo(window, "density")->setCurrentIndex(1);
        QCOMPARE(view->timelinePainter().options().density, LaneDensity::Comfortable);
        const int comfortable = visibleCalls(view);
        QVERIFY2(comfortable < compact / 2,
                 qPrintable(QStringLiteral("%1 vs %2").arg(comfortable).arg(compact)));
        QVERIFY(!view->timelinePainter().layout().oneRow(0));
    }

    void retryStormAllVisible()
    {
        TimelineModel model;
        model.setOrigin(steadyNowNs(), wallNowNs());
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        {
            MainWindow window(&model, &lab, QStringLiteral("retry-storm"));
            window.setPromptOnClose(false);
            window.resize(1600, 1000);
            window.show();
            window.activateWindow();
            QVERIFY(QTest::qWaitForWindowActive(&window));
            QSignalSpy finished(&window, &MainWindow::runFinished);
            window.runScenario();
            QVERIFY(finished.wait(90'000));
            const auto &calls = model.store().calls();
            // The scenario's shape: 20 calls, each retried until its attempts ran out.
            QTRY_COMPARE_WITH_TIMEOUT(int(calls.size()), 20, 5000);
            QTRY_VERIFY_WITH_TIMEOUT(std::all_of(calls.begin(), calls.end(),
                                                 [](const Call &c) {
                                                     return c.attempts.size() >= 3 &&
                                                            c.attempts.back().ended();
                                                 }),
                                     5000);
            SwimlaneView *view = window.swimlanes();
            view->fitAll();
            QApplication::processEvents();
            QCOMPARE(visibleCalls(view), 20);

            // A click on a call's name shows its attempts a row each (gap labels and all); another folds
            // them.
            TimelinePainter &p = view->timelinePainter();
            const double rowH = p.metrics().rowHeight;
            const QPoint name(40, int(p.headerHeight() + p.laneY(0) - p.scrollY() + rowH / 2));
            QTest::mouseClick(view, Qt::LeftButton, {}, name);
            QVERIFY(!p.layout().oneRow(0));
            QCOMPARE(p.layout().blocks()[p.layout().blockOfCall(0)].h,
                     double(p.metrics().callHeader + calls[0].attempts.size() * p.metrics().attemptHeight));
            QVERIFY(!p.attemptRect(0, 1, view->canvas()).isEmpty());
            QVERIFY(p.attemptRect(0, 1, view->canvas()).top() > p.attemptRect(0, 0, view->canvas()).bottom());
            QTest::mouseClick(view, Qt::LeftButton, {}, name);
            QVERIFY(p.layout().oneRow(0));
            // On one row the attempts sit side by side, in time order, on the same line.
            const QRectF a0 = p.attemptRect(0, 0, view->canvas()), a1 = p.attemptRect(0, 1, view->canvas());
            QCOMPARE(a0.top(), a1.top());
            QVERIFY(a1.left() >= a0.right() - 3);
            // E does the same for the selected call, wherever focus is.
            view->selectAttempt(1, 0);
            view->setFocus();
            QTest::keyClick(&window, Qt::Key_E);
            QVERIFY(!p.layout().oneRow(1));
            QTest::keyClick(&window, Qt::Key_E);
            QVERIFY(p.layout().oneRow(1));
        }
        lab.stop();
    }

    void groupsFold()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("circuit-breaker"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        model.appendBatch(oneAttemptCalls(40));
        QTRY_COMPARE(int(model.store().calls().size()), 40);
        SwimlaneView *view = window.swimlanes();
        TimelinePainter &p = view->timelinePainter();
        QComboBox *grouping = combo(window, "grouping");
        grouping->setCurrentIndex(grouping->findData(int(LaneGrouping::Method)));
        QCOMPARE(p.layout().callLanes(), size_t(40));
        QCOMPARE(p.layout().blocks()[0].kind, LaneBlock::GroupHeader);
        // A click on the group's header: one row of counts instead of 40 lanes.
        const QPoint header(300, int(p.headerHeight() + p.layout().blocks()[0].y + 5));
        QTest::mouseClick(view, Qt::LeftButton, {}, header);
        QCOMPARE(p.layout().callLanes(), size_t(0));
        QCOMPARE(int(p.layout().blocks().size()), 1); // the row of counts is the group's header too
        QCOMPARE(p.layout().blocks()[0].kind, LaneBlock::GroupAggregate);
        const TimelineLayout::Group &g = p.layout().groups()[0];
        QVERIFY(g.folded);
        QCOMPARE(g.calls, size_t(40));
        QCOMPARE(g.outcomes[0], size_t(30)); // OK
        QCOMPARE(g.outcomes[1], size_t(10)); // UNAVAILABLE
        QCOMPARE(g.statuses.front().first, QStringLiteral("OK"));
        QCOMPARE(g.statuses.front().second, size_t(30));
        // The aggregate row shows the outcome mix in both colours.
        const QImage img = view->grab().toImage();
        const QRect row(0, int(p.headerHeight() + p.layout().blocks()[0].y), img.width(),
                        int(p.layout().blocks()[0].h));
        QVERIFY(hasColor(img, row, QColor(0x2e, 0x9d, 0x4a), 20));
        QVERIFY(hasColor(img, row, QColor(0xe8, 0x80, 0x1a), 5));
        // A click on the aggregate row shows the calls again; G folds every group, and again unfolds them.
        QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(300, row.center().y()));
        QCOMPARE(p.layout().callLanes(), size_t(40));
        view->setFocus();
        QTest::keyClick(&window, Qt::Key_G);
        QCOMPARE(p.layout().callLanes(), size_t(0));
        QTest::keyClick(&window, Qt::Key_G);
        QCOMPARE(p.layout().callLanes(), size_t(40));
    }

    void labelColumnDrags()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("circuit-breaker"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        model.appendBatch(oneAttemptCalls(10));
        QTRY_COMPARE(int(model.store().calls().size()), 10);
        SwimlaneView *view = window.swimlanes();
        TimelinePainter &p = view->timelinePainter();
        const int before = p.labelWidth();
        const int y = p.headerHeight() + 5;
        QTest::mousePress(view, Qt::LeftButton, {}, QPoint(before, y));
        QTest::mouseMove(view, QPoint(before + 100, y));
        QTest::mouseRelease(view, Qt::LeftButton, {}, QPoint(before + 100, y));
        QCOMPARE(p.labelWidth(), before + 100);
        QCOMPARE(p.axis(view->canvas()).left, double(before + 100));
        // Clamped: never narrower than a name, never wider than most of the view.
        view->setLabelWidth(10);
        QCOMPARE(p.labelWidth(), TimelinePainter::kMinLabelWidth);
        view->setLabelWidth(5000);
        QCOMPARE(p.labelWidth(), TimelinePainter::kMaxLabelWidth);
        // Workshop mode scales the chosen width like every other size.
        window.setWorkshop(true);
        QCOMPARE(p.labelWidth(),
                 int(TimelinePainter::kMaxLabelWidth * TimelinePainter::kWorkshopScale + 0.5));
    }

    // Workshop mode at the window's first size (1400x820) and first docks, four connections and forty calls
    // (channel-pool's shape), frames recorded: a lane each for the connections would take the timeline's
    // room, and so would a legend with room for everything the store may draw (request, response, trailers,
    // frame ticks: nothing of which is drawn at this zoom). The connections share one lane and the legend
    // holds what is drawn, so calls are on screen. Plain mode keeps a lane per connection. A legend entry
    // that leaves the screen (the calls in flight, once they end) gives its row back a moment later.
    void workshopAtFirstSizeShowsCalls()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("channel-pool"));
        window.setPromptOnClose(false);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QCOMPARE(window.size(), QSize(1400, 820));
        EventBatch b;
        for (std::uint32_t c = 1; c <= 4; ++c) {
            b.push_back(testev::event(EventKind::ConnectionOpened, c, 0, 0));
            b.push_back(testev::frame(c, 0, ms, Direction::ClientToServer, 4)); // SETTINGS
            b.push_back(testev::frame(c, 0, ms, Direction::ServerToClient, 4));
        }
        // Forty calls, one attempt each, on the four connections; the first ten still in flight.
        std::vector<std::pair<std::uint32_t, std::uint32_t>> open;
        for (int i = 0; i < 40; ++i) {
            const std::uint32_t conn = 1 + std::uint32_t(i % 4), stream = 1 + 2 * std::uint32_t(i / 4);
            const std::int64_t t = 10 * ms + i * 25 * ms;
            WireEvent r = req(stream, t, std::nullopt, "call-" + std::to_string(i + 1), 5000 * ms);
            r.connection = conn;
            b.push_back(r);
            if (i < 10) {
                open.emplace_back(conn, stream);
                continue;
            }
            // Half a millisecond, as the lab's warm-up calls: no room for its phases at this zoom.
            b.push_back(testev::frame(conn, stream, t, Direction::ClientToServer, 0)); // DATA
            WireEvent e = end(stream, t + ms / 2, 0);
            e.connection = conn;
            b.push_back(e);
        }
        model.appendBatch(b);
        QTRY_COMPARE(int(model.store().calls().size()), 40);
        SwimlaneView *view = window.swimlanes();
        TimelinePainter &p = view->timelinePainter();
        window.setWorkshop(true);
        view->fitAll();
        QApplication::processEvents();
        view->repaint();
        auto connectionLanes = [&] {
            int n = 0;
            for (const LaneBlock &block : p.layout().blocks())
                n += block.kind == LaneBlock::ConnectionLane;
            return n;
        };
        QCOMPARE(connectionLanes(), 1);
        QCOMPARE(p.layout().blocks().front().index, kAllConnections);
        // The legend: room for what is drawn, which includes the calls in flight.
        QVERIFY(p.legendEntries().contains(QStringLiteral("in flight")));
        LegendPass measure;
        const double w = view->canvas().width();
        QCOMPARE(p.legendHeight(w), measure.height(w, p.legendScale(w), p.drawnUse()));
        // Less than the room for everything the store may draw, which is what a painter without paints gives.
        TimelinePainter mayDraw(&model.store());
        mayDraw.setOptions(p.options());
        mayDraw.setLegendBudget(view->height() / 4);
        QVERIFY2(p.legendHeight(w) < mayDraw.legendHeight(w),
                 qPrintable(QStringLiteral("%1 px for %2; %3 px may be drawn")
                                .arg(p.legendHeight(w))
                                .arg(p.legendEntries().join(QStringLiteral(", ")))
                                .arg(mayDraw.legendHeight(w))));
        QVERIFY2(visibleCalls(view) >= 5, qPrintable(QStringLiteral("%1 calls").arg(visibleCalls(view))));
        if (!qEnvironmentVariableIsEmpty("RPCSCOPE_SHOT_DIR"))
            window.grab().save(qEnvironmentVariable("RPCSCOPE_SHOT_DIR") + "/workshop-1400.png");

        // The calls in flight end: their entry leaves the legend, and its room follows a moment later.
        EventBatch ends;
        for (const auto &[conn, stream] : open) {
            WireEvent e = end(stream, 1100 * ms, 0);
            e.connection = conn;
            ends.push_back(e);
        }
        model.appendBatch(ends);
        view->fitAll();
        view->repaint();
        QVERIFY(!p.legendEntries().contains(QStringLiteral("in flight")));
        QVERIFY(p.legendHasSpareRoom());
        QTRY_VERIFY_WITH_TIMEOUT(!p.legendHasSpareRoom(), 5000);
        view->repaint();
        QCOMPARE(p.legendRoomUse(), p.drawnUse());
        QCOMPARE(p.legendHeight(w), measure.height(w, p.legendScale(w), p.drawnUse()));

        // Plain mode: a lane each.
        window.setWorkshop(false);
        QApplication::processEvents();
        view->repaint();
        QCOMPARE(connectionLanes(), 4);
    }

    // Workshop mode at 1600x1000 with the first start's docks, for the back of the room: the timeline keeps
    // ten lanes and more (the docks below it become low tabs), the legend is drawn larger than plain within
    // its quarter, the ruler's caption fits its box, the inspector's values get the room; leaving gives the
    // docks back as they were.
    void workshopAt1600()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("circuit-breaker"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        model.appendBatch(oneAttemptCalls(40));
        QTRY_COMPARE(int(model.store().calls().size()), 40);
        SwimlaneView *view = window.swimlanes();
        view->fitAll();
        QApplication::processEvents();
        TimelinePainter &p = view->timelinePainter();
        auto *calls = window.findChild<QDockWidget *>(QStringLiteral("calls"));
        auto *inspector = window.findChild<QDockWidget *>(QStringLiteral("inspector"));
        QVERIFY(calls && inspector);
        const QRect callsBefore = calls->geometry(), inspectorBefore = inspector->geometry();
        const int plainCalls = visibleCalls(view);
        QRectF box;
        QCOMPARE(p.rulerCaption(view->canvas(), &box), QStringLiteral("time since capture start"));

        window.setWorkshop(true);
        // The lanes' height in lanes of one call each (header, bands and legend taken off).
        auto laneRows = [&] {
            const double lanes = view->canvas().height() - p.headerHeight() - p.legendHeight(view->width());
            return lanes / (p.metrics().rowHeight + p.metrics().callSpacing);
        };
        QTRY_VERIFY2(
            laneRows() >= 10,
            qPrintable(
                QStringLiteral("%1 lanes tall, the timeline %2 px").arg(laneRows()).arg(view->height())));
        QVERIFY2(visibleCalls(view) >= 10, qPrintable(QStringLiteral("%1 calls").arg(visibleCalls(view))));
        if (!qEnvironmentVariableIsEmpty("RPCSCOPE_SHOT_DIR"))
            window.grab().save(qEnvironmentVariable("RPCSCOPE_SHOT_DIR") + "/workshop-1600.png");

        // The legend scales with the rest, as far as a quarter of the view lets it.
        QVERIFY2(p.legendScale(view->width()) >= 1.5,
                 qPrintable(QStringLiteral("legend at %1").arg(p.legendScale(view->width()))));
        QVERIFY(p.legendHeight(view->width()) <= view->height() / 4);

        // The ruler's caption fits its box, whole words (no ellipsis).
        const QString caption = p.rulerCaption(view->canvas(), &box);
        const double captionWidth =
            QFontMetricsF(p.context(view->canvas()).font(12)).horizontalAdvance(caption);
        QVERIFY2(
            captionWidth <= box.width() && !caption.contains(QChar(0x2026)),
            qPrintable(QStringLiteral("'%1': %2 px in %3").arg(caption).arg(captionWidth).arg(box.width())));
        QVERIFY(caption.contains(QLatin1String("since")));

        // The inspector is in front, its value column sixty characters wide and more.
        view->selectAttempt(3, 0);
        QTreeWidget *tree = window.inspector()->tree();
        QTRY_VERIFY(!tree->visibleRegion().isEmpty());
        const int valueColumn = tree->viewport()->width() - tree->columnWidth(0);
        const int chars = valueColumn / QFontMetrics(tree->font()).averageCharWidth();
        QVERIFY2(chars >= 60,
                 qPrintable(QStringLiteral("value column %1 px, %2 characters").arg(valueColumn).arg(chars)));

        window.setWorkshop(false);
        QTRY_COMPARE(calls->geometry(), callsBefore);
        QCOMPARE(inspector->geometry(), inspectorBefore);
        QTRY_COMPARE(visibleCalls(view), plainCalls);
    }

    // The real circuit-breaker scenario (24 calls of one attempt, the breaker band above them) in workshop
    // mode on a 1920x1080 screen.
    void workshopAt1920()
    {
        TimelineModel model;
        model.setOrigin(steadyNowNs(), wallNowNs());
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        {
            MainWindow window(&model, &lab, QStringLiteral("circuit-breaker"));
            window.setPromptOnClose(false);
            window.setWorkshop(true);
            window.resize(1920, 1080);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            QSignalSpy finished(&window, &MainWindow::runFinished);
            window.runScenario();
            QVERIFY(finished.wait(90'000));
            const auto &calls = model.store().calls();
            QTRY_VERIFY_WITH_TIMEOUT(calls.size() >= 20 && std::all_of(calls.begin(), calls.end(),
                                                                       [](const Call &c) {
                                                                           return c.attempts.size() == 1 &&
                                                                                  c.attempts[0].ended();
                                                                       }),
                                     5000);
            SwimlaneView *view = window.swimlanes();
            // Workshop mode starts without the rates strip: the rows go to the lanes.
            QVERIFY(!view->timelinePainter().options().rates);
            view->fitAll();
            QApplication::processEvents();
            const int visible = visibleCalls(view);
            if (!qEnvironmentVariableIsEmpty("RPCSCOPE_SHOT_DIR"))
                window.grab().save(qEnvironmentVariable("RPCSCOPE_SHOT_DIR") + "/density-workshop.png");
            QVERIFY2(visible >= 10, qPrintable(QStringLiteral("%1 calls visible").arg(visible)));
            // Every text size the lanes use (11 px statuses in bars, 12 px gap labels, 13 px names) is at
            // least 24 px, and a name fits its row.
            const PaintContext ctx = view->timelinePainter().context(view->canvas());
            for (double px : {11.0, 12.0, 13.0})
                QVERIFY2(
                    ctx.font(px).pixelSize() >= 24 && ctx.font(px, true).pixelSize() >= 24,
                    qPrintable(QStringLiteral("%1 px text at %2").arg(px).arg(ctx.font(px).pixelSize())));
            QVERIFY(QFontMetricsF(ctx.font(13, true)).height() <= ctx.metrics.rowHeight);

            // In the default 1400x820 window the full workshop legend would take most of the timeline: it is
            // drawn smaller (never below its plain size), within a quarter of the view, and the lanes keep
            // their room.
            const TimelinePainter &painter = view->timelinePainter();
            QVERIFY(painter.legendScale(view->width()) == TimelinePainter::kWorkshopScale);
            window.resize(1400, 820);
            QApplication::processEvents();
            QTRY_VERIFY(view->height() < 600);
            QVERIFY2(painter.legendHeight(view->width()) <= view->height() / 4,
                     qPrintable(QStringLiteral("legend %1 px of %2")
                                    .arg(painter.legendHeight(view->width()))
                                    .arg(view->height())));
            QVERIFY(painter.legendScale(view->width()) >= 1.0 &&
                    painter.legendScale(view->width()) <= TimelinePainter::kWorkshopScale);
            QVERIFY2(visibleCalls(view) >= 3, qPrintable(QStringLiteral("%1 calls").arg(visibleCalls(view))));

            // Ctrl+Shift+A shows the strip in workshop too; leaving workshop mode gives back the strip as it
            // was before (on, the default).
            QTest::keyClick(&window, Qt::Key_A, Qt::ControlModifier | Qt::ShiftModifier);
            QVERIFY(view->timelinePainter().options().rates);
            QTest::keyClick(&window, Qt::Key_A, Qt::ControlModifier | Qt::ShiftModifier);
            QVERIFY(!view->timelinePainter().options().rates);
            window.setWorkshop(false);
            QVERIFY(view->timelinePainter().options().rates);
        }
        lab.stop();
    }
};

QTEST_MAIN(TestDensity)
#include "tst_density.moc"
