#include "jsonexport.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>
#include <map>
#include <set>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

using testev::opened;

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &path,
                  std::optional<int> prev, const std::string &callId,
                  std::optional<std::int64_t> timeout = {})
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ClientToServer);
    e.grpc.path = path;
    e.grpc.previousAttempts = prev;
    e.grpc.callId = callId;
    e.grpc.timeoutNs = timeout;
    return e;
}

WireEvent trailers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, int status,
                   std::optional<std::int64_t> pushback = {})
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    e.grpc.message = "m" + std::to_string(status);
    e.grpc.pushbackMs = pushback;
    return e;
}

WireEvent frame(std::uint32_t conn, std::uint32_t stream, std::int64_t t, std::uint8_t type,
                std::uint32_t code = 0)
{
    return testev::frame(conn, stream, t, Direction::ClientToServer, type, code);
}

WireEvent message(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir, std::uint32_t len)
{
    WireEvent e = testev::event(EventKind::Message, conn, stream, t, dir);
    e.length = len;
    return e;
}

WireEvent hopOpened(std::uint32_t conn, const std::string &label)
{
    return opened(conn, 0, "127.0.0.1:" + std::to_string(6000 + conn), "127.0.0.1:9000", label);
}

// A request in trace `trace` made by span `span` (what the capture takes from its traceparent).
WireEvent traced(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &callId,
                 const std::string &trace, const std::string &span, std::optional<std::int64_t> timeout)
{
    WireEvent e = request(conn, stream, t, "/rpcscope.lab.Chain/Hop", std::nullopt, callId, timeout);
    e.grpc.traceId = trace;
    e.grpc.parentSpanId = span;
    return e;
}

const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";

// A chain client->A->B->C->D as four relays see it, one batch per relay. B resets the deadline to 1 s, C
// drops it. Besides the chain: the client's second call on its own connection, A's second call to B after the
// first ended, and a call of another trace.
std::vector<EventBatch> chainByRelay()
{
    return {
        {hopOpened(1, "client->A"), traced(1, 1, 10 * ms, "a", kTrace, "00000000000000a1", 1000 * ms),
         traced(1, 3, 50 * ms, "a2", kTrace, "00000000000000a2", 900 * ms), trailers(1, 3, 60 * ms, 0),
         trailers(1, 1, 600 * ms, 0)},
        {hopOpened(2, "A->B"), traced(2, 1, 110 * ms, "b", kTrace, "00000000000000b1", 899 * ms),
         trailers(2, 1, 402 * ms, 0), traced(2, 3, 500 * ms, "b2", kTrace, "00000000000000b2", 509 * ms),
         trailers(2, 3, 550 * ms, 0)},
        {hopOpened(3, "B->C"), traced(3, 1, 210 * ms, "c", kTrace, "00000000000000c1", 1000 * ms),
         trailers(3, 1, 401 * ms, 0)},
        {hopOpened(4, "C->D"), traced(4, 1, 310 * ms, "d", kTrace, "00000000000000d1", std::nullopt),
         trailers(4, 1, 400 * ms, 0)},
        {hopOpened(5, "other"),
         traced(5, 1, 150 * ms, "x", "0af7651916cd43dd8448eb211c80319c", "00000000000000e1", 1000 * ms),
         trailers(5, 1, 160 * ms, 0)},
    };
}

struct Link
{
    std::string parent; // its key, empty for a root
    std::optional<std::int64_t> parentBudgetNs;
    std::vector<std::string> flags;
    bool operator==(const Link &) const = default;
};

std::map<std::string, Link> linksByKey(const TimelineStore &store)
{
    std::map<std::string, Link> out;
    for (const Call &c : store.calls())
        out[c.key] = {c.parentCall ? store.calls()[*c.parentCall].key : std::string(), c.parentBudgetNs,
                      c.deadlineFlags()};
    return out;
}

// retry-basic as it looks on the wire: three attempts of one call, the first two UNAVAILABLE.
EventBatch retryBasic()
{
    return {opened(1, 0),
            request(1, 1, 10 * ms, "/lab/Call", std::nullopt, "call-1", 5000 * ms),
            message(1, 1, 10 * ms, Direction::ClientToServer, 100),
            trailers(1, 1, 11 * ms, 14),
            request(1, 3, 61 * ms, "/lab/Call", 1, "call-1", 4940 * ms),
            trailers(1, 3, 62 * ms, 14, 300),
            request(1, 5, 160 * ms, "/lab/Call", 2, "call-1", 4840 * ms),
            message(1, 5, 161 * ms, Direction::ServerToClient, 20),
            trailers(1, 5, 162 * ms, 0)};
}

