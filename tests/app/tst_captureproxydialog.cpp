// "Capture as proxy" in the New capture dialog, driven offscreen: a grpc++ client started with grpc_proxy,
// never re-pointed, lands on the timeline under its target's hop; a bad proxy address is said inline.

#include "capturedialog.h"
#include "capturesession.h"
#include "labclient.h"
#include "labserver.h"
#include "modelfeed.h"
#include "serviceconfig.h"
#include "timelinemodel.h"

#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QtTest>
#include <cstdlib>

using namespace rpcscope;

class TestCaptureProxyDialog : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_captureproxydialog"));
        QSettings().clear();
    }

    void proxyOnlyCapture()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const QString target = QStringLiteral("127.0.0.1:%1").arg(server.port());
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.show();
        dialog.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&dialog));
        auto *box = dialog.findChild<QCheckBox *>(QStringLiteral("captureAsProxy"));
        QVERIFY(box);
        QVERIFY(!box->toolTip().isEmpty());
        QVERIFY(!dialog.findChild<QLineEdit *>(QStringLiteral("proxyListen"))->isEnabled());
        // Alt+P ticks it, as its mnemonic says.
        QTest::keyClick(&dialog, Qt::Key_P, Qt::AltModifier);
        QTRY_VERIFY_WITH_TIMEOUT(box->isChecked(), 2000); // a mnemonic clicks with a short animation
        QVERIFY(dialog.findChild<QLineEdit *>(QStringLiteral("proxyListen"))->isEnabled());

        // A proxy address other machines reach is refused inline, like a hop's.
        dialog.setHops({{QStringLiteral("hop 1"), QStringLiteral("127.0.0.1:0"), QString()}});
        dialog.setCaptureAsProxy(true, QStringLiteral("0.0.0.0:0"));
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.proxyErrorText().contains(QStringLiteral("Allow remote clients")),
                 qPrintable(dialog.proxyErrorText()));
        QVERIFY(dialog.errorText(0).isEmpty()); // the blank hop row is left out, not complained about
        QVERIFY(!session.isRunning());
        if (const QByteArray dir = qgetenv("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty())
            dialog.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/captureproxydialog-form.png"));

        dialog.setCaptureAsProxy(true, QStringLiteral("127.0.0.1:0"));
        QVERIFY(dialog.startCapture());
        QVERIFY(dialog.isShowingAddresses());
        QCOMPARE(session.hops().size(), size_t(1));
        QVERIFY(session.hops().front().proxy);
        auto *address = dialog.findChild<QLineEdit *>(QStringLiteral("address0"));
        QVERIFY(address);
        QCOMPARE(address->text(), QStringLiteral("grpc_proxy=http://%1").arg(session.hops().front().listen));
        if (const QByteArray dir = qgetenv("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty())
            dialog.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/captureproxydialog.png"));

        // The client is given the server's own address and only the environment sends it through.
        setenv("grpc_proxy", qPrintable(address->text().section(QLatin1Char('='), 1)), 1);
        unsetenv("no_grpc_proxy");
        unsetenv("no_proxy");
        {
            lab::LabClient client(target.toStdString(), lab::ServiceConfig::retry(2, 20));
            lab::CallRequest r;
            r.set_call_id("dialog-1");
            QCOMPARE(client.call(r).code, 0);
        }
        unsetenv("grpc_proxy");
        QTRY_VERIFY_WITH_TIMEOUT(model.store().calls().size() == 1, 5000);
        QCOMPARE(model.store().calls().front().hop, target.toStdString());
        QCOMPARE(session.proxyTargets(), QStringList{target});
        session.stop();
    }
};

QTEST_MAIN(TestCaptureProxyDialog)
#include "tst_captureproxydialog.moc"
