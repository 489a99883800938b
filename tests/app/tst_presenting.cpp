// Presenting and input in the real main window, offscreen: workshop scales the docks' text (and returns),
// dark themes the docks (and is undone exactly), the timeline's keys from the filter box and the Calls tree,
// wheel vs Ctrl+wheel, the Calls tree following the filter, an unknown status: name, the scenario panel's
// fields keeping their height once a real run's result appears, the first start's next step, and the
// timeline alone.

#include "../views/renderfixture.h"
#include "attemptinspector.h"
#include "callsfilterproxy.h"
#include "capturedialog.h"
#include "capturesession.h"
#include "clock.h"
#include "elidingstatusbar.h"
#include "labclient.h"
#include "labpanel.h"
#include "labserver.h"
#include "labsession.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "scenario.h"
#include "shortcutrouter.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "windowlook.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStatusTipEvent>
#include <QStyle>
#include <QTemporaryDir>
#include <QToolBar>
#include <QTreeView>
#include <QTreeWidget>
#include <QtTest>
#include <cmath>

using namespace rpcscope;
using namespace rpcscope::rendertest;

namespace {

// 40 calls, one a 10 ms slot: every fifth UNAVAILABLE after a retry, every seventh DEADLINE_EXCEEDED, the
// rest OK. Enough lanes to scroll at the window's size.
EventBatch manyCalls(int *unavailable = nullptr)
{
    EventBatch b{opened(1)};
    std::uint32_t stream = 1;
    int failed = 0;
    for (int i = 0; i < 40; ++i) {
        const std::int64_t t = i * 10 * ms;
        const std::string id = "call-" + std::to_string(i);
        const int status = i % 5 == 0 ? 14 : i % 7 == 0 ? 4 : 0;
        b.push_back(req(stream, t, std::nullopt, id, 1000 * ms));
        if (status == 14) {
            b.push_back(end(stream, t + 2 * ms, 14));
            stream += 2;
            b.push_back(req(stream, t + 4 * ms, 1, id, 996 * ms));
            ++failed;
        }
        b.push_back(end(stream, t + 6 * ms, status));
        stream += 2;
    }
    if (unavailable) *unavailable = failed;
    return b;
}

double pointSize(const QWidget *w)
{
    return w->font().pointSizeF() > 0 ? w->font().pointSizeF() : w->font().pixelSize();
}

// WCAG contrast ratio of two colours.
double contrast(const QColor &a, const QColor &b)
{
    auto lum = [](const QColor &c) {
        auto ch = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF());
    };
    const double la = lum(a), lb = lum(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

qint64 span(SwimlaneView *v)
{
    return v->timelinePainter().rangeEnd() - v->timelinePainter().rangeStart();
}

bool sendWheel(QWidget *w, QPoint at, int dy, Qt::KeyboardModifiers mods)
{
    QWheelEvent e(at, w->mapToGlobal(at), {}, {0, dy}, Qt::NoButton, mods, Qt::NoScrollPhase, false);
    return QApplication::sendEvent(w, &e);
}

} // namespace

class TestPresenting : public QObject
{
    Q_OBJECT

    std::unique_ptr<TimelineModel> m_model;
    std::unique_ptr<MainWindow> m_window;

    // A window over manyCalls(), shown and active, with the lab absent.
    MainWindow *window()
    {
        m_window.reset();
        m_model = std::make_unique<TimelineModel>();
        m_model->setOrigin(0, 0);
        m_model->appendBatch(manyCalls());
        m_window = std::make_unique<MainWindow>(m_model.get(), nullptr, QStringLiteral("retry-basic"));
        m_window->setPromptOnClose(false);
        m_window->resize(1400, 820);
        m_window->show();
        m_window->activateWindow();
        if (!QTest::qWaitForWindowActive(m_window.get())) qWarning("window not active");
        m_window->swimlanes()->fitAll();
        return m_window.get();
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // QSettings of this test only
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_presenting"));
        QSettings().clear();
    }

    void cleanup()
    {
        m_window.reset();
        m_model.reset();
        QSettings().clear();
    }

    // The File menu starts a capture too, first, with its shortcut shown: the scenario dock's text sends
    // people to "New capture (Ctrl+N)", and the File menu is where they look.
    void fileMenuStartsACapture()
    {
        MainWindow *w = window();
        auto *fileMenu = w->findChild<QMenu *>(QStringLiteral("fileMenu"));
        QVERIFY(fileMenu);
        const QList<QAction *> actions = fileMenu->actions();
        QVERIFY(!actions.isEmpty());
        QAction *first = actions.front();
        QCOMPARE(first->objectName(), QStringLiteral("newCapture"));
        QCOMPARE(first->shortcut(), QKeySequence(QKeySequence::New));
        auto *dock = w->findChild<QDockWidget *>(QStringLiteral("capture"));
        QVERIFY(dock);
        dock->hide();
        // It opens the capture panel's dialog (modal): closed again as soon as it shows.
        QString title;
        QTimer poll;
        QElapsedTimer waited;
        waited.start();
        connect(&poll, &QTimer::timeout, [&] {
            if (auto *d = qobject_cast<QDialog *>(QApplication::activeModalWidget())) {
                title = d->windowTitle();
                d->reject();
            } else if (waited.elapsed() > 10000) {
                poll.stop();
            }
        });
        poll.start(10);
        first->trigger();
        poll.stop();
        QVERIFY2(!title.isEmpty(), "no capture dialog was shown");
        QVERIFY(dock->isVisible());
    }

