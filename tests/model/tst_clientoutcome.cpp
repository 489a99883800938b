// The outcome the client got, derived from the wire (clientoutcome.h): one synthetic capture per rule, and
// the open PINGs the store keeps for it.

#include "clientoutcome.h"
#include "jsonexport.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;
constexpr Direction c2s = Direction::ClientToServer, s2c = Direction::ServerToClient;
constexpr int kOk = 0, kCancelled = 1, kDeadlineExceeded = 4, kInternal = 13, kUnavailable = 14;
constexpr std::uint32_t kRefusedStream = 7, kCancel = 8;

WireEvent request(std::uint32_t stream, std::int64_t t, const std::string &callId,
                  std::optional<std::int64_t> timeout = {}, int previous = 0, std::uint32_t conn = 1)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, c2s);
    e.grpc.path = "/rpcscope.lab.Lab/Call";
    e.grpc.callId = callId;
    e.grpc.timeoutNs = timeout;
    e.grpc.previousAttempts = previous;
    return e;
}

// A request from a client that told its retryPolicy (as the lab client does).
WireEvent retrying(std::uint32_t stream, std::int64_t t, const std::string &callId, std::int64_t timeout,
                   int previous)
{
    WireEvent e = request(stream, t, callId, timeout, previous);
    e.grpc.retryInitialMs = 100;
    e.grpc.retryMultiplier = 2;
    e.grpc.retryMaxMs = 1000;
    return e;
}

WireEvent trailers(std::uint32_t stream, std::int64_t t, int status, std::uint32_t conn = 1)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, s2c);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

WireEvent responseHeaders(std::uint32_t stream, std::int64_t t)
{
    return testev::event(EventKind::Headers, 1, stream, t, s2c);
}

WireEvent rst(std::uint32_t stream, std::int64_t t, Direction by, std::uint32_t code, std::uint32_t conn = 1)
{
    return testev::frame(conn, stream, t, by, FrameRstStream, code, 4);
}

WireEvent ping(std::int64_t t, Direction dir, std::uint64_t data, bool ack = false, std::uint32_t conn = 1)
{
    WireEvent e = testev::frame(conn, 0, t, dir, FramePing, 0, 8);
    e.pingData = data;
    e.flags = ack ? FlagAck : 0;
    return e;
}

WireEvent closed(std::int64_t t, const std::string &reason, std::uint32_t conn = 1)
{
    WireEvent e = testev::event(EventKind::ConnectionClosed, conn, 0, t);
    e.reason = reason;
    return e;
}

// Applies the batch and returns the outcome of its only (or its first) call.
ClientOutcome outcomeOf(TimelineStore &store, const EventBatch &batch)
{
    store.apply(batch);
    if (store.calls().empty()) return {};
    return clientOutcome(store.calls().front(), store);
}
} // namespace

class TestClientOutcome : public QObject
{
    Q_OBJECT
private slots:
    void inFlightUntilTheCallEnds()
    {
        TimelineStore store;
        const ClientOutcome o = outcomeOf(store, {testev::opened(1, 0), request(1, 1 * ms, "a")});
        QCOMPARE(int(o.source), int(ClientOutcome::Source::InFlight));
        QVERIFY(!o.status);
        QCOMPARE(o.label(), std::string("in flight"));
    }

    void wireStatusIsTheOutcome()
    {
        TimelineStore store;
        const ClientOutcome o = outcomeOf(
            store, {testev::opened(1, 0), request(1, 1 * ms, "a", 500 * ms), trailers(1, 9 * ms, kOk)});
        QCOMPARE(int(o.source), int(ClientOutcome::Source::Wire));
        QCOMPARE(o.status.value_or(-1), kOk);
        QCOMPARE(o.atNs.value_or(-1), 9 * ms);
        QVERIFY(o.why.empty());
        QCOMPARE(outcomeWithClient(store.calls().front(), o), std::string("OK"));
    }

