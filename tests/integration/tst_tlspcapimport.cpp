// A pcap of TLS traffic plus its key log imports like the live capture: `rpcscope-cli capture --tls-intercept
// --keylog K` relays a real grpc++ TLS client (with retries) to a real grpc++ TLS server while dumpcap
// records the upstream leg; `rpcscope-cli convert LEG.pcapng --keylog K` must then give the same calls and
// attempts as the capture's own JSON. Once with TLS 1.3 (the default) and once with TLS 1.2, which an OpenSSL
// configuration forces on the capture process (grpc++ has no switch for it). A key log without the
// connection's keys gives a note and an import without calls; a file that is no key log is a bad argument.
// The GUI opens the same pcap with its key log (File > Open with key log…, Ctrl+Alt+O) into the same calls.

#include "lab.grpc.pb.h"
#include "mainwindow.h"
#include "rpcscopeca.h"
#include "timelinemodel.h"
#include "tlstestclient.h"
#include "tlstestserver.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <grpcpp/grpcpp.h>

using namespace tlstest;

namespace {

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// Each call as "METHOD: STATUS, STATUS" (its attempts' statuses in order), sorted.
QStringList calls(const QJsonObject &doc)
{
    QStringList out;
    for (const QJsonValue &c : doc["calls"].toArray()) {
        QStringList statuses;
        for (const QJsonValue &a : c.toObject()["attempts"].toArray())
            statuses << a.toObject()["status"].toObject()["name"].toString();
        out << c.toObject()["method"].toString() + ": " + statuses.join(", ");
    }
    out.sort();
    return out;
}

QString connectionNotes(const QJsonObject &doc)
{
    QString all;
    for (const QJsonValue &c : doc["connections"].toArray())
        for (const QJsonValue &n : c.toObject()["notes"].toArray())
            all += n.toString() + "\n";
    return all;
}

struct Run
{
    int exitCode = -1;
    QString err;
};

Run cli(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral(RPCSCOPE_CLI), args);
    Run r;
    if (!p.waitForFinished(120000)) return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

} // namespace

