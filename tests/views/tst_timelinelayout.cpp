// Lane layout: binary search over the lanes, filters and grouping.
#include "renderfixture.h"
#include "timelinelayout.h"

#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

class TestTimelineLayout : public QObject
{
    Q_OBJECT
private slots:
    void layoutBinarySearchAndFilter()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        const LaneMetrics m = LaneMetrics::scaled(1.0);
        TimelineLayout layout;
        layout.build(model.store(), LaneGrouping::None, {}, m, true);
        // One connection lane, then the two calls in start order.
        QCOMPARE(int(layout.blocks().size()), 3);
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::ConnectionLane);
        QCOMPARE(layout.blocks()[1].kind, LaneBlock::CallLane);
        QCOMPARE(layout.callLanes(), size_t(2));
        const LaneBlock &second = layout.blocks()[2];
        QCOMPARE(second.h, double(m.callHeader + m.attemptHeight));
        QCOMPARE(layout.blockAt(second.y + 1), size_t(2));
        QCOMPARE(layout.firstVisible(second.y - 1), size_t(2)); // in the spacing above it
        QCOMPARE(layout.firstVisible(layout.height() + 100), layout.blocks().size());
        QCOMPARE(layout.blockOfCall(1), size_t(2));

        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("status:deadline")),
                     m, false);
        QCOMPARE(layout.callLanes(), size_t(1));
        QCOMPARE(layout.blocks()[0].index, 1u);
        QCOMPARE(layout.blockOfCall(0), layout.blocks().size());
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("status:failed")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(1));
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("retry-basic")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(1));
        layout.build(model.store(), LaneGrouping::None, LaneFilter::parse(QStringLiteral("method:Nope")), m,
                     false);
        QCOMPARE(layout.callLanes(), size_t(0));

        layout.build(model.store(), LaneGrouping::Method, {}, m, true);
        QCOMPARE(int(layout.groups().size()), 1);
        QCOMPARE(layout.groups()[0].calls, size_t(2));
        QCOMPARE(layout.groups()[0].failed, size_t(1));
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::GroupHeader);
        layout.build(model.store(), LaneGrouping::Connection, {}, m, true);
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::ConnectionLane); // the connection heads its calls
        QCOMPARE(layout.callLanes(), size_t(2));

        const LaneFilter f = LaneFilter::parse(QStringLiteral("method:Call status:OK slow path"));
        QCOMPARE(f.method, QStringLiteral("Call"));
        QCOMPARE(f.status, QStringLiteral("OK"));
        QCOMPARE(f.text, QStringLiteral("slow path"));
    }
};

QTEST_MAIN(TestTimelineLayout)
#include "tst_timelinelayout.moc"