    void clientResetAfterDeadlineIsDeadlineExceeded()
    {
        TimelineStore store;
        const ClientOutcome o =
            outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a", 200 * ms),
                              rst(1, 212 * ms, c2s, kCancel), closed(215 * ms, "closed by client")});
        QVERIFY(o.implied());
        QCOMPARE(o.status.value_or(-1), kDeadlineExceeded);
        QCOMPARE(o.atNs.value_or(-1), 210 * ms); // at the deadline, not at the RST
        QVERIFY2(o.why.find("deadline") != std::string::npos, o.why.c_str());
        QCOMPARE(outcomeWithClient(store.calls().front(), o),
                 std::string("RST_STREAM CANCEL \u2192 client: DEADLINE_EXCEEDED"));
        QVERIFY(store.calls().front().attempts.front().rstByClient);
    }

    void clientResetJustBeforeOurDeadlineStillCounts()
    {
        // Our deadline is the relay's stamp plus a rounded-up grpc-timeout: the client's own comes earlier.
        TimelineStore store;
        const ClientOutcome o = outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a", 200 * ms),
                                                  rst(1, 205 * ms, c2s, kCancel)});
        QCOMPARE(o.status.value_or(-1), kDeadlineExceeded);
        QCOMPARE(o.atNs.value_or(-1), 205 * ms);
    }

    void clientResetBeforeDeadlineIsCancelled()
    {
        TimelineStore store;
        const ClientOutcome o = outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a", 2000 * ms),
                                                  rst(1, 100 * ms, c2s, kCancel)});
        QVERIFY(o.implied());
        QCOMPARE(o.status.value_or(-1), kCancelled);
        QCOMPARE(o.atNs.value_or(-1), 100 * ms);
    }

    void serverResetAfterDeadlineIsUnknown()
    {
        // Only the client's own reset says it gave up; the server's says nothing about what the client got.
        TimelineStore store;
        const ClientOutcome o = outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a", 200 * ms),
                                                  rst(1, 230 * ms, s2c, kCancel)});
        QCOMPARE(int(o.source), int(ClientOutcome::Source::Unknown));
        QVERIFY(!o.status);
        QCOMPARE(o.label(), std::string("unknown"));
        QVERIFY2(o.why.find("server reset") != std::string::npos, o.why.c_str());
        QVERIFY(!store.calls().front().attempts.front().rstByClient);
        QCOMPARE(outcomeWithClient(store.calls().front(), o), std::string("RST_STREAM CANCEL"));
    }

    void unansweredKeepaliveThenClientCloseIsUnavailable()
    {
        // keepalive-drop as the relay sees it: the call is in flight, the client's PING gets no ACK, after
        // the keepalive timeout the client resets the stream (C-core: REFUSED_STREAM) and closes the
        // connection.
        TimelineStore store;
        const ClientOutcome o =
            outcomeOf(store, {testev::opened(1, 0), request(1, 5 * ms, "ok"), trailers(1, 6 * ms, kOk),
                              ping(500 * ms, c2s, 41), ping(501 * ms, s2c, 41, true),
                              request(3, 1000 * ms, "held", 6000 * ms), ping(2000 * ms, c2s, 42),
                              rst(3, 2300 * ms, c2s, kRefusedStream), closed(2301 * ms, "closed by client")});
        QCOMPARE(o.status.value_or(-1), kOk); // the first call, answered before the drop
        const Call &held = store.calls().at(1);
        const ClientOutcome h = clientOutcome(held, store);
        QVERIFY(h.implied());
        QCOMPARE(h.status.value_or(-1), kUnavailable);
        QCOMPARE(h.atNs.value_or(-1), 2300 * ms);
        QVERIFY2(h.why.find("PING") != std::string::npos && h.why.find("300 ms") != std::string::npos,
                 h.why.c_str());
        QCOMPARE(outcomeWithClient(held, h),
                 std::string("RST_STREAM REFUSED_STREAM \u2192 client: UNAVAILABLE"));
        // The answered PING is gone from the open ones; the unanswered one stays, after the connection ended.
        const Connection &conn = store.connections().at(0);
        QCOMPARE(int(conn.openPings.size()), 1);
        QCOMPARE(conn.openPings[0].sentNs, 2000 * ms);
        QCOMPARE(int(conn.openPings[0].dir), int(c2s));
        QCOMPARE(int(store.pings().size()), 0); // the ACK carried no rtt from the decoder here
    }

    void keepaliveCloseWithoutResetIsUnavailable()
    {
        TimelineStore store;
        const ClientOutcome o =
            outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a"), ping(100 * ms, c2s, 7),
                              closed(400 * ms, "closed by client")});
        QCOMPARE(o.status.value_or(-1), kUnavailable);
        QCOMPARE(o.atNs.value_or(-1), 400 * ms);
    }

    void answeredPingOrServerCloseIsNoKeepaliveFailure()
    {
        {
            TimelineStore store; // the PING was answered: the close is not keepalive's doing
            const ClientOutcome o =
                outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a"), ping(100 * ms, c2s, 7),
                                  ping(101 * ms, s2c, 7, true), closed(400 * ms, "closed by client")});
            QCOMPARE(int(o.source), int(ClientOutcome::Source::Unknown));
            QVERIFY(store.connections().at(0).openPings.empty());
        }
        {
            TimelineStore store; // an ACK must echo the PING's data
            store.apply({testev::opened(1, 0), ping(100 * ms, c2s, 7), ping(101 * ms, s2c, 8, true)});
            QCOMPARE(int(store.connections().at(0).openPings.size()), 1);
        }
        {
            TimelineStore store; // the server closed it
            const ClientOutcome o =
                outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a"), ping(100 * ms, c2s, 7),
                                  closed(400 * ms, "closed by server")});
            QCOMPARE(int(o.source), int(ClientOutcome::Source::Unknown));
            QVERIFY2(o.why.find("connection closed") != std::string::npos, o.why.c_str());
        }
        {
            TimelineStore store; // a PING still in flight as the connection closes is a race of the shutdown
            const ClientOutcome o =
                outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a"), ping(399'800'000, c2s, 7),
                                  closed(400 * ms, "closed by client")});
            QCOMPARE(int(o.source), int(ClientOutcome::Source::Unknown));
            const Connection &c = store.connections().at(0);
            QCOMPARE(int(c.openPings.size()), 1);
            QVERIFY(!c.unanswered(c.openPings[0], 400 * ms));
        }
        {
            TimelineStore store; // "long enough" grows with the connection's round trip
            store.apply({testev::opened(1, 0), ping(0, c2s, 1), ping(10 * ms, s2c, 1, true)});
            store.apply({ping(100 * ms, c2s, 2), closed(125 * ms, "closed by client")});
            Connection c = store.connections().at(0);
            QCOMPARE(int(c.openPings.size()), 1);
            QVERIFY(c.unanswered(c.openPings[0], 0)); // no rtt known from the decoder here: 1 ms
            c.lastPingRttNs = 10 * ms;
            QVERIFY(!c.unanswered(c.openPings[0], 0));
        }
        {
            TimelineStore store; // the server's unanswered PING is not the client's keepalive
            const ClientOutcome o =
                outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a"), ping(100 * ms, s2c, 7),
                                  closed(400 * ms, "closed by client")});
            QCOMPARE(int(o.source), int(ClientOutcome::Source::Unknown));
            QCOMPARE(int(store.connections().at(0).openPings.size()), 1);
        }
    }

    void openPingsAreBounded()
    {
        TimelineStore store;
        EventBatch batch{testev::opened(1, 0)};
        for (int i = 0; i < 20; ++i)
            batch.push_back(ping(i * ms, c2s, std::uint64_t(i)));
        store.apply(batch);
        const auto &open = store.connections().at(0).openPings;
        QCOMPARE(open.size(), Connection::kMaxOpenPings);
        QCOMPARE(open.front().sentNs, 0 * ms); // the first ones: where keepalive started failing
    }

    void transparentRetryIsNoFailure()
    {
        TimelineStore store;
        const ClientOutcome o =
            outcomeOf(store, {testev::opened(1, 0), request(1, 10 * ms, "a", 1000 * ms),
                              rst(1, 11 * ms, s2c, kRefusedStream), request(3, 12 * ms, "a", 998 * ms),
                              trailers(3, 20 * ms, kOk)});
        const Call &call = store.calls().front();
        QVERIFY(call.transparentRetry(1));
        QCOMPARE(int(o.source), int(ClientOutcome::Source::Wire));
        QCOMPARE(o.status.value_or(-1), kOk);
        QVERIFY(!attemptClientNote(call, 0).empty());
        QVERIFY(attemptClientNote(call, 1).empty());
    }

    void deadlineInBackoffIsDeadlineExceeded()
    {
        // deadline-cuts-retries: two attempts fail UNAVAILABLE; the next retry was due 160-240 ms after the
        // second, past the 250 ms deadline, so none came, and the client got DEADLINE_EXCEEDED at 250 ms.
        const EventBatch batch{testev::opened(1, 0), retrying(1, 0, "a", 250 * ms, 0),
                               trailers(1, 2 * ms, kUnavailable), retrying(3, 102 * ms, "a", 148 * ms, 1),
                               trailers(3, 105 * ms, kUnavailable)};
        {
            TimelineStore store;
            const ClientOutcome before = outcomeOf(store, batch);
            // Until the capture has seen the deadline pass, a retry may yet come: the wire's status stands.
            QCOMPARE(int(before.source), int(ClientOutcome::Source::Wire));
            QCOMPARE(before.status.value_or(-1), kUnavailable);
            store.apply({closed(252 * ms, "closed by client")});
            const ClientOutcome o = clientOutcome(store.calls().front(), store);
            QVERIFY(o.implied());
            QCOMPARE(o.status.value_or(-1), kDeadlineExceeded);
            QCOMPARE(o.atNs.value_or(-1), 250 * ms);
            QCOMPARE(outcomeWithClient(store.calls().front(), o),
                     std::string("UNAVAILABLE \u2192 client: DEADLINE_EXCEEDED"));
        }
        {
            TimelineStore store; // a non-retryable status ends the call at once
            EventBatch b = batch;
            b.back().grpc.status = kInternal;
            b.push_back(closed(300 * ms, "closed by client"));
            const ClientOutcome o = outcomeOf(store, b);
            QCOMPARE(int(o.source), int(ClientOutcome::Source::Wire));
            QCOMPARE(o.status.value_or(-1), kInternal);
        }
        {
            TimelineStore store; // response headers committed the call: no retry
            EventBatch b = batch;
            b.insert(b.end() - 1, responseHeaders(3, 104 * ms));
            b.push_back(closed(300 * ms, "closed by client"));
            QCOMPARE(outcomeOf(store, b).status.value_or(-1), kUnavailable);
        }
        {
            TimelineStore store; // the next retry was due before the deadline: attempts had run out
            EventBatch b{testev::opened(1, 0),
                         retrying(1, 0, "a", 900 * ms, 0),
                         trailers(1, 2 * ms, kUnavailable),
                         retrying(3, 102 * ms, "a", 798 * ms, 1),
                         trailers(3, 105 * ms, kUnavailable),
                         closed(1000 * ms, "closed by client")};
            QCOMPARE(outcomeOf(store, b).status.value_or(-1), kUnavailable);
        }
        {
            TimelineStore store; // a client that told no retryPolicy: its UNAVAILABLE is final
            EventBatch b{testev::opened(1, 0), request(1, 0, "a", 250 * ms),
                         trailers(1, 2 * ms, kUnavailable), closed(300 * ms, "closed by client")};
            QCOMPARE(outcomeOf(store, b).status.value_or(-1), kUnavailable);
        }
    }

    void jsonCarriesTheClientOutcome()
    {
        TimelineStore store;
        store.apply({testev::opened(1, 0), request(1, 10 * ms, "a", 200 * ms), rst(1, 212 * ms, c2s, kCancel),
                     request(3, 20 * ms, "b"), trailers(3, 30 * ms, kOk), request(5, 40 * ms, "c"),
                     ping(50 * ms, c2s, 9), closed(300 * ms, "closed by client")});
        const QJsonObject doc = timelineToJson(store, false);
        const QJsonArray calls = doc.value("calls").toArray();
        QCOMPARE(calls.size(), 3);
        const QJsonObject a = calls.at(0).toObject().value("client_outcome").toObject();
        QCOMPARE(a.value("name").toString(), QStringLiteral("DEADLINE_EXCEEDED"));
        QCOMPARE(a.value("code").toInt(), kDeadlineExceeded);
        QCOMPARE(a.value("at_ns").toInteger(), 210 * ms);
        QCOMPARE(a.value("source").toString(), QStringLiteral("implied"));
        QVERIFY(a.value("why").toString().contains(QStringLiteral("deadline")));
        QCOMPARE(
            calls.at(0).toObject().value("attempts").toArray().at(0).toObject().value("rst_by").toString(),
            QStringLiteral("client"));
        const QJsonObject b = calls.at(1).toObject().value("client_outcome").toObject();
        QCOMPARE(b.value("name").toString(), QStringLiteral("OK"));
        QCOMPARE(b.value("source").toString(), QStringLiteral("wire"));
        QVERIFY(b.value("why").isNull());
        const QJsonObject c = calls.at(2).toObject().value("client_outcome").toObject();
        QCOMPARE(c.value("name").toString(), QStringLiteral("UNAVAILABLE"));
        const QJsonArray open =
            doc.value("connections").toArray().at(0).toObject().value("open_pings").toArray();
        QCOMPARE(open.size(), 1);
        QCOMPARE(open.at(0).toObject().value("sent_ns").toInteger(), 50 * ms);
        QCOMPARE(open.at(0).toObject().value("dir").toString(), QStringLiteral("c2s"));
    }

    void callsTableShowsTheClientOutcome()
    {
        TimelineModel model;
        model.appendBatch({testev::opened(1, 0), request(1, 10 * ms, "a", 200 * ms),
                           rst(1, 212 * ms, c2s, kCancel), request(3, 20 * ms, "b"),
                           trailers(3, 30 * ms, kOk)});
        const QModelIndex a = model.index(0, TimelineModel::ColStatus);
        QCOMPARE(model.data(a).toString(),
                 QStringLiteral("RST_STREAM CANCEL \u2192 client: DEADLINE_EXCEEDED"));
        QVERIFY(model.data(a, Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("client got DEADLINE_EXCEEDED")));
        QCOMPARE(model.data(a, TimelineModel::ClientStatusCodeRole).toInt(), kDeadlineExceeded);
        // The wire's own status stays what StatusCodeRole gives: none here.
        QVERIFY(!model.data(a, TimelineModel::StatusCodeRole).isValid());
        const QModelIndex b = model.index(1, TimelineModel::ColStatus);
        QCOMPARE(model.data(b).toString(), QStringLiteral("OK"));
        QVERIFY(!model.data(b, Qt::ToolTipRole).isValid());
        // The attempt row keeps the wire's label.
        QCOMPARE(model.data(model.index(0, TimelineModel::ColStatus, model.index(0, 0))).toString(),
                 QStringLiteral("RST_STREAM CANCEL"));
    }

    // The client outcome can change in a later batch that has no event of the call's own: its row must still
    // be told.
    void laterBatchesRefreshTheRow()
    {
        TimelineModel model;
        model.appendBatch({testev::opened(1, 0), request(1, 10 * ms, "held"), ping(100 * ms, c2s, 7),
                           rst(1, 400 * ms, c2s, kRefusedStream)});
        const QModelIndex held = model.index(0, TimelineModel::ColStatus);
        QCOMPARE(model.data(held).toString(), QStringLiteral("RST_STREAM REFUSED_STREAM"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        auto rowChanged = [&] {
            for (const QList<QVariant> &args : changed)
                if (args.at(0).toModelIndex().row() <= 0 && args.at(1).toModelIndex().row() >= 0) return true;
            return false;
        };
        model.appendBatch({closed(401 * ms, "closed by client")});
        QVERIFY(rowChanged());
        QCOMPARE(model.data(held).toString(),
                 QStringLiteral("RST_STREAM REFUSED_STREAM \u2192 client: UNAVAILABLE"));

        TimelineModel backoff;
        backoff.appendBatch({testev::opened(1, 0), retrying(1, 0, "a", 250 * ms, 0),
                             trailers(1, 2 * ms, kUnavailable), retrying(3, 102 * ms, "a", 148 * ms, 1),
                             trailers(3, 105 * ms, kUnavailable)});
        const QModelIndex a = backoff.index(0, TimelineModel::ColStatus);
        QCOMPARE(backoff.data(a).toString(), QStringLiteral("UNAVAILABLE"));
        QSignalSpy later(&backoff, &QAbstractItemModel::dataChanged);
        backoff.appendBatch({testev::opened(2, 200 * ms)}); // another connection, before the deadline
        QCOMPARE(later.count(), 0);
        backoff.appendBatch({testev::opened(3, 260 * ms)}); // the capture's clock passes the deadline
        QVERIFY(later.count() >= 1);
        QCOMPARE(backoff.data(a).toString(), QStringLiteral("UNAVAILABLE \u2192 client: DEADLINE_EXCEEDED"));
    }
};

QTEST_GUILESS_MAIN(TestClientOutcome)
#include "tst_clientoutcome.moc"
