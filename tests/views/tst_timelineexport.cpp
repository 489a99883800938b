// Exported pictures (PNG at any scale, SVG) and the themes.
#include "renderfixture.h"
#include "rulerpass.h"

#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>
#include <memory>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {
// The model's calls in compact rows from 0 to rangeEnd, 1000 px wide, painted on a recorder; and the
// width of the lanes' label column.
std::pair<std::unique_ptr<TextRecorder>, double> recordCompact(const TimelineModel &model,
                                                               std::int64_t rangeEnd)
{
    TimelinePainter painter(&model.store());
    TimelinePainter::Options o;
    o.density = LaneDensity::Compact;
    painter.setOptions(o);
    painter.setRange(0, rangeEnd);
    auto device = recordPainted(painter, 1000);
    return {std::move(device), painter.labelWidth()};
}

// A call of `attempts` UNAVAILABLE attempts 20 ms apart to a method with a long name, with a 5 s deadline
// or none, painted in comfortable rows from 0 to 100 ms, 640 px wide: its header's summary is longer than
// that.
std::unique_ptr<TextRecorder> paintLongNamedCall(int attempts, bool deadline)
{
    TimelineModel model;
    model.setOrigin(0, 0);
    EventBatch batch{opened(1)};
    for (int a = 0; a < attempts; ++a) {
        WireEvent r = req(std::uint32_t(1 + 2 * a), (10 + 20 * a) * ms,
                          a ? std::optional<int>(a) : std::nullopt, "long-1", (5000 - 20 * a) * ms);
        if (!deadline) r.grpc.timeoutNs.reset();
        r.grpc.path = "/com.example.inventory.v1.InventoryService/ReserveStockForOrder";
        batch.push_back(r);
        batch.push_back(end(std::uint32_t(1 + 2 * a), (12 + 20 * a) * ms, 14));
    }
    model.appendBatch(batch);
    TimelinePainter painter(&model.store());
    TimelinePainter::Options o;
    o.density = LaneDensity::Comfortable;
    painter.setOptions(o);
    painter.setRange(0, 100 * ms);
    return recordPainted(painter, 640);
}
} // namespace

