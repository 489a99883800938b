#pragma once

#include "events.h"

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

struct nghttp2_hd_inflater;

namespace rpcscope {

// Bounds on what one direction of one connection may make the decoder hold. Exceeding one marks the
// connection (a Notice, or a DecodeError when decoding cannot go on); relaying is never affected.
struct DecoderLimits
{
    size_t maxHeaderListBytes = 64 * 1024;   // decoded names + values kept per header block; the rest is cut
    size_t maxHeaderBlockBytes = 1 << 20;    // encoded HEADERS + CONTINUATION bytes of one block
    size_t maxFrameBytes = (1u << 24) - 1;   // largest frame buffered across reads (protocol maximum)
    size_t maxMessageKeepBytes = 64 * 1024;  // leading bytes of each gRPC message kept for inspection
};

// Passive decoder for one direction of one HTTP/2 connection. It never answers the peer; it only delimits
// frames, inflates header blocks with nghttp2's HPACK inflater, finds gRPC message boundaries, pairs PINGs
// with their ACKs and follows flow-control windows. Bytes may be split anywhere across feed() calls: only an
// incomplete frame is buffered.
class H2Decoder
{
public:
    explicit H2Decoder(Direction dir, const DecoderLimits &limits = {});
    ~H2Decoder();
    H2Decoder(const H2Decoder &) = delete;
    H2Decoder &operator=(const H2Decoder &) = delete;

    // The decoder of the other direction: our SETTINGS constrain what it may receive.
    void setPeer(H2Decoder *peer) { m_peer = peer; }
    // The bytes start somewhere inside an established connection: find a frame boundary instead of
    // expecting the preface, and treat the HPACK context as unknown until blocks decode again.
    void attachMidStream();

    // Appends the events completed by these bytes, all stamped tNs (the read that delivered them).
    void feed(const std::uint8_t *data, size_t len, std::int64_t tNs, std::uint32_t connection, EventBatch &out);

    // The connection closed: report anything held back (a few bytes too short to classify).
    void finish(std::int64_t tNs, EventBatch &out);

    // Bytes just ahead that the decoder would not look at: inside a DATA frame that spans reads, the rest of a
    // message body past its kept first bytes, or padding. They may be passed to skip() instead of feed(), so
    // a relay can leave them unread; the events are the same either way.
    size_t skippable() const;
    // Passes over n <= skippable() bytes as if they had been fed (more is a DecodeError).
    void skip(size_t n, std::int64_t tNs, std::uint32_t connection, EventBatch &out);

    bool failed() const { return m_state == State::Failed; }
    const std::string &error() const { return m_error; }

private:
    enum class State { Preface, Sniffing, Resync, Frames, Failed };
    struct MessageState
    {
        std::uint8_t prefix[5];
        std::uint8_t prefixHave = 0;
        std::uint32_t remaining = 0;
        // The other side reset the stream while this side was mid-message: finish the message already on
        // the wire, then forget the stream.
        bool resetByPeer = false;
        std::string kept; // the message's first bytes, up to maxMessageKeepBytes
    };
    // What this direction (the sender) may still send on a stream before the receiver's WINDOW_UPDATE.
    struct StreamFlow
    {
        std::int64_t window = 0;
        bool stalled = false;
    };

