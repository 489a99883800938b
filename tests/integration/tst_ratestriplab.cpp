// The rates strip's counts on real lab runs: the widget's index follows the capture batch by batch and ends
// with what a rebuild from the store counts, and the totals are the scenario's (retry-storm: 20 calls, 60
// retries, 80 failed attempts of which 20 failed calls; transparent-retry: the replayed stream counted apart
// from the retries).
#include "clock.h"
#include "labsession.h"
#include "modelsink.h"
#include "ratebins.h"
#include "scenario.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QtTest>
#include <atomic>
#include <thread>

using namespace rpcscope;

namespace {
struct Totals
{
    std::int64_t calls = 0, failures = 0, retries = 0, transparent = 0, failedCalls = 0;
};

Totals totals(const RateBins &rates, const TimelineStore &store)
{
    Totals t;
    const std::int64_t s = 1'000'000'000;
    for (const RateBins::Bucket &b : rates.buckets(store.originNs() - 10 * s, store.latestNs() + 10 * s, s)) {
        t.calls += b.calls;
        t.failures += b.failures;
        t.failedCalls += b.failedCalls;
        t.retries += b.retries;
        t.transparent += b.transparent;
    }
    return t;
}
} // namespace

class TestRateStripLab : public QObject
{
    Q_OBJECT
private:
    // Runs the scenario into a model shown by a view; returns the view's rates and a rebuild's totals.
    void runScenario(const char *name, Totals *followed, Totals *rebuiltTotals, size_t *attempts,
                     size_t *calls)
    {
        TimelineModel model;
        model.setOrigin(steadyNowNs(), wallNowNs());
        SwimlaneView view(&model);
        view.resize(1200, 700);
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        const lab::Scenario *scenario = lab::findScenario(name);
        QVERIFY(scenario);
        std::atomic<bool> done{false};
        std::thread runner([&] {
            lab.run(*scenario);
            done = true;
        });
        QTRY_VERIFY_WITH_TIMEOUT(done.load(), 90'000);
        runner.join();
        // Stopping the lab stops its relay, whose decoder hands over its last events first; the feed then
        // holds the whole run, and applies it a frame's worth at a time unless drained.
        lab.stop();
        ModelFeed::of(&model)->drainAll();
        const auto &all = model.store().calls();
        QTRY_VERIFY_WITH_TIMEOUT(
            !all.empty() &&
                std::all_of(all.begin(), all.end(), [](const Call &c) { return c.outcomeAttempt(); }),
            5000);
        QApplication::processEvents();
        const TimelinePainter &painter = view.timelinePainter();
        painter.fullRange(); // a paint's refresh
        const RateBins &rates = view.timelinePainter().context(view.canvas()).index.rates();
        RateBins rebuilt;
        rebuilt.sync(model.store());
        *followed = totals(rates, model.store());
        *rebuiltTotals = totals(rebuilt, model.store());
        // Bin by bin at 1 ms over the run, not only in total.
        const auto a =
            rates.buckets(model.store().originNs(), model.store().latestNs() + 1, RateBins::kBaseNs);
        const auto b =
            rebuilt.buckets(model.store().originNs(), model.store().latestNs() + 1, RateBins::kBaseNs);
        QCOMPARE(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(a[i].calls, b[i].calls);
            QCOMPARE(a[i].failures, b[i].failures);
            QCOMPARE(a[i].retries, b[i].retries);
            QCOMPARE(a[i].transparent, b[i].transparent);
            QVERIFY(qAbs(a[i].inFlight - b[i].inFlight) < 1e-9);
        }
        *calls = all.size();
        *attempts = 0;
        for (const Call &c : all)
            *attempts += c.attempts.size();
    }

private slots:
    void retryStorm()
    {
        Totals followed, rebuilt;
        size_t attempts = 0, calls = 0;
        runScenario("retry-storm", &followed, &rebuilt, &attempts, &calls);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(calls, size_t(20));
        QCOMPARE(attempts, size_t(80));
        QCOMPARE(followed.calls, 20);
        QCOMPARE(followed.retries, 60);
        // Every attempt failed (the downstream is dead): each is a failure, and each call a failed call.
        QCOMPARE(followed.failures, 80);
        QCOMPARE(followed.failedCalls, 20);
        QCOMPARE(followed.transparent, 0);
        QCOMPARE(rebuilt.calls, followed.calls);
        QCOMPARE(rebuilt.retries, followed.retries);
        QCOMPARE(rebuilt.failures, followed.failures);
        QCOMPARE(rebuilt.failedCalls, followed.failedCalls);
    }

    void transparentRetryIsNotARetry()
    {
        Totals followed, rebuilt;
        size_t attempts = 0, calls = 0;
        runScenario("transparent-retry", &followed, &rebuilt, &attempts, &calls);
        if (QTest::currentTestFailed()) return;
        QVERIFY(followed.transparent >= 1);
        QCOMPARE(std::int64_t(attempts - calls), followed.retries + followed.transparent);
        QCOMPARE(followed.calls, std::int64_t(calls));
        QCOMPARE(rebuilt.transparent, followed.transparent);
        QCOMPARE(rebuilt.retries, followed.retries);
    }
};

QTEST_MAIN(TestRateStripLab)
#include "tst_ratestriplab.moc"