    // On a first start the scenario dock is in front and says what to try next; with a saved layout it
    // does not.
    void firstStartShowsScenario()
    {
        MainWindow *w = window();
        auto *scenario = w->findChild<QDockWidget *>(QStringLiteral("scenario"));
        QVERIFY(scenario);
        QVERIFY(scenario->isVisible());
        QVERIFY(!scenario->visibleRegion().isEmpty()); // not behind another tab
        auto *next = w->labPanel()->findChild<QLabel *>(QStringLiteral("nextStep"));
        QVERIFY(next && next->isVisible());
        const QString hint = w->statusBar()->currentMessage();
        QVERIFY(hint.startsWith(QLatin1String("Next:")));
        // A menu entry's status tip covers it while hovered, and it comes back after (the menu sends an empty
        // tip as the pointer leaves).
        QStatusTipEvent over(QStringLiteral("Open a pcap/pcapng of TLS traffic with its key log"));
        QCoreApplication::sendEvent(w, &over);
        QCOMPARE(w->statusBar()->currentMessage(), over.tip());
        QStatusTipEvent left{QString()};
        QCoreApplication::sendEvent(w, &left);
        QCOMPARE(w->statusBar()->currentMessage(), hint);
        // Something said while the tip showed stays said.
        QCoreApplication::sendEvent(w, &over);
        w->statusBar()->showMessage(QStringLiteral("Saved somewhere"));
        QCoreApplication::sendEvent(w, &left);
        QCOMPARE(w->statusBar()->currentMessage(), QStringLiteral("Saved somewhere"));
        w->statusBar()->showMessage(hint);
        // This window has no lab: its dock says so instead of explaining a scenario it cannot run. With a lab
        // the scenario's explanation and its "Look for:" hint are there.
        QVERIFY(w->labPanel()
                    ->findChild<QLabel *>(QStringLiteral("explanation"))
                    ->text()
                    .contains(QStringLiteral("No lab is running")));
        {
            lab::LabSession lab;
            MainWindow withLab(m_model.get(), &lab, QStringLiteral("retry-basic"));
            withLab.setPromptOnClose(false);
            QVERIFY(!withLab.labPanel()->findChild<QLabel *>(QStringLiteral("hints"))->text().isEmpty());
        }
        w->close(); // saves the layout
        QVERIFY(QSettings().contains(QStringLiteral("window/state")));
        MainWindow second(m_model.get(), nullptr, QStringLiteral("retry-basic"));
        QVERIFY(second.labPanel()->findChild<QLabel *>(QStringLiteral("nextStep"))->isHidden());
    }

    // The first start's "Next:" line moves on once the user did what it said, in the Scenario dock and on the
    // status bar, instead of staying behind the capture or the file it asked for.
    void nextStepMovesOnWithACaptureAndAFile()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("saved.rpcscope");
        QVERIFY(window()->saveFile(file));
        m_window.reset();
        QSettings().clear();

        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        auto model = std::make_unique<TimelineModel>();
        {
            MainWindow w(model.get(), nullptr, QStringLiteral("retry-basic"));
            w.setPromptOnClose(false);
            w.show();
            LabPanel *panel = w.labPanel();
            QVERIFY(panel->nextStep().contains(QLatin1String("open a capture")));
            QVERIFY(w.statusBar()->currentMessage().contains(QLatin1String("open a capture")));
            QString why;
            const HopSpec hop{QStringLiteral("hop"), QStringLiteral("127.0.0.1:0"),
                              QStringLiteral("127.0.0.1:%1").arg(server.port())};
            QVERIFY2(w.startCapture({hop}, &why), qPrintable(why));
            // Waiting for calls: where to point the clients.
            QVERIFY2(panel->nextStep().contains(QLatin1String("start your clients")),
                     qPrintable(panel->nextStep()));
            QCOMPARE(w.statusBar()->currentMessage(), panel->nextStep());
            // The empty timeline's ruler counts from the capture's start, not from some earlier clock.
            const qint64 origin = model->store().originNs();
            const qint64 shown = w.swimlanes()->timelinePainter().rangeStart();
            QVERIFY2(std::abs(shown - origin) < 1'000'000, qPrintable(QString::number(shown - origin)));
            {
                lab::LabClient client(w.captureSession()->hops()[0].listen.toStdString(), {});
                lab::CallRequest r;
                r.set_call_id("first");
                QCOMPARE(client.call(r, std::chrono::seconds(5)).code, 0);
            }
            // The first call is on the timeline: how to read it.
            QTRY_COMPARE_WITH_TIMEOUT(panel->nextStep(), LabPanel::readTimelineStep(), 5000);
            QCOMPARE(w.statusBar()->currentMessage(), LabPanel::readTimelineStep());
            w.captureSession()->stop();
        }
        QSettings().clear();
        model = std::make_unique<TimelineModel>();
        MainWindow w(model.get(), nullptr, QStringLiteral("retry-basic"));
        w.setPromptOnClose(false);
        QVERIFY(w.labPanel()->nextStep().contains(QLatin1String("open a capture")));
        QVERIFY(w.openFile(file, nullptr, true));
        QCOMPARE(w.labPanel()->nextStep(), LabPanel::readTimelineStep());
        QVERIFY2(w.statusBar()->currentMessage().startsWith(QLatin1String("Opened ")),
                 qPrintable(w.statusBar()->currentMessage()));
    }

