// An attempt the capturing proxy failed on purpose is drawn hatched, in light, dark and workshop looks, and
// its tooltip and the attempt inspector name the rule, so it is never mistaken for the server's own failure.

#include "attemptinspector.h"
#include "faultevents.h"
#include "renderfixture.h"
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
