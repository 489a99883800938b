#pragma once

#include "relay.h"
#include "timelinestore.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace rpcscope::bench {

// What the application does with a relay's batches, minus the GUI: a thread of its own applies them to a
// TimelineStore, so the relay's decoder thread only hands batches over, as it does in rpcscope.
class StoreConsumer
{
public:
    StoreConsumer();
    ~StoreConsumer();
    Relay::Sink sink();
    // Waits until every batch handed over so far has been applied.
    void drain();
    size_t events() const;
    // DecodeError events seen: a relay that stopped decoding would make the proxied numbers flatter it.
    size_t decodeErrors() const;
    size_t calls();

private:
    void loop();

    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<EventBatch> m_queue;
    bool m_busy = false;
    bool m_stopping = false;
    size_t m_events = 0;
    size_t m_decodeErrors = 0;
    TimelineStore m_store;
    std::thread m_thread;
};

} // namespace rpcscope::bench
