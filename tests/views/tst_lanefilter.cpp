// The filter line's terms the Statistics dock writes (hop:, method:=, outcome:, latency:, attempt-latency:):
// parsing, the problems a bad term reports, and which calls each keeps.
#include "renderfixture.h"
#include "timelinelayout.h"

#include <QtTest>
#include <limits>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {
constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

// The calls the filter keeps, by key, in store order.
QStringList kept(const TimelineModel &model, const QString &line)
{
    const LaneFilter f = LaneFilter::parse(line);
    QStringList keys;
    for (const Call &c : model.store().calls())
        if (f.matches(c, &model.store())) keys << QString::fromStdString(c.key);
    return keys;
}
} // namespace

class TestLaneFilter : public QObject
{
    Q_OBJECT
private slots:
    void durations()
    {
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("10ms")), std::optional<std::int64_t>(10 * ms));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("1.5s")), std::optional<std::int64_t>(1500 * ms));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("50us")), std::optional<std::int64_t>(50'000));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("50µs")), std::optional<std::int64_t>(50'000));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("7ns")), std::optional<std::int64_t>(7));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("2m")), std::optional<std::int64_t>(120'000 * ms));
        QCOMPARE(LaneFilter::parseDuration(QStringLiteral("10MS")), std::optional<std::int64_t>(10 * ms));
        for (const char *bad : {"", "ms", "10", "10 ms", "10xs", "-5ms", "1e3ms"})
            QVERIFY2(!LaneFilter::parseDuration(QString::fromUtf8(bad)), bad);

        QCOMPARE(LaneFilter::durationTerm(10 * ms), QStringLiteral("10ms"));
        QCOMPARE(LaneFilter::durationTerm(2000 * ms), QStringLiteral("2s"));
        QCOMPARE(LaneFilter::durationTerm(1500 * ms), QStringLiteral("1500ms"));
        QCOMPARE(LaneFilter::durationTerm(20'000), QStringLiteral("20us"));
        QCOMPARE(LaneFilter::durationTerm(0), QStringLiteral("0ns"));
        QCOMPARE(LaneFilter::latencyTerm(10 * ms, 20 * ms), QStringLiteral("latency:10ms..20ms"));
        QCOMPARE(LaneFilter::latencyTerm(0, 10'000), QStringLiteral("latency:<10us"));
        QCOMPARE(LaneFilter::latencyTerm(200'000 * ms, kNone, true),
                 QStringLiteral("attempt-latency:>=200s"));
    }

    void parseTerms()
    {
        LaneFilter f =
            LaneFilter::parse(QStringLiteral("hop:edge method:=/a.B/C outcome:ok-after-retry slow"));
        QCOMPARE(f.hop, QStringLiteral("edge"));
        QVERIFY(!f.hopExact);
        QCOMPARE(f.method, QStringLiteral("/a.B/C"));
        QVERIFY(f.methodExact);
        QCOMPARE(f.outcome, std::optional(CallCategory::OkAfterRetry));
        QCOMPARE(f.text, QStringLiteral("slow"));
        QVERIFY(f.problem.isEmpty());
        QVERIFY(!f.isEmpty());

        // hop:= alone is the main proxy: an exact empty hop, and not an empty filter.
        f = LaneFilter::parse(QStringLiteral("hop:="));
        QVERIFY(f.hopExact && f.hop.isEmpty());
        QVERIFY(!f.isEmpty());
        QVERIFY(LaneFilter::parse(QStringLiteral("  ")).isEmpty());

        // Every category by its JSON key, with dashes or underscores, in any case.
        for (int c = 0; c < kCallCategories; ++c) {
            QString key = QString::fromLatin1(categoryKey(CallCategory(c)));
            QCOMPARE(LaneFilter::parse(QStringLiteral("outcome:") + key).outcome,
                     std::optional(CallCategory(c)));
            key.replace(QLatin1Char('_'), QLatin1Char('-'));
            QCOMPARE(LaneFilter::parse(QStringLiteral("OUTCOME:") + key.toUpper()).outcome,
                     std::optional(CallCategory(c)));
        }

        using Range = std::optional<std::pair<std::int64_t, std::int64_t>>;
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:10ms..20ms")).latency, Range({10 * ms, 20 * ms}));
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:>=1s")).latency, Range({1000 * ms, kNone}));
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:>1s")).latency, Range({1000 * ms + 1, kNone}));
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:<50us")).latency, Range({0, 50'000}));
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:<=2ms")).latency, Range({0, 2 * ms + 1}));
        QCOMPARE(LaneFilter::parse(QStringLiteral("latency:1s")).latency, Range({1000 * ms, kNone}));
        const LaneFilter a = LaneFilter::parse(QStringLiteral("attempt-latency:1ms..2ms"));
        QCOMPARE(a.attemptLatency, Range({ms, 2 * ms}));
        QVERIFY(!a.latency);
        // What the dock writes reads back as the same range.
        QCOMPARE(LaneFilter::parse(LaneFilter::latencyTerm(20'000, 50'000)).latency, Range({20'000, 50'000}));
    }

    void problems()
    {
        const LaneFilter o = LaneFilter::parse(QStringLiteral("outcome:great"));
        QVERIFY(o.problem.startsWith(QStringLiteral("unknown outcome 'great'")));
        QVERIFY(o.problem.contains(QStringLiteral("ok-after-retry")));
        for (const char *bad : {"latency:", "latency:fast", "latency:20ms..10ms",
                                "latency:>=", "latency:10ms..", "attempt-latency:5xs"}) {
            const LaneFilter f = LaneFilter::parse(QString::fromLatin1(bad));
            QVERIFY2(f.problem.startsWith(QStringLiteral("unknown latency")), bad);
            QVERIFY2(f.problem.contains(QStringLiteral("10ms..20ms")), bad);
        }
        // The first problem is the one shown.
        QVERIFY(LaneFilter::parse(QStringLiteral("outcome:x latency:y"))
                    .problem.contains(QStringLiteral("outcome")));
    }

    void matchesCalls()
    {
        // retry-basic-1: three attempts (2 ms, 2 ms, 10 ms), OK after 160 ms; deadline-1: one 120 ms attempt,
        // DEADLINE_EXCEEDED.
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const QStringList both{QStringLiteral("retry-basic-1"), QStringLiteral("deadline-1")};
        const QStringList retry{QStringLiteral("retry-basic-1")}, deadline{QStringLiteral("deadline-1")};
        QCOMPARE(kept(model, QString()), both);
        QCOMPARE(kept(model, QStringLiteral("outcome:ok-after-retry")), retry);
        QCOMPARE(kept(model, QStringLiteral("outcome:deadline-exceeded")), deadline);
        QCOMPARE(kept(model, QStringLiteral("outcome:ok-first-try")), QStringList());
        QCOMPARE(kept(model, QStringLiteral("latency:>=150ms")), retry);
        QCOMPARE(kept(model, QStringLiteral("latency:100ms..200ms")), both);
        QCOMPARE(kept(model, QStringLiteral("latency:<150ms")), deadline);
        QCOMPARE(kept(model, QStringLiteral("latency:<100ms")), QStringList());
        // A histogram bucket's term keeps the calls the stats counted in it: both are in [100 ms, 200 ms).
        for (int b = 0; b < LatencyBuckets::kCount; ++b) {
            const auto [lo, hi] = LatencyBuckets::rangeNs(b);
            const QStringList want = b == LatencyBuckets::bucketOf(100 * ms) ? both : QStringList();
            QCOMPARE(kept(model, LaneFilter::latencyTerm(lo, hi)), want);
            QCOMPARE(qsizetype(model.stats().total().callLatency.buckets()[size_t(b)]), want.size());
        }
        // Any one attempt in range: retry-basic-1's 2 ms attempts, deadline-1's 120 ms one.
        QCOMPARE(kept(model, QStringLiteral("attempt-latency:1ms..5ms")), retry);
        QCOMPARE(kept(model, QStringLiteral("attempt-latency:>=100ms")), deadline);
        QCOMPARE(kept(model, QStringLiteral("attempt-latency:5ms..9ms")), QStringList());
        // Every call here went through the main proxy (no hop label).
        QCOMPARE(kept(model, QStringLiteral("hop:=")), both);
        QCOMPARE(kept(model, QStringLiteral("hop:edge")), QStringList());
        QCOMPARE(kept(model, QStringLiteral("method:=/rpcscope.lab.Lab/Call")), both);
        QCOMPARE(kept(model, QStringLiteral("method:=/rpcscope.lab.Lab/Cal")), QStringList());
        QCOMPARE(kept(model, QStringLiteral("method:lab.lab/cal")), both); // a part, in any case
        QCOMPARE(kept(model, QStringLiteral("outcome:ok-after-retry latency:>=1s")), QStringList());
        // Without the store, outcome: and latency: cannot be judged: they keep nothing.
        const LaneFilter f = LaneFilter::parse(QStringLiteral("outcome:ok-after-retry"));
        QVERIFY(!f.matches(model.store().calls()[0]));
    }
};

QTEST_GUILESS_MAIN(TestLaneFilter)
#include "tst_lanefilter.moc"
