// TimelineModel's header log: kept only when asked, fed by every append and replay, emptied with the model.

#include "headerlog.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using namespace rpcscope;
using testev::event;
using testev::opened;

namespace {

EventBatch requestOn(std::uint32_t stream, std::int64_t t)
{
    WireEvent h = event(EventKind::Headers, 1, stream, t);
    h.headers = {{":path", "/rpcscope.lab.Lab/Call"}, {"rpcscope-call-id", "c-" + std::to_string(stream)}};
    h.grpc.path = "/rpcscope.lab.Lab/Call"; // what the store assembles calls from
    h.grpc.callId = "c-" + std::to_string(stream);
    WireEvent m = event(EventKind::Message, 1, stream, t + 1);
    m.length = 3;
    m.payload = "abc";
    return {h, m};
}

} // namespace

class TestModelHeaders : public QObject
{
    Q_OBJECT
private slots:
    void offUnlessAsked()
    {
        TimelineModel model;
        model.appendBatch({opened(1, 0)});
        model.appendBatch(requestOn(1, 10));
        QVERIFY(!model.headerLog());
    }

    void fedByAppendAndReplayEmptiedByClear()
    {
        TimelineModel model;
        QAbstractItemModelTester tester(&model);
        model.setKeepHeaders(true);
        QVERIFY(model.headerLog());
        // Whoever reacts to the new rows finds the stream's headers already there.
        bool seenOnInsert = false;
        connect(&model, &QAbstractItemModel::rowsInserted, this,
                [&] { seenOnInsert = model.headerLog()->blocks(1, 1) != nullptr; });
        model.appendBatch({opened(1, 0)});
        model.appendBatch(requestOn(1, 10));
        QVERIFY(seenOnInsert);
        const HeaderLog &log = *model.headerLog();
        QCOMPARE(log.blocks(1, 1)->size(), size_t(1));
        QCOMPARE(log.messages(1, 1)->front().payload, std::string("abc"));

        // A replay holds only the replayed capture's streams.
        CaptureData data;
        data.batches = {{opened(1, 0)}, requestOn(3, 20)};
        model.replay(data);
        QVERIFY(!log.blocks(1, 1));
        QCOMPARE(log.blocks(1, 3)->size(), size_t(1));
        QCOMPARE(log.streams(), size_t(1));

        model.clear();
        QCOMPARE(log.streams(), size_t(0));
        QCOMPARE(log.messageBytes(), size_t(0));

        model.setKeepHeaders(false);
        QVERIFY(!model.headerLog());
    }
};

QTEST_GUILESS_MAIN(TestModelHeaders)
#include "tst_modelheaders.moc"
