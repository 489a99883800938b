// The CONNECT proxy with the real clients Debian has: grpc++ (C-core) and Python grpcio reach a real grpc++
// server through grpc_proxy without being re-pointed, each target a hop; and what a broken or hostile client
// gets back.

#include "connectproxy.h"
#include "decoderthread.h"
#include "goclientbuild.h"
#include "labclient.h"
#include "labserver.h"
#include "proxyenv.h"
#include "relay.h"
#include "relayloop.h"
#include "serviceconfig.h"
#include "testnet.h"
#include "timelinemodel.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <ifaddrs.h>
#include <mutex>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace rpcscope;

namespace {

struct Collector
{
    std::mutex mu;
    EventBatch events;
    ConnectProxy::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            events.insert(events.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
        };
    }
    EventBatch take()
    {
        std::lock_guard lk(mu);
        return std::move(events);
    }
};

int connectTo(std::uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// Everything the proxy answers until it closes (or timeoutMs passes without a byte).
std::string readAll(int fd, int timeoutMs = 5000)
{
    std::string out;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, timeoutMs) <= 0) break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

// One request's answer: the status line and the body.
std::string ask(std::uint16_t port, const std::string &request)
{
    const int fd = connectTo(port);
    if (fd < 0) return "cannot connect";
    [[maybe_unused]] auto n = send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string answer = readAll(fd);
    close(fd);
    return answer;
}

const Call *onlyCall(const TimelineModel &model, const std::string &key)
{
    for (const Call &c : model.store().calls())
        if (c.key == key) return &c;
    return nullptr;
}

std::string closeReasonOf(const TimelineModel &model, const std::string &needle)
{
    for (const Connection &c : model.store().connections())
        if (c.closeReason.find(needle) != std::string::npos) return c.label + " | " + c.closeReason;
    return {};
}

// A target that takes one connection and reads (and counts) whatever it is sent until the client goes.
class DrainTarget
{
public:
    DrainTarget() : m_listen(testnet::listenLoopback())
    {
        m_thread = std::thread([this] {
            pollfd p{m_listen, POLLIN, 0};
            while (!m_stop && poll(&p, 1, 50) <= 0) {
            }
            if (m_stop) return;
            const int fd = accept(m_listen, nullptr, nullptr);
            if (fd < 0) return;
            char buf[65536];
            while (!m_stop) {
                pollfd q{fd, POLLIN, 0};
                if (poll(&q, 1, 50) <= 0) continue;
                const ssize_t n = recv(fd, buf, sizeof buf, 0);
                if (n <= 0) break;
                m_got += size_t(n);
            }
            close(fd);
        });
    }
    ~DrainTarget()
    {
        m_stop = true;
        m_thread.join();
        close(m_listen);
    }
    std::uint16_t port() const { return testnet::localPort(m_listen); }
    size_t got() const { return m_got; }

private:
    int m_listen;
    std::atomic<bool> m_stop{false};
    std::atomic<size_t> m_got{0};
    std::thread m_thread;
};

// Connects to the proxy and asks for a tunnel to 127.0.0.1:port; the socket once the proxy said 200, or -1.
int tunnelTo(std::uint16_t proxyPort, std::uint16_t port)
{
    const int fd = connectTo(proxyPort);
    if (fd < 0) return -1;
    const std::string authority = "127.0.0.1:" + std::to_string(port);
    const std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
    if (!testnet::sendAll(fd, request.data(), request.size())) {
        close(fd);
        return -1;
    }
    std::string answer;
    char c;
    while (answer.find("\r\n\r\n") == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0 || recv(fd, &c, 1, 0) != 1) break;
        answer += c;
    }
    if (answer.rfind("HTTP/1.1 200", 0) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

QString python()
{
    // Debian's interpreter, where python3-grpcio is installed, whatever else is first on PATH.
    return QFile::exists("/usr/bin/python3") ? QStringLiteral("/usr/bin/python3") : QStringLiteral("python3");
}

} // namespace

