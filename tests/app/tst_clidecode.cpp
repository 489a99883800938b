// rpcscope-cli decode: a real lab capture decoded with the project's own .proto files and, alike, with the
// schemas a lab server in another process gives by reflection; bad .proto files, unreachable servers and
// bad arguments each give one line and their exit code.

#include "runtool.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using testtool::cli;
using testtool::Result;

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// A port on 127.0.0.1 nothing listens on.
int closedPort()
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

} // namespace

class TestCliDecode : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_tmp;
    QString m_capture;

    // retry-basic: three attempts of one call, each request CallRequest{call_id, fail_first_n 2,
    // fail_code 14, payload 100 x 'q', response_size 100}; only the third gets a reply.
    void checkRetryBasic(const QJsonObject &doc)
    {
        QCOMPARE(doc.value("format").toString(), QStringLiteral("rpcscope-messages"));
        const QJsonArray messages = doc.value("messages").toArray();
        QCOMPARE(messages.size(), 4);
        QString callId;
        int requests = 0;
        for (const QJsonValue &v : messages) {
            const QJsonObject m = v.toObject();
            QCOMPARE(m.value("method").toString(), QStringLiteral("/rpcscope.lab.Lab/Call"));
            QVERIFY2(m.contains("json"), qPrintable(QJsonDocument(m).toJson()));
            const QJsonObject j = m.value("json").toObject();
            if (m.value("direction").toString() == QLatin1String("request")) {
                ++requests;
                QCOMPARE(m.value("type").toString(), QStringLiteral("rpcscope.lab.CallRequest"));
                QCOMPARE(j.value("fail_first_n").toInt(), 2);
                QCOMPARE(j.value("fail_code").toInt(), 14);
                QCOMPARE(j.value("response_size").toInt(), 100);
                QCOMPARE(QByteArray::fromBase64(j.value("payload").toString().toLatin1()),
                         QByteArray(100, 'q'));
                if (callId.isEmpty()) callId = j.value("call_id").toString();
                QCOMPARE(j.value("call_id").toString(), callId); // retries repeat the request
            } else {
                QCOMPARE(m.value("type").toString(), QStringLiteral("rpcscope.lab.CallReply"));
                QCOMPARE(j.value("call_id").toString(), callId);
                QCOMPARE(j.value("arrival").toInt(), 3);
                QCOMPARE(QByteArray::fromBase64(j.value("payload").toString().toLatin1()),
                         QByteArray(100, 'r'));
            }
        }
        QCOMPARE(requests, 3);
        QVERIFY(callId.startsWith(QStringLiteral("retry-basic")));
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_capture = m_tmp.filePath("retry.rpcscope");
        const Result run = cli({"run", "retry-basic", "--out", m_capture});
        QVERIFY2(run.code == 0, qPrintable(run.err));
    }

    void decodesWithProtoFiles()
    {
        const QString out = m_tmp.filePath("messages.json");
        const Result r = cli(
            {"decode", m_capture, "--proto", "lab.proto", "--proto-path", RPCSCOPE_PROTO_DIR, "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out, QStringLiteral("decoded 4 message(s) into %1\n").arg(out));
        const QJsonObject doc = readJson(out);
        QCOMPARE(doc.value("schemas").toObject().value("services").toArray(), QJsonArray{"rpcscope.lab.Lab"});
        checkRetryBasic(doc);
    }

    void decodesBySchemasFetchedByReflection()
    {
        QProcess server;
        server.start(QStringLiteral(RPCSCOPE_TEST_LABSERVER), {});
        QVERIFY(server.waitForStarted(10000));
        QTRY_VERIFY_WITH_TIMEOUT(server.canReadLine() || server.waitForReadyRead(100), 10000);
        const QString line = QString::fromUtf8(server.readLine()).trimmed();
        QVERIFY2(line.startsWith(QStringLiteral("port ")), qPrintable(line));
        const QString target = QStringLiteral("127.0.0.1:") + line.mid(5);
        const Result r = cli({"decode", m_capture, "--reflect", target});
        server.kill();
        server.waitForFinished();
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonArray services = doc.value("schemas").toObject().value("services").toArray();
        QVERIFY(services.contains(QStringLiteral("rpcscope.lab.Lab")));
        QVERIFY(services.contains(QStringLiteral("grpc.reflection.v1alpha.ServerReflection")));
        checkRetryBasic(doc);
    }

    void withoutSchemasMessagesAreRawFields()
    {
        const Result r = cli({"decode", m_capture});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray messages =
            QJsonDocument::fromJson(r.out.toUtf8()).object().value("messages").toArray();
        QCOMPARE(messages.size(), 4);
        const QJsonObject first = messages.at(0).toObject();
        QCOMPARE(first.value("note").toString(),
                 QStringLiteral("no schema for /rpcscope.lab.Lab/Call: raw protobuf fields"));
        const QJsonArray raw = first.value("raw").toArray();
        QCOMPARE(raw.size(), 5); // call_id, fail_first_n, fail_code, payload, response_size
        QCOMPARE(raw.at(0).toObject().value("field").toInt(), 1);
        QCOMPARE(raw.at(0).toObject().value("wire_type").toString(), QStringLiteral("len"));
        QVERIFY(raw.at(0).toObject().value("string").toString().startsWith(QStringLiteral("retry-basic")));
        QCOMPARE(raw.at(1).toObject(), (QJsonObject{{"field", 2}, {"wire_type", "varint"}, {"value", 2}}));
        QCOMPARE(raw.at(2).toObject(), (QJsonObject{{"field", 3}, {"wire_type", "varint"}, {"value", 14}}));
        QCOMPARE(raw.at(3).toObject().value("string").toString(), QString(100, 'q'));
        QCOMPARE(raw.at(4).toObject(), (QJsonObject{{"field", 9}, {"wire_type", "varint"}, {"value", 100}}));
        QVERIFY(first.value("hex").toString().startsWith(QStringLiteral("0a")));

        // One message given in hex.
        const Result one = cli({"decode", "--method", "/x.Y/Z", "--hex", "089601120141"});
        QVERIFY2(one.code == 0, qPrintable(one.err));
        const QJsonObject m =
            QJsonDocument::fromJson(one.out.toUtf8()).object().value("messages").toArray().at(0).toObject();
        QCOMPARE(m.value("raw").toArray(),
                 (QJsonArray{QJsonObject{{"field", 1}, {"wire_type", "varint"}, {"value", 150}},
                             QJsonObject{{"field", 2}, {"wire_type", "len"}, {"string", "A"}}}));
        QCOMPARE(m.value("hex").toString(), QStringLiteral("089601120141"));
    }

    void errorsAreOneLine()
    {
        const QString bad = m_tmp.filePath("bad.proto");
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("syntax = \"proto3\";\npackage bad;\nservice S {\n  rpc M(In) returns (Out)\n}\n");
        }
        const auto oneLine = [](const Result &r) { return r.err.count(QLatin1Char('\n')) == 1; };
        Result r = cli({"decode", m_capture, "--proto", bad});
        QCOMPARE(r.code, 2);
        QVERIFY2(oneLine(r), qPrintable(r.err));
        QVERIFY2(
            r.err.startsWith(QStringLiteral("rpcscope-cli: cannot load the .proto files: %1:5:1: ").arg(bad)),
            qPrintable(r.err));

        r = cli({"decode", m_capture, "--reflect", QStringLiteral("127.0.0.1:%1").arg(closedPort())});
        QCOMPARE(r.code, 1);
        QVERIFY2(oneLine(r) && r.err.startsWith(QStringLiteral("rpcscope-cli: cannot reach 127.0.0.1:")),
                 qPrintable(r.err));

        r = cli({"decode", m_tmp.filePath("absent.rpcscope")});
        QCOMPARE(r.code, 2);
        QVERIFY2(oneLine(r), qPrintable(r.err));
        r = cli({"decode", "--method", "/x.Y/Z", "--hex", "0f0"});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral("rpcscope-cli: --hex needs an even number of hex digits, got 3\n"));
        r = cli({"decode", m_capture, "--proto-path", RPCSCOPE_PROTO_DIR});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QStringLiteral("rpcscope-cli: --proto-path needs --proto FILE too\n"));
        r = cli({"decode"});
        QCOMPARE(r.code, 2);
    }
};

QTEST_GUILESS_MAIN(TestCliDecode)
#include "tst_clidecode.moc"
