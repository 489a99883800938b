// The lab's streaming RPCs end to end: a real grpc++ client and the lab server, through the capture relay,
// checked both by what the client got and by what the relay decoded on the wire.

#include "labclient.h"
#include "labrig.h"

#include <QtTest>
#include <thread>

using namespace rpcscope;
using namespace std::chrono_literals;

using namespace labrig;

class TestLabStreaming : public QObject
{
    Q_OBJECT
private slots:
    void serverStreamArrivesCompleteOnTheWire()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::StreamRequest req;
        req.set_call_id("ss-1");
        req.set_count(40);
        req.set_message_size(40'000); // larger than a 16 KiB DATA frame: messages span frames
        const lab::StreamResult r = client.serverStream(req, 10s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.messages, 40);
        QCOMPARE(r.bytes, std::uint64_t(40) * 40'000);
        QVERIFY(r.firstMessageNs >= r.startNs && r.endNs >= r.firstMessageNs);
        QCOMPARE(int(rig.server.arrivalsFor("ss-1").size()), 1);

        const EventBatch events = rig.stop();
        const auto stream = streamOf(events, "ss-1");
        QVERIFY(stream.second != 0);
        const auto sizes = messageSizes(events, stream, Direction::ServerToClient);
        QCOMPARE(int(sizes.size()), 40);
        for (int i = 0; i < 40; ++i)
            QCOMPARE(sizes[i], std::uint32_t(serverStreamReply(req, i + 1).ByteSizeLong()));
        QCOMPARE(messageSizes(events, stream, Direction::ClientToServer).size(), size_t(1));
        QCOMPARE(grpcStatusOf(events, stream).value_or(-1), 0);
    }

    // Streams of large messages are relayed by splice (no copy through the relay) in both directions, and
    // the decoder's tee'd copy still yields every message, with its size and its kept first bytes intact.
    void largeMessagesAreSplicedAndStillDecoded()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::StreamRequest down;
        down.set_call_id("ss-big");
        down.set_count(24);
        down.set_message_size(1 << 20);
        const lab::StreamResult r = client.serverStream(down, 30s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.messages, 24);

        lab::CallRequest up;
        up.set_call_id("cs-big");
        std::string payload(512 * 1024, '\0');
        for (size_t i = 0; i < payload.size(); ++i)
            payload[i] = char('a' + (i * 7919) % 26);
        up.set_payload(payload);
        const lab::StreamResult u = client.clientStream(up, 16, 30s);
        QCOMPARE(u.code, 0);
        QCOMPARE(u.messages, 16);

        // 24 MiB went down and 8 MiB up: most of it must have been spliced, not copied.
        const std::uint64_t spliced = rig.relay.bytesSpliced();
        QVERIFY2(spliced >= (16u << 20), std::to_string(spliced).c_str());
        QVERIFY(spliced <= rig.relay.bytesRelayed());

        const EventBatch events = rig.stop();
        const auto downStream = streamOf(events, "ss-big");
        QVERIFY(downStream.second != 0);
        int seen = 0;
        for (const WireEvent &e : events) {
            if (e.kind != EventKind::Message || e.dir != Direction::ServerToClient ||
                e.connection != downStream.first || e.stream != downStream.second)
                continue;
            const std::string reply = serverStreamReply(down, ++seen).SerializeAsString();
            QCOMPARE(e.length, std::uint32_t(reply.size()));
            // The default keep limit: the first 64 KiB, byte for byte.
            QVERIFY(e.truncated);
            QCOMPARE(e.payload.size(), size_t(64 * 1024));
            QVERIFY2(e.payload == reply.substr(0, e.payload.size()),
                     ("reply " + std::to_string(seen)).c_str());
        }
        QCOMPARE(seen, 24);
        QCOMPARE(grpcStatusOf(events, downStream).value_or(-1), 0);

        const auto upStream = streamOf(events, "cs-big");
        QVERIFY(upStream.second != 0);
        const std::string request = up.SerializeAsString();
        int requests = 0;
        for (const WireEvent &e : events)
            if (e.kind == EventKind::Message && e.dir == Direction::ClientToServer &&
                e.connection == upStream.first && e.stream == upStream.second) {
                ++requests;
                QCOMPARE(e.length, std::uint32_t(request.size()));
                QVERIFY(e.payload == request.substr(0, e.payload.size()));
            }
        QCOMPARE(requests, 16);
        for (const WireEvent &e : events)
            QVERIFY2(!decodeProblem(e), e.reason.c_str());
    }

