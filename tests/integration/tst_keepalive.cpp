// Keepalive PINGs from a real grpc++ client show on the timeline, each paired with its ACK into an RTT.

#include "lab.grpc.pb.h"
#include "labserver.h"
#include "relay.h"
#include "timelinemodel.h"

#include <QtTest>
#include <grpcpp/grpcpp.h>
#include <mutex>

using namespace rpcscope;

class TestKeepalive : public QObject
{
    Q_OBJECT
private slots:
    void keepalivePingsHaveRtt()
    {
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        std::mutex mu;
        EventBatch events;
        Relay relay;
        QVERIFY2(relay.start(
                     {"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())},
                     [&](EventBatch &&b) {
                         std::lock_guard lk(mu);
                         events.insert(events.end(), b.begin(), b.end());
                     },
                     &error),
                 error.c_str());
        {
            grpc::ChannelArguments args;
            args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 100);
            args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
            args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
            // C-core otherwise spaces pings without data by minutes, whatever the keepalive time says.
            args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 0);
            auto stub = lab::Lab::NewStub(grpc::CreateCustomChannel(
                relay.listenAddress().toString(), grpc::InsecureChannelCredentials(), args));
            // A call held open by the server for 1 s: keepalive pings while it waits.
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
            lab::CallRequest req;
            req.set_call_id("keepalive-1");
            req.set_delay_ms(1000);
            lab::CallReply reply;
            const grpc::Status status = stub->Call(&ctx, req, &reply);
            QVERIFY2(status.ok(), status.error_message().c_str());
        }
        relay.stop();
        server.stop();

        TimelineModel model;
        model.appendBatch(events);
        int pings = 0;
        for (const WireEvent &e : events)
            pings += e.kind == EventKind::Frame && e.frameType == FramePing && !(e.flags & FlagAck) &&
                     e.dir == Direction::ClientToServer;
        int goaways = 0;
        for (const WireEvent &e : events)
            goaways += e.kind == EventKind::Frame && e.frameType == FrameGoaway;
        qInfo("client pings %d, goaways %d", pings, goaways);
        // Without keepalive this call sends no PING at all; with it, C-core 1.51 sent 1-2 in the second.
        QVERIFY2(pings >= 1, qPrintable(QString::number(pings)));
        const auto &records = model.store().pings();
        int clientPings = 0;
        for (const PingRecord &p : records) {
            clientPings += p.dir == Direction::ClientToServer; // the server also pings once on shutdown
            QVERIFY(p.rttNs > 0 && p.rttNs < 1'000'000'000);
        }
        int acks = 0;
        for (const WireEvent &e : events)
            acks += e.kind == EventKind::Frame && e.frameType == FramePing && (e.flags & FlagAck) &&
                    e.dir == Direction::ServerToClient;
        // Every ACK the server sent is paired with its PING (one sent as the channel closed may get none).
        QCOMPARE(clientPings, acks);
        QVERIFY(clientPings >= 1);
        QVERIFY(model.store().connections().at(0).lastPingRttNs.has_value());
    }
};

QTEST_GUILESS_MAIN(TestKeepalive)
#include "tst_keepalive.moc"
