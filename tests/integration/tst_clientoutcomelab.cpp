// The client's outcome read off the wire of real lab runs (grpc++ 1.51 through the capture relays): what the
// client got must be what the scenario's client really got, also where the wire carries no such status.

#include "clientoutcome.h"
#include "labrun.h"
#include "labsession.h"
#include "timelinemodel.h"

#include <QtTest>
#include <mutex>

using namespace rpcscope;

namespace {
using labrun::Run;
using labrun::runScenario;
constexpr std::int64_t ms = 1'000'000;
constexpr int kDeadlineExceeded = 4, kUnavailable = 14;

const Call *callByKey(const TimelineStore &store, const std::string &key)
{
    for (const Call &c : store.calls())
        if (c.key == key) return &c;
    return nullptr;
}

// Every call the scenario's client made: the outcome derived from the wire is the status its client got.
void checkExpected(const Run &run, const TimelineStore &store)
{
    for (const lab::ExpectedCall &e : run.result.expected) {
        const Call *call = callByKey(store, e.callId);
        QVERIFY2(call, e.callId.c_str());
        const ClientOutcome o = clientOutcome(*call, store);
        QVERIFY2(o.status.has_value(), (e.callId + ": " + o.why).c_str());
        QVERIFY2(*o.status == e.finalStatus, (e.callId + ": " + o.label() + " where the client got " +
                                              grpcStatusName(e.finalStatus) + " (" + o.why + ")")
                                                 .c_str());
    }
}
} // namespace

class TestClientOutcomeLab : public QObject
{
    Q_OBJECT
private slots:
    void keepaliveDropIsUnavailable()
    {
        const Run run = runScenario("keepalive-drop");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        checkExpected(run, store);
        const Call *held = callByKey(store, run.result.expected.at(1).callId);
        QVERIFY(held);
        // On the wire: no grpc-status, the client's RST_STREAM (REFUSED_STREAM in C-core 1.51) or the close.
        const Attempt &a = held->attempts.back();
        QVERIFY(!a.status);
        const ClientOutcome o = clientOutcome(*held, store);
        QVERIFY(o.implied());
        QCOMPARE(o.status.value_or(-1), kUnavailable);
        QCOMPARE(o.atNs.value_or(-1), *a.endNs);
        QVERIFY2(o.why.find("PING") != std::string::npos, o.why.c_str());
        // The unanswered PING is recorded as open, sent while the call was in flight, keepalive_timeout
        // (300 ms) before the client gave up on the connection.
        const Connection *conn = store.findConnection(a.connection);
        QVERIFY(conn && conn->closedNs);
        const Connection::OpenPing *ping = nullptr;
        for (const Connection::OpenPing &p : conn->openPings)
            if (p.dir == Direction::ClientToServer && conn->unanswered(p, *conn->closedNs)) ping = &p;
        QVERIFY(ping);
        QVERIFY(ping->sentNs > held->startNs());
        const std::int64_t open = *conn->closedNs - ping->sentNs;
        QVERIFY2(open >= 290 * ms && open < 600 * ms, qPrintable(QString::number(double(open) / ms)));
        // The label the lane and the Calls table show.
        const QString text = QString::fromStdString(outcomeWithClient(*held, o));
        QVERIFY2(text.endsWith(QStringLiteral("\u2192 client: UNAVAILABLE")), qPrintable(text));
    }

    void deadlineInBackoffIsDeadlineExceeded()
    {
        const Run run = runScenario("deadline-cuts-retries");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        checkExpected(run, store);
        const Call *call = callByKey(store, run.result.expected.at(0).callId);
        QVERIFY(call && call->deadlineNs());
        // The wire's last word is UNAVAILABLE; the client got DEADLINE_EXCEEDED at its deadline.
        QCOMPARE(call->outcomeAttempt()->status.value_or(-1), kUnavailable);
        const ClientOutcome o = clientOutcome(*call, store);
        QVERIFY(o.implied());
        QCOMPARE(o.status.value_or(-1), kDeadlineExceeded);
        QCOMPARE(o.atNs.value_or(-1), *call->deadlineNs());
    }

    void hopsPastTheirDeadlineAreDeadlineExceeded()
    {
        // Each hop with a deadline (client->A, A->B) gives up when it passes: either its server's
        // DEADLINE_EXCEEDED reaches the wire first, or the hop resets the stream with CANCEL (a race of a
        // millisecond). Either way the hop got DEADLINE_EXCEEDED.
        const Run run = runScenario("gateway-drops-deadline");
        QVERIFY2(run.result.expectationHeld, run.result.summary.c_str());
        TimelineModel model;
        model.appendBatch(run.events);
        const TimelineStore &store = model.store();
        checkExpected(run, store);
        int hops = 0, resets = 0;
        for (const Call &c : store.calls()) {
            if (c.hop != "client->A" && c.hop != "A->B") continue;
            ++hops;
            QVERIFY(c.deadlineNs() && c.outcomeAttempt());
            const Attempt &a = *c.outcomeAttempt();
            const ClientOutcome o = clientOutcome(c, store);
            QVERIFY2(o.status == kDeadlineExceeded, (c.key + ": " + o.label() + " " + o.why).c_str());
            if (a.status) {
                QCOMPARE(int(o.source), int(ClientOutcome::Source::Wire));
                continue;
            }
            ++resets;
            QCOMPARE(a.rstErrorCode.value_or(0), 8u);
            QVERIFY(a.rstByClient);
            QVERIFY2(o.implied(), o.why.c_str());
            QCOMPARE(o.atNs.value_or(-1), std::min(*c.deadlineNs(), *a.endNs));
        }
        QCOMPARE(hops, 2);
        qInfo("%d of the 2 hops ended with the client's reset", resets);
    }
};

QTEST_GUILESS_MAIN(TestClientOutcomeLab)
#include "tst_clientoutcomelab.moc"