    // The Merged captures dock left open (in front of Capture) when the window closed does not come back
    // empty at the next start: the merged captures are not kept, and Capture is in front again.
    void mergedCapturesDockStartsHidden()
    {
        MainWindow *w = window();
        auto *merged = w->findChild<QDockWidget *>(QStringLiteral("merge"));
        QVERIFY(merged);
        QVERIFY(!merged->isVisible());
        merged->show();
        merged->raise();
        QVERIFY(merged->isVisible());
        w->close(); // saves the layout, the dock open in it
        MainWindow second(m_model.get(), nullptr, QStringLiteral("retry-basic"));
        second.setPromptOnClose(false);
        second.show();
        QVERIFY(QTest::qWaitForWindowExposed(&second));
        QVERIFY(!second.findChild<QDockWidget *>(QStringLiteral("merge"))->isVisible());
        auto *capture = second.findChild<QDockWidget *>(QStringLiteral("capture"));
        QVERIFY(capture && capture->isVisible());
    }

    // Workshop scales the docks' text by the workshop factor, the timeline keeps its own font, and turning
    // it off gives every size back.
    void workshopScalesDocks()
    {
        MainWindow *w = window();
        w->swimlanes()->selectAttempt(0, 0); // something in the inspector
        auto *scenarioText = w->labPanel()->findChild<QLabel *>(QStringLiteral("explanation"));
        auto *toolbar = w->findChild<QToolBar *>(QStringLiteral("main"));
        const std::vector<QWidget *> widgets{w->callsTree(), w->inspector()->tree(), scenarioText, toolbar,
                                             w->findChild<QLineEdit *>(QStringLiteral("filter"))};
        std::vector<double> before;
        std::vector<int> pixels;
        for (QWidget *x : widgets) {
            QVERIFY(x);
            before.push_back(pointSize(x));
            pixels.push_back(QFontInfo(x->font()).pixelSize());
        }
        const double timelineBefore = pointSize(w->swimlanes());
        const int treeRowBefore = w->callsTree()->sizeHintForRow(0);
        const int nameColumn = w->inspector()->tree()->columnWidth(0);
        const double dialogBefore = QFileDialog().font().pointSizeF();
        // A menu shown before (polished then) is a window of its own, which inherits no font: it is read
        // from the presenter's screen too.
        auto *fileMenu = w->findChild<QMenu *>(QStringLiteral("fileMenu"));
        QVERIFY(fileMenu);
        fileMenu->popup(w->mapToGlobal(QPoint(10, 10)));
        QTRY_VERIFY(fileMenu->isVisible());
        fileMenu->hide();
        const double menuBefore = pointSize(fileMenu);
        w->setWorkshop(true);
        // The lanes get little height beside the docks in workshop type: the status bar says how to give
        // them the window.
        QVERIFY2(w->statusBar()->currentMessage().contains(QLatin1String("F10")),
                 qPrintable(w->statusBar()->currentMessage()));
        QCOMPARE(pointSize(fileMenu), menuBefore * WindowLook::kWorkshopFontScale);
        QVERIFY(w->inspector()->tree()->columnWidth(0) > nameColumn);
        QVERIFY(w->look()->workshop());
        for (size_t i = 0; i < widgets.size(); ++i) {
            QCOMPARE(pointSize(widgets[i]), before[i] * WindowLook::kWorkshopFontScale);
            QVERIFY2(QFontInfo(widgets[i]->font()).pixelSize() > pixels[i],
                     qPrintable(widgets[i]->objectName()));
        }
        QVERIFY(w->callsTree()->sizeHintForRow(0) > treeRowBefore);
        QCOMPARE(pointSize(w->swimlanes()), timelineBefore);
        QVERIFY(w->swimlanes()->timelinePainter().options().workshop);
        // A scenario picked while in workshop mode gets large parameter fields too.
        w->labPanel()->scenarioBox()->setCurrentIndex(
            w->labPanel()->scenarioBox()->findData("circuit-breaker"));
        const auto edits = w->labPanel()->findChildren<QLineEdit *>();
        QVERIFY(!edits.isEmpty());
        QCOMPARE(pointSize(edits.first()), before[0] * WindowLook::kWorkshopFontScale);

        // A window opened from it (a file dialog) takes the workshop sizes too, and gives them back.
        auto *dialog = new QFileDialog(w, QStringLiteral("Open"));
        dialog->setOption(QFileDialog::DontUseNativeDialog);
        dialog->ensurePolished();
        QCOMPARE(dialog->font().pointSizeF(), dialogBefore * WindowLook::kWorkshopFontScale);
        // Its details list shows whole dates at the workshop size (they were cut to "2 De...2:48").
        QTemporaryDir listed;
        {
            // Dated as wide as dates get (a two-digit day, a wide month), so that what is checked does not
            // depend on today's date.
            QFile file(listed.filePath(QStringLiteral("capture.rpcscope")));
            QVERIFY(file.open(QIODevice::WriteOnly));
            QVERIFY(file.setFileTime(QDateTime(QDate(2026, 5, 28), QTime(20, 48, 48)),
                                     QFileDevice::FileModificationTime));
        }
        auto showsWholeDates = [&](QFileDialog *d) -> QTreeView * {
            d->setViewMode(QFileDialog::Detail);
            d->setDirectory(listed.path());
            d->resize(600, 400); // the size it opened at on a display
            d->show();
            auto *list = d->findChild<QTreeView *>(QStringLiteral("treeView"));
            if (!list || !list->model()) return nullptr;
            if (!QTest::qWaitFor([&] { return list->model()->rowCount(list->rootIndex()) == 1; }))
                return nullptr;
            const QString dateText = list->model()->index(0, 3, list->rootIndex()).data().toString();
            // Whole: the column is as wide as the view says its contents need (their text and its margins).
            const bool whole = !dateText.isEmpty() && QTest::qWaitFor([&] {
                return list->header()->sectionSize(3) >=
                       static_cast<QAbstractItemView *>(list)->sizeHintForColumn(3);
            });
            if (!whole)
                qWarning("%d px for \"%s\", which needs %d", list->header()->sectionSize(3),
                         qPrintable(dateText), static_cast<QAbstractItemView *>(list)->sizeHintForColumn(3));
            d->hide();
            return whole ? list : nullptr;
        };
        QTreeView *list = showsWholeDates(dialog);
        QVERIFY(list);
        // A dialog made while in workshop mode opens at the size its larger text needs: New capture's hop row
        // (its line edits under their column titles) was squeezed into the height the normal font needed.
        {
            CaptureDialog capture(w->captureSession(), w);
            capture.show();
            QVERIFY(QTest::qWaitForWindowExposed(&capture));
            QVERIFY(capture.font().pointSizeF() > dialogBefore);
            for (QLineEdit *edit : capture.findChildren<QLineEdit *>())
                if (edit->isVisible())
                    QVERIFY2(edit->height() >= edit->minimumSizeHint().height(),
                             qPrintable(QStringLiteral("%1: %2 px high, needs %3")
                                            .arg(edit->objectName().isEmpty() ? edit->placeholderText()
                                                                              : edit->objectName())
                                            .arg(edit->height())
                                            .arg(edit->minimumSizeHint().height())));
            QVERIFY(capture.height() >= capture.minimumSizeHint().height());
        }

        w->setWorkshop(false);
        QCOMPARE(dialog->font().pointSizeF(), dialogBefore);
        QCOMPARE(pointSize(fileMenu), menuBefore);
        delete dialog;
        // And at the normal size too (they were cut to "3 Dec ...:16:39").
        auto *normal = new QFileDialog(w, QStringLiteral("Save"));
        normal->setOption(QFileDialog::DontUseNativeDialog);
        // A font other than the one the dialog sized its columns for when it was made, as a display's own
        // fonts gave it there (offscreen, the defaults happen to fit).
        QFont larger = normal->font();
        larger.setPointSizeF(dialogBefore * 1.25);
        normal->setFont(larger);
        QVERIFY(showsWholeDates(normal));
        delete normal;
        for (size_t i = 0; i < widgets.size(); ++i)
            QCOMPARE(pointSize(widgets[i]), before[i]);
        QCOMPARE(w->inspector()->tree()->columnWidth(0), nameColumn);
        QCOMPARE(pointSize(w->swimlanes()), timelineBefore);
        QVERIFY(!w->testAttribute(Qt::WA_SetFont));
    }

