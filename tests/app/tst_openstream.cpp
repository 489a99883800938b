// File > Open streams a capture into the model batch by batch under the session's retention: a file that fits
// opens exactly as the whole-file path did (loadCapture, then TimelineModel::replay), and one larger than the
// budget keeps its newest calls within it. Both for an .rpcscope capture and a pcapng packet capture, written
// by rpcscope-cli from a real lab run.

#include "captureio.h"
#include "mainwindow.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QApplication>
#include <QDockWidget>
#include <QProcess>
#include <QSettings>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;

namespace {

// What a call looks like on the timeline, compared between the streamed and the whole-file open.
QString describe(const Call &c)
{
    QStringList attempts;
    for (const Attempt &a : c.attempts)
        attempts << QStringLiteral("%1-%2:%3")
                        .arg(a.startNs)
                        .arg(a.endNs.value_or(-1))
                        .arg(QString::fromStdString(a.outcomeLabel()));
    return QStringLiteral("%1 %2 %3 [%4]")
        .arg(QString::fromStdString(c.key), QString::fromStdString(c.method))
        .arg(c.startNs())
        .arg(attempts.join(' '));
}

QStringList describeAll(const TimelineStore &store)
{
    QStringList out;
    for (const Call &c : store.calls())
        out << describe(c);
    return out;
}

// The attempt that started last, with its call's key.
QString lastAttempt(const TimelineStore &store)
{
    const Call *call = nullptr;
    const Attempt *last = nullptr;
    for (const Call &c : store.calls())
        for (const Attempt &a : c.attempts)
            if (!last || a.startNs > last->startNs) {
                last = &a;
                call = &c;
            }
    if (!last) return {};
    return QStringLiteral("%1 %2-%3:%4")
        .arg(QString::fromStdString(call->key))
        .arg(last->startNs)
        .arg(last->endNs.value_or(-1))
        .arg(QString::fromStdString(last->outcomeLabel()));
}

} // namespace

