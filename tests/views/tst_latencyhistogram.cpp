// LatencyHistogram: the buckets it shows, hit-testing a bucket, a click, several series side by side, and
// bars in the series' colours on a light and a dark palette.
#include "latencyhistogram.h"
#include "renderfixture.h"

#include <QApplication>
#include <QImage>
#include <QSignalSpy>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

int countColour(const QImage &img, QColor c)
{
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            n += img.pixelColor(x, y).rgb() == c.rgb();
    return n;
}
} // namespace

class TestLatencyHistogram : public QObject
{
    Q_OBJECT
private slots:
    void bucketsAndClicks()
    {
        LatencyRecorder r;
        for (std::int64_t v : {12 * ms, 15 * ms, 18 * ms, 150 * ms}) // 10-20 ms three times, 100-200 ms once
            r.add(v);
        LatencyHistogram h;
        h.resize(600, 240);
        QCOMPARE(h.shownBuckets().first > h.shownBuckets().second, true); // nothing yet
        h.setSeries({LatencyHistogram::fromRecorder(r, QStringLiteral("calls"), Qt::blue)});
        const int b10 = LatencyBuckets::bucketOf(12 * ms), b100 = LatencyBuckets::bucketOf(150 * ms);
        QCOMPARE(h.series()[0].counts[size_t(b10)], 3u);
        QCOMPARE(h.series()[0].p50Ns, std::optional<std::int64_t>(15 * ms));
        QCOMPARE(h.series()[0].p99Ns, std::optional<std::int64_t>(150 * ms));
        // From the lowest to the highest bucket used, widened to at least six.
        const auto [first, last] = h.shownBuckets();
        QVERIFY(first <= b10 && last >= b100);
        QCOMPARE(last - first + 1, 6);
        QVERIFY(h.bucketRect(first - 1).isEmpty());
        QVERIFY(h.bucketRect(last + 1).isEmpty());
        for (int b = first; b <= last; ++b) {
            const QRectF rect = h.bucketRect(b);
            QVERIFY(!rect.isEmpty());
            QCOMPARE(h.bucketAt(rect.center().toPoint()), b);
        }
        QCOMPARE(h.bucketAt(QPoint(1, 100)), -1); // the count axis
        QSignalSpy clicked(&h, &LatencyHistogram::bucketClicked);
        QTest::mouseClick(&h, Qt::LeftButton, {}, h.bucketRect(b100).center().toPoint());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.first().at(0).toInt(), b100);
        h.setSelectedBucket(b100);
        QCOMPARE(h.selectedBucket(), b100);
    }

    // p50 and p99 close together at the right (200 and 209 ms, channel-pool's calls): p99's label goes a
    // line up, and its dashed line goes around p50's label instead of through its figures.
    void aPercentileLineSkirtsTheOtherLabel()
    {
        LatencyRecorder r;
        for (int i = 0; i < 90; ++i)
            r.add(200 * ms);
        for (int i = 0; i < 10; ++i)
            r.add(209 * ms);
        LatencyHistogram h;
        h.resize(300, 200);
        h.setSeries({LatencyHistogram::fromRecorder(r, QStringLiteral("calls"), Qt::blue)});
        rendertest::TextRecorder device(h.size());
        h.render(&device);
        std::vector<QRectF> labels;
        for (const rendertest::TextRecorder::Text &t : device.texts())
            if (t.text.startsWith(QStringLiteral("p50 ")) || t.text.startsWith(QStringLiteral("p99 ")))
                labels.push_back(t.rect);
        QCOMPARE(labels.size(), size_t(2));
        QVERIFY(!device.dashedLines().empty());
        for (const QLineF &l : device.dashedLines())
            for (const QRectF &box : labels) {
                const double top = std::min(l.y1(), l.y2()), bottom = std::max(l.y1(), l.y2());
                const bool through = l.x1() > box.left() + 1 && l.x1() < box.right() - 1 &&
                                     top < box.bottom() - 2 && bottom > box.top() + 2;
                QVERIFY2(!through,
                         qPrintable(QStringLiteral("a line at x %1 from %2 to %3 crosses the label at "
                                                   "%4,%5 %6x%7")
                                        .arg(l.x1())
                                        .arg(top)
                                        .arg(bottom)
                                        .arg(box.left())
                                        .arg(box.top())
                                        .arg(box.width())
                                        .arg(box.height())));
            }
    }

    void paintsSeriesOnBothPalettes()
    {
        LatencyRecorder a, b;
        for (int i = 0; i < 10; ++i)
            a.add(3 * ms);
        for (int i = 0; i < 4; ++i)
            b.add(30 * ms);
        const QColor blue(0x3b7dd8), orange(0xe07020);
        LatencyHistogram h;
        h.resize(640, 260);
        h.setSeries({LatencyHistogram::fromRecorder(a, QStringLiteral("run A"), blue),
                     LatencyHistogram::fromRecorder(b, QStringLiteral("run B"), orange)});
        for (bool dark : {false, true}) {
            QPalette pal = h.palette();
            pal.setColor(QPalette::Base, dark ? QColor(0x1c1f24) : Qt::white);
            pal.setColor(QPalette::WindowText, dark ? QColor(0xe6e9ed) : QColor(0x22262b));
            h.setPalette(pal);
            const QImage img = h.grab().toImage();
            // Both series' bars, run A's taller (10 against 4), and the background of the palette.
            const int blues = countColour(img, blue), oranges = countColour(img, orange);
            QVERIFY2(blues > 500 && oranges > 200,
                     qPrintable(QStringLiteral("%1 %2").arg(blues).arg(oranges)));
            QVERIFY(blues > oranges);
            QCOMPARE(img.pixelColor(img.width() - 2, img.height() / 2).rgb(),
                     pal.color(QPalette::Base).rgb());
        }
        // Empty: the text says so, nothing else.
        h.setSeries({});
        h.setEmptyText(QStringLiteral("nothing"));
        QCOMPARE(countColour(h.grab().toImage(), blue), 0);
    }
};

QTEST_MAIN(TestLatencyHistogram)
#include "tst_latencyhistogram.moc"
