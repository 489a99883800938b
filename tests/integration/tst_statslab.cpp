// Call statistics (callstats.h) on real lab runs (grpc++ 1.51 through the capture relays): each outcome
// category comes from the scenarios that produce it, and its count is what the scenario's own client and
// server saw (ScenarioResult::expected), not what the wire decoder thinks.

#include "callstats.h"
#include "labrun.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QtTest>
#include <mutex>

using namespace rpcscope;

namespace {
using labrun::Run;
using labrun::runScenario;
constexpr int kOk = 0, kDeadlineExceeded = 4;

// The category the scenario's own truth gives a call: the attempts its server saw and the status its client
// got.
CallCategory expectedCategory(const lab::ExpectedCall &e)
{
    if (e.finalStatus == kDeadlineExceeded) return CallCategory::DeadlineExceeded;
    if (e.finalStatus == kOk) return e.attempts > 1 ? CallCategory::OkAfterRetry : CallCategory::OkFirstTry;
    return e.attempts > 1 ? CallCategory::FailedAfterRetries : CallCategory::FailedNoRetry;
}

// Every call the scenario expected is counted in the category its truth gives, and the attempts add up.
void checkAgainstTruth(const Run &run, const CallStats &stats,
                       std::array<std::uint64_t, kCallCategories> *seen)
{
    std::array<std::uint64_t, kCallCategories> expected{};
    std::uint64_t attempts = 0;
    for (const lab::ExpectedCall &e : run.result.expected) {
        ++expected[size_t(expectedCategory(e))];
        attempts += std::uint64_t(e.attempts);
    }
    const StatsRow &t = stats.total();
    for (int c = 0; c < kCallCategories; ++c) {
        if (CallCategory(c) == CallCategory::FailedFast) continue; // checked by the caller
        QVERIFY2(t.outcomes[size_t(c)] == expected[size_t(c)],
                 qPrintable(QStringLiteral("%1: %2 counted, %3 expected (%4)")
                                .arg(categoryLabel(CallCategory(c)))
                                .arg(t.outcomes[size_t(c)])
                                .arg(expected[size_t(c)])
                                .arg(QString::fromStdString(run.result.summary))));
        (*seen)[size_t(c)] += t.outcomes[size_t(c)];
    }
    // The truth counts the attempts its server saw: a transparent retry's first stream never reached it.
    QCOMPARE(t.attempts - t.transparentRetries, attempts);
    QCOMPARE(t.count(CallCategory::InFlight), 0u);
}
} // namespace

class TestStatsLab : public QObject
{
    Q_OBJECT
    std::array<std::uint64_t, kCallCategories> m_seen{};

private slots:
    void categories_data()
    {
        QTest::addColumn<QString>("scenario");
        for (const char *s : {"retry-basic", "no-retry-policy", "non-retryable", "max-attempts-4",
                              "retry-storm", "deadline-cuts-retries", "transparent-retry"})
            QTest::newRow(s) << QString(s);
    }
    void categories()
    {
        QFETCH(QString, scenario);
        const Run run = runScenario(scenario.toStdString());
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        QVERIFY(!run.result.expected.empty());
        TimelineModel model;
        model.appendBatch(run.events);
        checkAgainstTruth(run, model.stats(), &m_seen);
        // Live and from a file alike: a rebuild agrees.
        CallStats rebuilt;
        rebuilt.rebuild(model.store());
        QCOMPARE(rebuilt.total().outcomes, model.stats().total().outcomes);
        if (scenario == "retry-storm") {
            // 20 clients, 4 attempts each against a dead downstream: amplification 4.
            QCOMPARE(model.stats().total().calls, 20u);
            QCOMPARE(model.stats().total().amplification(), 4.0);
            QCOMPARE(model.stats().total().attemptsPerCall.at(4), 20u);
        }
        if (scenario == "transparent-retry") QVERIFY(model.stats().total().transparentRetries >= 1);
    }

    // The breaker fails calls fast: counted from its lab events, one per call never sent.
    void circuitBreakerFailsFast()
    {
        const Run run = runScenario("circuit-breaker");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        size_t fastFails = 0;
        for (const WireEvent &e : run.events)
            if (e.kind == EventKind::LabEvent && e.decision() && e.decision()->kind == "fast-fail")
                ++fastFails;
        QVERIFY(fastFails > 0);
        const StatsRow &t = model.stats().total();
        QCOMPARE(t.count(CallCategory::FailedFast), std::uint64_t(fastFails));
        checkAgainstTruth(run, model.stats(), &m_seen);
        // Every call the scenario made is a call on the wire or a fast failure.
        QCOMPARE(t.calls, std::uint64_t(40));
        m_seen[size_t(CallCategory::FailedFast)] += t.count(CallCategory::FailedFast);
    }

    // Together, the scenarios above produced every category but "in flight" (a finished run has none).
    void everyCategorySeen()
    {
        for (int c = 0; c < kCallCategories; ++c)
            if (CallCategory(c) != CallCategory::InFlight)
                QVERIFY2(m_seen[size_t(c)] > 0, categoryLabel(CallCategory(c)));
    }
};

QTEST_GUILESS_MAIN(TestStatsLab)
#include "tst_statslab.moc"