class TestConnectProxy : public QObject
{
    Q_OBJECT
private slots:
    void grpcppRetriesThroughConnectAsDirect()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());

        // The same retried call, once through a direct hop and once through the proxy by environment.
        Collector direct, proxied;
        Relay relay;
        QVERIFY2(
            relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, direct.sink(), &error),
            error.c_str());
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, proxied.sink(), &error), error.c_str());

        lab::CallRequest request;
        request.set_fail_first_n(2);
        request.set_fail_code(14);
        request.set_fail_message("try again");
        {
            lab::LabClient client(relay.listenAddress().toString(), lab::ServiceConfig::retry(4, 20));
            request.set_call_id("direct-1");
            QCOMPARE(client.call(request).code, 0);
        }
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            // The client is given the server's own address: only the environment sends it through the proxy.
            lab::LabClient client(target, lab::ServiceConfig::retry(4, 20));
            request.set_call_id("proxied-1");
            QCOMPARE(client.call(request).code, 0);
        }
        relay.stop();
        proxy.stop();
        QCOMPARE(proxy.targets(), std::vector<std::string>{target});

        TimelineModel viaRelay, viaProxy;
        viaRelay.appendBatch(direct.take());
        viaProxy.appendBatch(proxied.take());
        const Call *a = onlyCall(viaRelay, "direct-1");
        const Call *b = onlyCall(viaProxy, "proxied-1");
        QVERIFY(a);
        QVERIFY2(b, "the grpc++ client did not go through the proxy");
        QCOMPARE(viaProxy.store().calls().size(), size_t(1));
        // Grouped exactly as on the direct hop: one call, three attempts, the same statuses and counters.
        QCOMPARE(b->method, a->method);
        QCOMPARE(b->attempts.size(), size_t(3));
        QCOMPARE(b->attempts.size(), a->attempts.size());
        for (size_t k = 0; k < a->attempts.size(); ++k) {
            QCOMPARE(b->attempts[k].status, a->attempts[k].status);
            QCOMPARE(b->attempts[k].previousAttempts, a->attempts[k].previousAttempts);
            QCOMPARE(b->attempts[k].connection, b->attempts[0].connection);
        }
        QCOMPARE(b->attempts.back().status.value_or(-1), 0);
        // The hop is the CONNECT authority, its server the real target, and it decoded cleanly.
        QCOMPARE(b->hop, target);
        QCOMPARE(viaProxy.store().connections().size(), size_t(1));
        const Connection &tunnel = viaProxy.store().connections().front();
        QCOMPARE(tunnel.label, target);
        QCOMPARE(tunnel.server, target);
        QVERIFY2(tunnel.decodeError.empty(), tunnel.decodeError.c_str());
        QVERIFY(!tunnel.protocolError());
        QCOMPARE(int(server.arrivalsFor("proxied-1").size()), 3);
    }

    void manyTargetsOneTimeline()
    {
        lab::LabServer one, two;
        std::string error;
        QVERIFY2(one.start(&error) && two.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::string a = "127.0.0.1:" + std::to_string(one.port());
        const std::string b = "localhost:" + std::to_string(two.port());
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            lab::LabClient toA(a, lab::ServiceConfig::retry(2, 20));
            lab::LabClient toB(b, lab::ServiceConfig::retry(2, 20));
            for (const char *id : {"a-1", "a-2"}) {
                lab::CallRequest r;
                r.set_call_id(id);
                QCOMPARE(toA.call(r).code, 0);
            }
            lab::CallRequest r;
            r.set_call_id("b-1");
            QCOMPARE(toB.call(r).code, 0);
        }
        proxy.stop();
        QCOMPARE(proxy.targets(), (std::vector<std::string>{a, b}));
        TimelineModel model;
        model.appendBatch(events.take());
        QCOMPARE(model.store().calls().size(), size_t(3));
        QCOMPARE(onlyCall(model, "a-2")->hop, a);
        QCOMPARE(onlyCall(model, "b-1")->hop, b);
        QCOMPARE(int(one.arrivals().size()), 2);
        QCOMPARE(int(two.arrivals().size()), 1);
    }

    void noGrpcProxySkipsTheProxy()
    {
        // What the README says about no_grpc_proxy, checked: C-core then connects directly.
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        {
            const ProxyEnv env(proxy.listenAddress().toString(), "127.0.0.1");
            lab::LabClient client("127.0.0.1:" + std::to_string(server.port()),
                                  lab::ServiceConfig::retry(2, 20));
            lab::CallRequest r;
            r.set_call_id("skipped");
            QCOMPARE(client.call(r).code, 0);
        }
        proxy.stop();
        QVERIFY(proxy.targets().empty());
        QVERIFY(events.take().empty());
    }

    void pythonGrpcioThroughConnect()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());

        lab::CallRequest r;
        r.set_call_id("python-1");
        const QByteArray request = QByteArray::fromStdString(r.SerializeAsString()).toHex();
        // No stubs needed: the request goes as serialized bytes with the call id as metadata.
        const char *script = R"(
