// The Faults dock, driven offscreen against a real capture of the lab's grpc++ server: a bad rule is refused
// inline with the parser's line, `close` added while the capture runs fails the next connection and its hit
// counter shows it, and switched off it hits no more.

#include "capturesession.h"
#include "faultsdock.h"
#include "faultset.h"
#include "labclient.h"
#include "labserver.h"
#include "mainwindow.h"
#include "timelinemodel.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QtTest>

using namespace rpcscope;

namespace {
lab::CallRequest request(const std::string &id)
{
    lab::CallRequest r;
    r.set_call_id(id);
    r.set_response_size(10);
    return r;
}

int hitsShown(FaultsDock *dock, int row)
{
    QTableWidgetItem *item = dock->table()->item(row, 3);
    return item ? item->text().toInt() : -1;
}
} // namespace

class TestFaultsDock : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_faultsdock"));
        QSettings().clear();
        std::string error;
        QVERIFY2(m_server.start(&error), error.c_str());
    }

    void addToggleAndCount()
    {
        TimelineModel model;
        MainWindow window(&model, nullptr, QString());
        window.setPromptOnClose(false);
        window.resize(1400, 820);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        FaultsDock *dock = window.faultsDock();
        QVERIFY(dock);

        // Before a capture: the dock says rules wait for one.
        window.showFaults();
        auto *caption = dock->findChild<QLabel *>(QStringLiteral("faultsCaption"));
        QVERIFY(caption->text().contains(QStringLiteral("No capture running")));

        QString error;
        const QString target = QStringLiteral("127.0.0.1:%1").arg(m_server.port());
        QVERIFY2(
            window.startCapture({{QStringLiteral("api"), QStringLiteral("127.0.0.1:0"), target}}, &error),
            qPrintable(error));
        const std::shared_ptr<FaultSet> faults = dock->faults();
        QVERIFY2(faults, "a GUI capture always carries a FaultSet");
        QCOMPARE(faults->size(), size_t(0));
        QVERIFY(!caption->text().contains(QStringLiteral("No capture running")));
        const std::string listen = window.captureSession()->hops().at(0).listen.toStdString();

        // A call with no rule goes through.
        {
            lab::LabClient client(listen, {});
            QCOMPARE(client.call(request("before"), std::chrono::seconds(5)).code, 0);
        }

        // A malformed rule: refused with the parser's one line, nothing added.
        QLineEdit *edit = dock->ruleEdit();
        auto *add = dock->findChild<QPushButton *>(QStringLiteral("faultAdd"));
        QVERIFY(add && !add->toolTip().isEmpty() && !edit->toolTip().isEmpty());
        edit->setText(QStringLiteral("explode status=14"));
        QTest::mouseClick(add, Qt::LeftButton);
        QVERIFY2(!dock->errorText().isEmpty(), "a bad rule is refused inline");
        QVERIFY2(dock->errorText().contains(QStringLiteral("explode")), qPrintable(dock->errorText()));
        QCOMPARE(faults->size(), size_t(0));
        QCOMPARE(dock->table()->rowCount(), 0);

        // `close`, added while the capture runs (Return in the line): the next connection is closed.
        edit->setText(QStringLiteral("close"));
        QTest::keyClick(edit, Qt::Key_Return);
        QVERIFY2(dock->errorText().isEmpty(), qPrintable(dock->errorText()));
        QCOMPARE(faults->size(), size_t(1));
        QCOMPARE(dock->table()->rowCount(), 1);
        QCOMPARE(dock->table()->item(0, 2)->text(), QStringLiteral("close"));
        QCOMPARE(dock->table()->item(0, 0)->checkState(), Qt::Checked);
        {
            lab::LabClient client(listen, {});
            const lab::CallResult r = client.call(request("closed"), std::chrono::seconds(5));
            QVERIFY2(r.code != 0, "the call went through a connection the rule closes");
        }
        QTRY_VERIFY_WITH_TIMEOUT(hitsShown(dock, 0) >= 1, 5000); // the dock's counter, refreshed each second
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                for (const Connection &c : model.store().connections())
                    if (c.closeReason.find("fault: close (rule 1)") != std::string::npos) return true;
                return false;
            }(),
            5000);

        // Switched off: calls go through again and the counter stays.
        dock->table()->item(0, 0)->setCheckState(Qt::Unchecked);
        QVERIFY(!faults->enabled(0));
        const std::uint64_t hits = faults->hits(0);
        int code = -1;
        for (int i = 0; i < 10 && code != 0; ++i) {
            // A fresh channel each time, in case the last one is still backing off after the close.
            lab::LabClient client(listen, {});
            code = client.call(request("after-" + std::to_string(i)), std::chrono::seconds(5)).code;
        }
        QCOMPARE(code, 0);
        QCOMPARE(faults->hits(0), hits);
        QTRY_COMPARE_WITH_TIMEOUT(hitsShown(dock, 0), int(hits), 3000);

        // Edit: selecting the rule puts it in the line; a bad edit is refused, a good one replaces it.
        dock->table()->clearSelection();
        dock->table()->selectRow(0);
        QCOMPARE(edit->text(), QStringLiteral("close"));
        auto *editButton = dock->findChild<QPushButton *>(QStringLiteral("faultEdit"));
        edit->setText(QStringLiteral("abort status=99"));
        QTest::mouseClick(editButton, Qt::LeftButton);
        QVERIFY2(!dock->errorText().isEmpty(), "a status out of range is refused");
        QCOMPARE(QString::fromStdString(faults->rule(0).text), QStringLiteral("close"));
        edit->setText(QStringLiteral("abort status=UNAVAILABLE method=/rpcscope.lab.Lab/* percent=30"));
        QTest::mouseClick(editButton, Qt::LeftButton);
        QVERIFY2(dock->errorText().isEmpty(), qPrintable(dock->errorText()));
        QCOMPARE(faults->rule(0).action, FaultAction::Abort);
        QCOMPARE(dock->table()->rowCount(), 1);
        edit->setText(QStringLiteral("reset code=REFUSED_STREAM attempt=1"));
        QTest::keyClick(edit, Qt::Key_Return);
        dock->table()->item(0, 0)->setCheckState(Qt::Checked);
        QCOMPARE(dock->table()->rowCount(), 2);

        if (const QString dir = qEnvironmentVariable("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty()) {
            dock->refresh();
            window.grab().save(QDir(dir).filePath(QStringLiteral("faults-dock.png")));
        }
        window.captureSession()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(caption->text().contains(QStringLiteral("No capture running")), 3000);
    }

    void viewMenuAndShortcut()
    {
        TimelineModel model;
        MainWindow window(&model, nullptr, QString());
        window.setPromptOnClose(false);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *dockWidget = qobject_cast<QDockWidget *>(window.faultsDock()->parent());
        QVERIFY(dockWidget);
        QVERIFY(!dockWidget->isVisible());
        QTest::keyClick(&window, Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY(dockWidget->isVisible());
    }

private:
    lab::LabServer m_server;
};

QTEST_MAIN(TestFaultsDock)
#include "tst_faultsdock.moc"
