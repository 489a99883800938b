// A burst of lab events under retention: what each append and each retention pass touches stays bounded by
// what it adds and cuts, never by what the store keeps (counted by the store and the index, not timed), and
// the painter that followed every cut draws what a fresh one draws.
#include "renderfixture.h"
#include "swimlaneview.h"

#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {

WireEvent labEvent(std::int64_t t, int i)
{
    WireEvent e;
    e.kind = EventKind::LabEvent;
    e.tNs = t;
    // As the ingestion burst sends them: one in ten a marker on the policy band.
    e.about = LabDecision{i % 10 == 0 ? "bulkhead-rejected" : "custom", "event " + std::to_string(i)};
    return e;
}

} // namespace

class TestBurstWork : public QObject
{
    Q_OBJECT
private slots:
    void retentionAndIndexTouchWhatTheyCut_data()
    {
        // Grouped, the lanes are built again after every batch and every cut rather than followed.
        QTest::addColumn<bool>("grouped");
        QTest::newRow("lanes followed") << false;
        QTest::newRow("lanes grouped by method") << true;
    }

    void retentionAndIndexTouchWhatTheyCut()
    {
        QFETCH(bool, grouped);
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        if (grouped) view.setGrouping(LaneGrouping::Method);
        // About 4,000 lab events fit: every pass that walked all that is kept would cost thousands of
        // records per cut, and there are hundreds of cuts.
        RetentionPolicy policy;
        policy.maxBytes = size_t(1) << 20;
        model.setRetention(policy);
        constexpr int kEvents = 40'000;
        const TimelinePainter &painter = view.timelinePainter();
        model.store().resetRetentionWork();
        size_t mostInOneAppend = 0;
        for (int i = 0; i < kEvents; ++i) {
            const size_t before = model.store().retentionWork();
            model.appendBatch({labEvent(std::int64_t(i) * 1000, i)});
            painter.fullRange(); // the view's caches follow every batch, as when it repaints
            painter.layout();
            mostInOneAppend = std::max(mostInOneAppend, model.store().retentionWork() - before);
        }
        const TimelineStore &store = model.store();
        // Retention did cut, many times, and kept within the budget.
        QVERIFY2(store.labEventsCut() > size_t(kEvents) / 2,
                 qPrintable(QString::number(store.labEventsCut())));
        QVERIFY(store.labEvents().size() < size_t(kEvents) / 4);
        QVERIFY(model.memoryBytes() <= policy.maxBytes + policy.maxBytes / 10);
        // Each event is visited a bounded number of times by retention over the whole burst (measure,
        // plan, cut), and one append's pass touches about what one cut drops, not everything kept.
        QVERIFY2(store.retentionWork() <= size_t(kEvents) * 4,
                 qPrintable(QStringLiteral("retention visited %1 records for %2 events")
                                .arg(store.retentionWork())
                                .arg(kEvents)));
        QVERIFY2(mostInOneAppend < store.labEvents().size(),
                 qPrintable(QStringLiteral("one pass visited %1 records; %2 kept")
                                .arg(mostInOneAppend)
                                .arg(store.labEvents().size())));
        // The index placed each lab event once: a cut dropped its front instead of a rebuild.
        QCOMPARE(painter.labEventsPlaced(), std::uint64_t(kEvents));
        // And the lanes, rebuilt around every cut, looked at each lab event once for their markers, not at
        // every event kept on each rebuild.
        QVERIFY2(painter.layout().labEventsLooked() <= std::uint64_t(kEvents),
                 qPrintable(QStringLiteral("the lanes looked at %1 lab events for %2 appended")
                                .arg(painter.layout().labEventsLooked())
                                .arg(kEvents)));

        // And it draws what a painter built from the store as it is now draws.
        TimelinePainter fresh(&store);
        fresh.setOptions(painter.options());
        fresh.setRange(painter.rangeStart(), painter.rangeEnd());
        const QRectF rect(0, 0, 1200, 700);
        TimelinePainter &live = view.timelinePainter();
        QCOMPARE(render(live, rect), render(fresh, rect));
        QCOMPARE(fresh.labEventsPlaced(), std::uint64_t(store.labEvents().size()));
    }