import binascii, sys, grpc
target, request = sys.argv[1], binascii.unhexlify(sys.argv[2])
with grpc.insecure_channel(target) as channel:
    call = channel.unary_unary('/rpcscope.lab.Lab/Call')
    call(request, metadata=[('rpcscope-call-id', 'python-1')], timeout=10)
print('ok')
)";
        QProcess py;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name : {"https_proxy", "http_proxy", "no_grpc_proxy", "no_proxy"})
            env.remove(name);
        env.insert("grpc_proxy", QString::fromStdString("http://" + proxy.listenAddress().toString()));
        py.setProcessEnvironment(env);
        py.start(python(), {"-c", script, QString::fromStdString(target), QString::fromLatin1(request)});
        QVERIFY2(py.waitForFinished(30000), "python did not finish");
        const QByteArray err = py.readAllStandardError();
        if (err.contains("No module named 'grpc'"))
            QFAIL("python3-grpcio is not installed (scripts/setup.sh installs it)");
        QVERIFY2(py.exitCode() == 0 && py.readAllStandardOutput().trimmed() == "ok", err.constData());
        proxy.stop();

        QCOMPARE(proxy.targets(), std::vector<std::string>{target});
        TimelineModel model;
        model.appendBatch(events.take());
        const Call *call = onlyCall(model, "python-1");
        QVERIFY2(call, "the Python client's call is not on the timeline");
        QCOMPARE(call->method, std::string("/rpcscope.lab.Lab/Call"));
        QCOMPARE(call->hop, target);
        QCOMPARE(call->attempts.back().status.value_or(-1), 0);
        for (const Connection &c : model.store().connections())
            QVERIFY2(c.decodeError.empty(), c.decodeError.c_str());
    }

    void bytesSentWithTheRequestGoFirst()
    {
        // A client that does not wait for the 200: its HTTP/2 preface and SETTINGS come in the same write as
        // the CONNECT. They must reach the server first, unchanged, and be decoded like the rest.
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                                    std::string("\0\0\0\x04\0\0\0\0\0", 9); // an empty SETTINGS
        const std::string request =
            "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n" + preface;
        const int fd = connectTo(proxy.listenAddress().port);
        QVERIFY(fd >= 0);
        QCOMPARE(send(fd, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
        // The 200, then the server's frames, among them the ACK of our SETTINGS: it got the early bytes.
        std::string answer;
        const std::string ok = "HTTP/1.1 200 Connection Established\r\n\r\n";
        char buf[4096];
        bool acked = false;
        while (!acked) {
            pollfd p{fd, POLLIN, 0};
            QVERIFY2(poll(&p, 1, 5000) == 1, "no SETTINGS ACK from the server");
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            QVERIFY2(n > 0, "the tunnel closed before the server acknowledged the client's SETTINGS");
            answer.append(buf, size_t(n));
            if (answer.size() < ok.size()) continue;
            QCOMPARE(answer.substr(0, ok.size()), ok);
            for (size_t at = ok.size(); at + 9 <= answer.size();) {
                const auto *h = reinterpret_cast<const unsigned char *>(answer.data() + at);
                acked |= h[3] == FrameSettings && (h[4] & FlagAck);
                at += 9 + (size_t(h[0]) << 16 | size_t(h[1]) << 8 | h[2]);
            }
        }
        close(fd);
        proxy.stop();
        TimelineModel model;
        model.appendBatch(events.take());
        QCOMPARE(model.store().connections().size(), size_t(1));
        const Connection &c = model.store().connections().front();
        QCOMPARE(c.label, target);
        QVERIFY2(c.decodeError.empty(), c.decodeError.c_str());
        // The client's SETTINGS was decoded: the decoder saw the early bytes, in order.
        bool clientSettings = false;
        for (const FrameRecord &f : model.store().frames())
            clientSettings |= f.dir == Direction::ClientToServer && f.type == FrameSettings;
        QVERIFY(clientSettings);
    }

    void grpcGoHttpsProxy()
    {
        // grpc-go reads HTTPS_PROXY, but not for a loopback target: it then dials directly. A target on
        // another address of this machine (a relay listening there, in front of the lab server) goes through.
        QString goError;
        const QString client = goclient::build(&goError);
        QVERIFY2(!client.isEmpty(), qPrintable(goError));

        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        auto run = [&](const std::string &target) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            for (const char *name : {"no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "https_proxy"})
                env.remove(name);
            env.insert("HTTPS_PROXY", QString::fromStdString("http://" + proxy.listenAddress().toString()));
            p.setProcessEnvironment(env);
            p.start(client, {QString::fromStdString(target)});
            p.waitForFinished(20000);
            return QString::fromLocal8Bit(p.readAllStandardOutput()).trimmed();
        };
        const std::string loopback = "127.0.0.1:" + std::to_string(server.port());
        QCOMPARE(run(loopback), QStringLiteral("call: <nil>"));
        QVERIFY2(proxy.targets().empty(), "grpc-go went through the proxy for a loopback target");

        // Another address of this machine, if it has one.
        std::string other;
        ifaddrs *list = nullptr;
        if (getifaddrs(&list) == 0) {
            for (ifaddrs *i = list; i && other.empty(); i = i->ifa_next)
                if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                    !(i->ifa_flags & IFF_LOOPBACK)) {
                    char host[INET_ADDRSTRLEN] = {};
                    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr, host,
                              sizeof host);
                    other = host;
                }
            freeifaddrs(list);
        }
        if (other.empty()) QSKIP("this machine has no address but loopback, which grpc-go never proxies");
        Collector direct;
        Relay front; // stands for a server on that address
        QVERIFY2(front.start({other, 0}, {"127.0.0.1", std::uint16_t(server.port())}, direct.sink(), &error),
                 error.c_str());
        const std::string target = other + ":" + std::to_string(front.listenAddress().port);
        QCOMPARE(run(target), QStringLiteral("call: <nil>"));
        proxy.stop();
        front.stop();
        QCOMPARE(proxy.targets(), std::vector<std::string>{target});
        TimelineModel model;
        model.appendBatch(events.take());
        QCOMPARE(model.store().calls().size(), size_t(1));
        QCOMPARE(model.store().calls().front().hop, target);
        QCOMPARE(model.store().calls().front().method, std::string("/rpcscope.lab.Lab/Call"));
    }

    void refusedRequestsSayWhy()
    {
        Collector events;
        ConnectProxy proxy;
        ConnectProxy::Limits limits;
        limits.maxHeadBytes = 1024;
        limits.headTimeoutMs = 300;
        proxy.setLimits(limits);
        std::string error;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::uint16_t port = proxy.listenAddress().port;
        // A port nobody listens on: bound, then closed.
        const int probe = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        QVERIFY(bind(probe, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        getsockname(probe, reinterpret_cast<sockaddr *>(&a), &len);
        const std::string closed = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
        close(probe);

        struct Case
        {
            std::string request, status, body;
        };
        const std::vector<Case> cases = {
            {"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", "HTTP/1.1 405 ",
             "method 'GET' not allowed"},
            {"CONNECT example.com HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ", "port is missing"},
            {"CONNECT a:1 HTTP/1.1\r\nbroken header\r\n\r\n", "HTTP/1.1 400 ", "malformed header field"},
            {"CONNECT " + closed + " HTTP/1.1\r\nHost: " + closed + "\r\n\r\n", "HTTP/1.1 502 ",
             "cannot connect to " + closed + ": Connection refused"},
            {"CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 502 ",
             "cannot resolve 'no-such-host.invalid'"},
            {"CONNECT a:1 HTTP/1.1\r\nX: " + std::string(2000, 'x') + "\r\n\r\n", "HTTP/1.1 431 ",
             "larger than 1024"},
            {"CONNECT a:1 HTTP/1.1\r\nHost: a", "HTTP/1.1 408 ", "not complete within 0.3 s"},
        };
        for (const Case &c : cases) {
            const std::string answer = ask(port, c.request);
            QVERIFY2(answer.rfind(c.status, 0) == 0, answer.c_str());
            const size_t body = answer.find("\r\n\r\n");
            QVERIFY2(body != std::string::npos && answer.find(c.body, body) != std::string::npos,
                     answer.c_str());
        }
        proxy.stop();
        QVERIFY(proxy.targets().empty());
        TimelineModel model;
        model.appendBatch(events.take());
        QCOMPARE(model.store().connections().size(), cases.size());
        for (const Case &c : cases) {
            const std::string note = closeReasonOf(model, c.body);
            QVERIFY2(!note.empty(), c.body.c_str());
            QVERIFY2(note.rfind("CONNECT proxy | CONNECT refused with " + c.status.substr(9, 3), 0) == 0,
                     note.c_str());
        }
    }

    void cliCaptureProxy()
    {
        // rpcscope-cli capture --proxy, as a user runs it: it prints where it listens, and a client started
        // with grpc_proxy lands in the output file under the target's hop.
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        QTemporaryDir dir;
        const QString out = dir.filePath("proxied.json");
        QProcess cli;
        cli.start(QStringLiteral(RPCSCOPE_CLI), {"capture", "--proxy", "--out", out});
        QVERIFY(cli.waitForStarted());
        QByteArray said;
        QRegularExpression listening("proxy listening on (127\\.0\\.0\\.1:\\d+) \\(clients: "
                                     "grpc_proxy=http://127\\.0\\.0\\.1:\\d+\\)");
        QRegularExpressionMatch m;
        QTRY_VERIFY_WITH_TIMEOUT(
            (said += cli.readAllStandardOutput(), m = listening.match(QString(said))).hasMatch(), 10000);
        {
            const ProxyEnv env(m.captured(1).toStdString());
            lab::LabClient client(target, lab::ServiceConfig::retry(2, 20));
            lab::CallRequest r;
            r.set_call_id("cli-1");
            QCOMPARE(client.call(r).code, 0);
        }
        cli.terminate();
        QVERIFY(cli.waitForFinished(20000));
        QCOMPARE(cli.exitCode(), 0);
        QFile file(out);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
        const QJsonArray calls = doc["calls"].toArray();
        QCOMPARE(calls.size(), 1);
        const QJsonArray connections = doc["connections"].toArray();
        QCOMPARE(connections.size(), 1);
        QCOMPARE(connections[0].toObject()["label"].toString(), QString::fromStdString(target));

        // A proxy on an address other machines reach is refused without --allow-remote, and so is a capture
        // with neither --target nor --proxy.
        QProcess remote;
        remote.start(QStringLiteral(RPCSCOPE_CLI), {"capture", "--proxy", "0.0.0.0:0", "--out", out});
        QVERIFY(remote.waitForFinished(10000));
        QCOMPARE(remote.exitCode(), 2);
        QVERIFY2(remote.readAllStandardError().contains("--allow-remote"), "no hint at --allow-remote");
        QProcess neither;
        neither.start(QStringLiteral(RPCSCOPE_CLI), {"capture", "--out", out});
        QVERIFY(neither.waitForFinished(10000));
        QCOMPARE(neither.exitCode(), 2);
        QVERIFY(neither.readAllStandardError().contains("--proxy"));
    }

    // A fault rule names a CONNECT target by its authority, as it names a hop: its tunnels get the fault, and
    // the client sees the failure as from a real network.
    void faultRuleOnAProxyTarget()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        QTemporaryDir dir;
        const QString out = dir.filePath("faulted.json");
        QProcess cli;
        cli.start(QStringLiteral(RPCSCOPE_CLI), {"capture", "--proxy", "--out", out, "--fault",
                                                 QString::fromStdString("close hop=" + target)});
        QVERIFY(cli.waitForStarted());
        QByteArray said;
        QRegularExpression listening("proxy listening on (127\\.0\\.0\\.1:\\d+)");
        QRegularExpressionMatch m;
        QTRY_VERIFY_WITH_TIMEOUT(
            (said += cli.readAllStandardOutput(), m = listening.match(QString(said))).hasMatch(), 10000);
        {
            const ProxyEnv env(m.captured(1).toStdString());
            lab::LabClient client(target, lab::ServiceConfig::retry(2, 20));
            lab::CallRequest r;
            r.set_call_id("faulted-1");
            QCOMPARE(client.call(r).code, 14); // UNAVAILABLE
        }
        cli.terminate();
        QVERIFY(cli.waitForFinished(20000));
        QCOMPARE(cli.exitCode(), 0);
        const QString err = QString::fromUtf8(cli.readAllStandardError());
        QVERIFY2(QRegularExpression("fault rule 1 \\(close hop=[0-9.:]+\\): [1-9]\\d* hits?")
                     .match(err)
                     .hasMatch(),
                 qPrintable(err));
        QFile file(out);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY2(file.readAll().contains("fault: close (rule 1)"), "no fault note in the capture");
    }

    // What the proxy holds is memory of the capture (CaptureSession counts it in the model's budget, as it
    // counts a direct hop's relay): unfinished handshakes' heads and each target's relay with its tunnels.
    // The count rises with what it holds and falls when that goes.
    void memoryFollowsWhatItHolds()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::uint16_t port = proxy.listenAddress().port;
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        auto waitFor = [&](const std::function<bool(size_t)> &done) {
            QDeadlineTimer deadline(10000);
            while (!done(proxy.memoryBytes()) && !deadline.hasExpired())
                QTest::qWait(10);
            return done(proxy.memoryBytes());
        };
        const size_t idle = proxy.memoryBytes();

        // 64 clients each send 6,000 bytes of a request head and then wait: the proxy holds every byte.
        constexpr int kClients = 64;
        constexpr size_t kHead = 6000;
        const std::string head = "CONNECT " + target + " HTTP/1.1\r\nX-Fill: " + std::string(kHead, 'a');
        std::vector<int> clients;
        for (int i = 0; i < kClients; ++i) {
            const int fd = connectTo(port);
            QVERIFY(fd >= 0);
            QCOMPARE(send(fd, head.data(), head.size(), MSG_NOSIGNAL), ssize_t(head.size()));
            clients.push_back(fd);
        }
        // Every handshake accepted and every head read: the bytes alone can reach the sum first, since each
        // handshake also holds its record.
        QVERIFY2(waitFor([&](size_t n) {
                     return proxy.pendingHandshakes() == size_t(kClients) && n >= idle + kClients * kHead;
                 }),
                 qPrintable(QStringLiteral("%1 bytes held with %2 heads of %3 bytes pending (idle: %4)")
                                .arg(proxy.memoryBytes())
                                .arg(kClients)
                                .arg(kHead)
                                .arg(idle)));
        QCOMPARE(proxy.pendingHandshakes(), size_t(kClients));
        const size_t holding = proxy.memoryBytes();
        // Not far beyond them either: each head in a string of its own, with the handshake's record.
        QVERIFY2(proxy.memoryBytes() <= idle + kClients * (2 * kHead + 2048),
                 qPrintable(QString::number(proxy.memoryBytes())));
        // The clients go: their handshakes with them.
        for (int fd : clients)
            close(fd);
        QVERIFY2(waitFor([&](size_t n) { return n < idle + 16 * 1024; }),
                 qPrintable(QString::number(proxy.memoryBytes())));
        QCOMPARE(proxy.pendingHandshakes(), size_t(0));

        // A tunnel: its target's relay (read buffer, connection, decoder) counts from then on.
        const size_t before = proxy.memoryBytes();
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            lab::LabClient client(target, {});
            lab::CallRequest r;
            r.set_call_id("counted-1");
            QCOMPARE(client.call(r, std::chrono::milliseconds(5000)).code, 0);
            QCOMPARE(proxy.targets().size(), size_t(1));
            QVERIFY2(proxy.memoryBytes() >= before + 16 * 1024,
                     qPrintable(QStringLiteral("%1 bytes with a tunnel, %2 before")
                                    .arg(proxy.memoryBytes())
                                    .arg(before)));
        }
        qInfo(
            "idle %zu bytes; %d heads of %zu bytes pending: %zu; after they closed: %zu; with a tunnel: %zu",
            idle, kClients, kHead, holding, before, proxy.memoryBytes());
        // Stopped, it holds nothing more.
        proxy.stop();
        QVERIFY2(proxy.memoryBytes() < 1024, qPrintable(QString::number(proxy.memoryBytes())));
    }

    // The proxy is one hop of a capture and gets one share of its budget for what its decoders hold: its
    // targets' relays weigh what they all hold together against DecoderLimits::maxDecoderHeldBytes, not each
    // against its own (16 targets would otherwise hold 16 times it). With the model behind (a sink that
    // waits), 16 tunnels each send 1 MiB of PINGs: every byte is relayed, and what waits for the decoders
    // stays near the one limit.
    void targetsShareOneDecoderLimit()
    {
        constexpr int kTargets = 16;
        constexpr size_t kLimit = 128 * 1024;
        std::string wire =
            std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\x04\0\0\0\0\0", 9);
        while (wire.size() < (1u << 20)) {
            const char ping[17] = {0, 0, 8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
            wire.append(ping, sizeof ping);
        }
        std::mutex mu;
        std::condition_variable cv;
        bool release = false;
        std::vector<std::string> shed;
        const ConnectProxy::Sink sink = [&](EventBatch &&b) {
            std::unique_lock lk(mu);
            cv.wait(lk, [&] { return release; }); // the model is behind until everything has been relayed
            for (const WireEvent &e : b)
                if (e.kind == EventKind::DecodeError) shed.push_back(e.reason);
        };
        ConnectProxy proxy;
        DecoderLimits limits;
        limits.maxDecoderHeldBytes = kLimit;
        proxy.setDecoderLimits(limits);
        std::string error;
        QVERIFY2(proxy.start({"127.0.0.1", 0}, sink, &error), error.c_str());
        std::vector<std::unique_ptr<DrainTarget>> targets;
        std::vector<int> clients;
        auto waitUntil = [](const std::function<bool()> &done) {
            QDeadlineTimer deadline(30000);
            while (!done() && !deadline.hasExpired())
                QTest::qWait(5);
            return done();
        };
        // One tunnel after the other, each one's bytes all through before the next starts.
        for (int i = 0; i < kTargets; ++i) {
            targets.push_back(std::make_unique<DrainTarget>());
            const int fd = tunnelTo(proxy.listenAddress().port, targets.back()->port());
            QVERIFY2(fd >= 0, qPrintable(QStringLiteral("tunnel %1 did not open").arg(i)));
            clients.push_back(fd);
            QVERIFY(testnet::sendAll(fd, wire.data(), wire.size()));
            QVERIFY2(waitUntil([&] { return targets.back()->got() == wire.size(); }),
                     qPrintable(QStringLiteral("target %1 got %2 of %3 bytes")
                                    .arg(i)
                                    .arg(targets.back()->got())
                                    .arg(wire.size())));
        }
        QCOMPARE(proxy.targets().size(), size_t(kTargets));
        const size_t held = proxy.memoryBytes();
        {
            std::lock_guard lk(mu);
            release = true;
        }
        cv.notify_all();
        for (int fd : clients)
            close(fd);
        QVERIFY(waitUntil([&] { return proxy.openConnections() == 0; }));
        // What the relays hold without a byte waiting (a read buffer each, their lists, the decoders' state):
        // the figure above minus this is what waited for the decoders.
        QVERIFY(waitUntil([&] { return proxy.memoryBytes() < held; }));
        QTest::qWait(100); // the decoders' state is measured every 20 ms: a last look
        const size_t idle = proxy.memoryBytes();
        proxy.stop();
        const size_t waiting = held - std::min(held, idle);
        qInfo("%d targets, limit %zu KiB: %zu KiB waited for the decoders (%zu KiB held, %zu KiB idle)",
              kTargets, kLimit >> 10, waiting >> 10, held >> 10, idle >> 10);
        // The limit twice (a connection that had handed over little is shed only at twice it), the read that
        // crossed it (up to 256 KiB) and a small batch per decoder waiting for the sink. One limit per target
        // held at least 16 x 128 KiB.
        QVERIFY2(
            waiting <= 2 * kLimit + 512 * 1024,
            qPrintable(QStringLiteral("%1 KiB waited for the decoders of %2 targets sharing a %3 KiB limit")
                           .arg(waiting >> 10)
                           .arg(kTargets)
                           .arg(kLimit >> 10)));
        QVERIFY2(waiting >= kLimit, qPrintable(QString::number(waiting)));
        std::lock_guard lk(mu);
        QVERIFY2(std::any_of(shed.begin(), shed.end(),
                             [](const std::string &r) {
                                 return r.find(
                                            "decoders fell behind (over 128 KiB waiting for them across the "
                                            "proxy's targets") != std::string::npos;
                             }),
                 qPrintable(QStringLiteral("%1 decode errors").arg(shed.size())));
    }

    // What a client sends right after its CONNECT is held by the target's relay until its loop takes the
    // tunnel: counted there all that time, then as the connection's bytes queued for the server.
    void earlyBytesCountUntilTheTunnelIsTaken()
    {
        DrainTarget target;
        DecoderThread decoder;
        RelayLoop loop(decoder);
        std::string error;
        QVERIFY2(loop.open(-1, {"127.0.0.1", target.port()}, {}, true, &error), error.c_str());
        const size_t idle = loop.memoryBytes();
        int pair[2];
        QCOMPARE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        const int server = testnet::connectLoopback(target.port());
        QVERIFY(server >= 0);
        constexpr size_t kEarly =
            512 * 1024; // twice the loop's read buffer, which it holds from its first round
        loop.adopt(pair[1], server, "client", std::string(kEarly, 'e'), 0);
        QVERIFY2(loop.memoryBytes() >= idle + kEarly, qPrintable(QString::number(loop.memoryBytes())));
        decoder.start([](EventBatch &&) {}, DecoderLimits{}, "early");
        loop.run();
        QDeadlineTimer deadline(10000);
        while (target.got() < kEarly && !deadline.hasExpired())
            QTest::qWait(5);
        QCOMPARE(target.got(), kEarly);
        // Taken: counted once, as the connection's (its queue keeps the block it was sent from) beside the
        // loop's read buffer, not a second time as waiting to be taken.
        QVERIFY2(loop.memoryBytes() < kEarly + 320 * 1024, qPrintable(QString::number(loop.memoryBytes())));
        close(pair[0]);
        loop.stop();
        decoder.stop();
    }

    void floodOfHalfSentRequests()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        Collector events;
        ConnectProxy proxy;
        ConnectProxy::Limits limits;
        limits.maxPending = 32;
        proxy.setLimits(limits);
        QVERIFY2(proxy.start({"127.0.0.1", 0}, events.sink(), &error), error.c_str());
        const std::uint16_t port = proxy.listenAddress().port;
        const std::string target = "127.0.0.1:" + std::to_string(server.port());

        // 200 clients each send half a request and then nothing (slowloris), far more than the proxy holds.
        std::vector<int> flood;
        const std::string half = "CONNECT " + target + " HTTP/1.1\r\nHost: ";
        for (int i = 0; i < 200; ++i) {
            const int fd = connectTo(port);
            QVERIFY(fd >= 0);
            [[maybe_unused]] auto n = send(fd, half.data(), half.size(), MSG_NOSIGNAL);
            flood.push_back(fd);
        }
        // A good client still gets through at once, long before any of them times out (10 s).
        QElapsedTimer timer;
        timer.start();
        {
            const ProxyEnv env(proxy.listenAddress().toString());
            lab::LabClient client(target, lab::ServiceConfig::retry(2, 20));
            lab::CallRequest r;
            r.set_call_id("good-1");
            QCOMPARE(client.call(r, std::chrono::milliseconds(5000)).code, 0);
        }
        QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
        // Memory stays bounded: never more unfinished handshakes than the limit.
        QVERIFY2(proxy.peakPendingHandshakes() <= limits.maxPending,
                 qPrintable(QString::number(proxy.peakPendingHandshakes())));
        // The oldest were told why they were dropped.
        const std::string first = readAll(flood.front(), 5000);
        QVERIFY2(first.rfind("HTTP/1.1 503 ", 0) == 0 &&
                     first.find("too many unfinished CONNECT requests") != std::string::npos,
                 first.c_str());
        for (int fd : flood)
            close(fd);
        proxy.stop();
        TimelineModel model;
        model.appendBatch(events.take());
        QVERIFY(onlyCall(model, "good-1"));
        QVERIFY(!closeReasonOf(model, "CONNECT refused with 503").empty());
    }
};

QTEST_GUILESS_MAIN(TestConnectProxy)
#include "tst_connectproxy.moc"