class TstTlsPcapImport : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    TlsServer m_server;
    std::string m_proxyCaPem;
    QString m_dumpcap;
    QString m_pcap;   // a recorded upstream leg (TLS 1.3), for the key-log error cases
    QString m_keylog; // its key log

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_dumpcap = QStandardPaths::findExecutable("dumpcap");
        QVERIFY2(!m_dumpcap.isEmpty(),
                 "dumpcap comes with the tshark package (scripts/setup.sh installs it)");
        QVERIFY(m_server.start(m_dir.path().toStdString()));
        m_server.service.m_flaky = true; // every call: a failed attempt, then its retry
        // The capture process finds its CA in $XDG_CONFIG_HOME/rpcscope: made here, so the client can trust
        // it.
        rpcscope::RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(m_dir.filePath("rpcscope").toStdString(), false, &error), error.c_str());
        m_proxyCaPem = ca.certPem();
    }

    void importEqualsLiveCapture_data()
    {
        QTest::addColumn<QString>("version");
        QTest::newRow("TLS 1.3") << "TLS 1.3";
        QTest::newRow("TLS 1.2") << "TLS 1.2";
    }

    void importEqualsLiveCapture()
    {
        QFETCH(QString, version);
        const QString tag = version == "TLS 1.3" ? "13" : "12";
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_CONFIG_HOME", m_dir.path());
        if (version == "TLS 1.2") {
            // OpenSSL's system-wide defaults, for the capture process only: it offers and accepts TLS 1.2 at
            // most.
            const QString conf = m_dir.filePath("tls12.cnf");
            QFile f(conf);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("openssl_conf = init\n[init]\nssl_conf = ssl\n[ssl]\nsystem_default = defaults\n"
                    "[defaults]\nMaxProtocol = TLSv1.2\n");
            f.close();
            env.insert("OPENSSL_CONF", conf);
        }
        const QString keylog = m_dir.filePath("keys" + tag + ".log");
        // The kernel hands dumpcap packets in blocks and dumpcap buffers its file: no event says that every
        // packet is in. So each round gives it a while after the calls, then stops it and imports the file;
        // a round that comes out short on a loaded machine is tried again, waiting longer.
        QString mismatch;
        for (int round = 1; round <= 3; ++round) {
            const QString pcap = m_dir.filePath(QString("leg%1-%2.pcapng").arg(tag).arg(round));
            const QString live = m_dir.filePath(QString("live%1-%2.json").arg(tag).arg(round));
            const QString imported = m_dir.filePath(QString("imported%1-%2.json").arg(tag).arg(round));
            QProcess capture;
            capture.setProcessChannelMode(QProcess::MergedChannels);
            capture.start(m_dumpcap,
                          {"-i", "lo", "-f", QString("tcp port %1").arg(m_server.port), "-w", pcap});
            QByteArray said;
            QTRY_VERIFY2_WITH_TIMEOUT((said += capture.readAll()).contains("Capturing on") ||
                                          capture.state() == QProcess::NotRunning,
                                      "dumpcap did not start", 10000);
            if (capture.state() == QProcess::NotRunning)
                QSKIP("dumpcap cannot capture on the loopback interface here (needs capture rights)");

            QProcess proxy;
            proxy.setProcessEnvironment(env);
            proxy.start(QStringLiteral(RPCSCOPE_CLI),
                        {"capture", "--target", QString("127.0.0.1:%1").arg(m_server.port), "--out", live,
                         "--tls-intercept", "--target-ca", QString::fromStdString(m_server.caFile),
                         "--keylog", keylog});
            QVERIFY(proxy.waitForStarted());
            QByteArray out;
            QRegularExpression listening("listening on (127\\.0\\.0\\.1:\\d+)");
            QRegularExpressionMatch m;
            QTRY_VERIFY_WITH_TIMEOUT(
                (out += proxy.readAllStandardOutput(), m = listening.match(QString(out))).hasMatch() ||
                    proxy.state() == QProcess::NotRunning,
                10000);
            QVERIFY2(m.hasMatch(), proxy.readAllStandardError().constData());
            {
                auto channel = tlsChannelTo(m.captured(1).toStdString(), m_proxyCaPem);
                for (int i = 0; i < 3; ++i) {
                    const grpc::Status s = labCall(channel);
                    QVERIFY2(s.ok(), s.error_message().c_str());
                }
            }
            QTest::qWait(2000 * round);
            proxy.terminate();
            QVERIFY(proxy.waitForFinished(20000));
            QCOMPARE(proxy.exitCode(), 0);
            capture.terminate();
            QVERIFY(capture.waitForFinished(10000));

            const QJsonObject liveDoc = readJson(live);
            QCOMPARE(calls(liveDoc).size(), 3);
            QCOMPARE(calls(liveDoc).front(), QString("/rpcscope.lab.Lab/Call: UNAVAILABLE, OK"));
            const Run conv = cli({"convert", pcap, imported, "--keylog", keylog});
            QVERIFY2(conv.exitCode == 0, qPrintable(conv.err));
            const QJsonObject importedDoc = readJson(imported);
            const QString notes = connectionNotes(importedDoc);
            if (calls(importedDoc) == calls(liveDoc)) {
                QVERIFY2(notes.contains("TLS decrypted with the key log: " + version), qPrintable(notes));
                QVERIFY2(!conv.err.contains("no key"), qPrintable(conv.err));
                mismatch.clear();
                if (version == "TLS 1.3") {
                    m_pcap = pcap;
                    m_keylog = keylog;
                }
                break;
            }
            mismatch += QString("round %1: live %2, imported %3 (%4); ")
                            .arg(round)
                            .arg(calls(liveDoc).join(" | "), calls(importedDoc).join(" | "), conv.err);
        }
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    // A key log that lacks the connection's keys: each connection gets its note, the file still imports.
    void missingKeysAreNotes()
    {
        if (m_pcap.isEmpty()) QSKIP("needs the TLS 1.3 recording of importEqualsLiveCapture");
        const QString other = m_dir.filePath("other.log");
        QFile f(other);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("CLIENT_RANDOM " + QByteArray(64, '1') + " " + QByteArray(96, '2') + "\n");
        f.close();
        const QString out = m_dir.filePath("nokeys.json");
        const Run r = cli({"convert", m_pcap, out, "--keylog", other});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(
            r.err.contains("TLS, no key in the key log for this connection: SNI localhost, client random "),
            qPrintable(r.err));
        const QJsonObject doc = readJson(out);
        QVERIFY(!doc["connections"].toArray().isEmpty());
        QCOMPARE(doc["calls"].toArray().size(), 0);
        // One note on each TLS connection (the proxy's reachability probe to the target carries no TLS).
        int noted = 0;
        for (const QJsonValue &c : doc["connections"].toArray()) {
            const QJsonArray notes = c.toObject()["notes"].toArray();
            const int n = int(std::count_if(notes.begin(), notes.end(), [](const QJsonValue &v) {
                return v.toString().startsWith(
                    "TLS, no key in the key log for this connection: SNI localhost");
            }));
            QVERIFY2(n <= 1, qPrintable(connectionNotes(doc)));
            noted += n;
        }
        QVERIFY2(noted >= 1, qPrintable(connectionNotes(doc)));
    }

    void guiOpensWithKeyLog()
    {
        if (m_pcap.isEmpty()) QSKIP("needs the TLS 1.3 recording of importEqualsLiveCapture");
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_tlspcapimport"));
        QSettings().clear();
        rpcscope::TimelineModel model;
        rpcscope::MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        auto *action = window.findChild<QAction *>(QStringLiteral("openWithKeylog"));
        QVERIFY(action);
        QCOMPARE(action->shortcut(), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_O));
        QVERIFY(action->toolTip().contains("key log"));
        QVERIFY(window.actions().contains(action)); // the shortcut works with the menu closed

        QString error;
        QVERIFY2(window.openFile(m_pcap, &error, true, m_keylog), qPrintable(error));
        QCOMPARE(int(model.store().calls().size()), 3);
        for (const rpcscope::Call &c : model.store().calls()) {
            QCOMPARE(c.method, std::string("/rpcscope.lab.Lab/Call"));
            QCOMPARE(c.attempts.size(), size_t(2));
        }
        // A key log that is none: the file does not open, and the reason names the key log.
        const QString notKeys = m_dir.filePath("notkeys.log");
        QFile f(notKeys);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("hello\n");
        f.close();
        QVERIFY(!window.openFile(m_pcap, &error, true, notKeys));
        QVERIFY2(error.contains("key log") && error.contains("line 1"), qPrintable(error));
    }

    void badKeyLogIsABadArgument()
    {
        if (m_pcap.isEmpty()) QSKIP("needs the TLS 1.3 recording of importEqualsLiveCapture");
        const QString bad = m_dir.filePath("bad.log");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a key log\n");
        f.close();
        Run r = cli({"convert", m_pcap, m_dir.filePath("bad.json"), "--keylog", bad});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.trimmed().count('\n') == 0 && r.err.contains("line 1 is no key-log line"),
                 qPrintable(r.err));
        r = cli({"convert", m_pcap, m_dir.filePath("bad.json"), "--keylog", m_dir.filePath("absent.log")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("cannot read the key log"), qPrintable(r.err));
        // Without a key log the TLS capture holds no h2c, and the error says what would decrypt it.
        r = cli({"convert", m_pcap, m_dir.filePath("bad.json")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("needs the TLS key log"), qPrintable(r.err));
    }
};

QTEST_MAIN(TstTlsPcapImport)
#include "tst_tlspcapimport.moc"