    // A decoder that falls behind holds the copies of the spliced reads: once those are all in flight, the
    // relay thread makes the copies itself. Nothing may be lost either way.
    void decoderBehindStillGetsEverySplicedByte()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::StreamRequest warm;
        warm.set_call_id("ss-warm");
        warm.set_count(1);
        warm.set_message_size(100);
        rig.collector.setHold(true);
        QCOMPARE(client.serverStream(warm, 10s).code, 0);
        QVERIFY2(rig.collector.waitHolding(), "the decoder thread never delivered a batch");

        lab::StreamRequest down;
        down.set_call_id("ss-behind");
        down.set_count(32);
        down.set_message_size(1 << 20);
        const lab::StreamResult r = client.serverStream(down, 30s); // relayed while the decoder is stuck
        QCOMPARE(r.code, 0);
        QCOMPARE(r.messages, 32);
        QVERIFY2(rig.relay.bytesSpliced() >= (16u << 20), std::to_string(rig.relay.bytesSpliced()).c_str());
        QVERIFY(rig.relay.decoderBacklog() >= (16u << 20)); // all of it still waits for the decoder
        rig.collector.setHold(false);

        const EventBatch events = rig.stop();
        const auto stream = streamOf(events, "ss-behind");
        QVERIFY(stream.second != 0);
        std::string why;
        QCOMPARE(checkServerStreamReplies(events, stream, down, &why), 32);
        QVERIFY2(why.empty(), why.c_str());
        QCOMPARE(grpcStatusOf(events, stream).value_or(-1), 0);
        for (const WireEvent &e : events)
            QVERIFY2(!decodeProblem(e), e.reason.c_str());
    }

    void serverStreamFailsAfterAsked()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::StreamRequest req;
        req.set_call_id("ss-fail");
        req.set_count(10);
        req.set_message_size(100);
        req.set_interval_ms(5);
        req.set_fail_after(3);
        req.set_fail_code(14); // UNAVAILABLE
        const lab::StreamResult r = client.serverStream(req, 10s);
        QCOMPARE(r.code, 14);
        QCOMPARE(r.messages, 3);
        // Two intervals between the three messages.
        QVERIFY2(r.endNs - r.startNs >= 10'000'000, qPrintable(QString::number(r.endNs - r.startNs)));

        // fail_first_n 1: the next arrival of the same call id streams everything.
        req.set_fail_first_n(1);
        const lab::StreamResult again = client.serverStream(req, 10s);
        QCOMPARE(again.code, 0);
        QCOMPARE(again.messages, 10);
        QCOMPARE(int(rig.server.arrivalsFor("ss-fail").size()), 2);

        const EventBatch events = rig.stop();
        const auto stream = streamOf(events, "ss-fail");
        QCOMPARE(messageSizes(events, stream, Direction::ServerToClient).size(), size_t(3));
        QCOMPARE(grpcStatusOf(events, stream).value_or(-1), 14);
    }

    void clientStreamCountsMatch()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::CallRequest req;
        req.set_call_id("cs-1");
        req.set_payload(std::string(30'000, 'p'));
        const lab::StreamResult r = client.clientStream(req, 25, 10s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.sent, 25);
        QCOMPARE(r.messages, 25);
        QCOMPARE(r.bytes, std::uint64_t(25) * 30'000);
        QCOMPARE(int(rig.server.arrivalsFor("cs-1").size()), 1);

        const EventBatch events = rig.stop();
        const auto stream = streamOf(events, "cs-1");
        QVERIFY(stream.second != 0);
        const auto requests = messageSizes(events, stream, Direction::ClientToServer);
        QCOMPARE(int(requests.size()), 25);
        for (std::uint32_t size : requests)
            QCOMPARE(size, std::uint32_t(req.ByteSizeLong()));
        QCOMPARE(messageSizes(events, stream, Direction::ServerToClient).size(), size_t(1));
    }

    void clientStreamFailingArrival()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::CallRequest req;
        req.set_call_id("cs-fail");
        req.set_fail_first_n(1);
        req.set_fail_code(8); // RESOURCE_EXHAUSTED
        QCOMPARE(client.clientStream(req, 3, 10s).code, 8);
        QCOMPARE(client.clientStream(req, 3, 10s).code, 0);
        rig.stop();
    }

    void bidiEchoesOneReplyPerRequest()
    {
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::CallRequest req;
        req.set_call_id("bidi-1");
        req.set_payload(std::string(500, 'p'));
        req.set_response_size(2'000);
        const lab::StreamResult r = client.bidi(req, 30, 10s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.sent, 30);
        QCOMPARE(r.messages, 30);
        QCOMPARE(r.bytes, std::uint64_t(30) * 2'000);
        QCOMPARE(int(rig.server.arrivalsFor("bidi-1").size()), 1);

        const EventBatch events = rig.stop();
        const auto stream = streamOf(events, "bidi-1");
        QVERIFY(stream.second != 0);
        QCOMPARE(int(messageSizes(events, stream, Direction::ClientToServer).size()), 30);
        const auto replies = messageSizes(events, stream, Direction::ServerToClient);
        QCOMPARE(int(replies.size()), 30);
        for (int i = 0; i < 30; ++i) {
            lab::CallReply expected;
            expected.set_call_id("bidi-1");
            expected.set_arrival(1);
            expected.set_sequence(i + 1);
            expected.set_payload(std::string(2'000, 'b'));
            QCOMPARE(replies[i], std::uint32_t(expected.ByteSizeLong()));
        }
    }

    void serverStopsWhileAStreamWaitsForItsNextInterval()
    {
        // A stream between two interval writes must not hold the server's shutdown: the pending writes run
        // at once and the call ends, well before LabServer::stop's 2 s grace period would cancel it.
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::StreamRequest req;
        req.set_call_id("ss-slow");
        req.set_count(200);
        req.set_message_size(10);
        req.set_interval_ms(1000);
        lab::StreamResult r;
        std::thread client([&] { r = lab::LabClient(rig.target(), {}).serverStream(req, 30s); });
        QTRY_VERIFY_WITH_TIMEOUT(!rig.server.arrivalsFor("ss-slow").empty(), 5000);
        QTest::qWait(100); // the first message is out; the next is 1 s away
        QElapsedTimer timer;
        timer.start();
        rig.server.stop();
        QVERIFY2(timer.elapsed() < 1500, qPrintable(QStringLiteral("stop took %1 ms").arg(timer.elapsed())));
        client.join();
        QVERIFY(r.messages >= 1);
        QVERIFY2(r.endNs - r.startNs < 5'000'000'000, "the stream ran its 200 s course");
        rig.stop();
    }

    void emptyClientStreamIsLoggedUnderTheMetadataCallId()
    {
        // No request message ever arrives, so only the rpcscope-call-id metadata can name the call.
        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::CallRequest req;
        req.set_call_id("cs-empty");
        const lab::StreamResult r = client.clientStream(req, 0, 10s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.messages, 0);
        QCOMPARE(int(rig.server.arrivalsFor("cs-empty").size()), 1);
        rig.stop();
    }
};

QTEST_GUILESS_MAIN(TestLabStreaming)
#include "tst_labstreaming.moc"
