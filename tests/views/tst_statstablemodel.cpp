// StatsTableModel over a real TimelineModel's CallStats: rows in place as batches arrive (inserted, never
// reset), the labels and filter terms of each kind of row, the cells' text and sort values, a clear.
#include "renderfixture.h"
#include "statstablemodel.h"
#include "timeformat.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {

WireEvent call(std::uint32_t stream, std::int64_t t, const std::string &path, const std::string &id,
               std::optional<int> previous = std::nullopt)
{
    WireEvent e = req(stream, t, previous, id, 5000 * ms);
    e.grpc.path = path;
    return e;
}

QString text(const StatsTableModel &m, int row, int column)
{
    return m.data(m.index(row, column)).toString();
}

int rowOf(const StatsTableModel &m, const QString &label)
{
    for (int r = 0; r < m.rowCount(); ++r)
        if (text(m, r, StatsTableModel::Name) == label) return r;
    return -1;
}

} // namespace

class TestStatsTableModel : public QObject
{
    Q_OBJECT
private slots:
    void followsTheStats()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        StatsTableModel table;
        QAbstractItemModelTester tester(&table);
        table.setStats(&model.stats());
        QCOMPARE(table.rowCount(), 1);
        QCOMPARE(text(table, 0, StatsTableModel::Name), QStringLiteral("Total"));
        QCOMPARE(text(table, 0, StatsTableModel::Calls), QStringLiteral("0"));
        QCOMPARE(text(table, 0, StatsTableModel::CallP50), QStringLiteral("–"));

        QSignalSpy resets(&table, &QAbstractItemModel::modelReset);
        QSignalSpy inserted(&table, &QAbstractItemModel::rowsInserted);
        // /a.Svc/Get: one call, retried once, OK after 40 ms; /a.Svc/GetAll: one call failing at once.
        model.appendBatch({opened(1), call(1, 0, "/a.Svc/Get", "g"), end(1, 2 * ms, 14),
                           call(3, 30 * ms, "/a.Svc/Get", "g", 1), end(3, 40 * ms, 0),
                           call(5, 50 * ms, "/a.Svc/GetAll", "all"), end(5, 55 * ms, 3)});
        table.refresh();
        QCOMPARE(resets.count(), 0);
        QCOMPARE(inserted.count(), 1);
        QCOMPARE(table.rowCount(), 3);
        const int get = rowOf(table, QStringLiteral("/a.Svc/Get")),
                  all = rowOf(table, QStringLiteral("/a.Svc/GetAll"));
        QVERIFY(get > 0 && all > 0);
        QCOMPARE(text(table, 0, StatsTableModel::Calls), QStringLiteral("2"));
        QCOMPARE(text(table, 0, StatsTableModel::Attempts), QStringLiteral("3"));
        QCOMPARE(text(table, 0, StatsTableModel::Amplification), QStringLiteral("1.50×"));
        QCOMPARE(text(table, get, StatsTableModel::OkAfterRetry), QStringLiteral("1"));
        QCOMPARE(text(table, all, StatsTableModel::FailedNoRetry), QStringLiteral("1"));
        QCOMPARE(text(table, 0, StatsTableModel::AttemptsPerCall), QStringLiteral("1:1 2:1"));
        QCOMPARE(text(table, get, StatsTableModel::CallMax), formatDuration(40 * ms));
        QCOMPARE(text(table, all, StatsTableModel::AttemptP50), formatDuration(5 * ms));
        QCOMPARE(text(table, get, StatsTableModel::GapsWithin).toInt() +
                     text(table, get, StatsTableModel::GapsEarly).toInt() +
                     text(table, get, StatsTableModel::GapsLate).toInt() +
                     text(table, get, StatsTableModel::GapsNoPolicy).toInt(),
                 1);
        // Numbers sort as numbers: the raw value behind the text.
        QCOMPARE(
            table.data(table.index(get, StatsTableModel::CallMax), StatsTableModel::SortRole).toLongLong(),
            40 * ms);
        QCOMPARE(
            table.data(table.index(0, StatsTableModel::Amplification), StatsTableModel::SortRole).toDouble(),
            1.5);
        for (int c = 0; c < StatsTableModel::ColumnCount; ++c)
            QVERIFY(!table.headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());

