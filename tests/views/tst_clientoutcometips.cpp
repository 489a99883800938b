// The tooltips say what the client got where the wire only implies it, and describe an unanswered PING.

#include "attemptinspector.h"
#include "headerlog.h"
#include "timelinepainter.h"
#include "timelinetooltips.h"
#include "wireevents.h"

#include <QPainter>
#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

WireEvent request(std::uint32_t stream, std::int64_t t, const std::string &callId)
{
    WireEvent e = testev::event(EventKind::Headers, 1, stream, t, Direction::ClientToServer);
    e.grpc.path = "/rpcscope.lab.Lab/Call";
    e.grpc.callId = callId;
    e.grpc.timeoutNs = 5000 * ms;
    return e;
}

WireEvent ping(std::int64_t t, std::uint64_t data)
{
    WireEvent e = testev::frame(1, 0, t, Direction::ClientToServer, FramePing, 0, 8);
    e.pingData = data;
    return e;
}
} // namespace

class TestClientOutcomeTips : public QObject
{
    Q_OBJECT
private slots:
    void keepaliveDrop()
    {
        TimelineStore store;
        WireEvent close = testev::event(EventKind::ConnectionClosed, 1, 0, 1301 * ms);
        close.reason = "closed by client";
        store.apply({testev::opened(1, 0), request(1, 10 * ms, "held"), ping(1000 * ms, 42),
                     testev::frame(1, 1, 1300 * ms, Direction::ClientToServer, FrameRstStream, 7, 4), close});
        const QString attempt = TimelineToolTips::attempt(store, 0, 0);
        QVERIFY2(attempt.contains(QStringLiteral("the client got UNAVAILABLE</b>")), qPrintable(attempt));
        QVERIFY2(attempt.contains(QStringLiteral("PING went unanswered for 300 ms")), qPrintable(attempt));
        const QString conn = TimelineToolTips::connection(store, 0);
        QVERIFY2(conn.contains(QStringLiteral("client PING at 1.000 s never answered")), qPrintable(conn));
        QVERIFY2(conn.contains(QStringLiteral("keepalive timed out")), qPrintable(conn));

        // The inspector's Outcome section says it too, and who reset the stream.
        HeaderLog log;
        AttemptInspector inspector(&store, &log);
        inspector.showAttempt(0, 0);
        const auto got = inspector.tree()->findItems(QStringLiteral("client got"),
                                                     Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(got.size(), 1);
        QVERIFY2(got[0]->text(1).startsWith(QStringLiteral("UNAVAILABLE at 1.300 s")),
                 qPrintable(got[0]->text(1)));
        const auto rst = inspector.tree()->findItems(QStringLiteral("RST_STREAM"),
                                                     Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rst.size(), 1);
        QVERIFY2(rst[0]->text(1).endsWith(QStringLiteral("sent by the client")), qPrintable(rst[0]->text(1)));

        // The filter finds the call by what its client got, with the store to tell it; the wire alone says
        // RST_STREAM.
        const Call &dropped = store.calls()[0];
        QVERIFY(LaneFilter::parse(QStringLiteral("status:UNAVAILABLE")).matches(dropped, &store));
        QVERIFY(!LaneFilter::parse(QStringLiteral("status:UNAVAILABLE")).matches(dropped));
        QVERIFY(LaneFilter::parse(QStringLiteral("status:failed")).matches(dropped, &store));
        QVERIFY(!LaneFilter::parse(QStringLiteral("status:ok")).matches(dropped, &store));
        QVERIFY(LaneFilter::parse(QStringLiteral("unavailable")).matches(dropped, &store));

        // The open PING is drawn, so the legend names it; a store whose PING was answered has no such entry.
        TimelinePainter::Options o;
        o.legend = true;
        const QString entry = QStringLiteral("PING without ACK (open until the connection ends)");
        TimelinePainter painter(&store);
        painter.setOptions(o);
        painter.setRange(0, 1400 * ms);
        QImage img(1200, painter.contentHeight(1200), QImage::Format_ARGB32_Premultiplied);
        {
            QPainter p(&img);
            painter.paint(&p, QRectF(0, 0, img.width(), img.height()));
        }
        QVERIFY2(painter.legendEntries().contains(entry), qPrintable(painter.legendEntries().join(", ")));
        WireEvent ack = testev::frame(1, 0, 1001 * ms, Direction::ServerToClient, FramePing, 0, 8);
        ack.flags = FlagAck;
        ack.pingData = 42;
        TimelineStore answered;
        answered.apply({testev::opened(1, 0), request(1, 10 * ms, "held"), ping(1000 * ms, 42), ack, close});
        TimelinePainter plain(&answered);
        plain.setOptions(o);
        plain.setRange(0, 1400 * ms);
        {
            QPainter p(&img);
            plain.paint(&p, QRectF(0, 0, img.width(), img.height()));
        }
        QVERIFY2(!plain.legendEntries().contains(entry), qPrintable(plain.legendEntries().join(", ")));
    }

    void unknownIsSaid()
    {
        TimelineStore store;
        WireEvent close = testev::event(EventKind::ConnectionClosed, 1, 0, 50 * ms);
        close.reason = "closed by server";
        store.apply({testev::opened(1, 0), request(1, 10 * ms, "a"), close});
        const QString attempt = TimelineToolTips::attempt(store, 0, 0);
        QVERIFY2(attempt.contains(QStringLiteral("what the client got is unknown")), qPrintable(attempt));
        QVERIFY(!TimelineToolTips::connection(store, 0).contains(QStringLiteral("never answered")));
    }
};

QTEST_MAIN(TestClientOutcomeTips)
#include "tst_clientoutcometips.moc"
