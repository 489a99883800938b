// The deadline-chain scenarios over real grpc++ hops, each behind its own capture relay. The assertions are
// on the assembled model: nesting from traceparent, hop labels, the budget at each hop, deadline flags, JSON.

#include "jsonexport.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>
#include <memory>
#include <mutex>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;
// Between a hop computing its grpc-timeout and the relay stamping the HEADERS: under 1 ms on an idle machine,
// up to 20 ms with the cores oversubscribed (the model's reset tolerance allows 50 ms + 2 %).
constexpr std::int64_t kJitter = 40 * ms;
const char *const kHops[] = {"client->A", "A->B", "B->C", "C->D"};

struct Run
{
    lab::ScenarioResult result;
    std::unique_ptr<TimelineModel> model = std::make_unique<TimelineModel>();
};

std::optional<size_t> callIndex(const TimelineStore &store, const std::string &key)
{
    for (size_t i = 0; i < store.calls().size(); ++i)
        if (store.calls()[i].key == key) return i;
    return std::nullopt;
}

QString msText(std::optional<std::int64_t> ns)
{
    return ns ? QStringLiteral("%1 ms").arg(double(*ns) / ms) : QStringLiteral("none");
}
} // namespace

class TestChain : public QObject
{
    Q_OBJECT

    // Runs a scenario through a LabSession; the relays' batches are applied in the order they arrived, one by
    // one, as the GUI applies them (so a child hop's batch may come before its parent's).
    void run(const std::string &name, const std::map<std::string, std::string> &overrides, Run &out)
    {
        const lab::Scenario *scenario = lab::findScenario(name);
        QVERIFY2(scenario, name.c_str());
        lab::ScenarioParams params;
        std::string error;
        QVERIFY2(scenario->resolveParams(overrides, &params, &error), error.c_str());
        QAbstractItemModelTester tester(out.model.get(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        std::mutex mu;
        std::vector<EventBatch> batches;
        lab::LabSession session;
        QVERIFY2(session.start(
                     [&](EventBatch &&b) {
                         std::lock_guard lk(mu);
                         batches.push_back(std::move(b));
                     },
                     &error),
                 error.c_str());
        out.result = session.run(*scenario, params);
        session.stop();
        for (const EventBatch &b : batches)
            out.model->appendBatch(b);
        qInfo("%s: %s", name.c_str(), out.result.summary.c_str());
    }

    // The four calls of the chain started by call `root`, outermost first, checked for nesting and labels.
    std::vector<const Call *> chain(const TimelineStore &store, const std::string &root)
    {
        std::vector<const Call *> out;
        std::optional<size_t> parent;
        for (int i = 0; i < 4; ++i) {
            const std::string key = i == 0 ? root : root + ">" + "ABCD"[i];
            const auto index = callIndex(store, key);
            if (!index) {
                qWarning("no call %s on the wire", key.c_str());
                return {};
            }
            const Call &c = store.calls()[*index];
            if (c.parentCall != parent || c.hop != kHops[i] || store.nestingDepth(*index) != i) {
                qWarning("%s: parent %d (expected %d), hop %s, depth %d", key.c_str(),
                         c.parentCall ? int(*c.parentCall) : -1, parent ? int(*parent) : -1, c.hop.c_str(),
                         store.nestingDepth(*index));
                return {};
            }
            if (c.traceId.empty() || (i > 0 && c.traceId != out.front()->traceId)) {
                qWarning("%s: trace %s", key.c_str(), c.traceId.c_str());
                return {};
            }
            out.push_back(&c);
            parent = index;
        }
        // Nothing else of the trace: the chain is exactly these four calls.
        int inTrace = 0;
        for (const Call &c : store.calls())
            inTrace += c.traceId == out.front()->traceId;
        if (inTrace != 4) {
            qWarning("%d calls in the trace of %s", inTrace, root.c_str());
            return {};
        }
        return out;
    }

    // The JSON of a call in the chain carries the chain fields.
    void checkJson(const TimelineStore &store, const Call *call, const QStringList &flags)
    {
        const QJsonArray calls = timelineToJson(store, false)["calls"].toArray();
        const auto index = callIndex(store, call->key);
        QVERIFY(index);
        const QJsonObject o = calls[int(*index)].toObject();
        QCOMPARE(o["key"].toString(), QString::fromStdString(call->key));
        QCOMPARE(o["trace_id"].toString(), QString::fromStdString(call->traceId));
        QCOMPARE(o["trace_id"].toString().size(), 32);
        QCOMPARE(o["span_id"].toString().size(), 16);
        QCOMPARE(o["hop"].toString(), QString::fromStdString(call->hop));
        if (call->parentCall)
            QCOMPARE(o["parent_call"].toInteger(), qint64(*call->parentCall));
        else
            QVERIFY(o["parent_call"].isNull());
        QVERIFY(o.contains("parent_budget_ns"));
        QStringList got;
        for (const QJsonValue &v : o["deadline_flags"].toArray())
            got << v.toString();
        QCOMPARE(got, flags);
    }

private slots:
    void deadlineChain()
    {
        Run r;
        run("deadline-chain", {}, r);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(r.result.expectationHeld, r.result.summary.c_str());
        QCOMPARE(int(r.result.calls.size()), 2);
        const TimelineStore &store = r.model->store();

        for (int variant = 0; variant < 2; ++variant) {
            const std::string root = r.result.calls[size_t(variant)].callId;
            const auto calls = chain(store, root);
            QVERIFY2(calls.size() == 4, root.c_str());
            for (size_t i = 0; i < 4; ++i) {
                const Call &c = *calls[i];
                QCOMPARE(int(c.attempts.size()), 1);
                QVERIFY2(c.budgetNs(), c.key.c_str());
                QVERIFY2(!c.deadlineReset,
                         qPrintable(QString::fromStdString(c.key) + ": sent " + msText(c.budgetNs()) +
                                    " with " + msText(c.parentBudgetNs) + " left"));
                QVERIFY(!c.deadlineDropped);
                if (i == 0) continue;
                // grpc-timeout strictly decreasing hop by hop, by at least most of a hop's 100 ms of work.
                const Call &up = *calls[i - 1];
                QVERIFY2(*c.budgetNs() < *up.budgetNs() - 50 * ms,
                         qPrintable(QStringLiteral("%1: %2 after %3")
                                        .arg(QString::fromStdString(c.key), msText(c.budgetNs()),
                                             msText(up.budgetNs()))));
                // Propagated: what the hop gave away is what it had left (the timeout's rounding, relay
                // jitter).
                QVERIFY(c.parentBudgetNs);
                QVERIFY2(std::abs(*c.budgetNs() - *c.parentBudgetNs) < kJitter,
                         qPrintable(QStringLiteral("%1: sent %2, had %3 left")
                                        .arg(QString::fromStdString(c.key), msText(c.budgetNs()),
                                             msText(c.parentBudgetNs))));
                // Nested in time: the child lies inside its parent.
                QVERIFY(c.startNs() > up.startNs());
                QVERIFY(c.endNs() && up.endNs() && *c.endNs() <= *up.endNs());
            }
            const Attempt *outcome = calls.front()->outcomeAttempt();
            QVERIFY(outcome);
            const Attempt &d = calls.back()->attempts.front();
            if (variant == 0) {
                for (const Call *c : calls)
                    QCOMPARE(c->outcomeAttempt()->status.value_or(-1), 0);
            } else {
                // D fails fast: DEADLINE_EXCEEDED on the wire, long before the deadline, carried back up.
                QCOMPARE(d.status.value_or(-1), 4);
                QVERIFY(d.statusMessage.value_or("").find("failing fast") != std::string::npos);
                QVERIFY2(*d.endNs - d.startNs < 50 * ms, qPrintable(msText(*d.endNs - d.startNs)));
                QVERIFY(*d.endNs < *calls.back()->deadlineNs());
                QCOMPARE(outcome->status.value_or(-1), 4);
                QVERIFY(*outcome->endNs < *calls.front()->deadlineNs() - 10 * ms);
            }
            for (const Call *c : calls)
                checkJson(store, c, {});
        }
    }

    void withoutFailFastDWorksInVain()
    {
        // A threshold D never hits, and a budget the chain's 600 ms of work cannot fit in: D takes the call
        // with about 100 ms left, and the deadline, not D, ends the chain. On the wire every hop ends at the
        // deadline.
        Run r;
        run("deadline-chain", {{"work_ms", "150"}, {"min_budget_ms", "20"}, {"tight_budget_ms", "550"}}, r);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(r.result.expectationHeld, r.result.summary.c_str());
        const auto calls = chain(r.model->store(), r.result.calls.back().callId);
        QCOMPARE(int(calls.size()), 4);
        const std::int64_t deadline = *calls.front()->deadlineNs();
        for (const Call *c : calls) {
            QVERIFY(c->endNs());
            QVERIFY2(std::abs(*c->endNs() - deadline) < kJitter,
                     qPrintable(QString::fromStdString(c->key) + " ended " + msText(*c->endNs() - deadline) +
                                " from the deadline"));
            QVERIFY(c->outcomeAttempt()->status.value_or(4) == 4);
            // The propagated deadline is the same absolute time at every hop.
            QVERIFY2(std::abs(*c->deadlineNs() - deadline) < kJitter,
                     qPrintable(msText(*c->deadlineNs() - deadline)));
        }
        // D worked: its call lasted until the deadline, not a fail-fast instant.
        const Attempt &d = calls.back()->attempts.front();
        QVERIFY2(*d.endNs - d.startNs > 30 * ms, qPrintable(msText(*d.endNs - d.startNs)));
    }

    void deadlineReset()
    {
        Run r;
        run("deadline-reset", {}, r);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(r.result.expectationHeld, r.result.summary.c_str());
        const TimelineStore &store = r.model->store();
        const auto calls = chain(store, r.result.calls.front().callId);
        QCOMPARE(int(calls.size()), 4);
        const Call &ab = *calls[1], &bc = *calls[2], &cd = *calls[3];
        // Only the hop that reset it is flagged; below it, C propagates its new deadline faithfully.
        QVERIFY(!calls[0]->deadlineReset && !ab.deadlineReset && bc.deadlineReset && !cd.deadlineReset);
        for (const Call *c : calls)
            QVERIFY(!c->deadlineDropped);
        // The budget grew: B->C was given about 1 s with about 100 ms left of A->B's deadline.
        QVERIFY(bc.budgetNs() && bc.parentBudgetNs);
        QVERIFY2(*bc.budgetNs() > *bc.parentBudgetNs + 500 * ms,
                 qPrintable(msText(bc.budgetNs()) + " given, " + msText(bc.parentBudgetNs) + " left"));
        QVERIFY(*bc.deadlineNs() > *ab.deadlineNs() + 500 * ms);
        // The client gave up at its deadline; C and D ended after it, successfully, for nobody.
        const std::int64_t clientDeadline = *calls[0]->deadlineNs();
        QVERIFY(calls[0]->endNs() && *calls[0]->endNs() < clientDeadline + kJitter);
        QCOMPARE(cd.outcomeAttempt()->status.value_or(-1), 0);
        QCOMPARE(bc.outcomeAttempt()->status.value_or(-1), 0);
        QVERIFY(*cd.endNs() > clientDeadline);
        QVERIFY(*bc.endNs() > clientDeadline);

        checkJson(store, calls[0], {});
        checkJson(store, &ab, {});
        checkJson(store, &bc, {"reset"});
        checkJson(store, &cd, {});
        const auto bcRow = callIndex(store, bc.key);
        QCOMPARE(
            r.model->data(r.model->index(int(*bcRow), 0), TimelineModel::DeadlineFlagsRole).toStringList(),
            QStringList{"reset"});
    }

    void gatewayDropsDeadline()
    {
        Run r;
        run("gateway-drops-deadline", {}, r);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(r.result.expectationHeld, r.result.summary.c_str());
        const TimelineStore &store = r.model->store();
        const auto calls = chain(store, r.result.calls.front().callId);
        QCOMPARE(int(calls.size()), 4);
        const Call &ab = *calls[1], &bc = *calls[2], &cd = *calls[3];
        QVERIFY(ab.budgetNs());
        // B->C carries no grpc-timeout, and C has nothing to propagate to D.
        QVERIFY(!bc.budgetNs());
        QVERIFY(!cd.budgetNs());
        // Flagged where it was dropped, not below: C->D's parent had no deadline to drop.
        QVERIFY(!ab.deadlineDropped && bc.deadlineDropped && !cd.deadlineDropped);
        for (const Call *c : calls)
            QVERIFY(!c->deadlineReset);
        QVERIFY(bc.parentBudgetNs && *bc.parentBudgetNs > 0);
        QVERIFY(!cd.parentBudgetNs);
        const std::int64_t clientDeadline = *calls[0]->deadlineNs();
        QVERIFY(*cd.endNs() > clientDeadline);
        QCOMPARE(cd.outcomeAttempt()->status.value_or(-1), 0);

        checkJson(store, &ab, {});
        checkJson(store, &bc, {"dropped"});
        checkJson(store, &cd, {});
    }
};

QTEST_GUILESS_MAIN(TestChain)
#include "tst_chain.moc"
