// The Compare window (issue 20) in the real main window: the lab's built-in comparison runs retry-storm and
// retry-throttling as two runs and opens the window on them; its table, histogram and both timelines, whose
// ranges stay aligned at their origins when either is zoomed or panned. Ctrl+Shift+B opens it on any two
// runs.
//
// With RPCSCOPE_SHOT_DIR set, the window is saved there as compare.png, compare-workshop.png and
// compare-dark.png.

#include "comparewindow.h"
#include "labpanel.h"
#include "labsession.h"
#include "latencyhistogram.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "runlist.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QSettings>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>
#include <numeric>

using namespace rpcscope;

namespace {

// A timeline's visible range, from its own origin.
std::pair<qint64, qint64> fromOrigin(CompareWindow *w, int side)
{
    const ZoomControl &z = w->timeline(side)->zoomControl();
    const qint64 origin = w->model(side)->store().originNs();
    return {z.rangeStart() - origin, z.rangeEnd() - origin};
}

void shot(QWidget *w, const QString &name)
{
    QTest::qWait(50); // a new font or palette lays the window out again first
    const QString dir = qEnvironmentVariable("RPCSCOPE_SHOT_DIR");
    if (dir.isEmpty()) return;
    QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

} // namespace

class TestCompare : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_compare"));
        QSettings().clear();
    }

    void labComparisonOpensAlignedTimelines()
    {
        TimelineModel model;
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("retry-storm"));
        window.setPromptOnClose(false);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(!window.compareWindow());

        QSignalSpy done(window.labPanel(), &LabPanel::comparisonFinished);
        QVERIFY(window.labPanel()->runComparison(QStringLiteral("storm-vs-throttling")));
        QVERIFY(done.wait(120000));
        QCOMPARE(done.first().at(1).toString(), QStringLiteral("retry-storm"));
        QCOMPARE(window.runs()->count(), 2);
        QCOMPARE(window.runs()->at(0).name, QStringLiteral("retry-storm"));
        QCOMPARE(window.runs()->at(1).name, QStringLiteral("retry-throttling"));
        CompareWindow *w = window.compareWindow();
        QVERIFY(w);
        QTRY_VERIFY(w->isVisible());
        QCOMPARE(w->label(0), QStringLiteral("retry-storm"));
        QCOMPARE(w->label(1), QStringLiteral("retry-throttling"));

        // The table: the storm amplifies 4x, throttling far less.
        const CompareRow *total = w->comparison().find(StatsRow::Kind::Total, {});
        QVERIFY(total);
        QCOMPARE(*total->value("calls")->a, 20.0);
        QCOMPARE(*total->value("amplification")->a, 4.0);
        QVERIFY(*total->value("amplification")->b < 2.0);
        QTableWidget *table = w->table();
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("Total"));
        QList<QTableWidgetItem *> amp =
            table->findItems(QStringLiteral("    amplification"), Qt::MatchExactly);
        QVERIFY(!amp.isEmpty());
        QCOMPARE(table->item(amp.first()->row(), 1)->text(), QStringLiteral("4.00"));
        QVERIFY(table->item(amp.first()->row(), 3)->text().startsWith(QStringLiteral("−")));

        // The histogram of the Total row holds each run's ended calls.
        auto sum = [w](int side) {
            const auto &series = w->histogram()->series();
            if (size_t(side) >= series.size()) return std::uint64_t(0);
            const auto &c = series[size_t(side)].counts;
            return std::accumulate(c.begin(), c.end(), std::uint64_t(0));
        };
        QCOMPARE(w->histogram()->series().size(), size_t(2));
        QCOMPARE(sum(0), std::uint64_t(20));
        QCOMPARE(sum(1), std::uint64_t(20));
        // An attempt measure shows the attempts.
        QList<QTableWidgetItem *> attemptP50 =
            table->findItems(QStringLiteral("    attempt p50"), Qt::MatchExactly);
        QVERIFY(!attemptP50.isEmpty());
        table->setCurrentCell(attemptP50.first()->row(), 0);
        QCOMPARE(sum(0), std::uint64_t(80));
        QVERIFY(w->histogramTitle().startsWith(QStringLiteral("Attempt latency")));
        table->setCurrentCell(0, 0);
        QCOMPARE(sum(0), std::uint64_t(20));

        // Both timelines start at their origins and show the same span, as long as the longer run.
        QVERIFY(w->model(0)->store().originNs() != w->model(1)->store().originNs());
        const auto a = fromOrigin(w, 0), b = fromOrigin(w, 1);
        QCOMPARE(a.first, qint64(0));
        QCOMPARE(a, b);
        for (int side = 0; side < 2; ++side)
            QVERIFY(a.second >= w->timeline(side)->timelinePainter().fullRange().second -
                                    w->model(side)->store().originNs());
        shot(w, QStringLiteral("compare.png"));
        QCOMPARE(fromOrigin(w, 0), a); // a picture changes nothing

        // Zooming or panning either moves the other by the same time from its origin.
        const qint64 oA = w->model(0)->store().originNs();
        w->timeline(0)->setRange(oA + 5'000'000, oA + 45'000'000);
        QCOMPARE(fromOrigin(w, 1), (std::pair<qint64, qint64>(5'000'000, 45'000'000)));
        w->timeline(1)->zoomControl().panBy(10'000'000);
        QCOMPARE(fromOrigin(w, 0), (std::pair<qint64, qint64>(15'000'000, 55'000'000)));
        w->fitBoth();
        QCOMPARE(fromOrigin(w, 0), a);

        // Workshop and dark follow the main window's.
        const double baseSize = w->font().pointSizeF();
        window.setWorkshop(true);
        QTRY_VERIFY(w->font().pointSizeF() >= baseSize * 1.4);
        shot(w, QStringLiteral("compare-workshop.png"));
        window.setWorkshop(false);
        window.setDark(true);
        QTRY_VERIFY(w->palette().color(QPalette::Window).lightness() < 128);
        shot(w, QStringLiteral("compare-dark.png"));
        window.setDark(false);

        // Swap: B becomes A.
        w->swapSides();
        QCOMPARE(w->label(0), QStringLiteral("retry-throttling"));
        // Each timeline shows its side's run: A's calls are now throttling's, and the upper view draws them
        // (the runs did not overlap in time, so another run's range would miss this one's).
        for (int side = 0; side < 2; ++side) {
            const auto [lo, hi] = w->timeline(side)->timelinePainter().fullRange();
            QVERIFY(hi > w->model(side)->store().originNs() && lo < w->model(side)->store().latestNs());
        }
        QVERIFY(!w->model(0)->store().calls().empty());
        for (const Call &c : w->model(0)->store().calls())
            QVERIFY2(c.key.rfind("retry-throttling-", 0) == 0, c.key.c_str());
        QCOMPARE(double(w->model(0)->stats().total().attempts),
                 *w->comparison().rows[0].value("attempts")->a);
        QCOMPARE(*w->comparison().find(StatsRow::Kind::Total, {})->value("amplification")->b, 4.0);
        QCOMPARE(fromOrigin(w, 0), fromOrigin(w, 1));

        // Ctrl+Shift+B on any two runs: the same run on both sides compares equal.
        w->close();
        QAction *compare = window.findChild<QAction *>(QStringLiteral("compareRuns"));
        QVERIFY(compare);
        QCOMPARE(compare->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+B")));
        QVERIFY(!compare->toolTip().isEmpty());
        window.openCompare(0, 0);
        QVERIFY(w->isVisible());
        const CompareValue *same = w->comparison().find(StatsRow::Kind::Total, {})->value("attempts");
        QCOMPARE(*same->difference(), 0.0);
        QCOMPARE(*same->ratio(), 1.0);

        // A saved run opened as a file compares equal to the run, and joins both pickers.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("storm.rpcscope"));
        QString why;
        QVERIFY2(window.saveRun(0, path, &why), qPrintable(why));
        QVERIFY2(w->openFile(1, path, &why), qPrintable(why));
        QCOMPARE(w->label(1), QStringLiteral("storm.rpcscope"));
        auto *pickA = w->findChild<QComboBox *>(QStringLiteral("pickA"));
        QVERIFY(pickA);
        QCOMPARE(pickA->count(), 3);
        QCOMPARE(pickA->itemText(2), QStringLiteral("storm.rpcscope"));
        w->pick(0, 0);
        const CompareRow *saved = w->comparison().find(StatsRow::Kind::Total, {});
        QCOMPARE(*saved->value("attempts")->b, 80.0);
        QCOMPARE(*saved->value("call_p99_ns")->ratio(), 1.0);
        w->close();
        window.close();
    }

    void labPanelOffersTheBuiltInComparisons()
    {
        lab::LabSession lab;
        LabPanel panel(&lab, QStringLiteral("bulkhead"));
        panel.resize(420, 760);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QToolButton *button = panel.compareButton();
        QVERIFY(button && button->isVisible());
        QVERIFY(!button->toolTip().isEmpty());
        const QList<QAction *> entries = button->menu()->actions();
        QCOMPARE(entries.size(), 2);
        QCOMPARE(entries[0]->data().toString(), QStringLiteral("storm-vs-throttling"));
        QCOMPARE(entries[1]->data().toString(), QStringLiteral("bulkhead-shared-vs-isolated"));
        for (QAction *a : entries)
            QVERIFY(!a->toolTip().isEmpty());
        QVERIFY(!panel.runComparison(QStringLiteral("no-such-comparison")));
        // The bulkhead's phase parameter, which the comparison sets to 1 and 2.
        bool phase = false;
        for (QLabel *l : panel.findChildren<QLabel *>())
            phase = phase || l->text() == QLatin1String("phase");
        QVERIFY(phase);
        shot(&panel, QStringLiteral("labpanel-compare.png"));
    }

    void openFileErrors()
    {
        CompareWindow w;
        QString error;
        QVERIFY(!w.openFile(0, QStringLiteral("no-such-file.rpcscope"), &error));
        QVERIFY2(error.contains(QStringLiteral("no-such-file.rpcscope")), qPrintable(error));
    }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
