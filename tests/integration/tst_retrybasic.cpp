// End to end: a real grpc++ client retries against the real lab server through the capture relay.

#include "clock.h"
#include "labclient.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QAbstractItemModelTester>
#include <QtTest>
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

struct Collector
{
    std::mutex mu;
    EventBatch events;
    Relay::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            events.insert(events.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
        };
    }
};
} // namespace

class TestRetryBasic : public QObject
{
    Q_OBJECT
private slots:
    void retryBasicOnTheWire()
    {
        Collector collector;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(collector.sink(), &error), error.c_str());
        const lab::Scenario *scenario = lab::findScenario("retry-basic");
        QVERIFY(scenario);

        // Three runs: C-core's first backoff has no jitter, so every run must show it.
        std::vector<lab::ScenarioResult> results;
        for (int i = 0; i < 3; ++i)
            results.push_back(session.run(*scenario));
        session.stop(); // flushes every decoded event

        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendBatch(collector.events);
        QCOMPARE(model.rowCount(), 3);

        for (int run = 0; run < 3; ++run) {
            QVERIFY2(results[run].expectationHeld, results[run].summary.c_str());
            const std::string id = results[run].calls.at(0).callId;
            const Call &call = model.store().calls()[run];
            QCOMPARE(call.key, id);
            QCOMPARE(call.method, std::string("/rpcscope.lab.Lab/Call"));
            QVERIFY(!call.inferred);
            QCOMPARE(int(call.attempts.size()), 3);
            for (int k = 0; k < 3; ++k) {
                QCOMPARE(call.attempts[k].previousAttempts.value_or(-1), k);
                QVERIFY(call.attempts[k].ended());
                QCOMPARE(call.attempts[k].status.value_or(-1), k < 2 ? 14 : 0);
                QVERIFY(call.attempts[k].timeoutNs.has_value());
            }
            QVERIFY(call.outcomeAttempt());
            QCOMPARE(call.outcomeAttempt()->status.value_or(-1), 0);
            QVERIFY(call.deadlineNs().has_value());

            const auto gaps = call.gapsNs();
            QCOMPARE(int(gaps.size()), 2);
            // C-core waits exactly initialBackoff (50 ms) before the first retry. The wire gap adds the
            // client's reaction and its timer thread's wake-up: 20 runs measured 49.6-50.7 ms, two
            // outliers 53.1 and 53.9. The issue's own bound is 50 ms +-5; under ASan the relay reads a little
            // late (45.6-47.8 ms seen).
            QVERIFY2(*gaps[0] >= 45 * ms && *gaps[0] <= 58 * ms,
                     qPrintable(QStringLiteral("first gap %1 ms").arg(double(*gaps[0]) / ms)));
            // The second is 100 ms times a uniform factor in [0.8, 1.2].
            QVERIFY2(*gaps[1] >= 78 * ms && *gaps[1] <= 126 * ms,
                     qPrintable(QStringLiteral("second gap %1 ms").arg(double(*gaps[1]) / ms)));

            // Every attempt's start on the wire comes before the server's arrival log, and close to it. The
            // server stamps its arrival when grpc++ runs the handler, after its own dispatch: 0.2-2 ms after
            // the first HEADERS on a quiet loopback, but one attempt at 2.0 and one at 3.3 ms were seen with
            // both cores busy. So the median of the three must be within 2 ms, and each within tst_fidelity's
            // 10 ms, which still catches a stall such as Nagle's 40 ms. tst_fidelity measures the wire times
            // themselves against an independent tap.
            const auto arrivals = session.server().arrivalsFor(id);
            QCOMPARE(int(arrivals.size()), 3);
            std::vector<std::int64_t> diffs;
            for (int k = 0; k < 3; ++k) {
                const std::int64_t diff = arrivals[k].tNs - call.attempts[k].startNs;
                QVERIFY2(diff >= 0 && diff <= 10 * ms,
                         qPrintable(QStringLiteral("attempt %1: server arrival - wire start = %2 ms")
                                        .arg(k + 1)
                                        .arg(double(diff) / ms)));
                QCOMPARE(arrivals[k].previousAttempts.value_or(0), k);
                diffs.push_back(diff);
            }
            std::sort(diffs.begin(), diffs.end());
            QVERIFY2(
                diffs[1] <= 2 * ms,
                qPrintable(
                    QStringLiteral("median server arrival - wire start = %1 ms").arg(double(diffs[1]) / ms)));
        }

        // Every connection was h2 and decoded cleanly.
        QVERIFY(!model.store().connections().empty());
        for (const Connection &c : model.store().connections()) {
            QVERIFY2(c.decodeError.empty(), c.decodeError.c_str());
            QVERIFY(c.closedNs.has_value());
        }
    }

    void callsAppearLive()
    {
        // Batches reach the model while the call is still running, the way the GUI gets them.
        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(
                     [&model](EventBatch &&b) {
                         QMetaObject::invokeMethod(
                             &model, [&model, b = std::move(b)] { model.appendBatch(b); },
                             Qt::QueuedConnection);
                     },
                     &error),
                 error.c_str());

        lab::CallRequest req;
        req.set_call_id("slow-1");
        req.set_delay_ms(1500);
        std::atomic<bool> done{false};
        std::thread worker([&] {
            lab::LabClient client(session.proxyAddress().toString(), {});
            client.call(req, std::chrono::seconds(10));
            done = true;
        });
        auto inFlight = [&] {
            return model.rowCount() == 1 && !model.store().calls()[0].attempts.empty() &&
                   !model.store().calls()[0].attempts[0].ended();
        };
        QTRY_VERIFY_WITH_TIMEOUT(inFlight(), 5000);
        QVERIFY(!done); // seen while the server was still holding the call
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(),
                 QStringLiteral("in flight"));
        worker.join();
        QTRY_VERIFY_WITH_TIMEOUT(model.store().calls()[0].outcomeAttempt() != nullptr, 5000);
        QCOMPARE(model.store().calls()[0].outcomeAttempt()->status.value_or(-1), 0);
        session.stop();
    }
};

QTEST_GUILESS_MAIN(TestRetryBasic)
#include "tst_retrybasic.moc"
