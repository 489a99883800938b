// Every lab scenario runs headless through the capture relay; its outcome is asserted on the assembled model
// (what was on the wire), following C-core 1.51's measured behaviour.

#include "clientoutcome.h"
#include "labserver.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <mutex>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

const Call *callByKey(const TimelineStore &store, const std::string &key)
{
    for (const Call &c : store.calls())
        if (c.key == key) return &c;
    return nullptr;
}

QString between(std::int64_t v, std::int64_t lo, std::int64_t hi)
{
    return QStringLiteral("%1 ms not in [%2, %3] ms").arg(double(v) / ms).arg(lo / ms).arg(hi / ms);
}
} // namespace

class TestScenarios : public QObject
{
    Q_OBJECT
private slots:
    // Each scenario numbers its calls from 1, whatever ran before it in the session; running it again goes
    // on from where it stopped, so a session's call ids stay unique (one file may hold several runs).
    void callsNumberedPerScenario()
    {
        std::mutex mu;
        std::vector<std::string> ids;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(
                     [&](EventBatch &&b) {
                         std::lock_guard lk(mu);
                         for (const WireEvent &e : b)
                             if (!e.grpc.callId.empty() &&
                                 std::find(ids.begin(), ids.end(), e.grpc.callId) == ids.end())
                                 ids.push_back(e.grpc.callId);
                     },
                     &error),
                 error.c_str());
        // The ids a run made: its events are all in once run() returns.
        auto run = [&](const char *name) {
            {
                std::lock_guard lk(mu);
                ids.clear();
            }
            session.run(*lab::findScenario(name));
            std::lock_guard lk(mu);
            std::vector<std::string> out = ids;
            std::sort(out.begin(), out.end());
            return out;
        };
        const std::vector<std::string> first = run("retry-basic");
        QCOMPARE(first, std::vector<std::string>{"retry-basic-1"});
        const std::vector<std::string> other = run("no-retry-policy");
        QCOMPARE(other, std::vector<std::string>{"no-retry-policy-1"});
        const std::vector<std::string> again = run("retry-basic");
        QCOMPARE(again, std::vector<std::string>{"retry-basic-2"});
        session.stop();
    }

    void everyScenario_data()
    {
        QTest::addColumn<QString>("name");
        // The governance scenarios are not gRPC retries (transparent retries, hedges and app-level retries
        // break the per-attempt numbering checked here): tst_governance asserts each of them on the model.
        std::vector<lab::Scenario> governance;
        lab::appendGovernanceScenarios(governance);
        auto isGovernance = [&](const std::string &name) {
            return std::any_of(governance.begin(), governance.end(),
                               [&](const lab::Scenario &g) { return g.name == name; });
        };
        for (const lab::Scenario &s : lab::allScenarios())
            if (!isGovernance(s.name)) QTest::newRow(s.name.c_str()) << QString::fromStdString(s.name);
    }

    void everyScenario()
    {
        QFETCH(QString, name);
        const lab::Scenario *scenario = lab::findScenario(name.toStdString());
        QVERIFY(scenario);
        std::mutex mu;
        EventBatch events;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(
                     [&](EventBatch &&b) {
                         std::lock_guard lk(mu);
                         events.insert(events.end(), b.begin(), b.end());
                     },
                     &error),
                 error.c_str());
        const lab::ScenarioResult result = session.run(*scenario);
        session.stop();
        QVERIFY2(result.expectationHeld, result.summary.c_str());
        QVERIFY(!result.expected.empty());

        TimelineModel model;
        model.appendBatch(events);
        const TimelineStore &store = model.store();
        for (const lab::ExpectedCall &e : result.expected) {
            const Call *call = callByKey(store, e.callId);
            QVERIFY2(call, e.callId.c_str());
            QCOMPARE(int(call->attempts.size()), e.attempts);
            // gRPC's own retries count themselves on the wire; application-level ones are fresh calls.
            for (size_t k = 0; k < call->attempts.size(); ++k)
                QCOMPARE(call->attempts[k].previousAttempts.value_or(-1), name == "app-retry" ? 0 : int(k));
            if (e.finalStatus != 4) { // DEADLINE_EXCEEDED is the client's own verdict, never on the wire here
                QVERIFY(call->outcomeAttempt());
                QCOMPARE(call->outcomeAttempt()->status.value_or(-1), e.finalStatus);
            }
            // What the timeline says the client got is what it got, wherever the wire lets it say.
            const ClientOutcome client = clientOutcome(*call, store);
            if (client.status)
                QVERIFY2(
                    *client.status == e.finalStatus,
                    qPrintable(QStringLiteral("%1: client outcome %2 (%3), the client got %4")
                                   .arg(QString::fromStdString(e.callId),
                                        QString::fromStdString(client.label()),
                                        QString::fromStdString(client.why), grpcStatusName(e.finalStatus))));
        }

        // What each scenario is there to show, measured on the wire.
        const Call &first = *callByKey(store, result.expected.front().callId);
        const auto gaps = first.gapsNs();
        if (name == "retry-basic") {
            // The lab client told its policy, so each gap has C-core's range, and the wire stays inside it.
            QCOMPARE(first.retryInitialMs, 50.0);
            for (size_t g = 0; g < gaps.size(); ++g) {
                const auto range = first.expectedGapNs(g);
                QVERIFY(range.has_value());
                QVERIFY2(*gaps[g] >= range->first - 5 * ms && *gaps[g] <= range->second + 8 * ms,
                         qPrintable(between(*gaps[g], range->first, range->second)));
            }
            QVERIFY2(*gaps[0] >= 45 * ms && *gaps[0] <= 58 * ms,
                     qPrintable(between(*gaps[0], 45 * ms, 58 * ms)));
            QVERIFY2(*gaps[1] >= 78 * ms && *gaps[1] <= 126 * ms,
                     qPrintable(between(*gaps[1], 78 * ms, 126 * ms)));
        } else if (name == "max-attempts-clamped") {
            QCOMPARE(int(first.attempts.size()), 5);
        } else if (name == "committed") {
            QVERIFY(first.attempts[0].responseHeadersNs.has_value());
            QVERIFY(!first.attempts[0].trailersOnly);
        } else if (name == "non-retryable" || name == "no-retry-policy") {
            QVERIFY(first.attempts[0].trailersOnly);
        } else if (name == "deadline-cuts-retries") {
            QVERIFY(first.deadlineNs().has_value());
            const std::int64_t budget = *first.deadlineNs() - first.startNs();
            // grpc-timeout is rounded up: 250 ms is sent as 251m.
            QVERIFY2(budget >= 240 * ms && budget <= 260 * ms,
                     qPrintable(between(budget, 240 * ms, 260 * ms)));
            // Both attempts failed with UNAVAILABLE on the wire; the deadline then expired during the
            // backoff, so DEADLINE_EXCEEDED (checked by the scenario at 250 ms +-20) never appears on the
            // wire.
            QCOMPARE(first.attempts.back().status.value_or(-1), 14);
            QVERIFY(*first.attempts.back().endNs < *first.deadlineNs());
            // So the lab says what the client got, on the call, at the deadline: the picture shows it there.
            const auto outcome =
                std::find_if(store.labEvents().begin(), store.labEvents().end(),
                             [&](const LabEventRecord &l) { return l.kind == "client-outcome"; });
            QVERIFY(outcome != store.labEvents().end());
            QCOMPARE(outcome->callId, first.key);
            QVERIFY2(outcome->detail.rfind("DEADLINE_EXCEEDED after ", 0) == 0, outcome->detail.c_str());
            QVERIFY2(std::abs(outcome->tNs - *first.deadlineNs()) <= 20 * ms,
                     qPrintable(between(outcome->tNs, *first.deadlineNs() - 20 * ms,
                                        *first.deadlineNs() + 20 * ms)));
        } else if (name == "pushback") {
            QCOMPARE(first.attempts[0].pushbackMs.value_or(0), std::int64_t(300));
            QVERIFY2(*gaps[0] >= 285 * ms && *gaps[0] <= 315 * ms,
                     qPrintable(between(*gaps[0], 285 * ms, 315 * ms)));
        } else if (name == "pushback-stop") {
            QCOMPARE(first.attempts[0].pushbackMs.value_or(0), std::int64_t(-1));
        } else if (name == "hedging-ignored") {
            const std::int64_t took = *first.attempts[0].endNs - first.attempts[0].startNs;
            QVERIFY2(took >= 595 * ms, qPrintable(between(took, 595 * ms, 10'000 * ms)));
        } else if (name == "server-streaming-retry") {
            QCOMPARE(first.attempts[1].responseMessages, 5);
            const Call &second = *callByKey(store, result.expected.back().callId);
            QCOMPARE(second.attempts[0].responseMessages, 2);
        } else if (name == "circuit-breaker") {
            // The lab client's breaker reports into the same model: the full transition sequence, and calls
            // that failed fast without ever reaching the wire.
            std::vector<std::string> transitions;
            int fastFails = 0;
            for (const LabEventRecord &l : store.labEvents()) {
                if (l.kind == "breaker") transitions.push_back(l.detail);
                if (l.kind == "fast-fail") {
                    ++fastFails;
                    QVERIFY(!callByKey(store, l.callId));
                }
            }
            QCOMPARE(transitions,
                     (std::vector<std::string>{"closed -> open", "open -> half-open", "half-open -> open",
                                               "open -> half-open", "half-open -> closed"}));
            QVERIFY(fastFails > 0);
        } else if (name == "app-retry") {
            // Jittered gaps (base 50 ms doubling, x 0.7-1.3, plus the wire) and a suppression event per call.
            for (size_t g = 0; g < gaps.size(); ++g) {
                const std::int64_t want = std::int64_t(50 * ms * std::pow(2.0, double(g)));
                QVERIFY2(*gaps[g] >= want * 7 / 10 && *gaps[g] <= want * 13 / 10 + 10 * ms,
                         qPrintable(between(*gaps[g], want * 7 / 10, want * 13 / 10)));
            }
            int suppressed = 0;
            for (const LabEventRecord &l : store.labEvents())
                suppressed += l.kind == "retry-suppressed";
            QCOMPARE(suppressed, 2);
        } else if (name == "retry-buffer") {
            const Call &large = *callByKey(store, result.expected.back().callId);
            QVERIFY(large.attempts[0].requestBytes > 256 * 1024);
        }
    }
};

QTEST_GUILESS_MAIN(TestScenarios)
#include "tst_scenarios.moc"
