// Time axis: time <-> pixel mapping, tick steps and the ruler's labels.
#include "timeaxis.h"
#include "timeformat.h"

#include <QtTest>

using namespace rpcscope;

class TestTimeAxis : public QObject
{
    Q_OBJECT
private slots:
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

    // Durations as the lanes, tooltips and the inspector print them: the unit follows the size.
    void durationFormatting()
    {
        QCOMPARE(formatDuration(999), QStringLiteral("999 ns"));
        QCOMPARE(formatDuration(850'000), QStringLiteral("850.0 µs"));
        QCOMPARE(formatDuration(1'500'000), QStringLiteral("1.50 ms"));
        QCOMPARE(formatDuration(12'500'000), QStringLiteral("12.5 ms"));
        QCOMPARE(formatDuration(4'940'000'000), QStringLiteral("4.940 s"));
        QCOMPARE(formatDuration(12'000'000'000), QStringLiteral("12.0 s"));
        QCOMPARE(formatDuration(-2'000'000), QStringLiteral("-2.00 ms"));
    }

    // Counts with their noun, as the inspector and the schema dialogs give them (they read "1 message(s)").
    void countsWithTheirNoun()
    {
        QCOMPARE(counted(1, "message"), QStringLiteral("1 message"));
        QCOMPARE(counted(2, "message"), QStringLiteral("2 messages"));
        QCOMPARE(counted(0, "problem"), QStringLiteral("0 problems"));
        QCOMPARE(counted(3, "later message"), QStringLiteral("3 later messages"));
        QCOMPARE(counted(2, "policy", "policies"), QStringLiteral("2 policies"));
        // A label of a hop that already says "hop" is not said twice.
        QCOMPARE(hopText("hop 1"), QStringLiteral("hop 1"));
        QCOMPARE(hopText("front"), QStringLiteral("hop front"));
        QCOMPARE(hopText("hopper"), QStringLiteral("hop hopper"));
        QCOMPARE(hopText("live1: hop 1"), QStringLiteral("live1: hop 1")); // a merged capture's
        QCOMPARE(hopText("Hop-2"), QStringLiteral("Hop-2"));
    }
};

QTEST_GUILESS_MAIN(TestTimeAxis)
#include "tst_timeaxis.moc"
