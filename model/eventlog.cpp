#include "eventlog.h"

#include "capture.pb.h"
#include "capturecodec.h"

#include <algorithm>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <unordered_set>

namespace rpcscope {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// The fields of one encoded capture::Event that decide whether retention drops it.
struct EventHead
{
    EventKind kind = EventKind::ConnectionOpened;
    std::uint32_t connection = 0;
    std::uint32_t stream = 0;
    std::int64_t tNs = 0;
    std::uint32_t frameType = 0;
};

bool readHead(const std::uint8_t *data, int len, EventHead *h)
{
    CodedInputStream in(data, len);
    while (const std::uint32_t tag = in.ReadTag()) {
        std::uint64_t v = 0;
        switch (WireFormatLite::GetTagFieldNumber(tag)) {
        case 1:
        case 2:
        case 4:
        case 5:
        case 6:
            if (WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_VARINT ||
                !in.ReadVarint64(&v))
                return false;
            if (WireFormatLite::GetTagFieldNumber(tag) == 1)
                h->kind = EventKind(v);
            else if (WireFormatLite::GetTagFieldNumber(tag) == 2)
                h->connection = std::uint32_t(v);
            else if (WireFormatLite::GetTagFieldNumber(tag) == 4)
                h->tNs = std::int64_t(v);
            else if (WireFormatLite::GetTagFieldNumber(tag) == 5)
                h->stream = std::uint32_t(v);
            else
                h->frameType = std::uint32_t(v);
            break;
        default:
            if (!WireFormatLite::SkipField(&in, tag)) return false;
        }
    }
    return in.ConsumedEntireMessage();
}

// Copies the events of an encoded batch that `drop` keeps, byte for byte, without decoding them: retention
// rewrites the batches its cut runs through on the GUI thread. False when the bytes are not a batch.
template <typename Drop>
bool filterEncoded(const std::string &batch, Drop drop, std::string *out, size_t *kept)
{
    const auto *data = reinterpret_cast<const std::uint8_t *>(batch.data());
    CodedInputStream in(data, int(batch.size()));
    *kept = 0;
    while (true) {
        const int recordStart = in.CurrentPosition();
        const std::uint32_t tag = in.ReadTag();
        if (!tag) break;
        std::uint32_t len = 0;
        if (tag != WireFormatLite::MakeTag(capture::EventBatch::kEventsFieldNumber,
                                           WireFormatLite::WIRETYPE_LENGTH_DELIMITED) ||
            !in.ReadVarint32(&len) || len > batch.size() - size_t(in.CurrentPosition()))
            return false;
        const int eventStart = in.CurrentPosition();
        EventHead head;
        if (!readHead(data + eventStart, int(len), &head) || !in.Skip(int(len))) return false;
        if (!drop(head, data + eventStart, int(len))) {
            out->append(batch, size_t(recordStart), size_t(in.CurrentPosition() - recordStart));
            ++*kept;
        }
    }
    return true;
}

// A lab event's call id (in its gRPC fields), or empty, read without decoding the event: a cut through a
// burst of ingested events decoded each one whole and took 50 ms of CPU on the GUI thread.
std::string labCallId(const std::uint8_t *data, int len)
{
    CodedInputStream in(data, len);
    while (const std::uint32_t tag = in.ReadTag()) {
        if (WireFormatLite::GetTagFieldNumber(tag) == capture::Event::kGrpcFieldNumber &&
            WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
            std::uint32_t n = 0;
            if (!in.ReadVarint32(&n)) return {};
            const auto limit = in.PushLimit(int(n));
            while (const std::uint32_t inner = in.ReadTag()) {
                if (WireFormatLite::GetTagFieldNumber(inner) == capture::GrpcFields::kCallIdFieldNumber &&
                    WireFormatLite::GetTagWireType(inner) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
                    std::string id;
                    return WireFormatLite::ReadString(&in, &id) ? id : std::string();
                }
                if (!WireFormatLite::SkipField(&in, inner)) return {};
            }
            in.PopLimit(limit);
            continue;
        }
        if (!WireFormatLite::SkipField(&in, tag)) break;
    }
    return {};
}

} // namespace

size_t EventLog::heapBytes(const std::string &s)
{
    // The block malloc gives the string (an 8-byte header, 16-byte steps); none within the small buffer.
    return s.capacity() > 15 ? std::max<size_t>(32, (s.capacity() + 1 + 8 + 15) & ~size_t(15)) : 0;
}

