// The Statistics dock in the real main window: retry-storm from the real lab (20 calls of 4 attempts, every
// one failing UNAVAILABLE) counted as model::CallStats counts it; a row click and a histogram bucket click
// write the filter box, and the timeline and the Calls table keep only those calls; the same click again
// takes the filter back; the dock follows batches as they arrive, in place (no model reset), with a row
// inserted for a new method; hops have rows of their own; saving and reopening the run gives the same table.
//
// With RPCSCOPE_SHOT_DIR set, the dock after retry-storm is saved there as stats-dock.png.

#include "callsfilterproxy.h"
#include "clock.h"
#include "labsession.h"
#include "latencyhistogram.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "statsdock.h"
#include "statstablemodel.h"
#include "swimlaneview.h"
#include "timeformat.h"
#include "timelinemodel.h"
#include "timelinepainter.h"
#include "wireevents.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDockWidget>
#include <QHeaderView>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

using namespace rpcscope;

namespace {
using testev::trailers;

constexpr std::int64_t ms = 1'000'000;

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &path,
                  const std::string &id, std::optional<int> previous = std::nullopt)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ClientToServer);
    e.grpc.path = path;
    e.grpc.callId = id;
    e.grpc.previousAttempts = previous;
    e.grpc.timeoutNs = 5000 * ms;
    return e;
}

QString cell(StatsDock *dock, int row, int column)
{
    StatsTableModel *m = dock->tableModel();
    return m->data(m->index(row, column)).toString();
}

// The source row of a method or hop, or -1.
int rowOf(StatsDock *dock, const QString &label)
{
    StatsTableModel *m = dock->tableModel();
    for (int r = 0; r < m->rowCount(); ++r)
        if (m->data(m->index(r, StatsTableModel::Name)).toString() == label) return r;
    return -1;
}

// Clicks a source row where it is on screen (the table sorts through a proxy).
void clickRow(StatsDock *dock, int row)
{
    QTableView *view = dock->tableView();
    auto *proxy = static_cast<QAbstractProxyModel *>(view->model());
    const QModelIndex at = proxy->mapFromSource(dock->tableModel()->index(row, StatsTableModel::Calls));
    QVERIFY(at.isValid());
    view->scrollTo(at);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(at).center());
}

void clickBucket(StatsDock *dock, int bucket)
{
    const QRectF r = dock->histogram()->bucketRect(bucket);
    QVERIFY(!r.isEmpty());
    QTest::mouseClick(dock->histogram(), Qt::LeftButton, {}, r.center().toPoint());
}

QLineEdit *filterBox(MainWindow &w)
{
    return w.findChild<QLineEdit *>(QStringLiteral("filter"));
}

// The calls or attempts in the histogram's bars: what the last refresh gave it.
std::uint64_t histogramTotal(StatsDock *dock)
{
    std::uint64_t n = 0;
    for (const auto &s : dock->histogram()->series())
        for (std::uint64_t c : s.counts)
            n += c;
    return n;
}

int callLanes(MainWindow &w)
{
    return int(w.swimlanes()->timelinePainter().layout().callLanes());
}

} // namespace

