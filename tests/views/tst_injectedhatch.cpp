// An attempt the capturing proxy failed on purpose is drawn hatched, in light, dark and workshop looks, and
// its tooltip and the attempt inspector name the rule, so it is never mistaken for the server's own failure.

#include "attemptinspector.h"
#include "faultevents.h"
#include "paintcontext.h"
#include "renderfixture.h"
#include "swimlaneview.h"
#include "timelinetooltips.h"

#include <QDir>
#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {
const std::string kRule = "abort status=14 before";

// Two calls failing alike with UNAVAILABLE over the same 40 ms: the first one's attempt injected (rule 2),
// the second one's the server's own.
EventBatch twoFailures()
{
    EventBatch b{opened(1), req(1, 10 * ms, std::nullopt, "injected-1", 5000 * ms), end(1, 50 * ms, 14),
                 req(3, 10 * ms, std::nullopt, "server-1", 5000 * ms), end(3, 50 * ms, 14)};
    b.push_back(testev::injectedNotice(1, 1, 50 * ms, 2, kRule));
    return b;
}

// A verify-policy call: its first attempt aborted by a fault rule before the server saw it, which takes no
// time (request and injected answer at 10 ms), then its retry at retryAt, OK 40 ms later.
EventBatch instantAbort(std::int64_t retryAt)
{
    EventBatch b{opened(1), req(1, 10 * ms, std::nullopt, "abort-1", 5000 * ms), end(1, 10 * ms, 14),
                 req(3, retryAt, 1, "abort-1", 4000 * ms), end(3, retryAt + 40 * ms, 0)};
    b.push_back(testev::injectedNotice(1, 1, 10 * ms, 1, kRule));
    return b;
}

// Pixels much darker than the bar's own colour: the hatch's stripes (the status text is white).
int darkerThan(const QImage &img, const QRect &r, int gray)
{
    int n = 0;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            n += qGray(img.pixel(x, y)) < gray;
    return n;
}
} // namespace

