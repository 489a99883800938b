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

    void append(EventSpan batch);
    void append(const EventBatch &batch) { append(EventSpan(batch)); }
    void clear();
    // Retention: drops the events of evicted calls (their streams, sorted, and call keys) and the frames,
    // pings and lab events before keepFromNs that belong to no call kept; connection opens and closes always
    // stay, so a saved file still replays to exactly what the store kept. Only batches holding events up to
    // `untilNs` (the latest evicted call's end) are rewritten. `pinnedKept`: some pinned call stayed, so old
    // batches must be looked into rather than dropped whole.
    // `framesBeforeNs`: the store's age cut (TimelineStore::planAgeCut): frames (but RST_STREAM and GOAWAY),
    // stall marks and lab events of no call before it go too, on every stream unless a pinned call stayed.
    void evict(const std::vector<std::uint64_t> &streams, const std::vector<std::string> &keys,
               std::int64_t keepFromNs, std::int64_t untilNs, bool pinnedKept = false,
               std::int64_t framesBeforeNs = INT64_MIN);

    size_t batchCount() const { return m_batches.size(); }
    size_t batchEventCount(size_t i) const { return m_batches[i].events; }
    const std::string &encodedBatch(size_t i) const { return m_batches[i].encoded; }
    EventBatch batch(size_t i) const; // decoded

    size_t eventCount() const { return m_events; }
    bool isEmpty() const { return m_events == 0; }
    size_t encodedBytes() const { return m_encodedBytes; }
    // What the log takes from the allocator: the encoded batches' blocks and the batch list's slots.
    // One-event batches (a flood, a relay flushing each frame) cost several times their encoded bytes.
    size_t memoryBytes() const { return m_heapBytes + m_batches.capacity() * sizeof(Batch); }
    // A header block's names and values beyond this many bytes are not kept (the event is marked truncated):
    // HPACK lets 16 KiB on the wire name 64 KiB of headers, and a flood of streams that never end would
    // otherwise hold that much each. The calls' gRPC fields are kept whole beside them.
    static constexpr size_t kMaxKeptHeaderBytes = 8 * 1024;
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
        bool callFreeLabOnly = false; // lab events of no call alone: past the cut it goes whole
    };
    static Batch describe(std::string encoded, EventSpan events);
    std::vector<Batch> m_batches;
    size_t m_events = 0;
    size_t m_encodedBytes = 0;
    size_t m_heapBytes = 0; // the encoded batches' blocks, as the allocator counts them
    static size_t heapBytes(const std::string &s);
    size_t m_payloadBudget = kDefaultPayloadBudget;
    size_t m_payloadBytes = 0;
    size_t m_droppedPayloadBytes = 0;
    std::uint64_t m_generation = 0;
};

} // namespace rpcscope
