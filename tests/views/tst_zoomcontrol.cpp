// The zoom control: range, follow and live modes, hover and selection, without a window.
#include "zoomcontrol.h"

#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;

class TestZoomControl : public QObject
{
    Q_OBJECT
private slots:
    void visibleRangeKeepsTheModes()
    {
        ZoomControl zoom;
        QVERIFY(zoom.isFollowing() && !zoom.isLive() && zoom.followsLive());
        QSignalSpy range(&zoom, &ZoomControl::rangeChanged);
        QSignalSpy follow(&zoom, &ZoomControl::followChanged);
        zoom.setVisibleRange(100, 5'000'100);
        QCOMPARE(range.count(), 1);
        QCOMPARE(range.last().at(0).toLongLong(), 100);
        QCOMPARE(range.last().at(1).toLongLong(), 5'000'100);
        zoom.setVisibleRange(100, 5'000'100); // the range shown: no signal
        QCOMPARE(range.count(), 1);
        // Never narrower than 1 µs.
        zoom.setVisibleRange(2'000, 2'010);
        QCOMPARE(zoom.rangeEnd(), 2'000 + ZoomControl::kMinRangeNs);
        QCOMPARE(range.last().at(1).toLongLong(), 2'000 + ZoomControl::kMinRangeNs);
        QVERIFY(zoom.isFollowing());
        QCOMPARE(follow.count(), 0);
    }

    void userRangeStopsFollowing()
    {
        ZoomControl zoom;
        QSignalSpy range(&zoom, &ZoomControl::rangeChanged);
        QSignalSpy follow(&zoom, &ZoomControl::followChanged);
        zoom.setRange(9'000'000, 1'000'000); // either order
        QCOMPARE(zoom.rangeStart(), 1'000'000);
        QCOMPARE(zoom.rangeEnd(), 9'000'000);
        QCOMPARE(range.count(), 1);
        QCOMPARE(follow.count(), 1);
        QCOMPARE(follow.last().at(0).toBool(), false);
        QVERIFY(!zoom.followsLive());
        zoom.setRange(2'000'000, 3'000'000);
        QCOMPARE(follow.count(), 1); // already not following

        // Zooming keeps the anchor's time at the same fraction of the range.
        zoom.setRange(0, 1'000'000'000);
        zoom.zoomBy(0.5, 250'000'000);
        QCOMPARE(zoom.rangeStart(), 125'000'000);
        QCOMPARE(zoom.rangeEnd(), 625'000'000);
        zoom.zoomBy(1e-9, 200'000'000);
        QCOMPARE(zoom.span(), ZoomControl::kMinRangeNs);
        // Panning moves the range, not its width.
        zoom.setRange(0, 1'000'000);
        zoom.panBy(-400);
        QCOMPARE(zoom.rangeStart(), -400);
        QCOMPARE(zoom.rangeEnd(), 999'600);
    }

    void fitAndLive()
    {
        ZoomControl zoom;
        QSignalSpy follow(&zoom, &ZoomControl::followChanged);
        zoom.setRange(0, 100'000'000);
        QCOMPARE(follow.count(), 1);
        zoom.fitTo(-5'000'000, 500'000'000);
        QCOMPARE(follow.count(), 2);
        QCOMPARE(follow.last().at(0).toBool(), true);
        QVERIFY(zoom.isFollowing());
        QCOMPARE(zoom.rangeStart(), -5'000'000);

        // Live replaces fitting: the view still follows, so no signal.
        zoom.setLive(true);
        QVERIFY(zoom.isLive() && !zoom.isFollowing());
        QCOMPARE(follow.count(), 2);
        // Live keeps the zoom and puts the newest event a twentieth of the span before the right edge.
        zoom.setVisibleRange(0, 200'000'000);
        zoom.slideTo(1'000'000'000);
        QCOMPARE(zoom.span(), 200'000'000);
        QCOMPARE(zoom.rangeEnd(), 1'010'000'000);
        zoom.setLive(false);
        QCOMPARE(follow.count(), 3);
        QCOMPARE(follow.last().at(0).toBool(), false);
        zoom.setFollow(true);
        QCOMPARE(follow.last().at(0).toBool(), true);
        zoom.setLive(true);
        zoom.setFollow(true); // F while live: fitting again
        QVERIFY(zoom.isFollowing() && !zoom.isLive());
        QCOMPARE(follow.count(), 4);
    }

    void selectionAndHover()
    {
        ZoomControl zoom;
        QSignalSpy selected(&zoom, &ZoomControl::selectionChanged);
        zoom.setSelection(std::pair{size_t(3), size_t(1)});
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.last().at(0).toInt(), 3);
        QCOMPARE(selected.last().at(1).toInt(), 1);
        zoom.setSelection(std::pair{size_t(3), size_t(1)});
        QCOMPARE(selected.count(), 1);
        zoom.setHover(std::pair{size_t(5), size_t(0)});

        // Retention evicts calls 0 and 2: both picks move up by two, and the selection says so.
        zoom.followEviction({0, 2});
        QCOMPARE(selected.count(), 2);
        QCOMPARE(selected.last().at(0).toInt(), 1);
        QCOMPARE(zoom.selection(), std::optional(std::pair{size_t(1), size_t(1)}));
        QCOMPARE(zoom.hover(), std::optional(std::pair{size_t(3), size_t(0)}));
        // Evicting calls after them moves nothing.
        zoom.followEviction({7, 8});
        QCOMPARE(selected.count(), 2);
        // Evicting the selected call clears the selection.
        zoom.followEviction({1});
        QCOMPARE(selected.count(), 3);
        QCOMPARE(selected.last().at(0).toInt(), -1);
        QCOMPARE(selected.last().at(1).toInt(), -1);
        QCOMPARE(zoom.hover(), std::optional(std::pair{size_t(2), size_t(0)}));

        zoom.setSelection(std::pair{size_t(0), size_t(0)});
        zoom.clearPicks();
        QVERIFY(!zoom.hover() && !zoom.selection());
        QCOMPARE(selected.count(), 5);
        zoom.clearPicks();
        QCOMPARE(selected.count(), 5);

        zoom.setScrollY(120);
        QCOMPARE(zoom.scrollY(), 120);
        zoom.setRubberBand(std::pair{qint64(10), qint64(5)});
        QCOMPARE(zoom.rubberBand()->second, 5);
    }
};

QTEST_GUILESS_MAIN(TestZoomControl)
#include "tst_zoomcontrol.moc"