    // Lab events of calls with a lane, and markers of calls that never come, among a burst under retention:
    // each cut looks only at the entries it drops from the lists by call (each entry once when its position
    // is passed, once as it goes), not at every call listed, and what stays is what a fresh index places.
    void cutsDropOnlyTheirPrefixOfEachCall()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        SwimlaneView view(&model);
        view.resize(1200, 700);
        RetentionPolicy policy;
        policy.maxBytes = size_t(1) << 20;
        model.setRetention(policy);
        model.appendBatch({opened(1)});
        constexpr int kEvents = 30'000;
        const TimelinePainter &painter = view.timelinePainter();
        std::uint64_t listed = 0; // entries placed in the lists by call
        for (int i = 0; i < kEvents; ++i) {
            const std::int64_t t = std::int64_t(i) * 1000;
            EventBatch batch{labEvent(t, i)};
            if (i % 40 == 0) {
                // A call with a lane, a marker on it and a retry it did not make.
                const std::string id = "call-" + std::to_string(i);
                const auto stream = std::uint32_t(2 * (i / 40) + 1);
                batch.push_back(req(stream, t, std::nullopt, id, 5000 * ms));
                batch.push_back(end(stream, t + 500, 0));
                batch.push_back(rendertest::labEvent(t + 100, "bulkhead-rejected", "on its lane", id));
                batch.push_back(rendertest::labEvent(t + 200, "retry-suppressed", "budget", id));
                listed += 2;
            } else if (i % 40 == 30) {
                // A later marker of the call before: its list has entries from two batches.
                batch.push_back(rendertest::labEvent(t + 100, "bulkhead-rejected", "later",
                                                     "call-" + std::to_string(i - 30)));
                ++listed;
            } else if (i % 40 == 20) {
                // Markers of ten calls that never come, on the band: their lists by call grow all along.
                batch.push_back(rendertest::labEvent(t + 100, "bulkhead-rejected", "no call yet",
                                                     "ghost-" + std::to_string(i % 400)));
                ++listed;
            }
            model.appendBatch(batch);
            painter.fullRange();
            painter.layout();
        }
        const TimelineStore &store = model.store();
        QVERIFY2(store.labEventsCut() > size_t(kEvents) / 2,
                 qPrintable(QString::number(store.labEventsCut())));
        QVERIFY(!store.calls().empty());
        QVERIFY2(painter.labCutWork() <= 2 * listed,
                 qPrintable(QStringLiteral("the cuts looked at %1 entries of the lists by call; %2 placed")
                                .arg(painter.labCutWork())
                                .arg(listed)));
        QVERIFY(painter.labCutWork() > 0);

        TimelinePainter fresh(&store);
        fresh.setOptions(painter.options());
        fresh.setRange(painter.rangeStart(), painter.rangeEnd());
        auto list = [](TimelineIndex::LabSpan s) {
            return std::vector<const LabEventRecord *>(s.begin(), s.end());
        };
        size_t withEvents = 0;
        for (const Call &c : store.calls()) {
            QCOMPARE(list(painter.labEventsOfCall(c.key)), list(fresh.labEventsOfCall(c.key)));
            withEvents += !painter.labEventsOfCall(c.key).empty();
        }
        QVERIFY(withEvents > 0);
        QCOMPARE(list(painter.bandMarkers()), list(fresh.bandMarkers()));
        // Among them markers of calls evicted after their marker was placed on their lane: on the band now,
        // where the markers of calls without a lane are.
        size_t ofEvicted = 0;
        for (const LabEventRecord *e : painter.bandMarkers())
            ofEvicted += e->callId.rfind("call-", 0) == 0 && !store.callIndex(e->callId);
        QVERIFY(ofEvicted > 0);
    }
};

QTEST_MAIN(TestBurstWork)
#include "tst_burstwork.moc"
