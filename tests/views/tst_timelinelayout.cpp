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
        const LaneMetrics m = LaneMetrics::scaled(1.0, LaneDensity::Comfortable);
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

        // Compact rows: both calls on one row each (retry-basic's three attempts side by side), unless a call
        // is expanded; a folded group is one row of counts.
        const LaneMetrics c = LaneMetrics::scaled(1.0, LaneDensity::Compact);
        layout.build(model.store(), LaneGrouping::None, {}, c, false);
        QCOMPARE(layout.blocks()[0].h, double(c.rowHeight));
        QCOMPARE(layout.blocks()[1].h, double(c.rowHeight));
        QVERIFY(layout.oneRow(0) && layout.oneRow(1));
        QCOMPARE(layout.blocks()[1].y, double(c.rowHeight + c.callSpacing));
        LaneFilter expanded;
        expanded.expanded.insert("retry-basic-1");
        layout.build(model.store(), LaneGrouping::None, expanded, c, false);
        QVERIFY(!layout.oneRow(0) && layout.oneRow(1));
        QCOMPARE(layout.blocks()[0].h, double(c.callHeader + 3 * c.attemptHeight));
        LaneFilter folded;
        folded.foldedGroups.insert(QStringLiteral("/rpcscope.lab.Lab/Call"));
        layout.build(model.store(), LaneGrouping::Method, folded, c, false);
        QCOMPARE(layout.callLanes(), size_t(0));
        QCOMPARE(int(layout.blocks().size()), 1); // the row of counts heads the folded group
        QCOMPARE(layout.blocks()[0].kind, LaneBlock::GroupAggregate);
        QCOMPARE(layout.groups()[0].outcomes[0], size_t(1)); // OK
        QCOMPARE(layout.groups()[0].outcomes[2], size_t(1)); // DEADLINE_EXCEEDED
        QCOMPARE(layout.groups()[0].members.size(), size_t(2));

        const LaneFilter f = LaneFilter::parse(QStringLiteral("method:Call status:OK slow path"));
        QCOMPARE(f.method, QStringLiteral("Call"));
        QCOMPARE(f.status, QStringLiteral("OK"));
        QCOMPARE(f.text, QStringLiteral("slow path"));
    }
};

QTEST_MAIN(TestTimelineLayout)
#include "tst_timelinelayout.moc"
