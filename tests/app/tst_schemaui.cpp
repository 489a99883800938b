// The GUI's Schemas menu behind the widgets: the .proto dialog shows the importer's errors and remembers what
// was loaded; reflection fetches run off the GUI thread against a real lab server, one at a time.

#include "labserver.h"
#include "schemacontroller.h"
#include "schemadialog.h"
#include "testnet.h"

#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;

class TestSchemaUi : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // QSettings of this test only
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_schemaui"));
        QSettings().clear();
    }

    void dialogShowsImporterErrorsAndRemembers()
    {
        QTemporaryDir tmp;
        const QString bad = tmp.filePath("bad.proto");
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("syntax = \"proto3\";\npackage bad;\nmessage A {\n  int32 x = 1\n  string y = 2;\n}\n");
        }
        QWidget window;
        SchemaController controller(&window);
        QSignalSpy changed(&controller, &SchemaController::schemasChanged);
        SchemaDialog dialog(controller.dialogHooks(), &window);
        QVERIFY(!dialog.load()); // nothing to load yet
        dialog.setFiles({bad});
        QVERIFY(!dialog.load());
        QCOMPARE(dialog.errorText(), bad + QStringLiteral(":5:3: Expected \";\"."));
        QCOMPARE(controller.decoder()->fileCount(), size_t(0));
        if (qEnvironmentVariableIsSet("RPCSCOPE_SCHEMA_DIALOG_PNG")) {
            dialog.setImportPaths({tmp.path()});
            QVERIFY(dialog.grab().save(qEnvironmentVariable("RPCSCOPE_SCHEMA_DIALOG_PNG")));
            dialog.setImportPaths({});
        }

        dialog.setFiles({QStringLiteral("lab.proto")});
        dialog.setImportPaths({QStringLiteral(RPCSCOPE_PROTO_DIR)});
        QVERIFY(dialog.load());
        QCOMPARE(dialog.errorText(), QString());
        QCOMPARE(controller.decoder()->serviceNames(), std::vector<std::string>{"rpcscope.lab.Lab"});
        QCOMPARE(changed.count(), 2);
        QCOMPARE(controller.summary(), QStringLiteral("1 schema file, services: rpcscope.lab.Lab"));

        // The next start loads them again, and a new dialog lists them.
        SchemaController next(&window);
        next.loadRemembered();
        QCOMPARE(next.decoder()->fileNames(), std::vector<std::string>{"lab.proto"});
        SchemaDialog reopened(next.dialogHooks(), &window);
        QCOMPARE(reopened.files(), QStringList{QStringLiteral("lab.proto")});
        QCOMPARE(reopened.importPaths(), QStringList{QStringLiteral(RPCSCOPE_PROTO_DIR)});
    }

    void fetchesByReflectionOffTheGuiThread()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const QString target = QStringLiteral("127.0.0.1:%1").arg(server.port());
        QWidget window;
        SchemaController controller(&window);
        QSignalSpy finished(&controller, &SchemaController::fetchFinished);
        QSignalSpy changed(&controller, &SchemaController::schemasChanged);
        QVERIFY(controller.fetch(target, true));
        QVERIFY(controller.isFetching());
        QVERIFY(!controller.fetch(target, true)); // one at a time
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.count(), 1);
        QVERIFY2(finished[0][0].toBool(), qPrintable(finished[0][1].toString()));
        QVERIFY2(finished[0][1].toString().startsWith(QStringLiteral("Fetched ")),
                 qPrintable(finished[0][1].toString()));
        QCOMPARE(changed.count(), 1);
        QVERIFY(controller.decoder()->methodTypes("/rpcscope.lab.Lab/Call"));
        QVERIFY(!controller.isFetching());

        // A service of the captured calls that no schema covers is fetched once, not again and again.
        controller.setCapturedServices([] { return QStringList{QStringLiteral("rpcscope.lab.Lab")}; });
        controller.fetchMissing(target);
        QVERIFY(!controller.isFetching()); // covered already
        controller.setCapturedServices([] { return QStringList{QStringLiteral("acme.Unknown")}; });
        controller.fetchMissing(target);
        QVERIFY(controller.isFetching());
        QVERIFY(finished.wait(10000));
        controller.fetchMissing(target);
        QVERIFY(!controller.isFetching());

        // Nobody there: the reason, quietly (no dialog).
        const int fd = testnet::listenLoopback();
        const int port = testnet::localPort(fd);
        ::close(fd);
        finished.clear();
        QVERIFY(controller.fetch(QStringLiteral("127.0.0.1:%1").arg(port), true));
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished[0][0].toBool(), false);
        QVERIFY2(finished[0][1].toString().startsWith(QStringLiteral("cannot reach 127.0.0.1:%1").arg(port)),
                 qPrintable(finished[0][1].toString()));
        QVERIFY(controller.decoder()->methodTypes("/rpcscope.lab.Lab/Call")); // what was fetched stays
    }
};

QTEST_MAIN(TestSchemaUi)
#include "tst_schemaui.moc"