    // Dark themes the docks and is undone exactly; text keeps its contrast.
    void darkThemesDocks()
    {
        MainWindow *w = window();
        const QPalette appBefore = QApplication::palette();
        const QString styleBefore = QApplication::style()->name();
        const QColor treeBase = w->callsTree()->palette().color(QPalette::Base);
        w->setDark(true);
        for (QWidget *x :
             std::initializer_list<QWidget *>{w->callsTree(), w->inspector()->tree(), w->labPanel()}) {
            const QPalette p = x->palette();
            QVERIFY(p.color(QPalette::Base).lightness() < 60);
            QVERIFY(p.color(QPalette::Window).lightness() < 60);
            QVERIFY(contrast(p.color(QPalette::Text), p.color(QPalette::Base)) >= 7);
            QVERIFY(contrast(p.color(QPalette::WindowText), p.color(QPalette::Window)) >= 7);
            QVERIFY(contrast(p.color(QPalette::PlaceholderText), p.color(QPalette::Base)) >= 4.5);
        }
        QCOMPARE(QApplication::style()->name().toLower(), QStringLiteral("fusion"));
        // The timeline's own theme too.
        QVERIFY(w->swimlanes()->timelinePainter().options().dark);
        // The dock really paints dark.
        const QImage shot = w->callsTree()->viewport()->grab().toImage();
        QVERIFY(QColor(shot.pixel(shot.width() - 3, shot.height() - 3)).lightness() < 60);

        w->setDark(false);
        QCOMPARE(QApplication::palette(), appBefore);
        QCOMPARE(QApplication::style()->name(), styleBefore);
        QCOMPARE(w->callsTree()->palette().color(QPalette::Base), treeBase);
    }