    size_t feedPreface(const std::uint8_t *data, size_t len);
    bool resync(std::int64_t t, EventBatch &out);
    bool plausibleFrameHeader(const std::uint8_t *hdr) const;
    void handleFrame(const std::uint8_t *hdr, const std::uint8_t *payload, std::int64_t t, EventBatch &out);
    void handleData(std::uint32_t stream, std::uint8_t flags, const std::uint8_t *p, std::uint32_t len,
                    std::int64_t t, EventBatch &out);
    // Message bytes of a DATA payload (padding removed); false when the stream was dropped on the way.
    bool handleDataBytes(std::uint32_t stream, const std::uint8_t *p, std::uint32_t len, std::int64_t t,
                         EventBatch &out);
    // The message's last byte has arrived; false when the stream was then dropped (reset by the peer).
    bool completeMessage(std::uint32_t stream, MessageState &m, std::int64_t t, EventBatch &out);
    void dataFlow(std::uint32_t stream, std::uint8_t flags, std::uint32_t len, std::int64_t t, EventBatch &out);
    bool streamable(const std::uint8_t *hdr) const;
    void beginStreamedData(const std::uint8_t *hdr);
    void streamData(const std::uint8_t *p, size_t n);
    void finishStreamedData(std::int64_t t, EventBatch &out);
    void handleHeaderFragment(std::uint32_t stream, const std::uint8_t *p, size_t len, bool endHeaders,
                              std::int64_t t, EventBatch &out);
    void inflateBlock(WireEvent &e, std::int64_t t, EventBatch &out);
    WireEvent event(EventKind kind, std::int64_t t) const;
    bool checkFrameHeader(const std::uint8_t *hdr, std::int64_t t, EventBatch &out);
    void fail(std::string reason, std::int64_t t, EventBatch &out);
    void notice(std::string text, std::uint32_t stream, std::int64_t t, EventBatch &out);
    // A rule of RFC 9113 this side broke that framing survives (a wrong size, a zero increment, a window
    // overrun): recorded as a notice, decoding goes on. `code` names the error the receiver should answer with.
    void protocolError(const std::string &what, const char *code, std::uint32_t stream, std::int64_t t,
                       EventBatch &out);
    void checkFrameRules(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::uint32_t len,
                         const std::uint8_t *payload, std::int64_t t, EventBatch &out);
    bool flowKnown() const { return !m_midStream && (!m_peer || !m_peer->m_midStream); }
    void resetInflater();

    // Called on the sender's decoder by the receiver's decoder.
    // How far a WINDOW_UPDATE would take this side's window past 2^31-1 (0: it does not overflow).
    std::int64_t windowOverflow(std::uint32_t stream, std::uint32_t increment) const;
    void applyPeerHeaderTableSize(std::uint32_t size);
    void applyPeerMaxFrameSize(std::uint32_t size) { m_maxFrameSize = size; }
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
    nghttp2_hd_inflater *m_inflater = nullptr;
    bool m_midStream = false;
    bool m_noticedMessageLimit = false;
    bool m_primed = false; // the inflater holds placeholders for an unknown context (see resetInflater)
    size_t m_prefaceHave = 0;
    size_t m_resyncFrom = 0; // Resync: where the next scan resumes in m_partial
    std::string m_sniff; // bytes that are not a preface, kept until they are enough to name what they are
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
        bool streamGone = false;    // the message parser dropped the stream (reset by the peer) mid-frame
        bool touched = false;       // some message bytes reached the parser
        EventBatch events;
    } m_streamed;

    // Header block in progress (HEADERS or PUSH_PROMISE followed by CONTINUATION).
    bool m_inBlock = false;
    std::uint32_t m_blockStream = 0;
    bool m_blockEndStream = false;
    bool m_blockIsPush = false;
    std::string m_block;

    std::unordered_map<std::uint32_t, MessageState> m_messages;

    // Flow control of what this direction sends (RFC 9113 6.9): windows start at 65,535 bytes.
    std::int64_t m_connWindow = 65535;
    bool m_connStalled = false;
    std::int64_t m_initialWindow = 65535; // the receiver's SETTINGS_INITIAL_WINDOW_SIZE
    // The receiver lowered its initial window: data already in flight may then legally take a stream's window
    // below 0, so a stream overrun is no longer evidence of a broken rule.
    bool m_initialWindowLowered = false;
    std::uint32_t m_protocolErrors = 0; // rules this side broke; the first few are recorded
    std::uint32_t m_lastOpenedStream = 0; // client side: the newest stream its HEADERS opened
    std::unordered_map<std::uint32_t, StreamFlow> m_flows;

    // PINGs this direction sent that await the other side's ACK: (opaque data, time). Keepalive sends one
    // at a time; the bound only stops a flood from growing memory.
    std::deque<std::pair<std::uint64_t, std::int64_t>> m_pendingPings;
};

} // namespace rpcscope
