#include "eventlog.h"

#include "capturecodec.h"

namespace rpcscope {

void EventLog::append(const EventBatch &batch)
{
    if (batch.empty())
        return;
    size_t payload = 0;
    for (const WireEvent &e : batch)
        payload += e.payload.size();
    std::string encoded;
    if (m_payloadBytes + payload <= m_payloadBudget) {
        m_payloadBytes += payload;
        encoded = encodeBatch(batch);
    } else {
        // Over the budget: keep the payloads that still fit, drop the rest.
        EventBatch trimmed = batch;
        for (WireEvent &e : trimmed) {
            if (e.payload.empty())
                continue;
            if (m_payloadBytes + e.payload.size() > m_payloadBudget) {
                m_droppedPayloadBytes += e.payload.size();
                std::string().swap(e.payload);
                e.truncated = true;
            } else {
                m_payloadBytes += e.payload.size();
            }
        }
        encoded = encodeBatch(trimmed);
    }
    m_encodedBytes += encoded.size();
    m_batches.push_back({std::move(encoded), batch.size()});
    m_events += batch.size();
    ++m_generation;
}

EventBatch EventLog::batch(size_t i) const
{
    EventBatch out;
    // The log encoded it itself, so it decodes.
    decodeBatch(m_batches[i].encoded.data(), m_batches[i].encoded.size(), &out);
    return out;
}

void EventLog::clear()
{
    m_batches.clear();
    m_events = 0;
    m_encodedBytes = 0;
    m_payloadBytes = 0;
    m_droppedPayloadBytes = 0;
    ++m_generation;
}

} // namespace rpcscope