void EventLog::append(EventSpan batch)
{
    if (batch.empty()) return;
    size_t payload = 0;
    bool longHeaders = false;
    for (const WireEvent &e : batch) {
        payload += e.payload.size();
        if (e.kind == EventKind::Headers && e.headers.size() > 16) {
            size_t bytes = 0;
            for (const Header &h : e.headers)
                bytes += h.name.size() + h.value.size();
            longHeaders = longHeaders || bytes > kMaxKeptHeaderBytes;
        }
    }
    std::string encoded;
    if (m_payloadBytes + payload <= m_payloadBudget && !longHeaders) {
        m_payloadBytes += payload;
        encoded = encodeEvents(batch);
    } else {
        // Over the budget: keep the payloads that still fit, drop the rest. Long header lists keep their
        // first names and values.
        EventBatch trimmed(batch.begin(), batch.end());
        for (WireEvent &e : trimmed) {
            if (e.kind == EventKind::Headers) {
                size_t bytes = 0, keep = 0;
                while (keep < e.headers.size() &&
                       (bytes += e.headers[keep].name.size() + e.headers[keep].value.size()) <=
                           kMaxKeptHeaderBytes)
                    ++keep;
                if (keep < e.headers.size()) {
                    e.headers.resize(keep);
                    e.truncated = true;
                }
            }
            if (e.payload.empty()) continue;
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
    m_heapBytes += heapBytes(encoded);
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

EventLog::Batch EventLog::describe(std::string encoded, EventSpan events)
{
    Batch b{std::move(encoded), events.size(), INT64_MAX, INT64_MIN, false, true, true};
    for (const WireEvent &e : events) {
        b.minNs = std::min(b.minNs, e.tNs);
        b.maxNs = std::max(b.maxNs, e.tNs);
        const bool always = e.kind == EventKind::ConnectionOpened || e.kind == EventKind::ConnectionClosed ||
                            e.kind == EventKind::DecodeError || e.kind == EventKind::Notice;
        b.mustKeep = b.mustKeep || always || e.kind == EventKind::LabEvent;
        b.onlyKept = b.onlyKept && always;
        b.callFreeLabOnly = b.callFreeLabOnly && e.kind == EventKind::LabEvent && e.grpc.callId.empty();
    }
    return b;
}

void EventLog::evict(const std::vector<std::uint64_t> &streams, const std::vector<std::string> &keys,
                     std::int64_t keepFromNs, std::int64_t untilNs, bool pinnedKept,
                     std::int64_t framesBeforeNs)
{
    untilNs = std::max(untilNs, framesBeforeNs);
    // `streams` is sorted; the keys are only hashed once a lab event needs them.
    std::unordered_set<std::string> goneKeys;
    auto keyGone = [&](const std::string &key) {
        if (goneKeys.empty() && !keys.empty()) goneKeys.insert(keys.begin(), keys.end());
        return goneKeys.count(key) > 0;
    };
    auto drop = [&](const EventHead &e, const std::uint8_t *bytes, int len) {
        switch (e.kind) {
        case EventKind::ConnectionOpened:
        case EventKind::ConnectionClosed:
        case EventKind::DecodeError:
        case EventKind::Notice:
            return false;
        case EventKind::LabEvent: {
            // Its call id, decoded only when it has one: a burst of ingested events has none, and decoding
            // each whole made a cut through a million of them stall the GUI thread.
            const std::string callId = labCallId(bytes, len);
            return (e.tNs < std::max(keepFromNs, framesBeforeNs) && callId.empty()) || keyGone(callId);
        }
        case EventKind::FlowStallBegin:
        case EventKind::FlowStallEnd:
            if (e.tNs < framesBeforeNs && (!pinnedKept || e.stream == 0)) return true;
            break;
        case EventKind::Frame:
            if (e.tNs < framesBeforeNs && e.frameType != FrameRstStream && e.frameType != FrameGoaway &&
                (!pinnedKept || e.stream == 0))
                return true;
            break;
        default:
            break;
        }
        switch (e.kind) {
        case EventKind::ConnectionOpened:
        case EventKind::ConnectionClosed:
        case EventKind::DecodeError:
        case EventKind::Notice:
        case EventKind::LabEvent:
            return false;
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
        // So is a batch of lab events tied to no call wholly before the cut (an ingestion burst's).
        if ((m_batches[i].maxNs < keepFromNs && !m_batches[i].mustKeep && !pinnedKept) ||
            (m_batches[i].callFreeLabOnly && m_batches[i].maxNs < std::max(keepFromNs, framesBeforeNs))) {
            m_events -= m_batches[i].events;
            m_encodedBytes -= m_batches[i].encoded.size();
            m_heapBytes -= heapBytes(m_batches[i].encoded);
            std::string().swap(m_batches[i].encoded); // now, not with the whole list at the end
            continue;
        }
        // The log encoded every batch itself, so the filter cannot fail; a batch it could not read stays.
        std::string filtered;
        size_t keptEvents = 0;
        if (!filterEncoded(m_batches[i].encoded, drop, &filtered, &keptEvents)) {
            kept.push_back(std::move(m_batches[i]));
            continue;
        }
        m_events -= m_batches[i].events - keptEvents;
        m_encodedBytes -= m_batches[i].encoded.size();
        m_heapBytes -= heapBytes(m_batches[i].encoded);
        // The old copy goes as soon as its filtered one exists: keeping every old batch until the list is
        // replaced would hold the log twice over at the end of each cut, a peak no count sees.
        std::string().swap(m_batches[i].encoded);
        if (!keptEvents) continue;
        filtered.shrink_to_fit();
        // Its time range and flags stay those of the whole batch: wider than what is left, which only means
        // a later eviction may look at it again.
        Batch b{std::move(filtered),   keptEvents,           m_batches[i].minNs, m_batches[i].maxNs,
                m_batches[i].mustKeep, m_batches[i].onlyKept};
        m_encodedBytes += b.encoded.size();
        m_heapBytes += heapBytes(b.encoded);
        kept.push_back(std::move(b));
    }
    // The list's spare slots are counted (memoryBytes()): give them back once they are most of it.
    if (kept.capacity() > 2 * kept.size() + 64) kept.shrink_to_fit();
    m_batches = std::move(kept);
    ++m_generation;
}

void EventLog::clear()
{
    m_batches.clear();
    m_events = 0;
    m_encodedBytes = 0;
    m_heapBytes = 0;
    m_payloadBytes = 0;
    m_droppedPayloadBytes = 0;
    ++m_generation;
}

} // namespace rpcscope
