#pragma once

// The batches that reached the model, kept so a live session can be saved as a capture file and reopened
// into exactly the same timeline. TimelineModel records every batch it applies.
//
// Bounded by what the store keeps: batches are held encoded as in the capture file (capturecodec.h), where
// a frame event takes about 20 bytes and a decoded header block its names and values - the same order as
// the store's own records of frames, calls and attempts. gRPC message payloads, which the store does not
// keep at all, are bounded per message by the decoder (--max-message-keep) and in total by the payload
// budget here; beyond it payloads are dropped (the event stays, marked truncated), which changes nothing in
// the replayed model.

#include "events.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rpcscope {

class EventLog
{
public:
    static constexpr size_t kDefaultPayloadBudget = size_t(64) << 20;

    void append(const EventBatch &batch);
    void clear();
    // Retention: drops the events of evicted calls (their streams, sorted, and call keys) and the frames,
    // pings and lab events before keepFromNs that belong to no call kept; connection opens and closes always
    // stay, so a saved file still replays to exactly what the store kept. Only batches holding events up to
    // `untilNs` (the latest evicted call's end) are rewritten. `pinnedKept`: some pinned call stayed, so old
    // batches must be looked into rather than dropped whole.
    void evict(const std::vector<std::uint64_t> &streams, const std::vector<std::string> &keys,
               std::int64_t keepFromNs, std::int64_t untilNs, bool pinnedKept = false);

    size_t batchCount() const { return m_batches.size(); }
    size_t batchEventCount(size_t i) const { return m_batches[i].events; }
    const std::string &encodedBatch(size_t i) const { return m_batches[i].encoded; }
    EventBatch batch(size_t i) const; // decoded

    size_t eventCount() const { return m_events; }
    bool isEmpty() const { return m_events == 0; }
    size_t encodedBytes() const { return m_encodedBytes; }
    // Bumps on every append and clear: a GUI compares it with the value at its last save ("unsaved changes").
    std::uint64_t generation() const { return m_generation; }

    void setPayloadBudget(size_t bytes) { m_payloadBudget = bytes; }
    size_t payloadBytes() const { return m_payloadBytes; }
    size_t droppedPayloadBytes() const { return m_droppedPayloadBytes; }

private:
    struct Batch
    {
        std::string encoded;
        size_t events = 0;
        std::int64_t minNs = 0; // its earliest event, so retention can skip batches it cannot touch
        std::int64_t maxNs = 0; // its latest
        bool mustKeep = false;  // holds events retention always keeps (connections, notices, lab events)
        bool onlyKept = false;  // holds nothing else (connections, notices): retention never rewrites it
    };
    static Batch describe(std::string encoded, const EventBatch &events);
    std::vector<Batch> m_batches;
    size_t m_events = 0;
    size_t m_encodedBytes = 0;
    size_t m_payloadBudget = kDefaultPayloadBudget;
    size_t m_payloadBytes = 0;
    size_t m_droppedPayloadBytes = 0;
    std::uint64_t m_generation = 0;
};

} // namespace rpcscope
