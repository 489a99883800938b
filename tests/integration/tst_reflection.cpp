// Server reflection end to end: the real lab server (reflection on) on loopback answers rpcscope's reflection
// client, and a call captured through the relay decodes to the JSON its client sent. This binary links
// grpc++'s reflection server and the client's own reflection messages together: it would abort at start-up
// if their protobuf names clashed (resources/proto/reflection.proto).

#include "labclient.h"
#include "labsession.h"
#include "messagedecoder.h"
#include "reflectionclient.h"
#include "testnet.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <algorithm>
#include <mutex>

using namespace rpcscope;

namespace {

struct Collector
{
    std::mutex mu;
    EventBatch events;
    Relay::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mu);
            events.insert(events.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
        };
    }
};

bool contains(const std::vector<std::string> &v, const std::string &s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

QJsonObject json(const DecodedMessage &m)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(m.json)).object();
}

// A free loopback port with nothing listening on it.
int closedPort()
{
    const int fd = testnet::listenLoopback();
    const int port = testnet::localPort(fd);
    ::close(fd);
    return port;
}

} // namespace

class TestReflection : public QObject
{
    Q_OBJECT
private slots:
    void labServerAnswersReflection()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        const ReflectionResult r = fetchByReflection(target, {}, 5000);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(contains(r.services, "rpcscope.lab.Lab"));
        QVERIFY(contains(r.services, "grpc.reflection.v1alpha.ServerReflection"));
        QVERIFY(contains(r.fileNames, "lab.proto"));
        QCOMPARE(r.files.size(), r.fileNames.size());
        QVERIFY2(r.problems.empty(), r.problems.empty() ? "" : r.problems.front().c_str());

        MessageDecoder decoder;
        std::vector<std::string> errors;
        QVERIFY2(decoder.addFileDescriptors(r.files, &errors), errors.empty() ? "" : errors.front().c_str());
        const auto types = decoder.methodTypes("/rpcscope.lab.Lab/ServerStream");
        QVERIFY(types);
        QCOMPARE(types->first, std::string("rpcscope.lab.StreamRequest"));
        QCOMPARE(types->second, std::string("rpcscope.lab.CallReply"));
        // The reflection service's own schema came too: rpcscope can decode reflection traffic.
        QVERIFY(decoder.methodTypes("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"));

        // A symbol the server does not know is a problem, not a failure.
        const ReflectionResult extra = fetchByReflection(target, {"no.such.Service"}, 5000);
        QVERIFY2(extra.ok(), extra.error.c_str());
        QCOMPARE(extra.problems.size(), size_t(1));
        QVERIFY2(extra.problems.front().rfind("no.such.Service: ", 0) == 0, extra.problems.front().c_str());
    }

    void capturedCallDecodesToWhatTheClientSent()
    {
        Collector collector;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(collector.sink(), &error), error.c_str());
        {
            lab::LabClient client(session.proxyAddress().toString(), "");
            rpcscope::lab::CallRequest request;
            request.set_call_id("reflect-1");
            request.set_fail_message("never used");
            request.set_pushback_ms(-1);
            request.set_payload("abc");
            request.set_response_size(4);
            const lab::CallResult result = client.call(request, std::chrono::milliseconds(5000));
            QVERIFY2(result.code == 0, result.message.c_str());
        }
        // Schemas from the lab server itself, not from the proxy: reflection is not captured.
        const ReflectionResult r = fetchByReflection(session.serverAddress().toString(), {}, 5000);
        session.stop(); // flushes every decoded event
        QVERIFY2(r.ok(), r.error.c_str());
        MessageDecoder decoder;
        QVERIFY(decoder.addFileDescriptors(r.files, nullptr));

        std::string path;
        std::vector<const WireEvent *> messages;
        for (const WireEvent &e : collector.events) {
            if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer) path = e.grpc.path;
            if (e.kind == EventKind::Message) messages.push_back(&e);
        }
        QCOMPARE(path, std::string("/rpcscope.lab.Lab/Call"));
        QCOMPARE(messages.size(), size_t(2));
        QCOMPARE(messages[0]->dir, Direction::ClientToServer);
        const DecodedMessage req = decoder.decode(path, true, messages[0]->payload, messages[0]->truncated);
        QVERIFY2(req.typed, req.note.c_str());
        QCOMPARE(req.typeName, std::string("rpcscope.lab.CallRequest"));
        const QJsonObject o = json(req);
        QCOMPARE(o.value("call_id").toString(), QStringLiteral("reflect-1"));
        QCOMPARE(o.value("fail_message").toString(), QStringLiteral("never used"));
        QCOMPARE(o.value("pushback_ms").toString(), QStringLiteral("-1"));
        QCOMPARE(o.value("payload").toString(), QStringLiteral("YWJj")); // base64 of "abc"
        QCOMPARE(o.value("response_size").toInt(), 4);
        QCOMPARE(o.size(), 5);

        const DecodedMessage reply =
            decoder.decode(path, false, messages[1]->payload, messages[1]->truncated);
        QVERIFY2(reply.typed, reply.note.c_str());
        const QJsonObject p = json(reply);
        QCOMPARE(p.value("call_id").toString(), QStringLiteral("reflect-1"));
        QCOMPARE(p.value("arrival").toInt(), 1);
        QCOMPARE(p.value("payload").toString(), QStringLiteral("cnJycg==")); // "rrrr"
    }

    void unreachableTargetSaysSoInTime()
    {
        const int port = closedPort();
        const std::string target = "127.0.0.1:" + std::to_string(port);
        QElapsedTimer timer;
        timer.start();
        const ReflectionResult r = fetchByReflection(target, {}, 2000);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.rfind("cannot reach " + target + ": ", 0) == 0, r.error.c_str());
        QVERIFY2(timer.elapsed() < 3000, qPrintable(QString::number(timer.elapsed())));
        QVERIFY(r.files.empty());

        QVERIFY(!fetchByReflection("no-port-here").ok());
        QCOMPARE(fetchByReflection("no-port-here").error, std::string("'no-port-here' is not HOST:PORT"));
    }

    void serverWithoutReflection()
    {
        lab::LabServer server;
        lab::LabServerOptions options;
        options.reflection = false;
        server.setOptions(options);
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        const std::string target = "127.0.0.1:" + std::to_string(server.port());
        const ReflectionResult r = fetchByReflection(target, {}, 5000);
        QVERIFY(!r.ok());
        QCOMPARE(r.error,
                 target + " does not offer gRPC server reflection (grpc.reflection.v1alpha.ServerReflection "
                          "is not implemented there)");
    }

    void silentServerTimesOut()
    {
        // Accepts TCP (the kernel's backlog) and never says a word of HTTP/2.
        const int fd = testnet::listenLoopback();
        QVERIFY(fd >= 0);
        const std::string target = "127.0.0.1:" + std::to_string(testnet::localPort(fd));
        QElapsedTimer timer;
        timer.start();
        const ReflectionResult r = fetchByReflection(target, {}, 1000);
        const qint64 took = timer.elapsed();
        ::close(fd);
        QVERIFY(!r.ok());
        QVERIFY2(took >= 900 && took < 2500, qPrintable(QString::number(took)));
        QVERIFY2(r.error.find(target) != std::string::npos, r.error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestReflection)
#include "tst_reflection.moc"
