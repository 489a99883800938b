#include "storeconsumer.h"

namespace rpcscope::bench {

StoreConsumer::StoreConsumer() : m_thread([this] { loop(); }) {}

StoreConsumer::~StoreConsumer()
{
    {
        std::lock_guard lk(m_mu);
        m_stopping = true;
    }
    m_cv.notify_all();
    m_thread.join();
}

Relay::Sink StoreConsumer::sink()
{
    return [this](EventBatch &&batch) {
        {
            std::lock_guard lk(m_mu);
            m_queue.push_back(std::move(batch));
        }
        m_cv.notify_all();
    };
}

void StoreConsumer::drain()
{
    std::unique_lock lk(m_mu);
    m_cv.wait(lk, [this] { return m_queue.empty() && !m_busy; });
}

size_t StoreConsumer::events() const
{
    std::lock_guard lk(m_mu);
    return m_events;
}

size_t StoreConsumer::decodeErrors() const
{
    std::lock_guard lk(m_mu);
    return m_decodeErrors;
}

size_t StoreConsumer::calls()
{
    // One lock for both: the consumer cannot start another batch while the store is read.
    std::unique_lock lk(m_mu);
    m_cv.wait(lk, [this] { return m_queue.empty() && !m_busy; });
    return m_store.calls().size();
}

void StoreConsumer::loop()
{
    std::unique_lock lk(m_mu);
    for (;;) {
        m_cv.wait(lk, [this] { return m_stopping || !m_queue.empty(); });
        if (m_queue.empty()) return;
        EventBatch batch = std::move(m_queue.front());
        m_queue.pop_front();
        m_busy = true;
        lk.unlock();
        m_store.apply(batch);
        size_t errors = 0;
        for (const WireEvent &e : batch)
            errors += e.kind == EventKind::DecodeError;
        lk.lock();
        m_events += batch.size();
        m_decodeErrors += errors;
        m_busy = false;
        m_cv.notify_all();
    }
}

} // namespace rpcscope::bench