        // A method another contains is matched exactly; Total filters nothing.
        QCOMPARE(table.filterTerms(get), QStringLiteral("method:=/a.Svc/Get"));
        QCOMPARE(table.filterTerms(all), QStringLiteral("method:/a.Svc/GetAll"));
        QCOMPARE(table.filterTerms(0), QString());
        QCOMPARE(LaneFilter::parse(table.filterTerms(get)).matches(model.store().calls()[0], &model.store()),
                 true);
        QCOMPARE(LaneFilter::parse(table.filterTerms(get)).matches(model.store().calls()[1], &model.store()),
                 false);

        // A value that changes is a dataChanged, not a reset; a fast failure adds the "(never sent)" row.
        QSignalSpy changed(&table, &QAbstractItemModel::dataChanged);
        model.appendBatch({labEvent(60 * ms, "fast-fail", "breaker open", "ff")});
        table.refresh();
        QCOMPARE(resets.count(), 0);
        QVERIFY(changed.count() >= 1);
        const int never = rowOf(table, QStringLiteral("(never sent)"));
        QVERIFY(never > 0);
        QCOMPARE(text(table, never, StatsTableModel::FailedFast), QStringLiteral("1"));
        QCOMPARE(text(table, never, StatsTableModel::Amplification), QStringLiteral("–"));
        QCOMPARE(table.filterTerms(never), QStringLiteral("outcome:failed-fast"));
        QCOMPARE(text(table, 0, StatsTableModel::Calls), QStringLiteral("3"));

        // Per hop: everything went through the main proxy.
        table.setKind(StatsRow::Kind::Hop);
        QCOMPARE(table.rowCount(), 2);
        QCOMPARE(text(table, 1, StatsTableModel::Name), QStringLiteral("(main proxy)"));
        QCOMPARE(table.filterTerms(1), QStringLiteral("hop:="));
        QCOMPARE(table.headerData(0, Qt::Horizontal).toString(), QStringLiteral("hop"));

        // Cleared: the rows that went are a reset.
        model.clear();
        table.refresh();
        QCOMPARE(table.rowCount(), 1);
        QCOMPARE(text(table, 0, StatsTableModel::Calls), QStringLiteral("0"));
    }

    // Backoff gaps against the policy's range with the timeline's 5 ms of slack: a first retry 3 ms early
    // (what the wire shows of C-core's exact initial backoff) is within, 10 ms early is early.
    void gapsAsTheTimelineJudgesThem()
    {
        auto withPolicy = [](std::uint32_t stream, std::int64_t t, const std::string &id,
                             std::optional<int> prev) {
            WireEvent e = call(stream, t, "/a.Svc/Get", id, prev);
            e.grpc.retryInitialMs = 100;
            e.grpc.retryMultiplier = 2;
            e.grpc.retryMaxMs = 1000;
            return e;
        };
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), withPolicy(1, 0, "near", std::nullopt), end(1, 1 * ms, 14),
                           withPolicy(3, 98 * ms, "near", 1), end(3, 99 * ms, 0),
                           withPolicy(5, 0, "far", std::nullopt), end(5, 1 * ms, 14),
                           withPolicy(7, 91 * ms, "far", 1), end(7, 92 * ms, 0)});
        StatsTableModel table;
        table.setStats(&model.stats());
        QCOMPARE(text(table, 0, StatsTableModel::GapsWithin), QStringLiteral("1"));
        QCOMPARE(text(table, 0, StatsTableModel::GapsEarly), QStringLiteral("1"));
        QCOMPARE(text(table, 0, StatsTableModel::GapsLate), QStringLiteral("0"));
    }
};

QTEST_MAIN(TestStatsTableModel)
#include "tst_statstablemodel.moc"
