// The painter's incremental index and caches against a rebuild from every call.
#include "renderfixture.h"
#include "swimlaneview.h"

#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

class TestTimelineIndex : public QObject
{
    Q_OBJECT
private slots:
    void incrementalCachesMatchRebuild()
    {
        // The widget's painter follows each batch from the calls it touched; a fresh painter rebuilds from
        // every call. Both must draw the same picture, including a call that gains attempts in a later batch.
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        const EventBatch all = scene();
        const std::vector<EventBatch> batches = {{all[0], all[1], all[2], all[7]},
                                                 {all[3]},
                                                 {all[4], all[5]},
                                                 {all[6], all[8]},
                                                 {req(9, 400 * ms, std::nullopt, "late-1", 1000 * ms)},
                                                 {end(9, 410 * ms, 0)}};
        for (const EventBatch &b : batches) {
            model.appendBatch(b);
            TimelinePainter fresh(&model.store());
            TimelinePainter &live = view.timelinePainter();
            QCOMPARE(live.fullRange(), fresh.fullRange());
            fresh.setOptions(live.options());
            fresh.setRange(live.rangeStart(), live.rangeEnd());
            QCOMPARE(live.layout().blocks().size(), fresh.layout().blocks().size());
            for (size_t i = 0; i < fresh.layout().blocks().size(); ++i) {
                QCOMPARE(live.layout().blocks()[i].y, fresh.layout().blocks()[i].y);
                QCOMPARE(live.layout().blocks()[i].h, fresh.layout().blocks()[i].h);
            }
            const QRectF rect(0, 0, 1200, 700);
            QCOMPARE(render(live, rect), render(fresh, rect));
        }
    }

    // Lab events are placed as they come, not all again every batch: a marker whose call has no lane yet goes
    // on the policy band and moves to the lane when the call comes, exactly as a rebuild would place it.
    void labEventsPlacedIncrementally()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        // The legend's room as a fresh painter's: for what the store may draw, not what this view drew.
        view.timelinePainter().setLegendRoomFromPaints(false);
        model.appendBatch(scene());
        auto lab = [](std::int64_t t, const std::string &kind, const std::string &detail,
                      const std::string &callId) {
            WireEvent e;
            e.kind = EventKind::LabEvent;
            e.tNs = t;
            e.about = LabDecision{kind, detail};
            e.grpc.callId = callId;
            return e;
        };
        const std::vector<EventBatch> batches = {
            {lab(20 * ms, "breaker", "closed -> open", "")},
            {lab(30 * ms, "bulkhead-rejected", "full", "")},
            {lab(40 * ms, "retry-suppressed", "budget", "late-2"), lab(45 * ms, "fast-fail", "open", "")},
            {lab(50 * ms, "bulkhead-rejected", "no lane yet", "late-2")},
            {req(11, 400 * ms, std::nullopt, "late-2", 1000 * ms)},
            {end(11, 410 * ms, 0), lab(60 * ms, "breaker", "open -> half-open", "")}};
        for (const EventBatch &b : batches) {
            model.appendBatch(b);
            TimelinePainter fresh(&model.store());
            TimelinePainter &live = view.timelinePainter();
            fresh.setOptions(live.options());
            fresh.setRange(live.rangeStart(), live.rangeEnd());
            const QRectF rect(0, 0, 1200, 700);
            QCOMPARE(render(live, rect), render(fresh, rect));
        }
    }
};

QTEST_MAIN(TestTimelineIndex)
#include "tst_timelineindex.moc"
