// The one queue between a model's feeders and its thread: batches coalesce into at most one append per frame
// interval, the queue stays bounded (feeders wait, then shed with a note; the ingestion endpoint stops
// reading or answers RESOURCE_EXHAUSTED), and a thread stopping a feeder is never kept waiting.

#include "ingest.grpc.pb.h"
#include "ingestserver.h"
#include "modelfeed.h"
#include "timelinemodel.h"
#include "timelinestore.h"

#include <QElapsedTimer>
#include <QtTest>
#include <arpa/inet.h>
#include <atomic>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <numeric>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace rpcscope;

namespace {

WireEvent opened(std::uint32_t connection)
{
    WireEvent e;
    e.kind = EventKind::ConnectionOpened;
    e.connection = connection;
    e.tNs = connection;
    return e;
}

WireEvent ping(std::uint32_t connection, std::int64_t t)
{
    WireEvent e;
    e.kind = EventKind::Frame;
    e.frameType = FramePing;
    e.connection = connection;
    e.tNs = t;
    return e;
}

// A call's first request headers on `connection`, at `t`.
WireEvent request(std::uint32_t connection, std::int64_t t, const std::string &callId)
{
    WireEvent e;
    e.kind = EventKind::Headers;
    e.connection = connection;
    e.stream = 1;
    e.dir = Direction::ClientToServer;
    e.tNs = t;
    e.grpc.path = "/lab/Call";
    e.grpc.callId = callId;
    return e;
}

// Waits without running this thread's event loop, which would let the model apply what is queued.
template <class F> bool waitWithoutEvents(F &&condition, int ms = 20'000)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!condition() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return condition();
}

} // namespace

