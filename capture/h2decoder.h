#pragma once

#include "controlframerate.h"
#include "decoderlimits.h"
#include "events.h"
#include "eventstamp.h"
#include "flowwindows.h"
#include "grpcmessages.h"
#include "headerblock.h"
#include "rulechecks.h"

#include <cstdint>
#include <deque>
#include <string>

namespace rpcscope {

// Passive decoder for one direction of one HTTP/2 connection. It never answers the peer; it only delimits
// frames, inflates header blocks with nghttp2's HPACK inflater, finds gRPC message boundaries, pairs PINGs
// with their ACKs and follows flow-control windows. Bytes may be split anywhere across feed() calls: only an
// incomplete frame is buffered. This class is the framing: bytes into frames, frames into events. Header
// blocks (HeaderBlock), gRPC messages (GrpcMessages), flow-control windows (FlowWindows) and rule checks
// (RuleChecks) are each a part of it with a file of its own.
class H2Decoder
{
public:
    explicit H2Decoder(Direction dir, const DecoderLimits &limits = {});
    H2Decoder(const H2Decoder &) = delete;
    H2Decoder &operator=(const H2Decoder &) = delete;

    // The decoder of the other direction: our SETTINGS constrain what it may receive.
    void setPeer(H2Decoder *peer) { m_peer = peer; }
    // The bytes start somewhere inside an established connection: find a frame boundary instead of
    // expecting the preface, and treat the HPACK context as unknown until blocks decode again.
    void attachMidStream();

    // Appends the events completed by these bytes, all stamped tNs (the read that delivered them).
    void feed(const std::uint8_t *data, size_t len, std::int64_t tNs, std::uint32_t connection,
              EventBatch &out);

    // The connection closed: report anything held back (a few bytes too short to classify).
    void finish(std::int64_t tNs, EventBatch &out);

    // Bytes just ahead that the decoder would not look at: inside a DATA frame that spans reads, the rest of
    // a message body past its kept first bytes, or padding. They may be passed to skip() instead of feed(),
    // so a relay can leave them unread; the events are the same either way.
    size_t skippable() const;
    // Passes over n <= skippable() bytes as if they had been fed (more is a DecodeError).
    void skip(size_t n, std::int64_t tNs, std::uint32_t connection, EventBatch &out);

    bool failed() const { return m_state == State::Failed; }
    // What this direction holds between reads (partial frames, the HPACK table, per-stream state, events
    // waiting for a DATA frame to complete), as the allocator counts it; O(open streams).
    size_t memoryBytes() const;
    const std::string &error() const { return m_error; }

private:
    enum class State
    {
        Preface,
        Sniffing,
        Resync,
        Frames,
        Failed,
        Tls // relayed TLS, named by its ClientHello (tlsclienthello.h): nothing to decode, nothing wrong
    };

    size_t feedPreface(const std::uint8_t *data, size_t len);
    // The client's first bytes are a TLS record: read its ClientHello and name the connection by it.
    void sniffTls(bool closing, std::int64_t t, EventBatch &out);
    // The server answers a connection whose ClientHello was named: it stops decoding without an error of
    // its own.
    bool answersTls(const std::uint8_t *data, size_t len);
    bool resync(std::int64_t t, EventBatch &out);
    bool plausibleFrameHeader(const std::uint8_t *hdr) const;
    void handleFrame(const std::uint8_t *hdr, const std::uint8_t *payload, std::int64_t t, EventBatch &out);
    void dataFlow(std::uint32_t stream, std::uint8_t flags, std::uint32_t len, std::int64_t t,
                  EventBatch &out);
    bool streamable(const std::uint8_t *hdr) const;
    void beginStreamedData(const std::uint8_t *hdr);
    void streamData(const std::uint8_t *p, size_t n);
    void finishStreamedData(std::int64_t t, EventBatch &out);
    void handleHeaderFragment(std::uint32_t stream, const std::uint8_t *p, size_t len, bool endHeaders,
                              std::int64_t t, EventBatch &out);
    EventStamp stamp(std::int64_t t) const { return {m_connection, m_dir, t}; }
    WireEvent event(EventKind kind, std::int64_t t) const { return stamp(t).make(kind); }
    bool checkFrameHeader(const std::uint8_t *hdr, std::int64_t t, EventBatch &out);
    void fail(std::string reason, std::int64_t t, EventBatch &out);
    // The reason for a connection that closed inside its first frame (finish()).
    std::string cutFirstFrame() const;
    bool flowKnown() const { return !m_midStream && (!m_peer || !m_peer->m_midStream); }

    // Called on the sender's decoder by the receiver's decoder.
    void applyPeerInitialWindow(std::uint32_t size, std::int64_t t, EventBatch &out);
    void applyWindowUpdate(std::uint32_t stream, std::uint32_t increment, std::int64_t t, EventBatch &out);
    void peerResetStream(std::uint32_t stream, std::int64_t t, EventBatch &out);
    void stall(bool begin, std::uint32_t stream, std::int64_t t, EventBatch &out);
    void dropFlow(std::uint32_t stream, std::int64_t t, EventBatch &out);

    Direction m_dir;
    DecoderLimits m_limits;
    State m_state;
    std::string m_error;
    std::uint32_t m_connection = 0;
    H2Decoder *m_peer = nullptr;
    bool m_midStream = false;
    size_t m_prefaceHave = 0;
    size_t m_resyncFrom = 0; // Resync: where the next scan resumes in m_partial
    std::string m_sniff;     // bytes that are not a preface, kept until they are enough to name what they are
    bool m_sawFirstFrame = false;
    std::uint32_t m_maxFrameSize = 16384; // SETTINGS_MAX_FRAME_SIZE of the receiving side
    std::string m_partial;                // an incomplete frame carried over from the previous feed
    std::string m_whole;                  // the last frame completed from m_partial: its buffer is reused

    // A DATA frame longer than the read that started it is not buffered: its payload goes to the message
    // parser as it arrives, and the events it makes wait here until the frame completes, to be emitted then
    // exactly as for a whole frame (same order, the completing read's time).
    struct StreamedData
    {
        bool active = false;
        std::uint8_t hdr[9] = {};
        std::uint32_t left = 0;     // payload bytes still to come (padding included)
        std::uint32_t dataLeft = 0; // of which message bytes, once the pad length is known
        bool padKnown = true;
        bool badPadding = false;
        bool streamGone = false; // the message parser dropped the stream (reset by the peer) mid-frame
        bool touched = false;    // some message bytes reached the parser
        EventBatch events;
    } m_streamed;

    HeaderBlock m_headers;
    GrpcMessages m_messages;
    FlowWindows m_windows; // what this direction may still send before the receiver's WINDOW_UPDATE
    RuleChecks m_rules;
    std::uint32_t m_lastOpenedStream = 0; // client side: the newest stream its HEADERS opened

    // PINGs this direction sent that await the other side's ACK: (opaque data, time). Keepalive sends one
    // at a time; the bound only stops a flood from growing memory.
    std::deque<std::pair<std::uint64_t, std::int64_t>> m_pendingPings;
    ControlFrameRate m_controlRate; // floods of control frames become counted runs
};

} // namespace rpcscope
