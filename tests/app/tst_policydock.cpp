// The Policy check dock and its Retry policy… dialog (issue 19), offscreen: without a config it says what to
// do; a bad config stays in the dialog with its one-line reason; a good one judges the model's calls, each
// client by the user-agent the header log kept (grpc-c++ flagged for a jittered first retry, grpc-js not),
// and follows new batches; an empty list of findings says why it is empty.
//
// With RPCSCOPE_SHOT_DIR set, the dock is saved there as policy-dock.png.

#include "gapenvelopes.h"
#include "mainwindow.h"
#include "modelpolicycheck.h"
#include "policydock.h"
#include "retrypolicydialog.h"
#include "retryserviceconfig.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"
#include "timelinetooltips.h"
#include "wireevents.h"

#include <QApplication>
#include <QLabel>
#include <QPainter>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QtTest>

using namespace rpcscope;

namespace {

constexpr std::int64_t kMs = 1'000'000;
const char kCCore[] = "grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)";
const char kNode[] = "grpc-node-js/1.14.7";

const QString kConfig = QStringLiteral(
    R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":3,)"
    R"("initialBackoff":"1s","maxBackoff":"10s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})");

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &ua,
                  const std::string &id, int previous)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ClientToServer);
    e.endStream = true;
    e.headers = {{":path", "/rpcscope.lab.Lab/Call"}, {"user-agent", ua}, {"rpcscope-call-id", id}};
    e.grpc.path = "/rpcscope.lab.Lab/Call";
    e.grpc.callId = id;
    if (previous > 0) {
        e.headers.push_back({"grpc-previous-rpc-attempts", std::to_string(previous)});
        e.grpc.previousAttempts = previous;
    }
    return e;
}

// A call on its own connection: UNAVAILABLE, then OK `gapMs` later.
EventBatch retried(std::uint32_t conn, const std::string &ua, const std::string &id, double gapMs)
{
    const std::int64_t t0 = conn * 10'000 * kMs, t1 = t0 + 2 * kMs + std::int64_t(gapMs * kMs);
    return {testev::opened(conn, t0 - kMs), request(conn, 1, t0, ua, id, 0),
            testev::trailers(conn, 1, t0 + 2 * kMs, 14), request(conn, 3, t1, ua, id, 1),
            testev::trailers(conn, 3, t1 + 2 * kMs, 0)};
}

QString cell(QTableWidget *t, int row, const QString &column, int role = Qt::DisplayRole)
{
    for (int c = 0; c < t->columnCount(); ++c)
        if (t->horizontalHeaderItem(c)->text() == column)
            return t->item(row, c) ? t->item(row, c)->data(role).toString() : QString();
    return QStringLiteral("(no column %1)").arg(column);
}

// The findings list's cell (row, column) as shown.
QString finding(QTableView *list, int row, int column)
{
    return list->model()->index(row, column).data().toString();
}

int findingRows(QTableView *list)
{
    return list->model()->rowCount();
}

} // namespace

// The dock on screen at a size its table and list fit.
bool showDock(PolicyDock &dock)
{
    dock.resize(900, 360);
    dock.show();
    return QTest::qWaitForWindowExposed(&dock);
}

class TestPolicyDock : public QObject
{
    Q_OBJECT

private slots:
    void badConfigStaysInTheDialog()
    {
        RetryPolicyDialog dialog(QString{});
        QVERIFY(dialog.editor()->toPlainText().contains(QLatin1String("retryPolicy"))); // an example to edit
        dialog.editor()->setPlainText(
            QString(kConfig).replace(QLatin1String("\"1s\""), QLatin1String("\"1000ms\"")));
        dialog.show();
        dialog.accept();
        QVERIFY(dialog.isVisible());
        QCOMPARE(dialog.result(), int(QDialog::Rejected));
        QVERIFY(!dialog.errorLabel()->isHidden());
        QVERIFY2(dialog.errorLabel()->text().startsWith(QLatin1String(
                     "methodConfig[0].retryPolicy.initialBackoff: \"1000ms\" is not a duration")),
                 qPrintable(dialog.errorLabel()->text()));
        dialog.editor()->setPlainText(kConfig);
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
    }