class TestTimelineExport : public QObject
{
    Q_OBJECT
private slots:
    void exportSizesAndSvg()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter::Options o;
        o.title = QStringLiteral("export test");
        const QImage one = TimelinePainter::renderImage(model.store(), 800, o, 1.0);
        const QImage two = TimelinePainter::renderImage(model.store(), 800, o, 2.0);
        QCOMPARE(one.width(), 800);
        QCOMPARE(two.width(), 1600);
        QCOMPARE(two.height(), one.height() * 2);
        QCOMPARE(two.devicePixelRatio(), 2.0);
        // Exports always carry the title, time range and legend.
        TimelinePainter check(&model.store());
        TimelinePainter::Options withLegend = o;
        withLegend.legend = true;
        check.setOptions(withLegend);
        // The legend takes the rows its entries need (what the picture drew), at most those of everything the
        // store could show.
        const int lanes = check.contentHeight(800) + 8 - check.legendHeight(800);
        QVERIFY(one.height() > lanes && one.height() <= check.contentHeight(800) + 8);
        // The visible range only: the same lanes, another time span in the title.
        const QImage part =
            TimelinePainter::renderImage(model.store(), 800, o, 1.0, std::pair{0 * ms, 70 * ms});
        QCOMPARE(part.width(), one.width());
        QVERIFY(part.height() > lanes && part.height() <= check.contentHeight(800) + 8);
        QVERIFY(part != one);

        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("t.svg"));
        QVERIFY(TimelinePainter::renderSvg(model.store(), 1000, o, file));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray svg = f.readAll();
        QXmlStreamReader xml(svg);
        int elements = 0;
        while (!xml.atEnd())
            if (xml.readNext() == QXmlStreamReader::StartElement) ++elements;
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY(elements > 50);
        for (const char *label : {"export test", "retry-basic-1", "backoff 50.0 ms", "deadline +120.0 ms",
                                  "UNAVAILABLE", "call deadline", "from capture start"})
            QVERIFY2(svg.contains(label), label);
    }

    // A window or picture narrow enough that a call's summary (its lane's header, comfortable rows) runs into
    // its deadline: the deadline keeps its label beside its line (the summary's tail gives way), in workshop
    // sizes as in normal ones.
    void aDeadlineKeepsItsLabelWhenTheSummaryIsLong()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        QTemporaryDir dir;
        for (const bool workshop : {false, true})
            for (const int width :
                 workshop ? std::vector{1100, 1400, 1920} : std::vector{700, 900, 1100, 1400}) {
                TimelinePainter::Options o;
                o.workshop = workshop;
                o.density = LaneDensity::Comfortable;
                const QString file = dir.filePath(QStringLiteral("w%1-%2.svg").arg(workshop).arg(width));
                QVERIFY(TimelinePainter::renderSvg(model.store(), width, o, file));
                QFile f(file);
                QVERIFY(f.open(QIODevice::ReadOnly));
                const QByteArray svg = f.readAll();
                QVERIFY2(svg.contains("deadline +120.0 ms"),
                         qPrintable(QStringLiteral("no deadline label at %1 px%2")
                                        .arg(width)
                                        .arg(workshop ? QStringLiteral(", workshop") : QString())));
            }
    }

    // An exported picture's title and its time range share one line: a narrow picture shortens the range
    // (its UTC date first), never draws it over the title, and keeps the title.
    void aNarrowTitleLineKeepsItsPartsApart()
    {
        TimelineModel model;
        model.setOrigin(0, 1'700'000'000'000'000'000LL);
        model.appendBatch(scene());
        for (const bool workshop : {false, true})
            for (const int width : {420, 560, 700, 900, 1400, 1920}) {
                TimelinePainter painter(&model.store());
                TimelinePainter::Options o;
                o.workshop = workshop;
                o.legend = true;
                o.title = QStringLiteral("rpcscope timeline");
                painter.setOptions(o);
                const auto [lo, hi] = painter.fullRange();
                painter.setRange(lo, hi);
                const PaintContext ctx = painter.context(QRectF(0, 0, width, painter.contentHeight(width)));
                const RulerPass::TitleLine line = RulerPass::titleLine(ctx);
                const QString where = QStringLiteral("%1 px%2").arg(width).arg(workshop ? ", workshop" : "");
                QVERIFY2(line.title.startsWith(QStringLiteral("rpcscope")), qPrintable(where));
                QVERIFY2(line.titleRect.right() <= width - 10 + 0.5, qPrintable(where));
                if (!line.range.isEmpty()) {
                    QVERIFY2(line.titleRect.right() < line.rangeRect.left(),
                             qPrintable(where + QStringLiteral(": the range runs over the title")));
                    QVERIFY2(line.rangeRect.right() <= width - 10 + 0.5, qPrintable(where));
                }
                // Wide pictures say it all.
                if (width >= 1400) QVERIFY2(line.range.contains(QStringLiteral("UTC")), qPrintable(where));
            }
    }

    // Zoomed in so that a backoff gap runs off the right edge, with the call's deadline beyond the view (an
    // arrow there): the gap's label is written whole over the part in view, clear of the arrow, in compact
    // and comfortable rows.
    void aGapRunningOffTheViewKeepsItsLabelInView()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        for (const LaneDensity density : {LaneDensity::Compact, LaneDensity::Comfortable}) {
            TimelinePainter painter(&model.store());
            TimelinePainter::Options o;
            o.density = density;
            painter.setOptions(o);
            painter.setRange(0, 100 * ms); // retry-basic-1's second gap is 64 to 160 ms
            const QRectF rect(0, 0, 1000, painter.contentHeight(1000));
            render(painter, rect);
            const GapLabel *second = nullptr;
            for (const GapLabel &g : painter.gapLabels())
                if (g.call == 0 && g.attempt == 2) second = &g;
            const char *where = density == LaneDensity::Compact ? "compact" : "comfortable";
            QVERIFY2(second, where);
            QVERIFY2(second->rect.left() >= painter.labelWidth(), where);
            // The deadline's arrow takes the last dozen pixels in compact rows.
            QVERIFY2(second->rect.right() <= rect.right() - (density == LaneDensity::Compact ? 12 : 0),
                     where);
        }
    }

    // A compact row's last attempt ends near the right edge and the call's deadline is beyond the view (an
    // arrow there): the outcome after the bar stops short of the arrow, whole where it fits, elided where it
    // does not, and is never cut by the arrow ("UNAVAILAB▶").
    void anOutcomeBesideTheEdgeKeepsClearOfTheDeadlineArrow()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), req(1, 10 * ms, std::nullopt, "edge-1", 5000 * ms),
                           end(1, 10 * ms + 50'000, 14)}); // a bar too short to hold its status
        int whole = 0, elided = 0;
        for (std::int64_t rangeEnd = 10'100'000; rangeEnd <= 14 * ms; rangeEnd += 20'000) {
            const auto [recorded, labelWidth] = recordCompact(model, rangeEnd);
            const TextRecorder &device = *recorded;
            const TextRecorder::Text *outcome = nullptr, *arrow = nullptr;
            for (const TextRecorder::Text &t : device.texts()) {
                if (t.text.startsWith(QStringLiteral("UNAVA"))) outcome = &t;
                if (t.text.endsWith(QStringLiteral("▶"))) arrow = &t;
            }
            const QString where = QStringLiteral("view 0 to %1 ms").arg(double(rangeEnd) / ms);
            QVERIFY2(arrow, qPrintable(where + ": no deadline arrow"));
            if (!outcome) continue;
            QVERIFY2(outcome->rect.right() <= arrow->rect.left(),
                     qPrintable(QStringLiteral("%1: \"%2\" ends at %3 px, the arrow \"%4\" starts at %5 px")
                                    .arg(where, outcome->text)
                                    .arg(outcome->rect.right())
                                    .arg(arrow->text)
                                    .arg(arrow->rect.left())));
            if (outcome->text == QStringLiteral("UNAVAILABLE"))
                ++whole;
            else if (outcome->text.endsWith(QChar(0x2026)))
                ++elided;
        }
        // Both ways were painted: the scan passed views where the whole outcome fits and where it does not.
        QVERIFY2(whole > 0 && elided > 0,
                 qPrintable(QStringLiteral("whole %1, elided %2").arg(whole).arg(elided)));
    }

    // A comfortable lane's header: a summary longer than the view, and the call's deadline beyond it (an
    // arrow at the edge). The summary ends, elided, before the arrow instead of running under it.
    void aHeaderSummaryKeepsClearOfTheDeadlineArrow()
    {
        const auto device = paintLongNamedCall(4, true);
        const TextRecorder::Text *summary = nullptr, *arrow = nullptr;
        for (const TextRecorder::Text &t : device->texts()) {
            if (t.text.startsWith(QStringLiteral("/com.example"))) summary = &t;
            if (t.text.endsWith(QStringLiteral("▶"))) arrow = &t;
        }
        QVERIFY(summary && arrow);
        QVERIFY2(summary->rect.right() <= arrow->rect.left(),
                 qPrintable(QStringLiteral("\"%1\" ends at %2 px, the arrow \"%3\" starts at %4 px")
                                .arg(summary->text)
                                .arg(summary->rect.right())
                                .arg(arrow->text)
                                .arg(arrow->rect.left())));
        QVERIFY2(summary->text.endsWith(QChar(0x2026)), qPrintable(summary->text));
    }

    // A call without a deadline (a health Watch stream) whose summary is longer than the view: it ends in an
    // ellipsis within the view, where it was cut off mid-word by the edge ("→ RST_STREAM CANCEL → client").
    void aHeaderSummaryWithoutADeadlineEndsInAnEllipsis()
    {
        const auto device = paintLongNamedCall(2, false);
        const TextRecorder::Text *summary = nullptr;
        for (const TextRecorder::Text &t : device->texts()) {
            if (t.text.startsWith(QStringLiteral("/com.example"))) summary = &t;
            QVERIFY2(!t.text.contains(QStringLiteral("deadline")), qPrintable(t.text));
        }
        QVERIFY(summary);
        QVERIFY2(summary->text.endsWith(QChar(0x2026)) && summary->rect.right() <= 640,
                 qPrintable(QStringLiteral("\"%1\" ends at %2 px in a view 640 px wide")
                                .arg(summary->text)
                                .arg(summary->rect.right())));
    }

    // The same row with its deadline in view, just after the last bar ("DEADLINE_EXCEEDED" written after a
    // bar that ends a millisecond before the deadline): the outcome is never struck through by the deadline's
    // line; it goes after the line where it does not fit before it.
    void anOutcomeBesideTheDeadlineIsNotStruckThrough()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch({opened(1), req(1, 38 * ms, std::nullopt, "late-1", 2 * ms), end(1, 39 * ms, 4)});
        int drawn = 0, afterTheLine = 0;
        for (std::int64_t rangeEnd = 41 * ms; rangeEnd <= 120 * ms; rangeEnd += 500'000) {
            const auto [recorded, labelWidth] = recordCompact(model, rangeEnd);
            const TextRecorder &device = *recorded;
            const TextRecorder::Text *outcome = nullptr;
            for (const TextRecorder::Text &t : device.texts())
                if (t.text.startsWith(QStringLiteral("DEADL"))) outcome = &t;
            const QString where = QStringLiteral("view 0 to %1 ms").arg(double(rangeEnd) / ms);
            const QLineF *deadline = nullptr;
            for (const QLineF &l : device.dashedLines())
                if (l.x1() == l.x2() && l.x1() > labelWidth) deadline = &l;
            QVERIFY2(deadline, qPrintable(where + ": no deadline line"));
            if (!outcome) continue;
            ++drawn;
            const double x = deadline->x1();
            QVERIFY2(
                x < outcome->rect.left() || x > outcome->rect.right(),
                qPrintable(QStringLiteral("%1: the deadline's line at %2 px strikes \"%3\" (%4 to %5 px)")
                               .arg(where)
                               .arg(x)
                               .arg(outcome->text)
                               .arg(outcome->rect.left())
                               .arg(outcome->rect.right())));
            afterTheLine += outcome->rect.left() > x;
        }
        QVERIFY2(drawn > 0 && afterTheLine > 0,
                 qPrintable(QStringLiteral("drawn %1, after the line %2").arg(drawn).arg(afterTheLine)));
    }

    void themesAndWorkshop()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(scene());
        TimelinePainter painter(&model.store());
        TimelinePainter::Options o;
        const int normal = [&] {
            painter.setOptions(o);
            return painter.contentHeight();
        }();
        o.workshop = true;
        o.dark = true;
        painter.setOptions(o);
        QVERIFY(painter.contentHeight() > normal * 3 / 2);
        QVERIFY(painter.labelWidth() > TimelinePainter::kLabelWidth);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1400, painter.contentHeight());
        const QImage img = render(painter, rect);
        QCOMPARE(QColor(img.pixel(int(rect.width()) - 3, int(rect.height()) - 3)).rgb(),
                 TimelineTheme::dark().background.rgb());
        // Bars are thicker: the OK bar of attempt 3 is at least 24 px tall.
        const QRectF bar = painter.attemptRect(0, 2, rect);
        QVERIFY(bar.height() >= 24);
        QCOMPARE(QColor(img.pixel(int(bar.right()) - 3, int(bar.top()) + 2)).rgb(),
                 TimelinePainter::statusColor(model.store().calls()[0].attempts[2]).rgb());
    }
};

QTEST_MAIN(TestTimelineExport)
#include "tst_timelineexport.moc"