class TestInjectedHatch : public QObject
{
    Q_OBJECT
private slots:
    void injectedAttemptIsHatched_data()
    {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<bool>("workshop");
        QTest::newRow("light") << false << false;
        QTest::newRow("dark") << true << false;
        QTest::newRow("workshop") << false << true;
    }
    void injectedAttemptIsHatched()
    {
        QFETCH(bool, dark);
        QFETCH(bool, workshop);
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(twoFailures());
        QVERIFY(model.store().calls()[0].attempts[0].injected());
        QVERIFY(!model.store().calls()[1].attempts[0].injected());

        TimelinePainter painter(&model.store());
        TimelinePainter::Options options{QStringLiteral("faults"), true};
        options.dark = dark;
        options.workshop = workshop;
        painter.setOptions(options);
        const auto [lo, hi] = painter.fullRange();
        painter.setRange(lo, hi);
        const QRectF rect(0, 0, 1000, painter.contentHeight(1000));
        const QImage img = render(painter, rect);
        if (const QString dir = qEnvironmentVariable("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty())
            img.save(QDir(dir).filePath(QStringLiteral("injected-%1.png").arg(QTest::currentDataTag())));

        const QRect injected = painter.attemptRect(0, 0, rect).toRect().adjusted(2, 2, -2, -2);
        const QRect own = painter.attemptRect(1, 0, rect).toRect().adjusted(2, 2, -2, -2);
        QVERIFY(injected.width() > 100 && own.width() > 100);
        QCOMPARE(injected.size(), own.size());
        // The server's own failure is plain orange (white text aside); the injected one is striped with dark
        // lines across the whole bar, at its start, middle and end alike.
        const QColor orange = TimelinePainter::statusColor(model.store().calls()[1].attempts[0]);
        const int area = own.width() * own.height();
        QVERIFY2(countColor(img, own, orange) > area / 2, "the server's failure is no longer plain");
        QVERIFY2(countColor(img, injected, orange) < countColor(img, own, orange) * 2 / 3,
                 "the injected attempt is painted like the server's own failure");
        const int gray = qGray(orange.rgb()) - 40;
        QCOMPARE(darkerThan(img, own, gray), 0);
        for (int part = 0; part < 3; ++part) {
            const QRect third(injected.left() + part * injected.width() / 3, injected.top(),
                              injected.width() / 3, injected.height());
            QVERIFY2(darkerThan(img, third, gray) > third.width() * third.height() / 10,
                     qPrintable(QStringLiteral("no stripes in part %1 of the injected bar").arg(part)));
        }
    }

    void zeroLengthInjectedAttemptIsWidened_data()
    {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<bool>("workshop");
        QTest::addColumn<bool>("comfortable");
        for (const bool comfortable : {true, false}) {
            const char *density = comfortable ? "comfortable" : "compact";
            QTest::addRow("light %s", density) << false << false << comfortable;
            QTest::addRow("dark %s", density) << true << false << comfortable;
            QTest::addRow("workshop %s", density) << false << true << comfortable;
        }
    }
    void zeroLengthInjectedAttemptIsWidened()
    {
        // Zoomed out over 2 s (a few ms a pixel), the abort takes no time: it still gets a mark wide enough
        // for its hatch and its failure colour to show, and the pointer finds it across that width.
        QFETCH(bool, dark);
        QFETCH(bool, workshop);
        QFETCH(bool, comfortable);
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(instantAbort(300 * ms));
        const Attempt &abort = model.store().calls()[0].attempts[0];
        QVERIFY(abort.injected());
        QCOMPARE(*abort.endNs, abort.startNs);

        TimelinePainter painter(&model.store());
        TimelinePainter::Options options;
        options.dark = dark;
        options.workshop = workshop;
        options.density = comfortable ? LaneDensity::Comfortable : LaneDensity::Compact;
        painter.setOptions(options);
        painter.setRange(0, 2000 * ms);
        const QRectF rect(0, 0, 1000, painter.contentHeight(1000));
        const QImage img = render(painter, rect);
        if (const QString dir = qEnvironmentVariable("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty())
            img.save(
                QDir(dir).filePath(QStringLiteral("instant-%1.png")
                                       .arg(QString::fromLatin1(QTest::currentDataTag()).replace(' ', '-'))));

        const double scale = workshop ? TimelinePainter::kWorkshopScale : 1.0;
        const QRectF mark = painter.attemptRect(0, 0, rect);
        QVERIFY2(mark.width() >= PaintContext::kMinMarkPx * scale - 0.01,
                 qPrintable(QStringLiteral("the mark is %1 px wide").arg(mark.width())));
        // Hatch stripes and the failure colour in both halves of the widened mark, not only in its first
        // 3 px.
        const QColor orange = TimelinePainter::statusColor(abort);
        const int gray = qGray(orange.rgb()) - 40;
        const QRect inner = mark.toRect().adjusted(0, 1, 0, -1);
        const int half = inner.width() / 2;
        for (const QRect part :
             {QRect(inner.left(), inner.top(), half, inner.height()),
              QRect(inner.left() + half, inner.top(), inner.width() - half, inner.height())}) {
            QVERIFY2(darkerThan(img, part, gray) > 0,
                     qPrintable(QStringLiteral("no hatch in x %1..%2").arg(part.left()).arg(part.right())));
            QVERIFY2(countColor(img, part, orange) > 0,
                     qPrintable(
                         QStringLiteral("no failure colour in x %1..%2").arg(part.left()).arg(part.right())));
        }
        // The pointer over the widened part (beyond the few pixels of slack a 3 px bar had) hits the attempt.
        const QPointF over(mark.right() - 1, mark.center().y());
        const TimelinePainter::Hit hit = painter.hitTest(over, rect);
        QCOMPARE(hit.kind, TimelinePainter::Hit::Attempt);
        QCOMPARE(hit.call, size_t(0));
        QCOMPARE(hit.attempt, size_t(0));

        // Its retry just after it: the mark stops 2 px short of the retry's bar, never over it.
        TimelineModel close;
        close.setOrigin(0, 0);
        close.appendBatch(instantAbort(10 * ms + 25 * ms));
        TimelinePainter near(&close.store());
        near.setOptions(options);
        near.setRange(0, 2000 * ms);
        const QRectF nearRect(0, 0, 1000, near.contentHeight(1000));
        const QRectF first = near.attemptRect(0, 0, nearRect), second = near.attemptRect(0, 1, nearRect);
        QVERIFY2(first.right() <= second.left() - 2 + 0.01,
                 qPrintable(QStringLiteral("%1 > %2").arg(first.right()).arg(second.left())));
        QVERIFY(first.width() >= 3);
        QVERIFY(first.width() < PaintContext::kMinMarkPx * scale);
    }

    void clickOnTheWidenedMarkOpensIt()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(instantAbort(300 * ms));
        SwimlaneView view(&model);
        view.resize(1200, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setRange(0, 2000 * ms);
        QSignalSpy selected(&view, &SwimlaneView::attemptSelected);
        const QRectF mark = view.timelinePainter().attemptRect(0, 0, view.canvas());
        QVERIFY(mark.width() >= PaintContext::kMinMarkPx - 0.01);
        QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(int(mark.right() - 1), int(mark.center().y())));
        QVERIFY(!selected.isEmpty());
        QCOMPARE(selected.last().at(0).toInt(), 0);
        QCOMPARE(selected.last().at(1).toInt(), 0);
    }

    void inspectorSaysWhyItTookNoTime()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(instantAbort(300 * ms));
        AttemptInspector inspector(&model.store(), nullptr);
        inspector.showAttempt(0, 0);
        const auto rows =
            inspector.tree()->findItems(QStringLiteral("duration"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows[0]->text(1), QStringLiteral("0 µs — answered by the proxy before the server saw it"));
        if (const QString dir = qEnvironmentVariable("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty()) {
            inspector.resize(700, 500);
            inspector.grab().save(QDir(dir).filePath(QStringLiteral("instant-inspector.png")));
        }
        QVERIFY2(TimelineToolTips::attempt(model.store(), 0, 0)
                     .contains(QStringLiteral("took 0 µs — answered by the proxy before the server saw it")),
                 qPrintable(TimelineToolTips::attempt(model.store(), 0, 0)));
        // The server's own answer keeps the usual format.
        inspector.showAttempt(0, 1);
        const auto retry =
            inspector.tree()->findItems(QStringLiteral("duration"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(retry.size(), 1);
        QCOMPARE(retry[0]->text(1), QStringLiteral("40.0 ms"));
    }

    void tooltipAndInspectorNameTheRule()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        model.appendBatch(twoFailures());
        const QString tip = TimelineToolTips::attempt(model.store(), 0, 0);
        QVERIFY2(tip.contains(QStringLiteral("injected by rpcscope")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("rule 2")), qPrintable(tip));
        QVERIFY(tip.contains(QString::fromStdString(kRule)));
        QVERIFY(!TimelineToolTips::attempt(model.store(), 1, 0).contains(QStringLiteral("injected")));

        AttemptInspector inspector(&model.store(), nullptr);
        inspector.showAttempt(0, 0);
        const auto rows =
            inspector.tree()->findItems(QStringLiteral("injected"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows[0]->text(1),
                 QStringLiteral("injected by rpcscope: rule 2 ") + QString::fromStdString(kRule));
        inspector.showAttempt(1, 0);
        QVERIFY(inspector.tree()
                    ->findItems(QStringLiteral("injected"), Qt::MatchExactly | Qt::MatchRecursive, 0)
                    .isEmpty());
    }
};

QTEST_MAIN(TestInjectedHatch)
#include "tst_injectedhatch.moc"