    // While calls come in, the findings list is updated in place: a finding the user selected stays
    // selected, the same row object, and new findings come in at their place in call order.
    void findingsKeepTheirSelectionAsCallsComeIn()
    {
        TimelineModel model;
        model.setKeepHeaders(true); // the check tells clients by the user-agent the header log keeps
        PolicyDock dock(&model);
        QVERIFY(showDock(dock));
        QString error;
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        model.applyBatch(retried(1, kCCore, "core-1", 820.0));
        model.applyBatch(retried(2, kCCore, "core-2", 820.0));
        QTRY_COMPARE_WITH_TIMEOUT(findingRows(dock.findings()), 2, 3 * PolicyDock::kRefreshMs);
        const QPersistentModelIndex selected = dock.findings()->model()->index(1, 0);
        dock.findings()->setCurrentIndex(selected);
        QCOMPARE(selected.data().toString(), QStringLiteral("core-2"));
        model.applyBatch(retried(3, kCCore, "core-3", 1003.0)); // conforms
        model.applyBatch(retried(4, kCCore, "core-4", 820.0));
        QTRY_COMPARE_WITH_TIMEOUT(findingRows(dock.findings()), 3, 3 * PolicyDock::kRefreshMs);
        QCOMPARE(dock.findings()->currentIndex(), QModelIndex(selected));
        QVERIFY(dock.findings()->selectionModel()->isRowSelected(selected.row(), {}));
        QCOMPARE(finding(dock.findings(), 0, 0), QStringLiteral("core-1"));
        QCOMPARE(selected.row(), 1);
        QCOMPARE(selected.data().toString(), QStringLiteral("core-2"));
        QCOMPARE(finding(dock.findings(), 2, 0), QStringLiteral("core-4"));
    }

    // The list follows the check row by row, not rebuilt: calls evicted by retention leave it, a call whose
    // verdict waited (its retry not there yet) comes in when it is judged, and after every refresh the rows
    // are a fresh check's findings, in order. A row the user selected stays the same row throughout.
    void findingsFollowEvictionsAndLateVerdicts()
    {
        TimelineModel model;
        model.setKeepHeaders(true);
        RetentionPolicy keep;
        keep.maxCalls = 14;
        model.setRetention(keep);
        PolicyDock dock(&model);
        QVERIFY(showDock(dock));
        QString error;
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        const auto config = RetryServiceConfig::parse(kConfig.toUtf8(), nullptr);
        QVERIFY(config);
        auto rows = [&dock] {
            QStringList out;
            for (int r = 0; r < findingRows(dock.findings()); ++r)
                out << finding(dock.findings(), r, 0) + QLatin1Char(' ') + finding(dock.findings(), r, 2);
            return out;
        };
        auto fresh = [&] {
            QStringList out;
            const PolicyCheck check = policyCheckOf(model, *config);
            for (const PolicyCheck::Finding &f : check.findings())
                out << QString::fromStdString(f.call) + QLatin1Char(' ') +
                           QString::fromLatin1(RetryVerdict::title(f.verdict.kind));
            return out;
        };
        QPersistentModelIndex selected;
        QString selectedCall;
        size_t evicted = 0;
        int late = 0;
        for (std::uint32_t conn = 1; conn <= 40; ++conn) {
            // C-core retries exactly 1 s later: 820 ms and 1.3 s are findings, 1,003 ms conforms.
            const double gap = conn % 3 == 0 ? 1003.0 : conn % 3 == 1 ? 820.0 : 1300.0;
            const std::string id = "call-" + std::to_string(conn);
            EventBatch events = retried(conn, kCCore, id, gap);
            if (conn % 5 == 0) {
                // The failure first, the retry in a later refresh: no verdict until then.
                model.applyBatch(EventBatch(events.begin(), events.begin() + 3));
                dock.refresh();
                QVERIFY(
                    !rows().join(QLatin1Char(',')).contains(QString::fromStdString(id) + QLatin1Char(' ')));
                events.erase(events.begin(), events.begin() + 3);
                ++late;
            }
            model.applyBatch(events);
            if (conn % 4 == 0) model.enforceRetention();
            dock.refresh();
            QCOMPARE(rows(), fresh());
            if (selectedCall.isEmpty() && findingRows(dock.findings()) >= 6) {
                selected = dock.findings()->model()->index(5, 0);
                selectedCall = selected.data().toString();
                dock.findings()->setCurrentIndex(selected);
            }
            evicted = model.store().evictedCalls();
            if (!selectedCall.isEmpty() &&
                rows().join(QLatin1Char(',')).contains(selectedCall + QLatin1Char(' '))) {
                // The same call stays current and selected, whatever rows went before it.
                QVERIFY(selected.isValid());
                QCOMPARE(selected.data().toString(), selectedCall);
                QCOMPARE(dock.findings()->currentIndex(), QModelIndex(selected));
                QVERIFY(dock.findings()->selectionModel()->isRowSelected(selected.row(), {}));
            }
        }
        QVERIFY(evicted > 10);
        QVERIFY(late >= 8);
        QVERIFY(findingRows(dock.findings()) > 4);
    }