class TestOpenStream : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_rpcscope, m_pcapng;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_openstream"));
        QSettings().clear();
        m_rpcscope = m_dir.filePath(QStringLiteral("storm.rpcscope"));
        m_pcapng = m_dir.filePath(QStringLiteral("storm.pcapng"));
        // A storm: many calls, enough for a budget to cut.
        for (const auto &[out, to] : {std::pair{m_rpcscope, QStringLiteral("rpcscope")},
                                      std::pair{m_pcapng, QStringLiteral("pcapng")}}) {
            QProcess cli;
            cli.start(QStringLiteral(RPCSCOPE_CLI),
                      {QStringLiteral("run"), QStringLiteral("retry-storm"), QStringLiteral("--set"),
                       QStringLiteral("clients=40"), QStringLiteral("--out"), out, QStringLiteral("--to"),
                       to});
            QVERIFY(cli.waitForFinished(120000));
            QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
            QVERIFY(QFileInfo(out).size() > 0);
        }
    }

    void opensAsTheWholeFile_data()
    {
        QTest::addColumn<QString>("path");
        QTest::newRow("rpcscope") << m_rpcscope;
        QTest::newRow("pcapng") << m_pcapng;
    }

    // Within the budget: the same calls, origin, event log and fit as loadCapture + replay gave.
    void opensAsTheWholeFile()
    {
        QFETCH(QString, path);
        CaptureData data;
        const CaptureReadResult r = loadCapture(path, &data);
        QVERIFY2(r.status == CaptureReadResult::Ok, r.message.c_str());
        TimelineModel reference;
        reference.replay(data);
        QVERIFY(reference.store().calls().size() >= 40);

        TimelineModel model;
        model.setKeepHeaders(true);
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        QString error;
        QVERIFY2(window.openFile(path, &error, true), qPrintable(error));
        QCOMPARE(describeAll(model.store()), describeAll(reference.store()));
        QCOMPARE(model.store().originNs(), reference.store().originNs());
        QCOMPARE(model.eventLog().batchCount(), reference.eventLog().batchCount());
        QCOMPARE(model.store().evictedCalls(), size_t(0));
        QCOMPARE(model.rowCount(), int(reference.store().calls().size()));
        QCOMPARE(model.stats().total().calls, reference.stats().total().calls);
        QCOMPARE(model.stats().total().attempts, reference.stats().total().attempts);
        QVERIFY(window.windowTitle().contains(QFileInfo(path).fileName()));
        QVERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("Opened ")));
        QVERIFY(!window.statusBar()->currentMessage().contains(QStringLiteral("evicted")));
        // Fitted as the whole-file path fitted it: a replay, then fitAll.
        TimelineModel replayed;
        replayed.setKeepHeaders(true);
        MainWindow old(&replayed, nullptr, QStringLiteral("retry-basic"));
        old.setPromptOnClose(false);
        replayed.replay(data);
        old.swimlanes()->fitAll();
        QCOMPARE(window.swimlanes()->timelinePainter().rangeStart(),
                 old.swimlanes()->timelinePainter().rangeStart());
        QCOMPARE(window.swimlanes()->timelinePainter().rangeEnd(),
                 old.swimlanes()->timelinePainter().rangeEnd());
    }

    // A file opened in a shown window: the views hold their painting while the model is reset and refilled,
    // the window does not. On an X server a window whose own updates were off when it was exposed (the file
    // dialog closing over it, or its first show with a file named on the command line) never painted
    // again: black, or frozen on the dialog's last picture.
    void theWindowKeepsPaintingWhileAFileOpens()
    {
        TimelineModel model;
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        // Looked at whenever the model resets: the last reset is the file's, begun before it is read and
        // ended after (one before it clears the run the window showed).
        std::vector<std::pair<bool, bool>> looks; // (window paints, its timeline paints)
        auto look = [&] { looks.push_back({window.updatesEnabled(), window.swimlanes()->updatesEnabled()}); };
        const QMetaObject::Connection c[] = {
            connect(&model, &QAbstractItemModel::modelAboutToBeReset, &window, look),
            connect(&model, &QAbstractItemModel::modelReset, &window, look)};
        QString error;
        QVERIFY2(window.openFile(m_rpcscope, &error, true), qPrintable(error));
        for (const QMetaObject::Connection &x : c)
            disconnect(x);
        QVERIFY(looks.size() >= 2);
        for (size_t i = looks.size() - 2; i < looks.size(); ++i) {
            QVERIFY2(looks[i].first, "the window held its painting");
            QVERIFY2(!looks[i].second, "the timeline painted the model in the middle of its reset");
        }
        QVERIFY(window.updatesEnabled());
        QVERIFY(window.swimlanes()->updatesEnabled());
        for (QDockWidget *d : window.findChildren<QDockWidget *>())
            QVERIFY2(d->updatesEnabled(), qPrintable(d->objectName()));
    }

    void keepsTheNewestWithinTheBudget_data() { opensAsTheWholeFile_data(); }

    // A budget a third of what the file needs: the session is within it once opened, with the newest calls.
    void keepsTheNewestWithinTheBudget()
    {
        QFETCH(QString, path);
        TimelineModel model;
        model.setKeepHeaders(true);
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        QString error;
        QVERIFY2(window.openFile(path, &error, true), qPrintable(error));
        const QStringList all = describeAll(model.store());
        const QString allLast = lastAttempt(model.store());
        const size_t full = model.memoryBytes();
        // The inspector's kept messages are bounded by themselves, not by retention, and so are the
        // statistics' rows (a row per method and hop, up to a limit; evicted calls stay counted in them): the
        // budget leaves them room, and a third of the rest.
        const size_t headers = model.headerLog() ? model.headerLog()->messageBytes() : 0;
        const size_t rows = model.stats().rowBytes();
        const size_t budget = headers + rows + (full - headers - rows) / 3;
        qInfo("%zu bytes held in all, %zu of them the inspector's messages and %zu the statistics' rows: a "
              "budget of %zu",
              full, headers, rows, budget);

        model.setRetention({budget, 0, 0});
        QVERIFY2(window.openFile(path, &error, true), qPrintable(error));
        const size_t peak = model.memoryBytes();
        QVERIFY2(peak <= budget + budget / 10,
                 qPrintable(QStringLiteral("%1 bytes held against a budget of %2").arg(peak).arg(budget)));
        const QStringList kept = describeAll(model.store());
        qInfo("%lld of %lld calls kept, %zu bytes held", qlonglong(kept.size()), qlonglong(all.size()), peak);
        QVERIFY(!kept.isEmpty());
        QVERIFY2(kept.size() < all.size(),
                 qPrintable(QStringLiteral("%1 of %2").arg(kept.size()).arg(all.size())));
        QVERIFY(model.store().evictedCalls() > 0);
        // The oldest went, the newest stayed: retention evicts whole calls, oldest first, so the call that
        // started last stays. A call evicted in flight (a storm's calls all are, from their first attempt to
        // their last) loses what it had; its later attempts become a call of their own, which starts later
        // still. Either way the newest call kept starts no earlier than the file's last call, and every
        // attempt kept is one the file holds, under the same key.
        QVERIFY2(!kept.contains(all.front()), qPrintable(all.front()));
        const auto startOf = [](const QString &call) { return call.section(' ', 2, 2).toLongLong(); };
        qint64 newestKept = 0;
        for (const QString &call : kept)
            newestKept = std::max(newestKept, startOf(call));
        QVERIFY2(newestKept >= startOf(all.back()),
                 qPrintable(QStringLiteral("the newest call kept starts at %1, the file's last call at %2")
                                .arg(newestKept)
                                .arg(all.back())));
        const auto attemptsOf = [](const QString &call) {
            QStringList out;
            const QString list = call.section('[', 1).chopped(1);
            for (const QString &a : list.split(' ', Qt::SkipEmptyParts))
                out << call.section(' ', 0, 0) + ' ' + a;
            return out;
        };
        QSet<QString> fileAttempts;
        for (const QString &call : all)
            for (const QString &a : attemptsOf(call))
                fileAttempts.insert(a);
        // A packet capture has no call ids of its own to keep a call whole across an eviction: its keys
        // depend on where the cut fell, so only the .rpcscope file is held to the keys.
        if (!path.endsWith(QStringLiteral(".pcapng")))
            for (const QString &call : kept)
                for (const QString &a : attemptsOf(call))
                    QVERIFY2(fileAttempts.contains(a), qPrintable(a));
        QCOMPARE(model.rowCount(), kept.size());
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("evicted while opening")),
                 qPrintable(window.statusBar()->currentMessage()));
    }
};

QTEST_MAIN(TestOpenStream)
#include "tst_openstream.moc"