// Call `key`'s first attempt on connection 2 (60 ms, UNAVAILABLE at 70 ms) and its second (101 ms, still
// open), in two batches: what a hop's decoder hands over before the other hop's copies come.
void twoAttemptsOnConnection2(TimelineModel &model, const std::string &key)
{
    model.setOrigin(0, 0);
    model.appendBatch(EventBatch{opened(2, 1 * ms), request(2, 1, 60 * ms, "/lab/Call", std::nullopt, key),
                                 trailers(2, 1, 70 * ms, 14)});
    model.appendBatch(EventBatch{request(2, 3, 101 * ms, "/lab/Call", std::nullopt, key)});
}

} // namespace

class TestTimelineModel : public QObject
{
    Q_OBJECT
private slots:
    void assemblesByCallId()
    {
        TimelineModel model;
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        model.appendBatch(retryBasic());

        QCOMPARE(model.rowCount(), 1);
        const QModelIndex call = model.index(0, 0);
        QCOMPARE(model.rowCount(call), 3);
        QCOMPARE(inserted.count(), 1); // one insertion per batch, not per event

        const Call &c = model.store().calls().at(0);
        QCOMPARE(c.key, std::string("call-1"));
        QVERIFY(!c.inferred);
        QCOMPARE(c.attempts[0].previousAttempts.value_or(-1), 0);
        QCOMPARE(c.attempts[2].previousAttempts.value_or(-1), 2);
        QCOMPARE(c.deadlineNs().value_or(0), 5010 * ms);
        const auto gaps = c.gapsNs();
        QCOMPARE(int(gaps.size()), 2);
        QCOMPARE(gaps[0].value_or(0), 50 * ms);
        QCOMPARE(gaps[1].value_or(0), 98 * ms);
        QCOMPARE(c.attempts[1].pushbackMs.value_or(0), std::int64_t(300));
        QCOMPARE(c.attempts[0].requestBytes, std::uint64_t(105));
        QCOMPARE(c.attempts[2].responseBytes, std::uint64_t(25));
        QVERIFY(c.outcomeAttempt());
        QCOMPARE(c.outcomeAttempt()->status.value_or(-1), 0);
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(), QStringLiteral("OK"));
        QCOMPARE(model.data(model.index(1, TimelineModel::ColStatus, call)).toString(),
                 QStringLiteral("UNAVAILABLE"));
    }

    void batchSplitDoesNotMatter()
    {
        // Attempts arriving in separate batches are published as child insertions under the existing call.
        TimelineModel whole, pieces;
        QAbstractItemModelTester t1(&whole, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&pieces, QAbstractItemModelTester::FailureReportingMode::QtTest);
        whole.appendBatch(retryBasic());
        QSignalSpy inserted(&pieces, &QAbstractItemModel::rowsInserted);
        for (const WireEvent &e : retryBasic())
            pieces.appendBatch({e});
        QCOMPARE(inserted.count(), 3); // the call, then attempt 2, then attempt 3
        QCOMPARE(timelineToJson(pieces.store(), false), timelineToJson(whole.store(), false));
        QCOMPARE(pieces.rowCount(pieces.index(0, 0)), 3);
    }

    void liveAttemptHasNoOutcome()
    {
        TimelineModel model;
        model.appendBatch({opened(1, 0), request(1, 1, 5 * ms, "/a/B", std::nullopt, "x")});
        QCOMPARE(model.rowCount(), 1);
        QVERIFY(!model.store().calls()[0].outcomeAttempt());
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(),
                 QStringLiteral("in flight"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.appendBatch({trailers(1, 1, 7 * ms, 0)});
        QVERIFY(changed.count() >= 1);
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(), QStringLiteral("OK"));
    }

    void infersRetriesWithoutCallId()
    {
        TimelineModel model;
        model.appendBatch({opened(1, 0), request(1, 1, 1 * ms, "/a/B", std::nullopt, ""),
                           trailers(1, 1, 2 * ms, 14),
                           // another method in between must not join
                           request(1, 3, 3 * ms, "/a/Other", std::nullopt, ""), trailers(1, 3, 4 * ms, 0),
                           request(1, 5, 52 * ms, "/a/B", 1, ""), trailers(1, 5, 53 * ms, 0)});
        const auto &calls = model.store().calls();
        QCOMPARE(int(calls.size()), 2);
        QCOMPARE(calls[0].method, std::string("/a/B"));
        QCOMPARE(int(calls[0].attempts.size()), 2);
        QVERIFY(calls[0].inferred);
        QCOMPARE(calls[0].gapsNs()[0].value_or(0), 50 * ms);
        QCOMPARE(int(calls[1].attempts.size()), 1);
    }

    void inferenceRespectsPeerAndWindow()
    {
        TimelineModel model;
        const std::int64_t minute = 60'000 * ms;
        model.appendBatch({opened(1, 0, "10.0.0.1:1"), opened(2, 0, "10.0.0.2:1"),
                           request(1, 1, 1 * ms, "/a/B", std::nullopt, ""), trailers(1, 1, 2 * ms, 14),
                           // a retry from another client peer is not this call's retry
                           request(2, 1, 50 * ms, "/a/B", 1, ""), trailers(2, 1, 51 * ms, 0),
                           // nor is one that comes after more than the plausible window
                           request(1, 3, 2 * ms + 2 * minute, "/a/B", 1, ""), trailers(1, 3, 3 * minute, 0)});
        const auto &calls = model.store().calls();
        QCOMPARE(int(calls.size()), 3);
        for (const Call &c : calls)
            QCOMPARE(int(c.attempts.size()), 1);
    }

    void rstAndCloseEndAttempts()
    {
        TimelineModel model;
        WireEvent closed;
        closed.kind = EventKind::ConnectionClosed;
        closed.connection = 1;
        closed.tNs = 40 * ms;
        model.appendBatch({opened(1, 0), request(1, 1, 1 * ms, "/a/B", std::nullopt, "r"),
                           frame(1, 1, 9 * ms, FrameRstStream, 8),
                           request(1, 3, 10 * ms, "/a/B", std::nullopt, "s"), closed});
        const auto &calls = model.store().calls();
        QCOMPARE(int(calls.size()), 2);
        QCOMPARE(calls[0].attempts[0].endNs.value_or(0), 9 * ms);
        QCOMPARE(calls[0].attempts[0].rstErrorCode.value_or(0), std::uint32_t(8));
        QVERIFY(!calls[0].attempts[0].status);
        QCOMPARE(calls[0].attempts[0].outcomeLabel(), std::string("RST_STREAM CANCEL"));
        QCOMPARE(timelineToJson(model.store(), false)["calls"]
                     .toArray()[0]
                     .toObject()["attempts"]
                     .toArray()[0]
                     .toObject()["rst_error_code"]
                     .toInteger(),
                 qint64(8));
        QCOMPARE(calls[1].attempts[0].endNs.value_or(0), 40 * ms);
        QCOMPARE(model.store().connections()[0].closedNs.value_or(0), 40 * ms);
        QCOMPARE(model.store().frames().size(), size_t(1));
    }

    // A flow-control stall still open when its connection closes ends there; another connection's goes on.
    void stallsEndWithTheirConnection()
    {
        TimelineModel model;
        auto stall = [](EventKind kind, std::uint32_t conn, std::uint32_t stream, std::int64_t t) {
            return testev::event(kind, conn, stream, t, Direction::ServerToClient);
        };
        WireEvent closed = testev::event(EventKind::ConnectionClosed, 1, 0, 40 * ms);
        model.appendBatch({opened(1, 0), opened(2, 0), stall(EventKind::FlowStallBegin, 1, 3, 5 * ms),
                           stall(EventKind::FlowStallBegin, 1, 0, 6 * ms),
                           stall(EventKind::FlowStallBegin, 2, 3, 7 * ms),
                           stall(EventKind::FlowStallBegin, 1, 5, 8 * ms),
                           stall(EventKind::FlowStallEnd, 1, 5, 9 * ms), closed});
        const auto &stalls = model.store().stalls();
        QCOMPARE(int(stalls.size()), 4);
        QCOMPARE(stalls[0].endNs.value_or(-1), 40 * ms);
        QCOMPARE(stalls[1].endNs.value_or(-1), 40 * ms);
        QVERIFY(!stalls[2].endNs); // connection 2 is still open
        QCOMPARE(stalls[3].endNs.value_or(-1), 9 * ms);
        // Ended means ended: a late end for the closed connection changes nothing.
        model.appendBatch({stall(EventKind::FlowStallEnd, 1, 3, 50 * ms)});
        QCOMPARE(model.store().stalls()[0].endNs.value_or(-1), 40 * ms);
    }

    void goawayEndsOnlyStreamsAboveTheLastStreamId()
    {
        TimelineModel model;
        auto goaway = [](Direction dir, std::int64_t t, std::uint32_t last, std::uint32_t code) {
            WireEvent e = frame(1, 0, t, FrameGoaway, code);
            e.dir = dir;
            e.lastStreamId = last;
            return e;
        };
        WireEvent closed;
        closed.kind = EventKind::ConnectionClosed;
        closed.connection = 1;
        closed.tNs = 40 * ms;
        model.appendBatch({opened(1, 0), request(1, 1, 1 * ms, "/a/B", std::nullopt, "one"),
                           request(1, 3, 2 * ms, "/a/B", std::nullopt, "three"),
                           request(1, 5, 3 * ms, "/a/B", std::nullopt, "five"),
                           request(1, 7, 4 * ms, "/a/B", std::nullopt, "seven"),
                           // The client's own GOAWAY says nothing about the requests it sent.
                           goaway(Direction::ClientToServer, 10 * ms, 0, 0),
                           goaway(Direction::ServerToClient, 20 * ms, 3, 0), trailers(1, 3, 30 * ms, 0),
                           goaway(Direction::ServerToClient, 35 * ms, 1, 2), closed});
        const auto &calls = model.store().calls();
        QCOMPARE(int(calls.size()), 4);
        // Streams 1 and 3 were below the last-stream-id: 3 completes normally, 1 stays open until the close.
        QCOMPARE(calls[0].attempts[0].endNs.value_or(0), 40 * ms);
        QVERIFY(!calls[0].attempts[0].goawayErrorCode);
        QCOMPARE(calls[0].attempts[0].outcomeLabel(), std::string("no status"));
        QCOMPARE(calls[1].attempts[0].endNs.value_or(0), 30 * ms);
        QVERIFY(!calls[1].attempts[0].goawayErrorCode);
        QCOMPARE(calls[1].attempts[0].outcomeLabel(), std::string("OK"));
        // Streams 5 and 7 were never processed: they end at the GOAWAY, not at the close.
        for (int k : {2, 3}) {
            QCOMPARE(calls[k].attempts[0].endNs.value_or(0), 20 * ms);
            QCOMPARE(calls[k].attempts[0].goawayErrorCode.value_or(99), 0u);
            QCOMPARE(calls[k].attempts[0].outcomeLabel(), std::string("refused by GOAWAY"));
            QCOMPARE(model.data(model.index(k, TimelineModel::ColStatus)).toString(),
                     QStringLiteral("refused by GOAWAY"));
        }
        // A second GOAWAY lowering the last-stream-id to 1 changes nothing already ended (3 had completed).
        QCOMPARE(calls[1].attempts[0].outcomeLabel(), std::string("OK"));
        const QJsonArray exported = timelineToJson(model.store(), false)["calls"].toArray();
        QCOMPARE(
            exported[2].toObject()["attempts"].toArray()[0].toObject()["goaway_error_code"].toInteger(-1),
            qint64(0));
        QVERIFY(exported[1].toObject()["attempts"].toArray()[0].toObject()["goaway_error_code"].isNull());
        QVERIFY(exported[1].toObject()["attempts"].toArray()[0].toObject()["rst_error_code"].isNull());
    }

    void expectedBackoffRanges()
    {
        // The lab client tells its retryPolicy; the model derives C-core's allowed range for every gap.
        EventBatch batch = retryBasic();
        for (WireEvent &e : batch)
            if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer) {
                e.grpc.retryInitialMs = 50;
                e.grpc.retryMultiplier = 2;
                e.grpc.retryMaxMs = 1000;
            }
        TimelineModel model;
        model.appendBatch(batch);
        const Call &c = model.store().calls()[0];
        QCOMPARE(c.expectedGapNs(0).value(), (std::pair<std::int64_t, std::int64_t>{50 * ms, 50 * ms}));
        // Attempt 2 carried pushback 300: it replaces the backoff exactly (and resets it).
        QCOMPARE(c.expectedGapNs(1).value(), (std::pair<std::int64_t, std::int64_t>{300 * ms, 300 * ms}));
        QVERIFY(!c.expectedGapNs(2));

        Call noPushback = c;
        noPushback.attempts[1].pushbackMs.reset();
        QCOMPARE(noPushback.expectedGapNs(1).value(),
                 (std::pair<std::int64_t, std::int64_t>{80 * ms, 120 * ms}));
        noPushback.retryMaxMs = 90;
        QCOMPARE(noPushback.expectedGapNs(1).value(),
                 (std::pair<std::int64_t, std::int64_t>{72 * ms, 108 * ms}));

        const QJsonObject call = timelineToJson(model.store(), false)["calls"].toArray()[0].toObject();
        const QJsonArray expected = call["expected_gaps_ns"].toArray();
        QCOMPARE(expected.size(), 2);
        QCOMPARE(expected[0].toArray()[0].toInteger(), qint64(50 * ms));
        QCOMPARE(expected[1].toArray()[1].toInteger(), qint64(300 * ms));

        // Without a policy there is no range to show.
        TimelineModel plain;
        plain.appendBatch(retryBasic());
        QVERIFY(!plain.store().calls()[0].expectedGapNs(0));
    }

    void jsonSchema()
    {
        TimelineModel model;
        model.setOrigin(5 * ms, 1'700'000'000'000'000'000);
        model.appendBatch(retryBasic());
        const QJsonObject doc = timelineToJson(model.store(), true);
        QCOMPARE(doc["format"].toString(), QStringLiteral("rpcscope-json"));
        QCOMPARE(doc["version"].toInt(), 1);
        QCOMPARE(doc["origin_wall_ns"].toInteger(), qint64(1'700'000'000'000'000'000));
        const QJsonObject call = doc["calls"].toArray()[0].toObject();
        QCOMPARE(call["grouping"].toString(), QStringLiteral("call-id"));
        QCOMPARE(call["deadline_ns"].toInteger(), qint64(5005 * ms));
        QCOMPARE(call["outcome"].toObject()["name"].toString(), QStringLiteral("OK"));
        QCOMPARE(call["gaps_ns"].toArray()[0].toInteger(), qint64(50 * ms));
        const QJsonObject a0 = call["attempts"].toArray()[0].toObject();
        QCOMPARE(a0["start_ns"].toInteger(), qint64(5 * ms)); // relative to the origin
        QCOMPARE(a0["status"].toObject()["name"].toString(), QStringLiteral("UNAVAILABLE"));
        QCOMPARE(a0["status"].toObject()["message"].toString(), QStringLiteral("m14"));
        QVERIFY(a0["pushback_ms"].isNull());
        QCOMPARE(call["attempts"].toArray()[1].toObject()["pushback_ms"].toInteger(), qint64(300));
        QVERIFY(doc["connections"].toArray()[0].toObject()["decode_error"].isNull());
        QVERIFY(doc["frames"].isArray());
        QVERIFY(!timelineToJson(model.store(), false).contains("frames"));
    }

    void nestsChainsByTrace()
    {
        TimelineModel model;
        // Events in time order, as one batch.
        EventBatch all;
        for (const EventBatch &b : chainByRelay())
            all.insert(all.end(), b.begin(), b.end());
        std::stable_sort(all.begin(), all.end(),
                         [](const WireEvent &x, const WireEvent &y) { return x.tNs < y.tNs; });
        model.appendBatch(all);
        const TimelineStore &store = model.store();
        const auto links = linksByKey(store);
        QCOMPARE(int(links.size()), 7);

        // The chain: each hop under the one before, with the parent's remaining budget at the child's start.
        QCOMPARE(links.at("a"), (Link{"", std::nullopt, {}}));
        QCOMPARE(links.at("b"), (Link{"a", 900 * ms, {}}));
        QCOMPARE(links.at("c"), (Link{"b", 799 * ms, {"reset"}})); // 1210 ms is 201 ms past B's 1009 ms
        QCOMPARE(links.at("d"), (Link{"c", 900 * ms, {"dropped"}}));
        // Same connection as the in-flight call: a sibling, not a child.
        QCOMPARE(links.at("a2"), (Link{"", std::nullopt, {}}));
        // The first A->B and B->C had ended by 500 ms; the client->A call had not.
        QCOMPARE(links.at("b2"), (Link{"a", 510 * ms, {}}));
        // Another trace never nests.
        QCOMPARE(links.at("x"), (Link{"", std::nullopt, {}}));

        const auto row = [&](const std::string &key) {
            for (size_t i = 0; i < store.calls().size(); ++i)
                if (store.calls()[i].key == key) return int(i);
            return -1;
        };
        const Call &d = store.calls()[size_t(row("d"))];
        QCOMPARE(d.traceId, kTrace);
        QCOMPARE(d.spanId, std::string("00000000000000d1"));
        QCOMPARE(d.hop, std::string("C->D"));
        QCOMPARE(store.nestingDepth(size_t(row("d"))), 3);
        QCOMPARE(store.nestingDepth(size_t(row("a"))), 0);
        const QModelIndex di = model.index(row("d"), 0);
        QCOMPARE(model.data(di, TimelineModel::ParentCallRole).toInt(), row("c"));
        QCOMPARE(model.data(di, TimelineModel::NestingDepthRole).toInt(), 3);
        QCOMPARE(model.data(di, TimelineModel::HopRole).toString(), QStringLiteral("C->D"));
        QCOMPARE(model.data(di, TimelineModel::DeadlineFlagsRole).toStringList(), QStringList{"dropped"});
        QCOMPARE(model.data(di, TimelineModel::ParentBudgetNsRole).toLongLong(), 900 * ms);
        QVERIFY(!model.data(model.index(row("a"), 0), TimelineModel::ParentCallRole).isValid());

        const QJsonArray calls = timelineToJson(store, false)["calls"].toArray();
        const QJsonObject c = calls[row("c")].toObject();
        QCOMPARE(c["trace_id"].toString(), QString::fromStdString(kTrace));
        QCOMPARE(c["span_id"].toString(), QStringLiteral("00000000000000c1"));
        QCOMPARE(c["parent_call"].toInteger(), qint64(row("b")));
        QCOMPARE(c["hop"].toString(), QStringLiteral("B->C"));
        QCOMPARE(c["parent_budget_ns"].toInteger(), qint64(799 * ms));
        QCOMPARE(c["deadline_flags"].toArray(), QJsonArray{"reset"});
        const QJsonObject a = calls[row("a")].toObject();
        QVERIFY(a["parent_call"].isNull());
        QVERIFY(a["parent_budget_ns"].isNull());
        QCOMPARE(a["deadline_flags"].toArray(), QJsonArray{});
        QVERIFY(calls[row("x")].toObject()["trace_id"].isString());
    }

    void nestingDoesNotDependOnArrivalOrder()
    {
        // Every relay flushes on its own, so a child's HEADERS may reach the store before its parent's, and
        // the trailers that end a candidate may come after a later call. The links must come out the same.
        TimelineModel inOrder;
        for (const EventBatch &b : chainByRelay())
            inOrder.appendBatch(b);
        const auto expected = linksByKey(inOrder.store());
        QCOMPARE(expected.at("d").parent, std::string("c"));

        TimelineModel reversed;
        QAbstractItemModelTester tester(&reversed, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy changed(&reversed, &QAbstractItemModel::dataChanged);
        auto batches = chainByRelay();
        for (auto it = batches.rbegin(); it != batches.rend(); ++it)
            reversed.appendBatch(*it);
        QCOMPARE(linksByKey(reversed.store()), expected);
        QVERIFY(changed.count() > 0); // relinked calls were announced

        // Event by event, each relay's events in turn (the A->B trailers at 402 ms arrive after the calls
        // that started while it was open had been linked under it).
        TimelineModel interleaved;
        QAbstractItemModelTester tester2(&interleaved,
                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
        for (size_t i = 0;; ++i) {
            bool any = false;
            for (const EventBatch &b : batches)
                if (i < b.size()) {
                    interleaved.appendBatch({b[i]});
                    any = true;
                }
            if (!any) break;
        }
        QCOMPARE(linksByKey(interleaved.store()), expected);
    }

    void propagatedDeadlineIsNotAReset()
    {
        // grpc-timeout is rounded up and each relay stamps a little late: a child deadline some ms past its
        // parent's is still propagation (up to 50 ms + 2 % of the child's timeout).
        TimelineModel model;
        model.appendBatch({hopOpened(1, "client->A"), hopOpened(2, "A->B"),
                           traced(1, 1, 0, "p", kTrace, "00000000000000a1", 1000 * ms),
                           traced(2, 1, 100 * ms, "k", kTrace, "00000000000000b1", 960 * ms),
                           traced(2, 3, 110 * ms, "r", kTrace, "00000000000000b2", 1000 * ms)});
        const auto links = linksByKey(model.store());
        QCOMPARE(links.at("k"), (Link{"p", 900 * ms, {}}));        // 60 ms later: within 50 + 19.2 ms
        QCOMPARE(links.at("r"), (Link{"p", 890 * ms, {"reset"}})); // 110 ms later: beyond 50 + 20 ms
    }

    void clearResets()
    {
        TimelineModel model;
        model.appendBatch(retryBasic());
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.clear();
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 0);
        model.appendBatch(retryBasic());
        QCOMPARE(model.rowCount(), 1);
    }

    // The store's change log says which calls an apply() added or changed since a generation: exactly those
    // whose revision is above it, while the log reaches back that far; past its bound, or across a clear, it
    // says it cannot (and the consumer reads every call).
    void changeLogFollowsRevisions()
    {
        TimelineStore store;
        store.setChangeLogMax(40);
        store.apply({opened(1, 0)});
        std::vector<std::uint64_t> generations{store.generation()};
        auto expected = [&store](std::uint64_t since) {
            std::set<std::uint64_t> s;
            for (const Call &c : store.calls())
                if (c.revision > since) s.insert(c.serial);
            return s;
        };
        int reachable = 0, unreachable = 0;
        for (int i = 0; i < 30; ++i) {
            // Call i starts; call i - 2 ends (an existing call changed); one batch.
            const std::uint32_t stream = std::uint32_t(2 * i + 1);
            EventBatch batch{request(1, stream, i * ms, "/svc/M", std::nullopt, "c" + std::to_string(i))};
            if (i >= 2) batch.push_back(trailers(1, stream - 4, i * ms + 1, 0));
            store.apply(batch);
            for (std::uint64_t g : generations) {
                std::vector<std::uint64_t> got;
                if (!store.changedSince(g, &got)) {
                    ++unreachable;
                    continue;
                }
                ++reachable;
                const std::set<std::uint64_t> gotSet(got.begin(), got.end());
                QCOMPARE(gotSet, expected(g));
            }
            generations.push_back(store.generation());
        }
        QVERIFY(reachable > 30);
        QVERIFY(unreachable > 30); // the bound of 40 serials dropped the oldest applies
        std::vector<std::uint64_t> none;
        QVERIFY(store.changedSince(store.generation(), &none));
        QVERIFY(none.empty());
        const std::uint64_t beforeClear = store.generation();
        store.clear();
        QVERIFY(!store.changedSince(beforeClear, &none));
        store.apply({request(1, 999, 40 * ms, "/svc/M", std::nullopt, "after")});
        QVERIFY(store.changedSince(store.generation() - 1, &none));
        QCOMPARE(none.size(), size_t(1));
        QCOMPARE(none.front(), store.calls().front().serial);
    }

    // The calls that meet a time range, as the status bar counts them "in view", from the spans apply() keeps
    // beside the calls: equal to a walk of the calls after every apply, a retry that moves a call's end,
    // calls in flight (to the latest time), an eviction with a pinned call kept, and a clear.
    // A relay reads the connections ready in one round one after another: a batch can hold a later
    // connection's earlier call after an earlier connection's later one. Ordered, the calls get their lanes
    // in the order they started, and each connection's own events keep their order (connection 4's bytes
    // were stamped before its open, as the kernel can: the open stays first).
    void batchesOrderConnectionsByTime()
    {
        EventBatch batch{opened(2, 5 * ms),
                         request(2, 1, 20 * ms, "/lab/Call", std::nullopt, "later"),
                         opened(3, 8 * ms),
                         request(3, 1, 10 * ms, "/lab/Call", std::nullopt, "earlier"),
                         trailers(3, 1, 12 * ms, 0),
                         opened(4, 30 * ms),
                         request(4, 1, 25 * ms, "/lab/Call", std::nullopt, "stamped-before-open"),
                         trailers(2, 1, 22 * ms, 0)};
        orderConnectionsByTime(batch);
        std::vector<std::pair<std::uint32_t, std::int64_t>> order;
        for (const WireEvent &e : batch)
            order.emplace_back(e.connection, e.tNs / ms);
        QCOMPARE(order, (std::vector<std::pair<std::uint32_t, std::int64_t>>{
                            {2, 5}, {3, 8}, {3, 10}, {3, 12}, {2, 20}, {2, 22}, {4, 30}, {4, 25}}));
        TimelineStore store;
        store.apply(batch);
        QCOMPARE(store.calls().size(), size_t(3));
        QCOMPARE(store.calls()[0].key, std::string("earlier"));
        QCOMPARE(store.calls()[1].key, std::string("later"));
        QCOMPARE(store.calls()[2].key, std::string("stamped-before-open"));
        QCOMPARE(store.connections().size(), size_t(3));

        // In time order already: untouched.
        EventBatch sorted{opened(5, 1 * ms), opened(6, 2 * ms), request(5, 1, 3 * ms, "/lab/Call", {}, "a")};
        const EventBatch before = sorted;
        orderConnectionsByTime(sorted);
        QVERIFY(sorted == before);
    }

    // A hedge's first copy seen after the copies that started later (its hop's decoder was behind): it is
    // placed first, the stream still open goes on to its own attempt, and the statistics count each
    // attempt's latency once (the ended attempt that moved keeps its count).
    void anAttemptThatCameLateTakesItsPlace()
    {
        TimelineModel model;
        twoAttemptsOnConnection2(model, "hedged");
        QCOMPARE(model.stats().total().attemptLatency.count(), std::uint64_t(1));
        model.appendBatch(
            EventBatch{opened(1, 1 * ms), request(1, 1, 13 * ms, "/lab/Call", std::nullopt, "hedged"),
                       opened(3, 1 * ms), request(3, 1, 120 * ms, "/lab/Call", std::nullopt, "third")});
        model.appendBatch(
            EventBatch{trailers(2, 3, 117 * ms, 0),
                       testev::frame(1, 1, 118 * ms, Direction::ClientToServer, FrameRstStream, 8)});
        const auto &calls = model.store().calls();
        QCOMPARE(calls.size(), size_t(2));
        const Call &c = calls[0];
        QCOMPARE(c.key, std::string("hedged"));
        QCOMPARE(c.attempts.size(), size_t(3));
        QCOMPARE(c.attempts[0].connection, 1u);
        QCOMPARE(c.attempts[0].startNs, 13 * ms);
        QCOMPARE(c.attempts[1].startNs, 60 * ms);
        QCOMPARE(c.attempts[2].startNs, 101 * ms);
        // Each end landed on its own attempt; the call's outcome is the hedge's OK, its start the first
        // copy's.
        QCOMPARE(c.attempts[0].rstErrorCode, std::optional<std::uint32_t>(8));
        QVERIFY(!c.attempts[0].status);
        QCOMPARE(c.attempts[1].status, std::optional<int>(14));
        QCOMPARE(c.attempts[2].status, std::optional<int>(0));
        QCOMPARE(c.attempts[2].endNs, std::optional<std::int64_t>(117 * ms));
        QCOMPARE(c.startNs(), 13 * ms);
        // Latencies 10 ms (moved, counted once), 105 ms (the first copy) and 16 ms.
        QCOMPARE(model.stats().total().attemptLatency.count(), std::uint64_t(3));
        const std::int64_t longest = model.stats().total().attemptLatency.max().value_or(0);
        QVERIFY2(std::abs(longest - 105 * ms) < ms, qPrintable(QString::number(longest)));
        // The model's rows follow: three attempt rows under the call, the first the first copy.
        const QModelIndex call = model.index(0, 0);
        QCOMPARE(model.rowCount(call), 3);
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStart, call)).toString(),
                 QStringLiteral("13.000 ms"));
    }

    // Attempt rows are announced where the attempts went, so a row the user selected stays on its attempt: an
    // append and two attempts placed before others in one batch (one between the call's attempts).
    void attemptRowsFollowAPlacement()
    {
        TimelineModel model;
        twoAttemptsOnConnection2(model, "h");
        const QModelIndex call = model.index(0, 0);
        const QPersistentModelIndex at60 = model.index(0, TimelineModel::ColStart, call);
        const QPersistentModelIndex at101 = model.index(1, TimelineModel::ColStart, call);
        model.appendBatch(
            EventBatch{request(2, 5, 150 * ms, "/lab/Call", std::nullopt, "h"), opened(1, 1 * ms),
                       request(1, 1, 13 * ms, "/lab/Call", std::nullopt, "h"), opened(3, 1 * ms),
                       request(3, 1, 80 * ms, "/lab/Call", std::nullopt, "h")});
        QCOMPARE(model.store().calls().size(), size_t(1));
        QCOMPARE(model.rowCount(call), 5);
        QStringList starts;
        for (int r = 0; r < 5; ++r)
            starts << model.data(model.index(r, TimelineModel::ColStart, call)).toString();
        QCOMPARE(starts, QStringList({"13.000 ms", "60.000 ms", "80.000 ms", "101.000 ms", "150.000 ms"}));
        QCOMPARE(at60.row(), 1);
        QCOMPARE(at60.data().toString(), QStringLiteral("60.000 ms"));
        QCOMPARE(at101.row(), 3);
        QCOMPARE(at101.data().toString(), QStringLiteral("101.000 ms"));
    }

    void callsOverlappingFollowsTheCalls()
    {
        TimelineStore store;
        store.apply({opened(1, 0)});
        auto walk = [&store](std::int64_t from, std::int64_t to) {
            size_t n = 0;
            for (const Call &c : store.calls())
                n += c.startNs() <= to && c.endNs().value_or(store.latestNs()) >= from;
            return n;
        };
        auto checkRanges = [&] {
            for (std::int64_t from = -5 * ms; from < 80 * ms; from += 7 * ms)
                for (std::int64_t len : {std::int64_t(0), 3 * ms, 20 * ms, 200 * ms})
                    if (store.callsOverlapping(from, from + len) != walk(from, from + len))
                        return QStringLiteral("[%1, %2] ms: %3, the calls say %4")
                            .arg(double(from) / ms)
                            .arg(double(from + len) / ms)
                            .arg(store.callsOverlapping(from, from + len))
                            .arg(walk(from, from + len));
            return QString();
        };
        size_t open = 0;
        for (int i = 0; i < 30; ++i) {
            // Call i starts; call i - 2 fails and is retried 4 ms later; the retry of call i - 4 ends.
            const std::uint32_t stream = std::uint32_t(8 * i + 1);
            const std::string id = "c" + std::to_string(i);
            EventBatch batch{request(1, stream, 2 * i * ms, "/svc/M", std::nullopt, id)};
            if (i >= 2) {
                batch.push_back(trailers(1, stream - 16, 2 * i * ms + 1, 14));
                batch.push_back(
                    request(1, stream - 14, 2 * i * ms + 4 * ms, "/svc/M", 1, "c" + std::to_string(i - 2)));
            }
            if (i >= 4) batch.push_back(trailers(1, stream - 30, 2 * i * ms + ms, 0));
            store.apply(batch);
            const QString wrong = checkRanges();
            QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
        }
        for (const Call &c : store.calls())
            open += !c.endNs();
        QVERIFY(open >= 4); // the last calls are still in flight
        store.setPinned(3, true);
        RetentionPolicy keep;
        keep.maxCalls = 12;
        QVERIFY(!store.enforce(keep).empty());
        QVERIFY(store.evictedCalls() > 0);
        QVERIFY2(checkRanges().isEmpty(), qPrintable(checkRanges()));
        // A late retry of a kept call, after the eviction moved it.
        store.apply({request(1, 1001, 70 * ms, "/svc/M", 2, store.calls().back().key)});
        QVERIFY2(checkRanges().isEmpty(), qPrintable(checkRanges()));
        QVERIFY(store.callsOverlapping(0, 100 * ms) > 0);
        store.clear();
        QCOMPARE(store.callsOverlapping(-100 * ms, 100 * ms), size_t(0));
    }
};

QTEST_GUILESS_MAIN(TestTimelineModel)
#include "tst_timelinemodel.moc"
