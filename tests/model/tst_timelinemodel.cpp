#include "jsonexport.h"
#include "timelinemodel.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

WireEvent opened(std::uint32_t conn, std::int64_t t, std::string client = "127.0.0.1:5000")
{
    WireEvent e;
    e.kind = EventKind::ConnectionOpened;
    e.connection = conn;
    e.tNs = t;
    e.text = std::move(client);
    e.text2 = "127.0.0.1:9000";
    return e;
}

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &path,
                  std::optional<int> prev, const std::string &callId, std::optional<std::int64_t> timeout = {})
{
    WireEvent e;
    e.kind = EventKind::Headers;
    e.connection = conn;
    e.stream = stream;
    e.tNs = t;
    e.dir = Direction::ClientToServer;
    e.grpc.path = path;
    e.grpc.previousAttempts = prev;
    e.grpc.callId = callId;
    e.grpc.timeoutNs = timeout;
    return e;
}

WireEvent trailers(std::uint32_t conn, std::uint32_t stream, std::int64_t t, int status,
                   std::optional<std::int64_t> pushback = {})
{
    WireEvent e;
    e.kind = EventKind::Headers;
    e.connection = conn;
    e.stream = stream;
    e.tNs = t;
    e.dir = Direction::ServerToClient;
    e.endStream = true;
    e.grpc.status = status;
    e.grpc.message = "m" + std::to_string(status);
    e.grpc.pushbackMs = pushback;
    return e;
}

WireEvent frame(std::uint32_t conn, std::uint32_t stream, std::int64_t t, std::uint8_t type, std::uint32_t code = 0)
{
    WireEvent e;
    e.kind = EventKind::Frame;
    e.connection = conn;
    e.stream = stream;
    e.tNs = t;
    e.frameType = type;
    e.errorCode = code;
    return e;
}

WireEvent message(std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir, std::uint32_t len)
{
    WireEvent e;
    e.kind = EventKind::Message;
    e.connection = conn;
    e.stream = stream;
    e.tNs = t;
    e.dir = dir;
    e.length = len;
    return e;
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
} // namespace

class TestTimelineModel : public QObject
{
    Q_OBJECT
private slots:
    void assemblesByCallId()
    {
        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
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
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendBatch({opened(1, 0), request(1, 1, 5 * ms, "/a/B", std::nullopt, "x")});
        QCOMPARE(model.rowCount(), 1);
        QVERIFY(!model.store().calls()[0].outcomeAttempt());
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(), QStringLiteral("in flight"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.appendBatch({trailers(1, 1, 7 * ms, 0)});
        QVERIFY(changed.count() >= 1);
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus)).toString(), QStringLiteral("OK"));
    }

    void infersRetriesWithoutCallId()
    {
        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendBatch({opened(1, 0),
                           request(1, 1, 1 * ms, "/a/B", std::nullopt, ""),
                           trailers(1, 1, 2 * ms, 14),
                           // another method in between must not join
                           request(1, 3, 3 * ms, "/a/Other", std::nullopt, ""),
                           trailers(1, 3, 4 * ms, 0),
                           request(1, 5, 52 * ms, "/a/B", 1, ""),
                           trailers(1, 5, 53 * ms, 0)});
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
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
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
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
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
        QCOMPARE(calls[1].attempts[0].endNs.value_or(0), 40 * ms);
        QCOMPARE(model.store().connections()[0].closedNs.value_or(0), 40 * ms);
        QCOMPARE(model.store().frames().size(), size_t(1));
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
        QCOMPARE(noPushback.expectedGapNs(1).value(), (std::pair<std::int64_t, std::int64_t>{80 * ms, 120 * ms}));
        noPushback.retryMaxMs = 90;
        QCOMPARE(noPushback.expectedGapNs(1).value(), (std::pair<std::int64_t, std::int64_t>{72 * ms, 108 * ms}));

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

    void clearResets()
    {
        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendBatch(retryBasic());
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.clear();
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 0);
        model.appendBatch(retryBasic());
        QCOMPARE(model.rowCount(), 1);
    }
};

QTEST_GUILESS_MAIN(TestTimelineModel)
#include "tst_timelinemodel.moc"