class TestModelFeed : public QObject
{
    Q_OBJECT
private slots:
    // However many sinks hand batches over between two turns of the model's thread, it appends them once.
    void batchesCoalesceIntoOneAppend()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        QCOMPARE(ModelFeed::of(&model), feed); // one feed per model
        int modelAppends = 0;
        connect(&model, &TimelineModel::timelineChanged, this, [&] { ++modelAppends; });
        std::thread feeder([&] {
            const auto sink = feed->sink();
            for (std::uint32_t c = 1; c <= 1000; ++c)
                sink({opened(c)});
        });
        feeder.join();
        QCOMPARE(feed->queuedEvents(), size_t(1000));
        QVERIFY(feed->queuedBytes() >= 1000 * sizeof(WireEvent));
        QTRY_COMPARE(model.store().connections().size(), size_t(1000));
        QCOMPARE(feed->appends(), std::uint64_t(1));
        QCOMPARE(modelAppends, 1);
        QCOMPARE(feed->queuedEvents(), size_t(0));
        QCOMPARE(feed->queuedBytes(), size_t(0));
    }

    // A steady stream of one-event batches: appends come at most once per frame interval, each with many.
    void atMostOneAppendPerInterval()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        std::vector<qint64> at;
        QElapsedTimer clock;
        clock.start();
        connect(feed, &ModelFeed::appended, this, [&] { at.push_back(clock.nsecsElapsed()); });
        model.appendBatch({opened(1)});
        std::atomic<bool> stop{false};
        std::atomic<int> pushed{0};
        std::thread feeder([&] {
            const auto sink = feed->sink();
            for (std::int64_t t = 1; !stop; ++t) {
                sink({ping(1, t)});
                ++pushed;
                if (t % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
        QTest::qWait(400);
        stop = true;
        feeder.join();
        QTRY_COMPARE(feed->appliedEvents(), std::uint64_t(pushed.load()));
        QVERIFY2(at.size() >= 5, qPrintable(QString::number(at.size())));
        QVERIFY2(at.size() < size_t(pushed.load()) / 10, "batches were not coalesced");
        const qint64 interval = feed->limits().interval.count() * 1'000'000;
        for (size_t i = 1; i < at.size(); ++i)
            QVERIFY2(at[i] - at[i - 1] >= interval - 1'000'000,
                     qPrintable(QStringLiteral("appends %1 ns apart").arg(at[i] - at[i - 1])));
    }

    // Queued batches go to the model where they lie: a large one as it is (in slices of up to 1,024 events,
    // across turns when it is larger than a turn's share), small ones (under 64 events) joined into one
    // append. Every event once, in order, and nothing left counted.
    void batchesAreAppliedWhereTheyLie()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        std::vector<size_t> appends; // events per model append
        size_t before = 0;
        connect(&model, &TimelineModel::timelineChanged, this, [&] {
            appends.push_back(model.store().connections().size() - before);
            before = model.store().connections().size();
        });
        std::uint32_t next = 1;
        auto batchOf = [&](size_t n) {
            EventBatch b;
            for (size_t i = 0; i < n; ++i)
                b.push_back(opened(next++));
            return b;
        };
        // Fifty batches of three, then one of 500: one append of the 150 joined, one of the 500.
        for (int i = 0; i < 50; ++i)
            QVERIFY(feed->push(batchOf(3)));
        QVERIFY(feed->push(batchOf(500)));
        QTRY_COMPARE(model.store().connections().size(), size_t(650));
        QCOMPARE(appends, (std::vector<size_t>{150, 500}));

        // A batch larger than a turn's share: its front in this turn, the rest in the next ones, small ones
        // on either side in their place.
        ModelFeedLimits limits;
        limits.maxEventsPerAppend = 300;
        feed->setLimits(limits);
        appends.clear();
        QVERIFY(feed->push(batchOf(5)));
        QVERIFY(feed->push(batchOf(1000)));
        QVERIFY(feed->push(batchOf(3)));
        QVERIFY(feed->push(batchOf(2)));
        std::vector<size_t> queuedAfterTurn;
        connect(feed, &ModelFeed::appended, this, [&] { queuedAfterTurn.push_back(feed->queuedEvents()); });
        QTRY_COMPARE(model.store().connections().size(), size_t(650 + 1010));
        QVERIFY2(feed->mostEventsInOneTurn() <= 1024,
                 qPrintable(QString::number(feed->mostEventsInOneTurn())));
        QVERIFY2(queuedAfterTurn.size() >= 4, qPrintable(QString::number(queuedAfterTurn.size())));
        QCOMPARE(queuedAfterTurn.front(), size_t(1010 - 300));
        QCOMPARE(queuedAfterTurn.back(), size_t(0));
        QCOMPARE(std::accumulate(appends.begin(), appends.end(), size_t(0)), size_t(1010));
        for (size_t n : appends)
            QVERIFY2(n <= 300, qPrintable(QString::number(n)));
        QCOMPARE(feed->queuedBytes(), size_t(0));
        QCOMPARE(feed->appliedEvents(), std::uint64_t(650 + 1010));
        for (std::uint32_t c = 0; c < 650 + 1010; ++c)
            QCOMPARE(model.store().connections()[c].id, c + 1);
    }

    // Two hops, each with a decoder of its own, hand over batches in the order the decoders finished them:
    // hop A's call that started at 20 ms came first, hop B's that started at 10 ms second. Joined in one
    // append, the call that started first gets the first lane; each connection's events keep their order.
    void hopsJoinInTimeOrder()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        constexpr std::int64_t ms = 1'000'000;
        WireEvent openA = opened(1), openB = opened(2);
        openA.tNs = 5 * ms;
        openB.tNs = 6 * ms;
        QVERIFY(feed->push({openA, request(1, 20 * ms, "a-later")}));
        QVERIFY(feed->push({openB, request(2, 10 * ms, "b-earlier")}));
        QTRY_COMPARE(model.store().calls().size(), size_t(2));
        QCOMPARE(feed->appends(), std::uint64_t(1));
        QCOMPARE(model.store().calls()[0].key, std::string("b-earlier"));
        QCOMPARE(model.store().calls()[1].key, std::string("a-later"));
        QCOMPARE(model.store().connections()[0].id, 1u);
        QCOMPARE(model.store().connections()[1].id, 2u);
    }

    // A turn whose time runs out after its first append puts the batches it took and did not apply back
    // first in line, in their order.
    void whatATurnLeavesKeepsItsOrder()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        connect(&model, &TimelineModel::timelineChanged, this, [feed] {
            QElapsedTimer spin; // every append takes longer than a turn's share
            spin.start();
            while (spin.nsecsElapsed() <= feed->limits().interval.count() * 1'000'000 / 2) {
            }
        });
        std::vector<qint64> turns;
        connect(feed, &ModelFeed::appended, this, [&](qint64 n) { turns.push_back(n); });
        std::uint32_t next = 1;
        for (int b = 0; b < 4; ++b) {
            EventBatch batch;
            for (int i = 0; i < 100; ++i)
                batch.push_back(opened(next++));
            QVERIFY(feed->push(std::move(batch)));
        }
        QTRY_COMPARE_WITH_TIMEOUT(model.store().connections().size(), size_t(400), 20'000);
        QCOMPARE(turns, (std::vector<qint64>{100, 100, 100, 100}));
        for (std::uint32_t c = 0; c < 400; ++c)
            QCOMPARE(model.store().connections()[c].id, c + 1);
        QCOMPARE(feed->queuedBytes(), size_t(0));
    }

    // One append takes at most maxEventsPerAppend, so the thread turns between appends of a huge queue.
    void appendsAreBounded()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        ModelFeedLimits limits;
        limits.maxEventsPerAppend = 100;
        feed->setLimits(limits);
        EventBatch big;
        for (std::uint32_t c = 1; c <= 1000; ++c)
            big.push_back(opened(c));
        QVERIFY(feed->push(std::move(big)));
        int largest = 0;
        connect(feed, &ModelFeed::appended, this, [&](qint64 n) { largest = std::max(largest, int(n)); });
        QTRY_COMPARE(model.store().connections().size(), size_t(1000));
        QCOMPARE(largest, 100);
        QCOMPARE(feed->mostEventsInOneTurn(), size_t(100));
        QVERIFY(feed->appends() >= 10);
    }

    // A turn stops applying once it has used its share of the frame interval, whatever the planned append
    // size: an append that meets a retention cut or a busy core must not hold the thread for several frames.
    // Here every model append is made to take longer than that share (the handler spins), so each turn
    // applies one slice and leaves the rest first in line, counted, for the next turn. Not a timed assert:
    // the counts are what is checked.
    void aTurnStopsWhenItsTimeIsUp()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        connect(&model, &TimelineModel::timelineChanged, this, [feed] {
            QElapsedTimer spin;
            spin.start();
            const qint64 share = feed->limits().interval.count() * 1'000'000 / 2;
            while (spin.nsecsElapsed() <= share) {
            }
        });
        constexpr std::uint32_t kEvents = 5000;
        EventBatch big;
        for (std::uint32_t c = 1; c <= kEvents; ++c)
            big.push_back(opened(c));
        QVERIFY(feed->push(std::move(big)));
        const size_t queuedBytes = feed->queuedBytes();
        std::vector<qint64> turns;
        connect(feed, &ModelFeed::appended, this, [&](qint64 n) {
            if (turns.empty()) {
                // The rest of the first turn's share waits in the queue, its bytes still counted.
                QCOMPARE(feed->queuedEvents(), size_t(kEvents - n));
                QVERIFY(feed->queuedBytes() > 0 && feed->queuedBytes() < queuedBytes);
            }
            turns.push_back(n);
        });
        QTRY_COMPARE_WITH_TIMEOUT(model.store().connections().size(), size_t(kEvents), 20'000);
        // The first append was planned larger (2048 events) than the one slice (1024) its time allowed.
        QVERIFY(!turns.empty());
        QCOMPARE(turns.front(), qint64(1024));
        QCOMPARE(qint64(feed->mostEventsInOneTurn()), *std::max_element(turns.begin(), turns.end()));
        QVERIFY2(feed->mostEventsInOneTurn() <= 1024,
                 qPrintable(QString::number(feed->mostEventsInOneTurn())));
        QCOMPARE(std::accumulate(turns.begin(), turns.end(), qint64(0)), qint64(kEvents));
        QCOMPARE(feed->appliedEvents(), std::uint64_t(kEvents));
        QCOMPARE(feed->queuedEvents(), size_t(0));
        QCOMPARE(feed->queuedBytes(), size_t(0));
        // Every event once, in order.
        for (std::uint32_t c = 0; c < kEvents; ++c)
            QCOMPARE(model.store().connections()[c].id, c + 1);
    }

    // A model that falls behind holds its feeders back; one that does not answer at all makes them shed with
    // a note on the connection, so the queue never grows past its bound.
    void boundedWithWaitsThenShedding()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        ModelFeedLimits limits;
        limits.maxQueuedEvents = 10;
        limits.giveUpAfter = std::chrono::milliseconds(60'000);
        feed->setLimits(limits);
        std::vector<EventBatch> batches;
        for (std::uint32_t b = 0; b < 5; ++b) {
            EventBatch batch;
            for (std::uint32_t i = 0; i < 5; ++i)
                batch.push_back(opened(b * 5 + i + 1));
            batches.push_back(std::move(batch));
        }
        std::atomic<int> handedOver{0};
        std::thread feeder([&] {
            for (EventBatch &b : batches) {
                feed->push(std::move(b));
                ++handedOver;
            }
        });
        // Two batches fill the queue: the third waits.
        QVERIFY(waitWithoutEvents([&] { return feed->waits() == 1; }));
        QCOMPARE(handedOver.load(), 2);
        QCOMPARE(feed->queuedEvents(), size_t(10));
        QVERIFY(!feed->waitForRoom(std::chrono::milliseconds(0))); // pushback is visible to the endpoint
        QTRY_COMPARE_WITH_TIMEOUT(model.store().connections().size(), size_t(25), 10'000);
        feeder.join();
        QCOMPARE(feed->shedEvents(), std::uint64_t(0));

        // A model thread that never answers: the wait gives up once, then batches are shed at once.
        limits.giveUpAfter = std::chrono::milliseconds(100);
        feed->setLimits(limits);
        const std::uint64_t waitsBefore = feed->waits();
        std::atomic<bool> done{false};
        std::thread second([&] {
            for (int i = 0; i < 20; ++i) {
                EventBatch b;
                for (int k = 0; k < 5; ++k)
                    b.push_back(ping(1, 1000 + i * 5 + k));
                feed->push(std::move(b));
            }
            done = true;
        });
        QVERIFY2(waitWithoutEvents([&] { return done.load(); }, 5000),
                 "the feeder stayed held back by a model thread that does not answer");
        second.join();
        QCOMPARE(feed->waits() - waitsBefore, std::uint64_t(1));
        QVERIFY2(feed->queuedEvents() <= 10 + 18, qPrintable(QString::number(feed->queuedEvents())));
        QCOMPARE(feed->shedEvents() + feed->queuedEvents() - 18, std::uint64_t(100));
        feed->drainAll();
        const Connection *c = model.store().findConnection(1);
        QVERIFY(c);
        QVERIFY(!c->notes.empty());
        QVERIFY2(QString::fromStdString(c->notes.front()).contains("the timeline fell behind"),
                 c->notes.front().c_str());
    }

    // A queue with room for an event's own bytes but not for the block its record takes queued alone: the
    // push waits for room without holding the queue, then gives up and sheds. It once turned for ever holding
    // the queue's lock, and the window froze, SIGINT and all, under a burst that filled the queue to just
    // that point.
    void aPushThatAlmostFitsWaitsWithoutHoldingTheQueue()
    {
        TimelineModel model;
        model.setRetention({}); // the queue's byte limit is maxQueuedBytes alone
        ModelFeed *feed = ModelFeed::of(&model);
        EventBatch first{opened(1)};
        QVERIFY(feed->push(std::move(first))); // an empty queue takes any one event
        const size_t held = feed->queuedBytes();
        QVERIFY(held > 0);
        WireEvent next = ping(1, 2);
        ModelFeedLimits limits;
        limits.maxQueuedBytes = held + ModelFeed::bytesOf(next); // its own bytes fit; queued alone, not
        limits.giveUpAfter = std::chrono::milliseconds(300);
        feed->setLimits(limits);
        QCOMPARE(feed->byteLimit(), limits.maxQueuedBytes);

        std::atomic<bool> done{false}, queued{true};
        std::thread feeder([&] {
            queued = feed->push({std::move(next)});
            done = true;
        });
        if (!waitWithoutEvents([&] { return done.load(); }, 20'000))
            qFatal("a push that almost fits never returned: it holds the queue and no one can make room");
        feeder.join();
        QVERIFY2(!queued.load(), "an event found room that was never made");
        QCOMPARE(feed->shedEvents(), std::uint64_t(1));
        QCOMPARE(feed->waits(), std::uint64_t(1));
        feed->drainAll();
        QCOMPARE(model.store().findConnection(1)->notes.size(), size_t(1)); // the shed ping, in a note
    }

    // A thread stopping a relay waits for its decoder thread: a sink waiting for room lets go at once.
    void stoppingReleasesWaitingSinks()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        ModelFeedLimits limits;
        limits.maxQueuedEvents = 1;
        limits.giveUpAfter = std::chrono::milliseconds(60'000);
        feed->setLimits(limits);
        model.appendBatch({opened(1)});
        QVERIFY(feed->push({ping(1, 1)}));
        std::atomic<bool> done{false};
        std::thread feeder([&] {
            feed->push({ping(1, 2)});
            done = true;
        });
        QVERIFY(waitWithoutEvents([&] { return feed->waits() == 1; }));
        QElapsedTimer t;
        t.start();
        {
            const ModelFeed::Stopping stopping(feed);
            feeder.join();
        }
        QVERIFY2(t.elapsed() < 5000, "the waiting sink was not released");
        QVERIFY(done);
        QCOMPARE(feed->shedEvents(), std::uint64_t(1));
    }

    // The ingestion endpoint pushes back: JSON lines stay unread while the model has no room (TCP holds the
    // sender), gRPC streams are refused with RESOURCE_EXHAUSTED and a reason; nothing is lost either way.
    void ingestionPushesBack()
    {
        TimelineModel model;
        ModelFeed *feed = ModelFeed::of(&model);
        ModelFeedLimits limits;
        limits.maxQueuedEvents = 100;
        feed->setLimits(limits);
        IngestServer server;
        server.setRoomProbe(feed->roomProbe());
        std::string error;
        QVERIFY2(server.start(0, 0, feed->sink(), &error), error.c_str());

        constexpr int kLines = 3000;
        std::atomic<int> answers{0};
        std::thread client([&] {
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(server.jsonPort());
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) return;
            std::string all;
            for (int i = 0; i < kLines; ++i)
                all += "{\"kind\":\"custom\",\"label\":\"burst\",\"detail\":\"" + std::to_string(i) + "\"}\n";
            std::thread reader([&] {
                char buf[4096];
                ssize_t n;
                while (answers < kLines && (n = ::read(fd, buf, sizeof buf)) > 0)
                    for (ssize_t k = 0; k < n; ++k)
                        answers += buf[k] == '\n';
            });
            for (size_t off = 0; off < all.size();) {
                const ssize_t n = ::write(fd, all.data() + off, all.size() - off);
                if (n <= 0) break;
                off += size_t(n);
            }
            reader.join();
            ::close(fd);
        });
        // The model's thread does not turn: the endpoint stops reading once the queue is full.
        QVERIFY(waitWithoutEvents([&] { return feed->queuedEvents() >= 100; }));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        QVERIFY2(feed->queuedEvents() < 100 + 200, qPrintable(QString::number(feed->queuedEvents())));
        QVERIFY(server.accepted() < kLines);

        // gRPC meanwhile: refused with a reason.
        {
            auto stub = ingest::Ingest::NewStub(grpc::CreateChannel(
                "127.0.0.1:" + std::to_string(server.grpcPort()), grpc::InsecureChannelCredentials()));
            grpc::ClientContext ctx;
            ingest::ReportReply reply;
            auto writer = stub->ReportEvents(&ctx, &reply);
            ingest::Event e;
            e.set_kind("rejection");
            e.set_detail("full");
            for (int i = 0; i < 3 && writer->Write(e); ++i) {
            }
            writer->WritesDone();
            const grpc::Status st = writer->Finish();
            QCOMPARE(int(st.error_code()), int(grpc::StatusCode::RESOURCE_EXHAUSTED));
            QVERIFY2(QString::fromStdString(st.error_message()).contains("behind"),
                     st.error_message().c_str());
            QCOMPARE(server.pushedBack(), std::uint64_t(1));
        }

        // The model's thread turns again: every line is taken, answered and applied.
        QTRY_COMPARE_WITH_TIMEOUT(model.store().labEvents().size(), size_t(kLines), 20'000);
        client.join();
        QCOMPARE(answers.load(), kLines);
        QCOMPARE(server.accepted(), std::uint64_t(kLines));
        QVERIFY(feed->appends() < std::uint64_t(kLines) / 10);
        server.stop();
    }
};

QTEST_GUILESS_MAIN(TestModelFeed)
#include "tst_modelfeed.moc"
