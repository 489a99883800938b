// "Intercept TLS" in the New capture dialog, driven offscreen: a bad target CA file is refused inline; a hop
// ticked for TLS captures a real grpc++ TLS client and server, the running page gives the rpcscope CA to
// trust per process, and the connection's lane names its TLS.

#include "capturedialog.h"
#include "capturesession.h"
#include "connectionlanepass.h"
#include "lab.grpc.pb.h"
#include "rpcscopeca.h"
#include "timelinemodel.h"
#include "timelinepainter.h"
#include "timelinetooltips.h"
#include "tlstestserver.h"

#include <QApplication>
#include <QCheckBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdlib>
#include <cstring>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

using namespace rpcscope;
using tlstest::TlsServer;

namespace {

void savePng(const QImage &img, const char *name)
{
    if (const QByteArray dir = qgetenv("RPCSCOPE_TEST_PNG_DIR"); !dir.isEmpty())
        img.save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name));
}

} // namespace

class TestCaptureTlsDialog : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // The rpcscope CA is made in the user's configuration directory: here, a fresh one.
        qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toLocal8Bit());
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_capturetlsdialog"));
        QSettings().clear();
    }

    void checkboxAndBadCaFile()
    {
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.show();
        dialog.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&dialog));
        auto *tls = dialog.findChild<QCheckBox *>(QStringLiteral("interceptTls"));
        QVERIFY(tls);
        QVERIFY2(tls->toolTip().contains(QStringLiteral("rpcscope CA")), qPrintable(tls->toolTip()));
        QVERIFY(tls->toolTip().contains(QStringLiteral("rpcscope-cli ca")));
        QVERIFY(!tls->isChecked());
        QVERIFY(!dialog.hops().front().tls.enabled);
        // Keyboard: it takes focus and Space ticks it.
        QVERIFY(tls->focusPolicy() & Qt::TabFocus);
        tls->setFocus();
        QTest::keyClick(tls, Qt::Key_Space);
        QVERIFY(tls->isChecked());
        QVERIFY(dialog.hops().front().tls.enabled);
        // Alt+D ticks "Don't verify the target", which the hop then carries.
        auto *insecure = dialog.findChild<QCheckBox *>(QStringLiteral("targetInsecure"));
        QVERIFY(insecure && !insecure->toolTip().isEmpty());
        QTest::keyClick(&dialog, Qt::Key_D, Qt::AltModifier);
        QTRY_VERIFY_WITH_TIMEOUT(insecure->isChecked(), 2000);
        QVERIFY(dialog.hops().front().tls.targetInsecure);
        QVERIFY(!dialog.findChild<QLineEdit *>(QStringLiteral("targetCa"))->isEnabled());

        // A target CA file that is not one is refused inline, with the reason, and nothing starts.
        const QString notPem = m_dir.filePath(QStringLiteral("notes.txt"));
        {
            QFile f(notPem);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("just some words\n");
        }
        dialog.setHops(
            {{QStringLiteral("api"), QStringLiteral("127.0.0.1:0"), QStringLiteral("127.0.0.1:1")}});
        dialog.setInterceptTls(0, true);
        dialog.setTargetTls(notPem, false);
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.tlsErrorText().contains(QStringLiteral("holds no PEM certificate")),
                 qPrintable(dialog.tlsErrorText()));
        QVERIFY(dialog.findChild<QLabel *>(QStringLiteral("tlsError"))->isVisible());
        QVERIFY(!session.isRunning());
        savePng(dialog.grab().toImage(), "capturetlsdialog-badca.png");

        dialog.setTargetTls(m_dir.filePath(QStringLiteral("missing.pem")), false);
        QVERIFY(!dialog.startCapture());
        QVERIFY2(dialog.tlsErrorText().contains(QStringLiteral("does not exist")),
                 qPrintable(dialog.tlsErrorText()));
        QVERIFY(!session.isRunning());

        // Without TLS ticked the CA file is not looked at.
        dialog.setInterceptTls(0, false);
        QVERIFY(!dialog.startCapture()); // the target port is closed
        QVERIFY(dialog.tlsErrorText().isEmpty());
        QVERIFY(!dialog.errorText(0).isEmpty());
    }

    void interceptsRealTlsClient()
    {
        TlsServer server;
        QVERIFY(server.start(m_dir.filePath(QStringLiteral("server")).toStdString()));
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        dialog.setHops({{QStringLiteral("front->api"), QStringLiteral("127.0.0.1:0"),
                         QStringLiteral("localhost:%1").arg(server.port)}});
        dialog.setInterceptTls(0, true);
        dialog.setTargetTls(QString::fromStdString(server.caFile), false);
        savePng(dialog.grab().toImage(), "capturetlsdialog-form.png");
        QVERIFY2(dialog.startCapture(), qPrintable(dialog.generalError() + dialog.tlsErrorText()));
        QVERIFY(dialog.isShowingAddresses());
        const QString caPath = dialog.caCertPath();
        QVERIFY(caPath.startsWith(m_dir.filePath(QStringLiteral("config"))));
        auto *trust = dialog.findChild<QLineEdit *>(QStringLiteral("caTrust"));
        QVERIFY(trust);
        QCOMPARE(trust->text(), QStringLiteral("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=%1").arg(caPath));
        savePng(dialog.grab().toImage(), "capturetlsdialog-running.png");

        // A grpc++ client trusting only the rpcscope CA, given the hop's address, its name still localhost.
        QFile caFile(caPath);
        QVERIFY(caFile.open(QIODevice::ReadOnly));
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = caFile.readAll().toStdString();
        grpc::ChannelArguments args;
        args.SetSslTargetNameOverride("localhost");
        const QString listen = dialog.findChild<QLineEdit *>(QStringLiteral("address0"))->text();
        {
            auto channel = grpc::CreateCustomChannel(listen.toStdString(), grpc::SslCredentials(ssl), args);
            auto stub = rpcscope::lab::Lab::NewStub(channel);
            for (int i = 0; i < 2; ++i) {
                grpc::ClientContext ctx;
                ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
                rpcscope::lab::CallRequest req;
                rpcscope::lab::CallReply reply;
                const grpc::Status s = stub->Call(&ctx, req, &reply);
                QVERIFY2(s.ok(), s.error_message().c_str());
            }
        }
        QTRY_VERIFY_WITH_TIMEOUT(model.store().calls().size() == 2 && !model.store().connections().empty() &&
                                     !model.store().connections().front().notes.empty(),
                                 5000);
        const Connection &conn = model.store().connections().front();
        const QString sub = ConnectionLanePass::subtitle(conn);
        QVERIFY2(sub.startsWith(QStringLiteral("TLS 1.3 · h2 · SNI localhost")), qPrintable(sub));
        const QString tip = TimelineToolTips::connection(model.store(), 0);
        QVERIFY2(tip.contains(QStringLiteral("certificate CN=localhost")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("cipher TLS_")), qPrintable(tip));
        TimelinePainter::Options o;
        o.grouping = LaneGrouping::Connection;
        savePng(TimelinePainter::renderImage(model.store(), 1000, o), "capturetlsdialog-lane.png");
        session.stop();
    }

    // "Capture as proxy" with its Intercept TLS box: a grpc++ TLS client that only has grpc_proxy in its
    // environment (and the rpcscope CA as its roots) is captured, its lane named by the CONNECT target.
    void proxyInterceptsTlsTunnels()
    {
        TlsServer server;
        QVERIFY(server.start(m_dir.filePath(QStringLiteral("proxy-server")).toStdString()));
        TimelineModel model;
        CaptureSession session(&model);
        CaptureDialog dialog(&session);
        dialog.show();
        dialog.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&dialog));
        auto *box = dialog.findChild<QCheckBox *>(QStringLiteral("proxyInterceptTls"));
        QVERIFY(box);
        QVERIFY(box->toolTip().contains(QStringLiteral("Alt+T")));
        QVERIFY(!box->isEnabled()); // only with the proxy
        // Only the proxy: the row (filled from the recent targets) is left blank.
        dialog.setHops({{QString(), QStringLiteral("127.0.0.1:0"), QString()}});
        dialog.setCaptureAsProxy(true, QStringLiteral("127.0.0.1:0"));
        QVERIFY(box->isEnabled());
        QTest::keyClick(&dialog, Qt::Key_T, Qt::AltModifier);
        QTRY_VERIFY_WITH_TIMEOUT(box->isChecked(), 2000);
        dialog.setTargetTls(QString::fromStdString(server.caFile), false);
        savePng(dialog.grab().toImage(), "capturetlsdialog-proxy-form.png");
        QVERIFY2(dialog.startCapture(), qPrintable(dialog.generalError() + dialog.tlsErrorText()));
        QVERIFY(dialog.isShowingAddresses());
        QVERIFY(dialog.findChild<QLineEdit *>(QStringLiteral("caTrust")));
        savePng(dialog.grab().toImage(), "capturetlsdialog-proxy-running.png");
        const QString proxy = dialog.findChild<QLineEdit *>(QStringLiteral("address0"))->text();
        QVERIFY2(proxy.startsWith(QStringLiteral("grpc_proxy=http://")), qPrintable(proxy));

        QFile caFile(dialog.caCertPath());
        QVERIFY(caFile.open(QIODevice::ReadOnly));
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = caFile.readAll().toStdString();
        const std::string target = "localhost:" + std::to_string(server.port);
        qputenv("grpc_proxy", proxy.mid(int(std::strlen("grpc_proxy="))).toLocal8Bit());
        {
            auto channel = grpc::CreateChannel(target, grpc::SslCredentials(ssl));
            auto stub = rpcscope::lab::Lab::NewStub(channel);
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
            rpcscope::lab::CallRequest req;
            rpcscope::lab::CallReply reply;
            const grpc::Status s = stub->Call(&ctx, req, &reply);
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        qunsetenv("grpc_proxy");
        QTRY_VERIFY_WITH_TIMEOUT(model.store().calls().size() == 1 && !model.store().connections().empty() &&
                                     !model.store().connections().front().notes.empty(),
                                 5000);
        const Connection &conn = model.store().connections().front();
        QCOMPARE(conn.label, target);
        const QString sub = ConnectionLanePass::subtitle(conn);
        QVERIFY2(sub.startsWith(QStringLiteral("TLS 1.3 · h2 · SNI localhost")), qPrintable(sub));
        session.stop();
    }
};

QTEST_MAIN(TestCaptureTlsDialog)
#include "tst_capturetlsdialog.moc"