    void judgesTheModelsCalls()
    {
        TimelineModel model;
        model.setKeepHeaders(true); // the check tells clients by the user-agent the header log keeps
        PolicyDock dock(&model);
        QVERIFY(showDock(dock));
        auto *status = dock.findChild<QLabel *>(QStringLiteral("policyStatus"));
        QVERIFY(status);
        QVERIFY2(status->text().contains(QLatin1String("No retry policy given")), qPrintable(status->text()));
        QCOMPARE(dock.summary()->rowCount(), 0);

        // 820 ms after a 1 s initialBackoff: grpc-js's jitter, never C-core's exact first retry.
        model.applyBatch(retried(1, kCCore, "core-1", 820.0));
        model.applyBatch(retried(2, kNode, "node-1", 820.0));
        QString error;
        QVERIFY(!dock.setServiceConfig(QStringLiteral("{\"methodConfig\": 3}"), &error));
        QCOMPARE(error, QStringLiteral("methodConfig: must be an array, got 3"));
        QVERIFY(!dock.hasConfig());
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        QCOMPARE(dock.summary()->rowCount(), 1);
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Method")), QStringLiteral("/rpcscope.lab.Lab/Call"));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Calls")), QStringLiteral("2"));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Conform")), QStringLiteral("1"));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Gap")), QStringLiteral("1"));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Client")),
                 QStringLiteral("grpc-c++ 1.51.1 (C-core), grpc-node-js 1.14.7"));
        // The last column is cut at the dock's edge: hovering it shows the whole list.
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Client"), Qt::ToolTipRole),
                 QStringLiteral("grpc-c++ 1.51.1 (C-core), grpc-node-js 1.14.7"));
        QCOMPARE(findingRows(dock.findings()), 1);
        QCOMPARE(finding(dock.findings(), 0, 0), QStringLiteral("core-1"));
        QCOMPARE(finding(dock.findings(), 0, 2), QStringLiteral("gap outside envelope"));
        QVERIFY2(finding(dock.findings(), 0, 3).contains(QLatin1String("820.0 ms")),
                 qPrintable(finding(dock.findings(), 0, 3)));
        QVERIFY2(status->text().contains(QLatin1String("1 of 2 calls do not conform")),
                 qPrintable(status->text()));

        // It follows new calls while visible: a conforming C-core call (its exact 1 s).
        model.applyBatch(retried(3, kCCore, "core-2", 1003.0));
        QTRY_COMPARE_WITH_TIMEOUT(cell(dock.summary(), 0, QStringLiteral("Calls")), QStringLiteral("3"),
                                  3 * PolicyDock::kRefreshMs);
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Conform")), QStringLiteral("2"));
        QCOMPARE(findingRows(dock.findings()), 1);
        // A count of calls that break the policy is bold and red; conforming ones are not.
        auto flagged = [&](const QString &column) {
            for (int c = 0; c < dock.summary()->columnCount(); ++c)
                if (dock.summary()->horizontalHeaderItem(c)->text() == column) {
                    const QTableWidgetItem *it = dock.summary()->item(0, c);
                    return it && it->font().bold() && it->foreground().color() == QColor(0xc0, 0x39, 0x2b);
                }
            return false;
        };
        QVERIFY(flagged(QStringLiteral("Gap")));
        QVERIFY(!flagged(QStringLiteral("Conform")));
        QVERIFY(!flagged(QStringLiteral("Non-retryable")));
        // Judged again under a policy that does not retry UNAVAILABLE, the same row's cells follow: every
        // retry is now of a non-retryable status, and no gap is counted, nor shown as one.
        QVERIFY2(dock.setServiceConfig(QString(kConfig).replace(QLatin1String("UNAVAILABLE"),
                                                                QLatin1String("DEADLINE_EXCEEDED")),
                                       &error),
                 qPrintable(error));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Gap")), QStringLiteral("0"));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Non-retryable")), QStringLiteral("3"));
        QVERIFY(!flagged(QStringLiteral("Gap")));
        QVERIFY(flagged(QStringLiteral("Non-retryable")));
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        QCOMPARE(cell(dock.summary(), 0, QStringLiteral("Gap")), QStringLiteral("1"));
        QVERIFY(flagged(QStringLiteral("Gap")));
        QVERIFY(!flagged(QStringLiteral("Non-retryable")));

        if (const QByteArray dir = qgetenv("RPCSCOPE_SHOT_DIR"); !dir.isEmpty())
            QVERIFY(dock.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/policy-dock.png")));

        // The ranges the timeline shades, each as its client retries: C-core's first retry exactly 1 s,
        // grpc-js's 0.8-1.2 s. The timeline reads each gap against them as the check did.
        const std::shared_ptr<const GapEnvelopes> envelopes = dock.envelopes();
        QVERIFY(envelopes);
        const TimelineStore &store = model.store();
        auto indexOf = [&store](const std::string &key) {
            for (size_t i = 0; i < store.calls().size(); ++i)
                if (store.calls()[i].key == key) return i;
            return store.calls().size();
        };
        const size_t core = indexOf("core-1"), node = indexOf("node-1");
        QVERIFY(core < store.calls().size() && node < store.calls().size());
        QCOMPARE(GapEnvelopes::expected(envelopes.get(), store.calls()[core], 1),
                 (GapEnvelopes::Range{{1000 * kMs, 1000 * kMs}}));
        QCOMPARE(GapEnvelopes::expected(envelopes.get(), store.calls()[node], 1),
                 (GapEnvelopes::Range{{800 * kMs, 1200 * kMs}}));
        QVERIFY(!GapEnvelopes::expected(envelopes.get(), store.calls()[core], 0));
        // Each call finds its own ranges (by serial), not another's.
        QCOMPARE(envelopes->given(store.calls()[core], 1), (GapEnvelopes::Range{{1000 * kMs, 1000 * kMs}}));
        const QString coreTip = TimelineToolTips::gap(store, core, 1, envelopes.get());
        QVERIFY2(coreTip.contains(QLatin1String("expected 1.000 s (the service config given")) &&
                     coreTip.contains(QLatin1String("early")),
                 qPrintable(coreTip));
        const QString nodeTip = TimelineToolTips::gap(store, node, 1, envelopes.get());
        QVERIFY2(nodeTip.contains(QLatin1String("within the expected range")), qPrintable(nodeTip));
        QVERIFY2(TimelineToolTips::gap(store, node, 1).contains(QLatin1String("no expected range")),
                 qPrintable(TimelineToolTips::gap(store, node, 1)));
        // Drawn: the shading (the legend explains it) only with the ranges given.
        TimelinePainter painter(&store);
        painter.setRange(0, 40'000 * kMs);
        QImage img(1400, 500, QImage::Format_ARGB32_Premultiplied);
        {
            QPainter p(&img);
            painter.paint(&p, QRectF(img.rect()));
        }
        QVERIFY(!painter.legendEntries().contains(QStringLiteral("expected backoff (policy)")));
        painter.setGapEnvelopes(envelopes);
        {
            QPainter p(&img);
            painter.paint(&p, QRectF(img.rect()));
        }
        QVERIFY2(painter.legendEntries().contains(QStringLiteral("expected backoff (policy)")),
                 qPrintable(painter.legendEntries().join(QStringLiteral(", "))));
        // Zoomed to between the two calls, where neither's range lies: the legend does not name a shade that
        // is off screen.
        painter.setRange(12'000 * kMs, 19'000 * kMs);
        {
            QPainter p(&img);
            painter.paint(&p, QRectF(img.rect()));
        }
        QVERIFY2(!painter.legendEntries().contains(QStringLiteral("expected backoff (policy)")),
                 qPrintable(painter.legendEntries().join(QStringLiteral(", "))));

        // Hidden, it still follows new calls while it has a config: the timeline's ranges come from it.
        dock.hide();
        model.applyBatch(retried(4, kNode, "node-2", 1000.0));
        QTRY_VERIFY_WITH_TIMEOUT(dock.envelopes()->given(store.calls()[indexOf("node-2")], 1),
                                 3 * PolicyDock::kRefreshMs);

        // No config: no ranges.
        QSignalSpy checked(&dock, &PolicyDock::checked);
        dock.clearServiceConfig();
        QCOMPARE(checked.size(), 1);
        QVERIFY(!dock.envelopes());
    }

    // Fit keeps the whole of a given range in view, as it keeps a lab call's own: grpc-js retried 820 ms
    // after the failure, and its range runs to 1.2 s, past the call's end.
    void fitKeepsAGivenRangeInView()
    {
        TimelineModel model;
        model.setKeepHeaders(true);
        PolicyDock dock(&model);
        model.applyBatch(retried(1, kNode, "node-1", 820.0));
        QString error;
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        QVERIFY(dock.envelopes());
        const std::int64_t rangeEnd = 10'000 * kMs + 2 * kMs + 1200 * kMs;
        QCOMPARE(dock.envelopes()->reachNs(), rangeEnd);
        TimelinePainter painter(&model.store());
        const auto without = painter.fullRange();
        QVERIFY(without.second < rangeEnd);
        painter.setGapEnvelopes(dock.envelopes());
        const auto with = painter.fullRange();
        QVERIFY2(with.second > rangeEnd, qPrintable(QString::number(with.second - rangeEnd)));
        QCOMPARE(with.first, without.first);
    }

    // In the window, choosing a finding selects its call on the timeline (the attempt its reason is about)
    // and brings it into view: scrolled down to its lane and over to its time, as the Calls list's rows do.
    void aChosenFindingIsShownOnTheTimeline()
    {
        TimelineModel model;
        model.setKeepHeaders(true);
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.resize(1400, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        // 40 calls 10 s apart, each on its own connection; only the last breaks the policy (820 ms where
        // C-core waits exactly 1 s).
        for (std::uint32_t conn = 1; conn <= 40; ++conn)
            model.applyBatch(
                retried(conn, kCCore, "call-" + std::to_string(conn), conn == 40 ? 820.0 : 1003.0));
        QString error;
        QVERIFY2(window.policyDock()->setServiceConfig(kConfig, &error), qPrintable(error));
        QCOMPARE(findingRows(window.policyDock()->findings()), 1);
        SwimlaneView *view = window.swimlanes();
        view->setRange(10'000 * kMs, 12'000 * kMs); // the first call's 2 s
        QTest::qWait(50);
        window.policyDock()->findings()->setCurrentIndex(
            window.policyDock()->findings()->model()->index(0, 0));
        const std::optional<size_t> last = model.store().callIndex("call-40");
        QVERIFY(last);
        QCOMPARE(view->selectedAttempt(), (std::optional<std::pair<size_t, size_t>>{{*last, 1}}));
        const Attempt &a = model.store().calls()[*last].attempts[1];
        QVERIFY(view->timelinePainter().rangeStart() <= a.startNs &&
                *a.endNs <= view->timelinePainter().rangeEnd());
        const QRectF r = view->timelinePainter().attemptRect(*last, 1, QRectF(view->rect()));
        QVERIFY2(r.top() >= view->timelinePainter().headerHeight() && r.bottom() <= view->height(),
                 qPrintable(
                     QStringLiteral("lane at %1-%2 of %3").arg(r.top()).arg(r.bottom()).arg(view->height())));

        // The Calls list's rows bring their attempt into view the same way.
        view->setRange(10'000 * kMs, 12'000 * kMs);
        view->selectAttempt(0, 0);
        auto *calls = window.findChild<QTreeView *>(QStringLiteral("callsTree"));
        QVERIFY(calls);
        const QModelIndex callRow = calls->model()->index(int(*last), 0);
        calls->setCurrentIndex(calls->model()->index(0, 0, callRow));
        QCOMPARE(view->selectedAttempt(), (std::optional<std::pair<size_t, size_t>>{{*last, 0}}));
        QVERIFY(view->timelinePainter().rangeEnd() >= model.store().calls()[*last].attempts[0].startNs);
        // A call's own row selects its last attempt, the one that decided it.
        const std::optional<size_t> before = model.store().callIndex("call-39");
        QVERIFY(before);
        calls->setCurrentIndex(calls->model()->index(int(*before), 0));
        QCOMPARE(view->selectedAttempt(), (std::optional<std::pair<size_t, size_t>>{{*before, 1}}));
        // Workshop mode's larger lanes keep the selected one in view.
        auto shown = [&] {
            const QRectF r = view->timelinePainter().attemptRect(*before, 1, QRectF(view->rect()));
            return !r.isEmpty() && r.top() >= view->timelinePainter().headerHeight() &&
                   r.bottom() <= view->height();
        };
        QVERIFY(shown());
        view->setWorkshop(true);
        QVERIFY(shown());
        view->setWorkshop(false);
        QVERIFY(shown());
    }

    // The findings list is never a blank box: without a policy, without calls, and when every call conforms
    // it says so (in its own font, which workshop mode scales), and it is painted where the rows would be.
    void emptyFindingsSaySo()
    {
        TimelineModel model;
        model.setKeepHeaders(true); // the check tells clients by the user-agent the header log keeps
        PolicyDock dock(&model);
        QVERIFY(showDock(dock));
        QVERIFY2(dock.findingsEmptyText().contains(QLatin1String("no retry policy")),
                 qPrintable(dock.findingsEmptyText()));
        QString error;
        QVERIFY2(dock.setServiceConfig(kConfig, &error), qPrintable(error));
        QCOMPARE(dock.findingsEmptyText(), QStringLiteral("No calls to judge yet."));

        // Two conforming calls (1 s after the failure, exactly C-core's first retry; grpc-js jitters).
        model.applyBatch(retried(1, kCCore, "core-1", 1003.0));
        model.applyBatch(retried(2, kNode, "node-1", 820.0));
        dock.refresh(true);
        QCOMPARE(findingRows(dock.findings()), 0);
        QCOMPARE(dock.findingsEmptyText(), QStringLiteral("All 2 calls conform to the retry policy."));
        auto *empty = dock.findings()->viewport()->findChild<QLabel *>(QStringLiteral("policyFindingsEmpty"));
        QVERIFY(empty && empty->isVisible());
        QCOMPARE(empty->geometry(), dock.findings()->viewport()->rect());
        QCOMPARE(empty->font(), dock.findings()->font());
        // Drawn: the viewport's picture has text pixels where an empty list has none.
        const QImage shot = dock.findings()->viewport()->grab().toImage();
        const QRgb base = shot.pixel(shot.width() - 2, shot.height() - 2);
        int ink = 0;
        for (int y = 0; y < shot.height(); ++y)
            for (int x = 0; x < shot.width(); ++x)
                ink += shot.pixel(x, y) != base;
        QVERIFY2(ink > 50, qPrintable(QStringLiteral("%1 pixels of text").arg(ink)));
        QFont large = dock.font();
        large.setPointSizeF(large.pointSizeF() * 1.5);
        dock.setFont(large);
        QCOMPARE(empty->font().pointSizeF(), large.pointSizeF());

        // A call that does not conform is listed, and the text goes.
        model.applyBatch(retried(3, kCCore, "core-2", 820.0));
        dock.refresh(true);
        QCOMPARE(findingRows(dock.findings()), 1);
        QVERIFY(dock.findingsEmptyText().isEmpty());
        QVERIFY(empty->isHidden());
    }
};

QTEST_MAIN(TestPolicyDock)
#include "tst_policydock.moc"
