// The attempt inspector: headers, frames and a refused stream.
#include "attemptinspector.h"
#include "headerlog.h"
#include "renderfixture.h"

#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

class TestAttemptInspector : public QObject
{
    Q_OBJECT
private slots:
    void inspectorShowsHeadersAndFrames()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        HeaderLog log;
        const WireEvent open = opened(1);
        WireEvent r = req(1, 10 * ms, std::nullopt, "i-1", 500 * ms);
        r.headers = {
            {":path", "/rpcscope.lab.Lab/Call"}, {"grpc-timeout", "500m"}, {"rpcscope-call-id", "i-1"}};
        WireEvent t = end(1, 20 * ms, 14);
        t.headers = {{"grpc-status", "14"}, {"grpc-message", "down"}};
        const EventBatch b{open, frame(1, 10 * ms, Direction::ClientToServer, FrameHeaders), r,
                           frame(1, 20 * ms, Direction::ServerToClient, FrameHeaders), t};
        log.record(b);
        model.appendBatch(b);
        AttemptInspector inspector(&model.store(), &log);
        inspector.showAttempt(0, 0);
        QTreeWidget *tree = inspector.tree();
        auto find = [&](const QString &text) {
            return !tree->findItems(text, Qt::MatchStartsWith | Qt::MatchRecursive, 0).isEmpty();
        };
        QVERIFY(find(QStringLiteral("Request headers")));
        QVERIFY(find(QStringLiteral("Trailers-Only response")));
        QVERIFY(find(QStringLiteral("rpcscope-call-id")));
        QVERIFY(find(QStringLiteral("grpc-status")));
        QVERIFY(find(QStringLiteral("Frames (2")));
        QVERIFY(find(QStringLiteral("duration")));
        inspector.showAttempt(-1, -1);
        QCOMPARE(tree->topLevelItemCount(), 0);

        // The log forgets the oldest streams first.
        HeaderLog small(1);
        small.record(b);
        WireEvent other = r;
        other.stream = 3;
        small.record({other});
        QVERIFY(!small.blocks(1, 1));
        QVERIFY(small.blocks(1, 3));
    }

    // A stream above a GOAWAY's last-stream-id: the inspector says the server never processed it.
    void inspectorShowsARefusedStream()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        WireEvent goaway = frame(0, 12 * ms, Direction::ServerToClient, FrameGoaway);
        goaway.lastStreamId = 0;
        model.appendBatch({opened(1), req(1, 10 * ms, std::nullopt, "g-1", 500 * ms), goaway});
        AttemptInspector inspector(&model.store(), nullptr);
        inspector.showAttempt(0, 0);
        const auto rows =
            inspector.tree()->findItems(QStringLiteral("GOAWAY"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rows.size(), 1);
        QVERIFY2(rows[0]->text(1).startsWith(QStringLiteral("not processed")), qPrintable(rows[0]->text(1)));
        QVERIFY2(rows[0]->text(1).endsWith(QStringLiteral("NO_ERROR (0)")), qPrintable(rows[0]->text(1)));
        QVERIFY(inspector.tree()
                    ->findItems(QStringLiteral("RST_STREAM"), Qt::MatchExactly | Qt::MatchRecursive, 0)
                    .isEmpty());
    }
};

QTEST_MAIN(TestAttemptInspector)
#include "tst_attemptinspector.moc"
