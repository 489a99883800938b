// TLS interception inside CONNECT tunnels: a real grpc++ TLS server and a grpc++ client that only has
// grpc_proxy and the rpcscope CA (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) in its environment, nothing else changed;
// its calls are decoded and grouped as on a direct hop. An h2c client through the same proxy is relayed as
// without interception. Python grpcio and grpc-js (Node) go through it with TLS too, and grpc-go speaks TLS
// to a direct intercepting hop.

#include "capturedevents.h"
#include "connectproxy.h"
#include "goclientbuild.h"
#include "grpcjsclient.h"
#include "lab.grpc.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "policycheck.h"
#include "proxyenv.h"
#include "relay.h"
#include "retryserviceconfig.h"
#include "rpcscopeca.h"
#include "serviceconfig.h"
#include "testnet.h"
#include "timelinestore.h"
#include "tlstestclient.h"
#include "tlstestserver.h"
#include "useragentindex.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cstdlib>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <openssl/ssl.h>

using namespace rpcscope;
using namespace tlstest;

namespace {

using Captured = CapturedEvents;

QString python()
{
    return QFile::exists("/usr/bin/python3") ? QStringLiteral("/usr/bin/python3") : QStringLiteral("python3");
}

} // namespace

class TstTlsConnect : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    TlsServer m_server;
    std::string m_caDir;  // the rpcscope CA's, under m_dir/config as XDG_CONFIG_HOME would put it
    std::string m_caPath; // its certificate
    TlsInterceptOptions m_tls;

    std::string serverTarget() const { return "localhost:" + std::to_string(m_server.port); }

    bool startProxy(ConnectProxy &proxy, Captured &cap, const TlsInterceptOptions &tls)
    {
        proxy.setTlsIntercept(tls);
        std::string error;
        const bool ok = proxy.start({"127.0.0.1", 0}, cap.sink(), &error);
        if (!ok) qWarning("%s", error.c_str());
        return ok;
    }

    // The environment of a client process (Python grpcio, grpc-js) a user starts to be captured: grpc_proxy
    // and the roots file, every other proxy variable removed.
    static QProcessEnvironment clientEnv(const std::string &proxy, const std::string &roots)
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name : {"grpc_proxy", "https_proxy", "http_proxy", "no_grpc_proxy", "no_proxy"})
            env.remove(name);
        env.insert("grpc_proxy", QString::fromStdString("http://" + proxy));
        env.insert("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", QString::fromStdString(roots));
        return env;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(m_server.start(m_dir.path().toStdString()));
        m_caDir = m_dir.filePath("config/rpcscope").toStdString();
        RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(m_caDir, false, &error), error.c_str());
        m_caPath = ca.certPath();
        m_tls.enabled = true;
        m_tls.caDirectory = m_caDir;
        m_tls.targetCaFile = m_server.caFile;
        // This process trusts the rpcscope CA, as a user starts a client to capture: per process, never
        // system-wide. C-core reads it once, when the first channel needs default roots.
        setenv("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", m_caPath.c_str(), 1);
    }

    void grpcppTlsThroughConnect()
    {
        m_server.service.m_flaky = true;
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            auto channel = unchangedClient(serverTarget());
            for (int i = 0; i < 3; ++i) {
                const grpc::Status s = labCall(channel);
                QVERIFY2(s.ok(), s.error_message().c_str());
            }
        }
        proxy.stop();
        m_server.service.m_flaky = false;
        QCOMPARE(proxy.targets(), std::vector<std::string>{serverTarget()});

        // As the direct hop's test: three calls, each its failed first attempt and the retry.
        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(3));
        for (const Call &c : store.calls()) {
            QCOMPARE(c.method, std::string("/rpcscope.lab.Lab/Call"));
            QCOMPARE(c.attempts.size(), size_t(2));
            QCOMPARE(c.attempts[0].status.value_or(-1), 14);
            QCOMPARE(c.attempts[1].status.value_or(-1), 0);
            QCOMPARE(c.attempts[1].previousAttempts.value_or(0), 1);
            QCOMPARE(c.hop, serverTarget());
        }
        QCOMPARE(store.connections().size(), size_t(1));
        const Connection &conn = store.connections().front();
        QVERIFY2(conn.decodeError.empty(), conn.decodeError.c_str());
        QCOMPARE(conn.label, serverTarget());
        const std::string notes = cap.notes();
        QVERIFY2(notes.find("TLS intercepted: SNI localhost, ALPN h2; client side TLSv1.3") !=
                     std::string::npos,
                 notes.c_str());
        QVERIFY2(notes.find("certificate CN=localhost") != std::string::npos, notes.c_str());
    }

    void h2cTunnelThroughTheSameProxy()
    {
        // A plaintext client through an intercepting proxy: its tunnel is relayed and decoded as today.
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            lab::LabClient client(target, lab::ServiceConfig::retry(3, 20));
            lab::CallRequest r;
            r.set_call_id("h2c-1");
            r.set_fail_first_n(1);
            r.set_fail_code(14);
            QCOMPARE(client.call(r).code, 0);
        }
        proxy.stop();
        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(1));
        QCOMPARE(store.calls().front().attempts.size(), size_t(2));
        QCOMPARE(store.calls().front().hop, target);
        QCOMPARE(store.connections().size(), size_t(1));
        QVERIFY2(store.connections().front().decodeError.empty(),
                 store.connections().front().decodeError.c_str());
        QVERIFY2(cap.notes().find("TLS") == std::string::npos, cap.notes().c_str());
        QCOMPARE(int(server.arrivalsFor("h2c-1").size()), 2);
    }

    void clientThatDoesNotTrustTheCa()
    {
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            grpc::SslCredentialsOptions ssl;
            ssl.pem_root_certs = m_server.caPem; // the server's CA only: the minted certificate is refused
            const grpc::Status s = labCall(grpc::CreateChannel(serverTarget(), grpc::SslCredentials(ssl)));
            QCOMPARE(s.error_code(), grpc::StatusCode::UNAVAILABLE);
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("client does not trust the rpcscope CA: see `rpcscope-cli ca`") !=
                std::string::npos,
            10000);
        // The proxy goes on serving others.
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            const grpc::Status s = labCall(unchangedClient(serverTarget()));
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        proxy.stop();
    }

    void targetCertificateFailsVerification()
    {
        QTemporaryDir other;
        RpcscopeCa otherCa;
        std::string error;
        QVERIFY(otherCa.open(other.path().toStdString(), false, &error));
        TlsInterceptOptions tls = m_tls;
        tls.targetCaFile = otherCa.certPath();
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, tls));
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            const grpc::Status s = labCall(unchangedClient(serverTarget()));
            QCOMPARE(s.error_code(), grpc::StatusCode::UNAVAILABLE); // an alert, not a call
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("the target's certificate failed verification") != std::string::npos, 10000);
        QVERIFY2(cap.notes().find("--target-ca") != std::string::npos, cap.notes().c_str());
        proxy.stop();

        // A target CA file that cannot serve is refused when the proxy starts, not per tunnel.
        tls.targetCaFile = m_dir.filePath("missing.pem").toStdString();
        ConnectProxy refused;
        refused.setTlsIntercept(tls);
        QVERIFY(!refused.start({"127.0.0.1", 0}, cap.sink(), &error));
        QVERIFY2(error.find("cannot read --target-ca") != std::string::npos, error.c_str());
    }

    void clientHelloSentWithTheConnect()
    {
        // A client that does not wait for the 200: its ClientHello comes in the same write as the CONNECT,
        // so the proxy has read it already. The handshake must still complete, the hello handed on first.
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        QVERIFY(SSL_CTX_load_verify_locations(ctx, m_caPath.c_str(), nullptr) == 1);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        SSL *ssl = SSL_new(ctx);
        SSL_set_tlsext_host_name(ssl, "localhost");
        SSL_set1_host(ssl, "localhost");
        SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char *>("\x02h2"), 3);
        // The hello, made into memory first.
        BIO *in = BIO_new(BIO_s_mem());
        BIO *out = BIO_new(BIO_s_mem());
        SSL_set_bio(ssl, in, out);
        QCOMPARE(SSL_get_error(ssl, SSL_connect(ssl)), SSL_ERROR_WANT_READ);
        char *hello = nullptr;
        const long helloLen = BIO_get_mem_data(out, &hello);
        QVERIFY(helloLen > 0);
        const std::string request = "CONNECT " + serverTarget() + " HTTP/1.1\r\nHost: " + serverTarget() +
                                    "\r\n\r\n" + std::string(hello, size_t(helloLen));
        const int fd = testnet::connectLoopback(proxy.listenAddress().port);
        QVERIFY(fd >= 0);
        testnet::setIoTimeouts(fd, 10);
        QVERIFY(testnet::sendAll(fd, request.data(), request.size()));
        // The answer, a byte at a time so that no TLS record after it is read here.
        std::string answer;
        char c = 0;
        while (answer.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1)
            answer += c;
        QVERIFY2(answer.rfind("HTTP/1.1 200 ", 0) == 0, answer.c_str());
        // The rest of the handshake on the socket: the ServerHello answers the hello sent with the request.
        SSL_set_fd(ssl, fd);
        QVERIFY2(SSL_connect(ssl) == 1, "handshake through the tunnel failed");
        const unsigned char *alpn = nullptr;
        unsigned int alpnLen = 0;
        SSL_get0_alpn_selected(ssl, &alpn, &alpnLen);
        QCOMPARE(std::string(reinterpret_cast<const char *>(alpn), alpnLen), std::string("h2"));
        SSL_shutdown(ssl);
        SSL_free(ssl);
        SSL_CTX_free(ctx);
        close(fd);
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("TLS intercepted: SNI localhost, ALPN h2") != std::string::npos, 10000);
        proxy.stop();
    }

    void pythonGrpcioTlsThroughConnect()
    {
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        // Default roots, the server's own name: only the environment differs from a direct client.
        const char *script = R"(
import sys, grpc
with grpc.secure_channel(sys.argv[1], grpc.ssl_channel_credentials()) as channel:
    call = channel.unary_unary('/rpcscope.lab.Lab/Call')
    call(b'', metadata=[('rpcscope-call-id', 'python-tls-1')], timeout=10)
print('ok')
)";
        QProcess py;
        py.setProcessEnvironment(clientEnv(proxy.listenAddress().toString(), m_caPath));
        py.start(python(), {"-c", script, QString::fromStdString(serverTarget())});
        QVERIFY2(py.waitForFinished(30000), "python did not finish");
        const QByteArray err = py.readAllStandardError();
        if (err.contains("No module named 'grpc'"))
            QFAIL("python3-grpcio is not installed (scripts/setup.sh installs it)");
        QVERIFY2(py.exitCode() == 0 && py.readAllStandardOutput().trimmed() == "ok", err.constData());
        proxy.stop();
        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(1));
        QCOMPARE(store.calls().front().method, std::string("/rpcscope.lab.Lab/Call"));
        QCOMPARE(store.calls().front().hop, serverTarget());
        QCOMPARE(store.calls().front().attempts.back().status.value_or(-1), 0);
        for (const Connection &c : store.connections())
            QVERIFY2(c.decodeError.empty(), c.decodeError.c_str());
        QVERIFY2(cap.notes().find("TLS intercepted: SNI localhost") != std::string::npos,
                 cap.notes().c_str());
    }

    void grpcJsTlsThroughConnect()
    {
        // @grpc/grpc-js (Node), with its retry policy from a service config, unchanged but for grpc_proxy and
        // the rpcscope CA as its default roots: every call and retry is decoded and grouped as grpc++'s.
        QString error;
        const QString modules = grpcjsclient::install(&error);
        QVERIFY2(!modules.isEmpty(), qPrintable(error));
        m_server.service.m_flaky = true;
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        const grpcjsclient::Result r =
            grpcjsclient::run(modules, {QString::fromStdString(serverTarget()), "3", kLabRetry, "grpcjs"},
                              clientEnv(proxy.listenAddress().toString(), m_caPath));
        m_server.service.m_flaky = false;
        proxy.stop();
        QVERIFY2(r.exitCode == 0 && r.out.trimmed() == "ok 3", r.err.constData());
        QCOMPARE(proxy.targets(), std::vector<std::string>{serverTarget()});
        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(3));
        std::vector<std::string> keys;
        for (const Call &c : store.calls()) {
            keys.push_back(c.key);
            QCOMPARE(c.method, std::string("/rpcscope.lab.Lab/Call"));
            QCOMPARE(c.hop, serverTarget());
            QCOMPARE(c.attempts.size(), size_t(2));
            QCOMPARE(c.attempts[0].status.value_or(-1), 14);
            QCOMPARE(c.attempts[1].status.value_or(-1), 0);
            QCOMPARE(c.attempts[1].previousAttempts.value_or(0), 1);
        }
        std::sort(keys.begin(), keys.end());
        QCOMPARE(keys, (std::vector<std::string>{"grpcjs-1", "grpcjs-2", "grpcjs-3"}));
        QCOMPARE(store.connections().size(), size_t(1));
        QVERIFY2(store.connections().front().decodeError.empty(),
                 store.connections().front().decodeError.c_str());
        const std::string notes = cap.notes();
        QVERIFY2(notes.find("TLS intercepted: SNI localhost, ALPN h2") != std::string::npos, notes.c_str());
        QVERIFY2(notes.find("certificate CN=localhost") != std::string::npos, notes.c_str());

        // The user-agent names grpc-js, and each retry lies in grpc-js's own backoff envelope (jittered from
        // the first retry on) for the policy the client was given.
        UserAgentIndex agents;
        agents.record(cap.events);
        std::string configError;
        const auto config = RetryServiceConfig::parse(kLabRetry, &configError);
        QVERIFY2(config, configError.c_str());
        const PolicyCheck check = PolicyCheck::run(store, *config, agents);
        QCOMPARE(check.rows().size(), size_t(1));
        QCOMPARE(check.rows().front().clients, std::string("grpc-node-js 1.14.7"));
        QVERIFY2(check.allConform(), check.text().c_str());
    }

    void grpcJsNoGrpcProxyAndAnUnreachableTarget()
    {
        // What the README's table says of grpc-js, checked: no_grpc_proxy names a host it dials directly, and
        // a CONNECT the proxy refuses fails its call UNAVAILABLE, with the status in grpc-js's log and the
        // reason in the timeline.
        QString error;
        const QString modules = grpcjsclient::install(&error);
        QVERIFY2(!modules.isEmpty(), qPrintable(error));
        Captured cap;
        ConnectProxy proxy;
        QVERIFY(startProxy(proxy, cap, m_tls));
        const std::string via = proxy.listenAddress().toString();

        // Directly to the server, trusting its own CA: nothing reaches the proxy.
        QProcessEnvironment direct = clientEnv(via, m_server.caFile);
        direct.insert("no_grpc_proxy", "localhost");
        grpcjsclient::Result r =
            grpcjsclient::run(modules, {QString::fromStdString(serverTarget()), "1"}, direct);
        QVERIFY2(r.exitCode == 0 && r.out.trimmed() == "ok 1", r.err.constData());
        QVERIFY(proxy.targets().empty());

        const std::string closed = "127.0.0.1:" + std::to_string(testnet::closedPort());
        r = grpcjsclient::run(modules, {QString::fromStdString(closed), "1"}, clientEnv(via, m_caPath));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("call failed: code 14"), r.err.constData());
        QVERIFY2(r.err.contains("with status 502"), r.err.constData());
        // The refusal is the reason its connection closed, under the hop "CONNECT proxy".
        const auto refusal = [&cap] {
            const TimelineStore store = cap.store();
            for (const Connection &c : store.connections())
                if (c.closeReason.rfind("CONNECT refused with 502", 0) == 0) return c.closeReason;
            return std::string();
        };
        QTRY_VERIFY_WITH_TIMEOUT(!refusal().empty(), 10000);
        proxy.stop();
        QVERIFY2(refusal().find("cannot connect to " + closed) != std::string::npos, refusal().c_str());
        QVERIFY(cap.store().calls().empty());
    }

    void grpcGoTlsOnADirectHop()
    {
        // grpc-go with a cert pool of its own holding the rpcscope CA, pointed at an intercepting hop.
        QString goError;
        const QString client = goclient::build(&goError);
        QVERIFY2(!client.isEmpty(), qPrintable(goError));

        Captured cap;
        Relay relay;
        relay.setTlsIntercept(m_tls);
        std::string error;
        QVERIFY2(
            relay.start({"127.0.0.1", 0}, {"localhost", std::uint16_t(m_server.port)}, cap.sink(), &error),
            error.c_str());
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name : {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"})
            env.remove(name);
        p.setProcessEnvironment(env);
        p.start(client, {QStringLiteral("localhost:%1").arg(relay.listenAddress().port),
                         QString::fromStdString(m_caPath)});
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(QString::fromLocal8Bit(p.readAllStandardOutput()).trimmed(), QStringLiteral("call: <nil>"));
        relay.stop();
        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(1));
        QCOMPARE(store.calls().front().method, std::string("/rpcscope.lab.Lab/Call"));
        QCOMPARE(store.calls().front().attempts.back().status.value_or(-1), 0);
        QVERIFY2(store.connections().front().decodeError.empty(),
                 store.connections().front().decodeError.c_str());
        QVERIFY2(cap.notes().find("TLS intercepted: SNI localhost, ALPN h2") != std::string::npos,
                 cap.notes().c_str());
    }

    void cliCaptureProxyTlsIntercept()
    {
        // rpcscope-cli capture --proxy --tls-intercept as a user runs it, with the CA in its config folder,
        // recording a capture file. With RPCSCOPE_TEST_PNG_DIR set the file is kept there: the README's
        // picture of a TLS client and server captured through grpc_proxy is that file, opened in rpcscope.
        QTemporaryDir dir;
        const QString out = dir.filePath("tls-through-connect.rpcscope");
        QProcess cli;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_CONFIG_HOME", m_dir.filePath("config"));
        cli.setProcessEnvironment(env);
        cli.start(QStringLiteral(RPCSCOPE_CLI), {"capture", "--proxy", "--tls-intercept", "--target-ca",
                                                 QString::fromStdString(m_server.caFile), "--out", out});
        QVERIFY(cli.waitForStarted());
        QByteArray said;
        QRegularExpression listening("proxy listening on (127\\.0\\.0\\.1:\\d+)");
        QRegularExpressionMatch m;
        QTRY_VERIFY_WITH_TIMEOUT(
            (said += cli.readAllStandardOutput(), m = listening.match(QString(said))).hasMatch(), 10000);
        m_server.service.m_flaky = true;
        {
            const ProxyEnv proxyEnv(m.captured(1).toStdString());
            auto channel = unchangedClient(serverTarget());
            for (int i = 0; i < 3; ++i) {
                const grpc::Status s = labCall(channel);
                QVERIFY2(s.ok(), s.error_message().c_str());
            }
        }
        m_server.service.m_flaky = false;
        cli.terminate();
        QVERIFY(cli.waitForFinished(20000));
        const QByteArray err = cli.readAllStandardError();
        QVERIFY2(cli.exitCode() == 0, err.constData());
        QVERIFY2(err.contains(QByteArray::fromStdString(m_caPath)), err.constData());
        if (const QByteArray keep = qgetenv("RPCSCOPE_TEST_PNG_DIR"); !keep.isEmpty()) {
            const QString kept = QString::fromLocal8Bit(keep) + "/tls-through-connect.rpcscope";
            QFile::remove(kept);
            QVERIFY(QFile::copy(out, kept));
        }
        const QString json = dir.filePath("tls.json");
        QProcess convert;
        convert.start(QStringLiteral(RPCSCOPE_CLI), {"convert", out, json});
        QVERIFY(convert.waitForFinished(20000));
        QVERIFY2(convert.exitCode() == 0, convert.readAllStandardError().constData());
        QFile file(json);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
        const QJsonArray calls = doc["calls"].toArray();
        QCOMPARE(calls.size(), 3);
        for (const QJsonValue &c : calls)
            QCOMPARE(c.toObject()["attempts"].toArray().size(), 2);
        const QJsonArray connections = doc["connections"].toArray();
        QCOMPARE(connections.size(), 1);
        QCOMPARE(connections[0].toObject()["label"].toString(), QString::fromStdString(serverTarget()));
    }
};

QTEST_GUILESS_MAIN(TstTlsConnect)
#include "tst_tlsconnect.moc"
