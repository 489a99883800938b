#pragma once

#include "relay.h"
#include "timelinemodel.h"

#include <QMetaObject>
#include <QThread>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace rpcscope {

// How far the model's thread may fall behind the sinks feeding it. Past `maxQueuedEvents` handed over and not
// yet applied, a sink waits for the model to catch up by half (up to `giveUpAfter`) instead of queueing more:
// the relay's decoder then falls behind in turn, and past its own backlog limit the relay goes on without
// decoding and says so on the connection. Memory stays bounded whatever rate of streams a client opens. A
// model thread that does not answer within `giveUpAfter` (it is stopping the relay and waits for it) is not
// waited for again until it has caught up by half.
struct ModelFeedLimits
{
    size_t maxQueuedEvents = 400'000;
    std::chrono::milliseconds giveUpAfter{2000};
};

// What a feed's sinks have handed over and the model has not applied yet (for tests and progress).
struct ModelFeedGate
{
    std::mutex mu;
    std::condition_variable cv;
    size_t queued = 0;    // events handed over, not yet applied
    bool waiting = false; // a sink is waiting for the model
    bool gaveUp = false;  // the model did not answer in time: no waiting until it catches up
    std::uint64_t waits = 0;
};

// Relay sinks run on the decoder thread; the model lives on its own (GUI or CLI main) thread and has no
// locks, so each immutable batch is handed over through the model's event queue. The relay must be stopped
// before the model is destroyed.
inline Relay::Sink queuedSinkTo(TimelineModel *model, ModelFeedLimits limits = {},
                                std::shared_ptr<ModelFeedGate> gate = {})
{
    if (!gate) gate = std::make_shared<ModelFeedGate>();
    return [model, limits, gate](EventBatch &&batch) {
        const size_t n = batch.size();
        {
            std::unique_lock lk(gate->mu);
            // Never on the model's own thread: only it could make room.
            if (gate->queued > limits.maxQueuedEvents && !gate->gaveUp &&
                QThread::currentThread() != model->thread()) {
                gate->waiting = true;
                ++gate->waits;
                // Until the model has caught up by half, so a sink at the limit does not wait once per batch.
                if (!gate->cv.wait_for(lk, limits.giveUpAfter,
                                       [&] { return gate->queued <= limits.maxQueuedEvents / 2; }))
                    gate->gaveUp = true;
                gate->waiting = false;
            }
            gate->queued += n;
        }
        QMetaObject::invokeMethod(
            model,
            [model, gate, limits, n, b = std::move(batch)] {
                model->appendBatch(b);
                {
                    std::lock_guard lk(gate->mu);
                    gate->queued -= n;
                    if (gate->queued <= limits.maxQueuedEvents / 2) gate->gaveUp = false;
                }
                gate->cv.notify_all();
            },
            Qt::QueuedConnection);
    };
}

} // namespace rpcscope
