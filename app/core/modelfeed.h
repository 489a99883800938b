#pragma once

#include "events.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace rpcscope {

class TimelineModel;

// How much a feed holds for its model and how it hands it over.
struct ModelFeedLimits
{
    // Past either, a feeder is held back: a relay's decoder waits (and past its own backlog limit the relay
    // goes on without decoding, saying so on the connection), the ingestion endpoint stops reading or
    // refuses.
    size_t maxQueuedEvents = 200'000;
    size_t maxQueuedBytes = size_t(96) << 20;
    // A relay's sink waits this long for room; past it the batch is shed (connection opens, closes and
    // decode errors kept, the rest counted in a note on its connection) instead of queued.
    std::chrono::milliseconds giveUpAfter{1000};
    // At most one append per interval, so the model's thread has time between them for input and repaints.
    std::chrono::milliseconds interval{16};
    // The most one append takes; fewer when appends take long (about a frame interval of work each).
    size_t maxEventsPerAppend = 50'000;
};

// The one queue between everything that feeds a TimelineModel (relays, the ingestion endpoint, the lab) and
// the model's thread. Feeders on any thread push batches under a lock; the model's thread takes them at most
// once per frame interval, merged into one batch and one appendBatch, a bounded number of events at a time,
// so the event loop keeps turning (input, repaints, a quit) however fast events come. The queue is bounded:
// feeders are held back or told there is no room, never left to grow it.
//
// Lives on the model's thread as the model's child; sinks made by it may outlive it (they then drop batches).
class ModelFeed : public QObject
{
    Q_OBJECT
public:
    // The model's feed, made on first use. Call on the model's thread.
    static ModelFeed *of(TimelineModel *model);
    explicit ModelFeed(TimelineModel *model, const ModelFeedLimits &limits = {});
    ~ModelFeed() override;

    void setLimits(const ModelFeedLimits &limits);
    ModelFeedLimits limits() const;

    // Any thread. Queues `batch`, waiting up to giveUpAfter while the queue is full; past that (or while the
    // model's thread is stopping what feeds it, see Stopping) sheds it. False when shed. Never waits on the
    // model's own thread, which alone could make room: there it queues.
    bool push(EventBatch &&batch);
    // Any thread. Queues `batch` only when there is room (false and `batch` left as it was otherwise).
    bool tryPush(EventBatch &&batch);
    // Any thread. Whether the queue has room for more, waiting up to `wait` for it.
    bool waitForRoom(std::chrono::milliseconds wait) const;

    // push() as a relay sink, and waitForRoom() for the ingestion endpoint; both safe after the feed is gone.
    std::function<void(EventBatch &&)> sink() const;
    std::function<bool(std::chrono::milliseconds)> roomProbe() const;

    // What is queued and not applied yet (the budget counts it), and what happened so far.
    size_t queuedEvents() const;
    size_t queuedBytes() const;
    // The most the queue holds in bytes: maxQueuedBytes, or a quarter of the model's retention budget.
    size_t byteLimit() const;
    std::uint64_t appends() const;
    std::uint64_t appliedEvents() const;
    std::uint64_t shedEvents() const; // dropped by relay sinks that waited in vain
    std::uint64_t waits() const;      // pushes that waited for room
    // On the model's thread: the most events one turn of it applied (at most maxEventsPerAppend).
    size_t mostEventsInOneTurn() const;

    // On the model's thread: applies everything queued now, in appends of the usual size (tests, shutdown).
    void drainAll();

    // While alive, sinks do not wait for room: the model's thread is waiting for a feeder to stop (a relay
    // joining its decoder thread) and cannot make any.
    class Stopping
    {
    public:
        explicit Stopping(ModelFeed *feed);
        ~Stopping();
        Stopping(const Stopping &) = delete;
        Stopping &operator=(const Stopping &) = delete;

    private:
        std::shared_ptr<struct ModelFeedQueue> m_q;
    };

    // Estimated bytes an event holds in the queue.
    static size_t bytesOf(const WireEvent &e);

signals:
    // After each append, with the number of events it applied.
    void appended(qint64 events);

private:
    Q_INVOKABLE void schedule(); // on the model's thread: a push asked for a drain
    bool drainOnce();
    void resize(size_t applied, qint64 ns); // the next append's size, from what this one cost

    TimelineModel *m_model;
    std::shared_ptr<ModelFeedQueue> m_q;
    QTimer m_timer;
    QElapsedTimer m_sinceAppend;
    size_t m_perAppend;
    double m_nsPerEvent = 0; // smoothed
    size_t m_mostInOneTurn = 0;
};

} // namespace rpcscope