    // The timeline's keys from the filter box and the Calls tree: typing keeps its letters, Esc leaves the
    // field, window shortcuts (Ctrl+E, which a line edit takes for end-of-line) fire, W/S/A/D change the
    // range.
    void shortcutsFromFilterBox()
    {
        MainWindow *w = window();
        SwimlaneView *view = w->swimlanes();
        auto *filter = w->findChild<QLineEdit *>(QStringLiteral("filter"));
        filter->setFocus();
        QTRY_COMPARE(QApplication::focusWidget(), filter);
        view->setRange(100 * ms, 200 * ms);
        QTest::keyClick(filter, Qt::Key_F);
        QCOMPARE(filter->text(), QStringLiteral("f"));
        QCOMPARE(span(view), 100 * ms); // not fitted
        QTest::keyClick(filter, Qt::Key_W);
        QTest::keyClick(filter, Qt::Key_Left);
        QCOMPARE(filter->text(), QStringLiteral("fw"));
        QCOMPARE(span(view), 100 * ms);

        // Ctrl+E: the export action fires (its dialog is cut off for the test), the text stays.
        QAction *exportPng = nullptr;
        for (QAction *a : w->findChildren<QAction *>())
            if (a->shortcut() == QKeySequence(QStringLiteral("Ctrl+E"))) exportPng = a;
        QVERIFY(exportPng);
        disconnect(exportPng, &QAction::triggered, nullptr, nullptr);
        QSignalSpy exported(exportPng, &QAction::triggered);
        filter->setCursorPosition(0);
        QTest::keyClick(filter, Qt::Key_E, Qt::ControlModifier);
        QCOMPARE(exported.count(), 1);
        QCOMPARE(filter->cursorPosition(), 0); // not moved to the end of the line
        // Ctrl+E is the line edit's end-of-line only with the X11 key scheme, which offscreen lacks: a window
        // action on Ctrl+Right (the field's next word on every scheme) shows the field giving up a window's
        // key.
        auto *nextWordAction = new QAction(w);
        nextWordAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Right));
        w->addAction(nextWordAction);
        QSignalSpy nextWord(nextWordAction, &QAction::triggered);
        QTest::keyClick(filter, Qt::Key_Right, Qt::ControlModifier);
        QCOMPARE(nextWord.count(), 1);
        QCOMPARE(filter->cursorPosition(), 0);
        delete nextWordAction;
        // Select all stays the field's.
        QTest::keyClick(filter, Qt::Key_A, Qt::ControlModifier);
        QCOMPARE(filter->selectedText(), QStringLiteral("fw"));
        // Ctrl+Shift+D from the field too.
        QTest::keyClick(filter, Qt::Key_D, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(w->look()->dark());
        w->setDark(false);

        filter->clear();
        QTest::keyClick(filter, Qt::Key_Escape);
        QCOMPARE(QApplication::focusWidget(), view);

        // From the Calls tree (focus stays there): F fits, W/S zoom, A/D pan.
        w->callsTree()->setFocus();
        QTRY_COMPARE(QApplication::focusWidget(), w->callsTree());
        view->setRange(100 * ms, 200 * ms);
        QTest::keyClick(w->callsTree(), Qt::Key_W);
        QVERIFY(span(view) < 100 * ms);
        const qint64 zoomedIn = span(view);
        QTest::keyClick(w->callsTree(), Qt::Key_S);
        QVERIFY(span(view) > zoomedIn);
        const qint64 start = view->timelinePainter().rangeStart();
        QTest::keyClick(w->callsTree(), Qt::Key_D);
        QVERIFY(view->timelinePainter().rangeStart() > start);
        QTest::keyClick(w->callsTree(), Qt::Key_A);
        QCOMPARE(view->timelinePainter().rangeStart(), start);
        QTest::keyClick(w->callsTree(), Qt::Key_F);
        QVERIFY(view->followsLive());
        QVERIFY(span(view) > 390 * ms);
        QCOMPARE(QApplication::focusWidget(), w->callsTree());
        // The tree keeps its arrows for its rows.
        const qint64 fitted = view->timelinePainter().rangeStart();
        w->callsTree()->setCurrentIndex(w->callsTree()->model()->index(0, 0));
        QTest::keyClick(w->callsTree(), Qt::Key_Down);
        QCOMPARE(w->callsTree()->currentIndex().row(), 1);
        QCOMPARE(view->timelinePainter().rangeStart(), fitted);
        QVERIFY(ShortcutRouter::isTextField(w->labPanel()->findChild<QSpinBox *>()));
    }

    // Plain wheel scrolls lanes at the same range; Ctrl+wheel zooms at the cursor; Shift+wheel pans time.
    void wheelScrollsAndCtrlZooms()
    {
        MainWindow *w = window();
        SwimlaneView *view = w->swimlanes();
        view->setFocus();
        const QPoint at(view->width() * 2 / 3, view->height() / 2);
        const qint64 before = span(view), start = view->timelinePainter().rangeStart();
        QCOMPARE(view->zoomControl().scrollY(), 0);
        sendWheel(view, at, -120, Qt::NoModifier);
        QVERIFY(view->zoomControl().scrollY() > 0);
        QCOMPARE(span(view), before);
        QCOMPARE(view->timelinePainter().rangeStart(), start);
        sendWheel(view, at, 120, Qt::NoModifier);
        QCOMPARE(view->zoomControl().scrollY(), 0);

        const qint64 anchor = view->timelinePainter().axis(view->canvas()).xToTime(at.x());
        sendWheel(view, at, 120, Qt::ControlModifier);
        QVERIFY(span(view) < before);
        QVERIFY(std::abs(view->timelinePainter().axis(view->canvas()).xToTime(at.x()) - anchor) <
                span(view) / 500);
        QCOMPARE(view->zoomControl().scrollY(), 0);

        const qint64 zoomed = span(view), zoomedStart = view->timelinePainter().rangeStart();
        sendWheel(view, at, -120, Qt::ShiftModifier);
        QCOMPARE(span(view), zoomed);
        QVERIFY(view->timelinePainter().rangeStart() > zoomedStart);
        // No status tip: hovering the timeline must not wipe the status bar's messages (a refit, a save).
        QVERIFY(view->statusTip().isEmpty());
    }

    // The status bar's "(M in view)" follows a zoom at once, not at the next once-a-second refresh (stopped
    // here, so that its timing cannot pass the test).
    void statusCountFollowsZoom()
    {
        MainWindow *w = window();
        SwimlaneView *view = w->swimlanes();
        auto *tick = w->findChild<QTimer *>(QStringLiteral("statusTick"));
        QVERIFY(tick);
        auto *session = w->statusBar()->findChild<QLabel *>(QStringLiteral("sessionStatus"));
        QVERIFY(session);
        QTRY_VERIFY2(session->text().contains(QLatin1String("40 calls (40 in view)")),
                     qPrintable(session->text()));
        tick->stop();
        // Calls 0 to 4 start 10 ms apart and last at most 6 ms: 22-34 ms holds calls 2 and 3 only.
        view->zoomControl().setRange(22 * ms, 34 * ms);
        QTRY_VERIFY_WITH_TIMEOUT(session->text().contains(QLatin1String("40 calls (2 in view)")), 3000);
        view->fitAll();
        QTRY_VERIFY_WITH_TIMEOUT(session->text().contains(QLatin1String("40 calls (40 in view)")), 3000);
    }

    // At a replay's end the status bar counts the whole run at once, not at the next once-a-second refresh
    // (a short run's replay ends well within that second, and said "1 call" beside the run's two lanes).
    void statusCountFollowsReplayEnd()
    {
        MainWindow *w = window();
        auto *tick = w->findChild<QTimer *>(QStringLiteral("statusTick"));
        auto *session = w->statusBar()->findChild<QLabel *>(QStringLiteral("sessionStatus"));
        QVERIFY(tick && session);
        QTRY_VERIFY2(session->text().contains(QLatin1String("40 calls (40 in view)")),
                     qPrintable(session->text()));
        auto *speed = w->findChild<QComboBox *>(QStringLiteral("replaySpeed"));
        QVERIFY(speed);
        speed->setCurrentIndex(speed->findData(0.25)); // the 400 ms run in 1.6 s
        QVERIFY(speed->currentIndex() >= 0);
        tick->stop();
        auto *replay = w->findChild<QAction *>(QStringLiteral("replay"));
        QVERIFY(replay);
        replay->trigger();
        // A tenth of a second in (the range set at its start refreshes the status): part of the run.
        QTRY_VERIFY_WITH_TIMEOUT(!session->text().contains(QLatin1String("40 calls")), 3000);
        QTRY_VERIFY_WITH_TIMEOUT(
            w->statusBar()->currentMessage().startsWith(QLatin1String("Replay finished")), 10000);
        QVERIFY2(session->text().contains(QLatin1String("40 calls")), qPrintable(session->text()));
        replay->trigger(); // the whole run again
    }

    // The Calls tree keeps the calls the timeline's filter keeps, with their attempts; selection still syncs.
    void callsFollowFilter()
    {
        int unavailable = 0;
        manyCalls(&unavailable);
        MainWindow *w = window();
        QAbstractItemModel *rows = w->callsTree()->model();
        QCOMPARE(rows->rowCount(), 40);
        auto *filter = w->findChild<QLineEdit *>(QStringLiteral("filter"));
        QVERIFY2(!w->statusText().contains(QStringLiteral("match")), qPrintable(w->statusText()));
        filter->setText(QStringLiteral("status:UNAVAILABLE"));
        QCOMPARE(rows->rowCount(), unavailable);
        // The status bar says how many the filter keeps, beside all the calls.
        QVERIFY2(w->statusText().contains(
                     QStringLiteral("40 calls (40 in view, %1 match the filter)").arg(unavailable)),
                 qPrintable(w->statusText()));
        w->swimlanes()->timelinePainter().fullRange(); // brings the lanes up to date
        QCOMPARE(int(w->swimlanes()->timelinePainter().layout().callLanes()), unavailable);
        for (int r = 0; r < rows->rowCount(); ++r) {
            QCOMPARE(rows->rowCount(rows->index(r, 0)), 2); // both attempts
            QVERIFY(rows->index(r, 0).data().toString().startsWith(QLatin1String("call-")));
        }
        filter->setText(QStringLiteral("status:failed"));
        QVERIFY(rows->rowCount() > unavailable);
        filter->setText(QStringLiteral("call-3"));
        QCOMPARE(rows->rowCount(), 1 + 10); // call-3, call-30..39
        filter->setText(QStringLiteral("status:UNAVAILABLE"));

        // Timeline -> tree through the proxy: call-10 is the third kept row.
        const int call10 = int(*m_model->store().callIndex("call-10"));
        w->swimlanes()->selectAttempt(call10, 1);
        const QModelIndex current = w->callsTree()->currentIndex();
        QCOMPARE(current.parent().row(), 2);
        QCOMPARE(current.row(), 1);
        // Tree -> timeline.
        w->callsTree()->setCurrentIndex(rows->index(0, 0, rows->index(3, 0)));
        const auto sel = w->swimlanes()->selectedAttempt();
        QVERIFY(sel);
        QCOMPARE(sel->first, *m_model->store().callIndex("call-15"));
        QCOMPARE(sel->second, size_t(0));

        // New calls are filtered as they arrive.
        m_model->appendBatch({req(1001, 900 * ms, std::nullopt, "late-ok", 100 * ms), end(1001, 901 * ms, 0),
                              req(1003, 900 * ms, std::nullopt, "late-bad", 100 * ms),
                              end(1003, 901 * ms, 14)});
        QTRY_COMPARE(rows->rowCount(), unavailable + 1);
        QTRY_VERIFY2(w->statusText().contains(QStringLiteral("%1 match the filter").arg(unavailable + 1)),
                     qPrintable(w->statusText()));
        filter->clear();
        QCOMPARE(rows->rowCount(), 42);
        QVERIFY2(!w->statusText().contains(QStringLiteral("match")), qPrintable(w->statusText()));
    }

    // status:FOO is said to be unknown, in the box, its tooltip and the status bar; a known name clears it.
    void unknownStatusIsSaid()
    {
        QCOMPARE(LaneFilter::parse(QStringLiteral("status:FOO")).problem,
                 QStringLiteral("unknown status 'FOO': use a gRPC code name, failed, ok or inflight"));
        for (const char *known : {"status:unavailable", "status:UNAVAIL", "status:DEADLINE_EXCEEDED",
                                  "status:failed", "status:ok", "status:inflight", "method:Foo bar"})
            QVERIFY2(LaneFilter::parse(QLatin1String(known)).problem.isEmpty(), known);
        MainWindow *w = window();
        auto *filter = w->findChild<QLineEdit *>(QStringLiteral("filter"));
        const QString tip = filter->toolTip();
        filter->setText(QStringLiteral("status:FOO"));
        QVERIFY(filter->toolTip().contains(QLatin1String("unknown status 'FOO'")));
        QVERIFY(w->statusBar()->currentMessage().contains(QLatin1String("unknown status 'FOO'")));
        QVERIFY(filter->styleSheet().contains(QLatin1String("border")));
        filter->setText(QStringLiteral("status:UNAVAILABLE"));
        QCOMPARE(filter->toolTip(), tip);
        QVERIFY(filter->styleSheet().isEmpty());
        QVERIFY(w->statusBar()->currentMessage().isEmpty());
    }

    // The Keys and mouse list (F1) names every shortcut the window's actions have: it lacked Open, Save, New
    // capture and the Policy check's, Retry policy's and Faults' keys.
    void keysListNamesEveryShortcut()
    {
        MainWindow *w = window();
        const QString help = MainWindow::keysHelp();
        QStringList missing;
        for (const QAction *a : w->findChildren<QAction *>())
            for (const QKeySequence &k : a->shortcuts()) {
                const QString key = k.toString(QKeySequence::PortableText);
                // The key whole, not inside another ("Ctrl+S" is in "Ctrl+Shift+W").
                const QRegularExpression whole(
                    QStringLiteral("(^|[\\s>(])%1(?=[\\s<)])").arg(QRegularExpression::escape(key)));
                if (!key.isEmpty() && !whole.match(help).hasMatch())
                    missing << QStringLiteral("%1 (%2)").arg(key, a->text().remove(QLatin1Char('&')));
            }
        missing.removeDuplicates();
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(", "))));
    }

    // Timeline only hides every dock and toolbar and brings back exactly those, each tab group showing the
    // tab it showed before (the one behind it came to the front: the statistics gave way to the calls);
    // F10 from anywhere.
    void timelineOnly()
    {
        MainWindow *w = window();
        auto *calls = w->findChild<QDockWidget *>(QStringLiteral("calls"));
        auto *stats = w->findChild<QDockWidget *>(QStringLiteral("statistics"));
        auto *merged = w->findChild<QDockWidget *>(QStringLiteral("merge"));
        const bool mergedVisible = merged && merged->isVisible();
        QVERIFY(calls && stats);
        QVERIFY(w->tabifiedDockWidgets(calls).contains(stats));
        // A tab behind another is visible too, moved out of sight.
        auto inFront = [](QDockWidget *d) { return d->isVisible() && !d->visibleRegion().isEmpty(); };
        stats->show();
        stats->raise();
        QTRY_VERIFY(inFront(stats) && !inFront(calls));
        QTest::keyClick(w->swimlanes(), Qt::Key_F10);
        QVERIFY(w->timelineOnly());
        QVERIFY(!stats->isVisible() && !calls->isVisible());
        QVERIFY(w->statusBar()->currentMessage().contains(QLatin1String("F10 brings")));
        QTest::keyClick(w->swimlanes(), Qt::Key_F10);
        QTRY_VERIFY2(inFront(stats) && !inFront(calls), "the calls came to the front");
        // The hint on how to come back goes with it.
        QVERIFY2(!w->statusBar()->currentMessage().contains(QLatin1String("F10")),
                 qPrintable(w->statusBar()->currentMessage()));
        stats->hide();
        QTRY_VERIFY(inFront(calls));
        const int height = w->swimlanes()->height();
        QTest::keyClick(w->callsTree(), Qt::Key_F10);
        QVERIFY(w->timelineOnly());
        QVERIFY(!calls->isVisible());
        for (QToolBar *t : w->findChildren<QToolBar *>())
            QVERIFY(!t->isVisible());
        QTRY_VERIFY(w->swimlanes()->height() > height);
        QTest::keyClick(w->swimlanes(), Qt::Key_F10);
        QVERIFY(!w->timelineOnly());
        QVERIFY(calls->isVisible());
        if (merged) QCOMPARE(merged->isVisible(), mergedVisible);
        QVERIFY(w->findChild<QToolBar *>(QStringLiteral("view"))->isVisible());
    }

    // A status message longer than the room left beside the session's status and the lab's addresses ends in
    // an ellipsis, whole in its tooltip, instead of being cut off mid-word under them; a short one is shown
    // as it is.
    void statusMessageEndsInEllipsis()
    {
        TimelineModel model;
        MainWindow w(&model, nullptr, QString());
        w.setPromptOnClose(false);
        w.resize(900, 600);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        auto *bar = qobject_cast<ElidingStatusBar *>(w.statusBar());
        QVERIFY(bar);
        auto *session = bar->findChild<QLabel *>(QStringLiteral("sessionStatus"));
        QVERIFY(session && session->isVisible());
        QString longMessage =
            QStringLiteral("retry-storm: 20 calls made 80 requests: amplification 4.00x, downstream load 199 "
                           "requests/s over 401 ms, as expected");
        bar->showMessage(longMessage);
        QApplication::processEvents();
        const QRect room = bar->messageRect();
        // Longer than the room, whatever the font.
        while (bar->fontMetrics().horizontalAdvance(longMessage) <= room.width())
            longMessage += QStringLiteral(", and so on");
        bar->showMessage(longMessage);
        QApplication::processEvents();
        QCOMPARE(bar->messageRect(), room);
        QVERIFY(room.width() > 0);
        QVERIFY2(room.right() < session->x(), "the message's room reaches under the session's status");
        const QString shown = bar->shownMessage();
        QVERIFY2(shown.endsWith(QChar(0x2026)), qPrintable(shown));
        QVERIFY(shown.size() > 5);
        QVERIFY(bar->fontMetrics().horizontalAdvance(shown) <= room.width());
        QCOMPARE(bar->toolTip(), longMessage);
        QVERIFY(!bar->grab().isNull()); // paints
        bar->showMessage(QStringLiteral("Saved"));
        QApplication::processEvents();
        QCOMPARE(bar->shownMessage(), QStringLiteral("Saved"));
        QVERIFY(bar->toolTip().isEmpty());
    }

    // A real run of retry-basic: the parameter fields keep their full height once the result text appears,
    // in a short dock too, and the whole explanation and its hint stay reachable.
    void scenarioFieldsKeepHeight()
    {
        TimelineModel model;
        model.setOrigin(steadyNowNs(), wallNowNs());
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        {
            MainWindow w(&model, &lab, QStringLiteral("retry-basic"));
            w.setPromptOnClose(false);
            w.resize(1400, 620);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            LabPanel *panel = w.labPanel();
            QList<QWidget *> edits;
            for (QLineEdit *e : panel->findChildren<QLineEdit *>())
                if (!qobject_cast<QAbstractSpinBox *>(e->parentWidget())) edits << e;
            QCOMPARE(edits.size(), 3); // max_attempts, initial_backoff_ms, fail_first_n
            edits << panel->findChild<QSpinBox *>();
            std::vector<int> heights;
            for (QWidget *e : edits)
                heights.push_back(e->height());
            for (int i = 0; i < edits.size(); ++i)
                QVERIFY(heights[size_t(i)] >= edits[i]->sizeHint().height());
            QSignalSpy finished(&w, &MainWindow::runFinished);
            w.runScenario();
            QVERIFY(finished.wait(30000));
            auto *result = panel->findChild<QLabel *>(QStringLiteral("result"));
            QTRY_VERIFY(!result->text().isEmpty());
            QVERIFY(result->text().contains(QLatin1String("as expected")));
            QApplication::processEvents();
            for (int i = 0; i < edits.size(); ++i)
                QCOMPARE(edits[i]->height(), heights[size_t(i)]);
            // The hint is inside the scroll area's page, not cut: its label is as tall as its text needs.
            auto *hints = panel->findChild<QLabel *>(QStringLiteral("hints"));
            QVERIFY(hints->isVisible());
            QVERIFY(hints->height() >= hints->heightForWidth(hints->width()));
            QVERIFY(panel->findChild<QScrollArea *>(QStringLiteral("scenarioScroll")));
            // After the first run, the next step says how to read the timeline.
            QVERIFY(panel->findChild<QLabel *>(QStringLiteral("nextStep"))
                        ->text()
                        .contains(QLatin1String("F fits")));
        }
        lab.stop();
    }
};

QTEST_MAIN(TestPresenting)
#include "tst_presenting.moc"