class TestStatsDock : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_statsdock"));
        QSettings().clear();
    }

    void retryStorm()
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
            StatsDock *dock = window.statsDock();
            QVERIFY(dock);
            QAbstractItemModelTester tester(dock->tableModel());
            window.showStatistics(true);
            QTRY_VERIFY(dock->inFront());

            QSignalSpy finished(&window, &MainWindow::scenarioFinished);
            window.runScenario();
            QVERIFY(finished.wait(90'000));
            QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(1).toString()));
            const auto &calls = model.store().calls();
            QTRY_COMPARE_WITH_TIMEOUT(int(calls.size()), 20, 5000);
            QTRY_VERIFY_WITH_TIMEOUT(std::all_of(calls.begin(), calls.end(),
                                                 [](const Call &c) {
                                                     return c.attempts.size() == 4 &&
                                                            c.attempts.back().ended();
                                                 }),
                                     5000);
            // The dock's own timer catches up (twice a second while visible).
            QTRY_COMPARE_WITH_TIMEOUT(histogramTotal(dock), 20u, 3000);

            // The scenario's shape, as the table shows it and as the stats count it.
            const CallStats &stats = model.stats();
            QCOMPARE(dock->tableModel()->rowCount(), 2); // Total and the lab's one method
            const int method = rowOf(dock, QStringLiteral("/rpcscope.lab.Lab/Call"));
            QCOMPARE(method, 1);
            for (int row : {0, method}) {
                QCOMPARE(cell(dock, row, StatsTableModel::Calls), QStringLiteral("20"));
                QCOMPARE(cell(dock, row, StatsTableModel::Attempts), QStringLiteral("80"));
                QCOMPARE(cell(dock, row, StatsTableModel::Amplification), QStringLiteral("4.00×"));
                QCOMPARE(cell(dock, row, StatsTableModel::FailedAfterRetries), QStringLiteral("20"));
                for (int c : {StatsTableModel::OkFirstTry, StatsTableModel::OkAfterRetry,
                              StatsTableModel::FailedNoRetry, StatsTableModel::FailedFast,
                              StatsTableModel::DeadlineExceeded, StatsTableModel::InFlight})
                    QCOMPARE(cell(dock, row, c), QStringLiteral("0"));
                QCOMPARE(cell(dock, row, StatsTableModel::AttemptsPerCall), QStringLiteral("4:20"));
            }
            const StatsRow &total = stats.total();
            QCOMPARE(total.calls, 20u);
            QCOMPARE(total.attempts, 80u);
            QCOMPARE(total.count(CallCategory::FailedAfterRetries), 20u);
            QCOMPARE(total.callLatency.count(), size_t(20));
            QCOMPARE(total.attemptLatency.count(), size_t(80));
            QCOMPARE(cell(dock, 0, StatsTableModel::CallP50),
                     formatDuration(*total.callLatency.percentile(0.5)));
            QCOMPARE(cell(dock, 0, StatsTableModel::CallMax), formatDuration(*total.callLatency.max()));
            QCOMPARE(cell(dock, 0, StatsTableModel::AttemptP99),
                     formatDuration(*total.attemptLatency.percentile(0.99)));
            // Three backoff gaps a call, each counted in one of the gap columns.
            std::uint64_t gaps = 0;
            for (int c = StatsTableModel::GapsWithin; c <= StatsTableModel::GapsTransparent; ++c)
                gaps += cell(dock, 0, c).toULongLong();
            QCOMPARE(gaps, 60u);
            QCOMPARE(total.gaps.total(), 60u);
            QCOMPARE(cell(dock, 0, StatsTableModel::GapsWithin), QString::number(total.gaps.within));
            // Every header explains its column.
            for (int c = 0; c < StatsTableModel::ColumnCount; ++c)
                QVERIFY(
                    !dock->tableModel()->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());
            // The histogram shows Total's call latencies: 20 in all.
            std::uint64_t inBars = 0;
            for (std::uint64_t n : dock->histogram()->series().at(0).counts)
                inBars += n;
            QCOMPARE(inBars, 20u);

            if (const QByteArray dir = qgetenv("RPCSCOPE_SHOT_DIR"); !dir.isEmpty()) {
                // Floated, wide enough for every column, the method row's histogram below the table.
                auto *frame = qobject_cast<QDockWidget *>(dock->parentWidget());
                QVERIFY(frame);
                frame->setFloating(true);
                const int wide = dock->tableView()->horizontalHeader()->length() + 40;
                frame->resize(wide, wide * 10 / 23);
                dock->tableView()->setCurrentIndex(dock->tableView()->model()->index(1, 0));
                QApplication::processEvents();
                QVERIFY(dock->grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/stats-dock.png")));
                dock->tableView()->setCurrentIndex(dock->tableView()->model()->index(0, 0));
                frame->setFloating(false);
                window.activateWindow(); // the floating dock was a window of its own
                QVERIFY(QTest::qWaitForWindowActive(&window));
            }

            // A click on the method row: its calls (all 20 here) in the filter box, the timeline, the table.
            QLineEdit *filter = filterBox(window);
            clickRow(dock, method);
            QCOMPARE(filter->text(), QStringLiteral("method:/rpcscope.lab.Lab/Call"));
            QCOMPARE(window.callsProxy()->rowCount(), 20);
            QCOMPARE(dock->currentRow(), method);

            // A click on the bucket with the fewest calls keeps exactly those.
            const auto &counts = dock->histogram()->series().at(0).counts;
            int bucket = -1;
            for (int b = 0; b < LatencyBuckets::kCount; ++b)
                if (counts[size_t(b)] && (bucket < 0 || counts[size_t(b)] < counts[size_t(bucket)]))
                    bucket = b;
            QVERIFY(bucket >= 0);
            const int inBucket = int(counts[size_t(bucket)]);
            clickBucket(dock, bucket);
            const auto [lo, hi] = LatencyBuckets::rangeNs(bucket);
            QCOMPARE(filter->text(),
                     QStringLiteral("method:/rpcscope.lab.Lab/Call ") + LaneFilter::latencyTerm(lo, hi));
            QCOMPARE(dock->histogram()->selectedBucket(), bucket);
            QCOMPARE(window.callsProxy()->rowCount(), inBucket);
            QTRY_COMPARE(callLanes(window), inBucket);
            for (int r = 0; r < window.callsProxy()->rowCount(); ++r) {
                const int call = window.callsProxy()->mapToSource(window.callsProxy()->index(r, 0)).row();
                const auto ns = CallStats::callLatencyNs(calls[size_t(call)], model.store());
                QVERIFY(ns && *ns >= lo && *ns < hi);
            }
            // The same bucket again: the row's calls; the row again: every call.
            clickBucket(dock, bucket);
            QCOMPARE(filter->text(), QStringLiteral("method:/rpcscope.lab.Lab/Call"));
            QCOMPARE(dock->histogram()->selectedBucket(), -1);
            clickRow(dock, method);
            QCOMPARE(filter->text(), QString());
            QCOMPARE(window.callsProxy()->rowCount(), 20);
            QTRY_COMPARE(callLanes(window), 20);

            // Attempt latency: 80 attempts; a bucket keeps the calls with an attempt in it.
            dock->setAttemptLatency(true);
            std::uint64_t attempts = 0;
            for (std::uint64_t n : dock->histogram()->series().at(0).counts)
                attempts += n;
            QCOMPARE(attempts, 80u);
            const auto &attemptCounts = dock->histogram()->series().at(0).counts;
            int top = 0;
            for (int b = 0; b < LatencyBuckets::kCount; ++b)
                if (attemptCounts[size_t(b)] > attemptCounts[size_t(top)]) top = b;
            clickBucket(dock, top);
            QVERIFY(filter->text().contains(QStringLiteral("attempt-latency:")));
            QVERIFY(window.callsProxy()->rowCount() >= 1);
            QVERIFY(window.callsProxy()->rowCount() <= int(attemptCounts[size_t(top)]));
            // Clear filter (Alt+X from anywhere in the window).
            QTest::keyClick(&window, Qt::Key_X, Qt::AltModifier);
            QCOMPARE(filter->text(), QString());
            QCOMPARE(window.callsProxy()->rowCount(), 20);
            dock->setAttemptLatency(false);

            // Saved and opened again: the stats are rebuilt from the file, the table shows the same.
            QTemporaryDir dir;
            const QString path = dir.filePath(QStringLiteral("storm.rpcscope"));
            QString why;
            QVERIFY2(window.saveFile(path, &why), qPrintable(why));
            QVERIFY2(window.openFile(path, &why, true), qPrintable(why));
            QTRY_COMPARE(cell(dock, 0, StatsTableModel::Calls), QStringLiteral("20"));
            QCOMPARE(cell(dock, 0, StatsTableModel::Attempts), QStringLiteral("80"));
            QCOMPARE(cell(dock, 0, StatsTableModel::FailedAfterRetries), QStringLiteral("20"));
            QCOMPARE(cell(dock, 0, StatsTableModel::AttemptsPerCall), QStringLiteral("4:20"));
        }
        lab.stop();
    }

    void liveAndHops()
    {
        QSettings().clear(); // a first start: the window closed above kept Statistics in front
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1600, 1000);
        window.show();
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        StatsDock *dock = window.statsDock();
        QAbstractItemModelTester tester(dock->tableModel());
        // Hidden at first; Ctrl+Shift+T brings it forward (a tab beside Calls), and again hides it.
        QTRY_VERIFY(!dock->inFront());
        QTest::keyClick(&window, Qt::Key_T, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY(dock->inFront());
        // Taller than the Calls table's first-start height: room for rows and the histogram.
        QTRY_VERIFY2(dock->height() >= 250, qPrintable(QString::number(dock->height())));
        QTest::keyClick(&window, Qt::Key_T, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY(!dock->inFront());
        window.showStatistics();
        QTRY_VERIFY(dock->inFront());
        QCOMPARE(cell(dock, 0, StatsTableModel::Calls), QStringLiteral("0"));

        QSignalSpy resets(dock->tableModel(), &QAbstractItemModel::modelReset);
        QSignalSpy inserted(dock->tableModel(), &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(dock->tableModel(), &QAbstractItemModel::dataChanged);

        // Three calls through the main proxy, OK at once.
        EventBatch first{testev::opened(1, 0)};
        for (int i = 0; i < 3; ++i) {
            const std::uint32_t s = 1 + 2 * std::uint32_t(i);
            first.push_back(request(1, s, 10 * ms + i * ms, "/shop.Cart/Get", "get-" + std::to_string(i)));
            first.push_back(trailers(1, s, 12 * ms + i * ms, 0));
        }
        model.appendBatch(first);
        // Cells read the stats when asked; the refresh is what tells the view, and it comes by itself.
        QTRY_COMPARE_WITH_TIMEOUT(inserted.count(), 1, 2000); // the method's row
        QCOMPARE(dock->tableModel()->rowCount(), 2);
        QCOMPARE(cell(dock, 0, StatsTableModel::Calls), QStringLiteral("3"));
        QCOMPARE(cell(dock, 0, StatsTableModel::OkFirstTry), QStringLiteral("3"));
        QVERIFY(changed.count() >= 1);
        QCOMPARE(histogramTotal(dock), 3u);

        // Then a hop "edge" with another method: one call retried once and OK, one still in flight.
        EventBatch second{testev::opened(2, 20 * ms, "127.0.0.1:5001", "127.0.0.1:9001", "edge")};
        second.push_back(request(2, 1, 30 * ms, "/shop.Pay/Charge", "charge-1"));
        second.push_back(trailers(2, 1, 31 * ms, 14));
        second.push_back(request(2, 3, 60 * ms, "/shop.Pay/Charge", "charge-1", 1));
        second.push_back(trailers(2, 3, 75 * ms, 0));
        second.push_back(request(2, 5, 80 * ms, "/shop.Pay/Charge", "charge-2"));
        model.appendBatch(second);
        QTRY_COMPARE_WITH_TIMEOUT(dock->tableModel()->rowCount(), 3, 2000);
        QCOMPARE(cell(dock, 0, StatsTableModel::Calls), QStringLiteral("5"));
        QCOMPARE(dock->tableModel()->rowCount(), 3);
        QCOMPARE(inserted.count(), 2);
        QCOMPARE(resets.count(), 0); // in place: the selection and the sort stay
        const int charge = rowOf(dock, QStringLiteral("/shop.Pay/Charge"));
        QVERIFY(charge > 0);
        QCOMPARE(cell(dock, charge, StatsTableModel::OkAfterRetry), QStringLiteral("1"));
        QCOMPARE(cell(dock, charge, StatsTableModel::InFlight), QStringLiteral("1"));
        QCOMPARE(cell(dock, charge, StatsTableModel::Amplification), QStringLiteral("1.50×"));
        QCOMPARE(cell(dock, charge, StatsTableModel::AttemptsPerCall), QStringLiteral("1:1 2:1"));
        QCOMPARE(cell(dock, charge, StatsTableModel::CallMax), formatDuration(45 * ms));

        // The in-flight call ends: the value changes in place.
        model.appendBatch({trailers(2, 5, 90 * ms, 14)});
        const qsizetype before = changed.count();
        QTRY_VERIFY_WITH_TIMEOUT(changed.count() > before, 2000);
        QCOMPARE(histogramTotal(dock), 5u); // Total's calls, all ended now
        QTRY_COMPARE_WITH_TIMEOUT(cell(dock, charge, StatsTableModel::FailedNoRetry), QStringLiteral("1"),
                                  2000);
        QCOMPARE(resets.count(), 0);

        // A row's click filters the Calls table and the timeline to it.
        clickRow(dock, charge);
        QCOMPARE(filterBox(window)->text(), QStringLiteral("method:/shop.Pay/Charge"));
        QCOMPARE(window.callsProxy()->rowCount(), 2);
        QTRY_COMPARE(callLanes(window), 2);
        // The filter box can be edited: a status term more.
        filterBox(window)->setText(QStringLiteral("method:/shop.Pay/Charge outcome:ok-after-retry"));
        QCOMPARE(window.callsProxy()->rowCount(), 1);

        // Per hop: the main proxy and edge, each clicked.
        QTest::keyClick(&window, Qt::Key_H, Qt::AltModifier);
        QCOMPARE(dock->tableModel()->kind(), StatsRow::Kind::Hop);
        const int main = rowOf(dock, QStringLiteral("(main proxy)")),
                  edge = rowOf(dock, QStringLiteral("edge"));
        QVERIFY(main > 0 && edge > 0);
        QCOMPARE(cell(dock, main, StatsTableModel::Calls), QStringLiteral("3"));
        QCOMPARE(cell(dock, edge, StatsTableModel::Calls), QStringLiteral("2"));
        clickRow(dock, main);
        QCOMPARE(filterBox(window)->text(), QStringLiteral("hop:="));
        QCOMPARE(window.callsProxy()->rowCount(), 3);
        clickRow(dock, edge);
        QCOMPARE(filterBox(window)->text(), QStringLiteral("hop:edge"));
        QCOMPARE(window.callsProxy()->rowCount(), 2);
        // The keyboard: Return on the current row does what a click does.
        dock->tableView()->setFocus();
        QTest::keyClick(dock->tableView(), Qt::Key_Return);
        QCOMPARE(filterBox(window)->text(), QString()); // edge again: every call
        QTest::keyClick(dock->tableView(), Qt::Key_Return);
        QCOMPARE(filterBox(window)->text(), QStringLiteral("hop:edge"));
        clickRow(dock, 0); // Total: every call
        QCOMPARE(filterBox(window)->text(), QString());
        QCOMPARE(window.callsProxy()->rowCount(), 5);
        QTest::keyClick(&window, Qt::Key_M, Qt::AltModifier);
        QCOMPARE(dock->tableModel()->kind(), StatsRow::Kind::Method);

        // Clear: the table starts over.
        QVERIFY(window.clearStage(false));
        QTRY_COMPARE(dock->tableModel()->rowCount(), 1);
        QCOMPARE(cell(dock, 0, StatsTableModel::Calls), QStringLiteral("0"));
    }

    void badFilterTerm()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        filterBox(window)->setText(QStringLiteral("latency:soon"));
        QVERIFY(filterBox(window)->toolTip().startsWith(QStringLiteral("unknown latency 'soon'")));
        filterBox(window)->setText(QStringLiteral("latency:>=1s"));
        QVERIFY(!filterBox(window)->toolTip().startsWith(QStringLiteral("unknown")));
    }
};

QTEST_MAIN(TestStatsDock)
#include "tst_statsdock.moc"
