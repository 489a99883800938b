#include "eventlog.h"

#include "capturecodec.h"

#include <algorithm>
#include <unordered_set>

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
    m_batches.push_back(describe(std::move(encoded), batch));
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

EventLog::Batch EventLog::describe(std::string encoded, const EventBatch &events)
{
    Batch b{std::move(encoded), events.size(), INT64_MAX, INT64_MIN, false, true};
    for (const WireEvent &e : events) {
        b.minNs = std::min(b.minNs, e.tNs);
        b.maxNs = std::max(b.maxNs, e.tNs);
        const bool always = e.kind == EventKind::ConnectionOpened || e.kind == EventKind::ConnectionClosed ||
                            e.kind == EventKind::DecodeError || e.kind == EventKind::Notice;
        b.mustKeep = b.mustKeep || always || e.kind == EventKind::LabEvent;
        b.onlyKept = b.onlyKept && always;
    }
    return b;
}

void EventLog::evict(const std::vector<std::uint64_t> &streams, const std::vector<std::string> &keys,
                     std::int64_t keepFromNs, std::int64_t untilNs, bool pinnedKept)
{
    // `streams` is sorted; the keys are only hashed once a lab event needs them.
    std::unordered_set<std::string> goneKeys;
    auto keyGone = [&](const std::string &key) {
        if (goneKeys.empty() && !keys.empty())
            goneKeys.insert(keys.begin(), keys.end());
        return goneKeys.count(key) > 0;
    };
    auto drop = [&](const WireEvent &e) {
        switch (e.kind) {
        case EventKind::ConnectionOpened:
        case EventKind::ConnectionClosed:
        case EventKind::DecodeError:
        case EventKind::Notice:
            return false;
        case EventKind::LabEvent:
            return (e.tNs < keepFromNs && e.grpc.callId.empty()) || keyGone(e.grpc.callId);
        default:
            if (e.stream && std::binary_search(streams.begin(), streams.end(),
                                               (std::uint64_t(e.connection) << 32) | e.stream))
                return true;
            return e.tNs < keepFromNs && e.stream == 0;
        }
    };
    std::vector<Batch> kept;
    kept.reserve(m_batches.size());
    for (size_t i = 0; i < m_batches.size(); ++i) {
        if (m_batches[i].minNs > untilNs || m_batches[i].onlyKept) {
            kept.push_back(std::move(m_batches[i]));
            continue;
        }
        // Wholly older than everything kept, and nothing in it that always stays: dropped without decoding.
        if (m_batches[i].maxNs < keepFromNs && !m_batches[i].mustKeep && !pinnedKept) {
            m_events -= m_batches[i].events;
            m_encodedBytes -= m_batches[i].encoded.size();
            continue;
        }
        EventBatch events = batch(i);
        const size_t before = events.size();
        std::erase_if(events, drop);
        m_events -= before - events.size();
        m_encodedBytes -= m_batches[i].encoded.size();
        if (events.empty())
            continue;
        Batch b = describe(encodeBatch(events), events);
        m_encodedBytes += b.encoded.size();
        kept.push_back(std::move(b));
    }
    m_batches = std::move(kept);
    ++m_generation;
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
