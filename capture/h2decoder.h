#pragma once

#include "events.h"

#include <cstdint>
#include <string>
#include <unordered_map>

struct nghttp2_hd_inflater;

namespace rpcscope {

// Passive decoder for one direction of one HTTP/2 connection. It never answers the peer; it only delimits
// frames, inflates header blocks with nghttp2's HPACK inflater and finds gRPC message boundaries. Bytes may
// be split anywhere across feed() calls: only an incomplete frame is buffered.
class H2Decoder
{
public:
    explicit H2Decoder(Direction dir);
    ~H2Decoder();
    H2Decoder(const H2Decoder &) = delete;
    H2Decoder &operator=(const H2Decoder &) = delete;

    // The decoder of the other direction: our SETTINGS constrain what it may receive.
    void setPeer(H2Decoder *peer) { m_peer = peer; }

    // Appends the events completed by these bytes, all stamped tNs (the read that delivered them).
    void feed(const std::uint8_t *data, size_t len, std::int64_t tNs, std::uint32_t connection, EventBatch &out);

    // The connection closed: report anything held back (a few bytes too short to classify).
    void finish(std::int64_t tNs, EventBatch &out);

    bool failed() const { return m_state == State::Failed; }
    const std::string &error() const { return m_error; }

private:
    enum class State { Preface, Sniffing, Frames, Failed };
    struct MessageState
    {
        std::uint8_t prefix[5];
        std::uint8_t prefixHave = 0;
        std::uint32_t remaining = 0;
        // The other side reset the stream while this side was mid-message: finish the message already on
        // the wire, then forget the stream.
        bool resetByPeer = false;
    };

    size_t feedPreface(const std::uint8_t *data, size_t len);
    void handleFrame(const std::uint8_t *hdr, const std::uint8_t *payload, std::int64_t t, EventBatch &out);
    void handleData(std::uint32_t stream, std::uint8_t flags, const std::uint8_t *p, std::uint32_t len,
                    std::int64_t t, EventBatch &out);
    void handleHeaderFragment(std::uint32_t stream, const std::uint8_t *p, size_t len, bool endHeaders,
                              std::int64_t t, EventBatch &out);
    void handleSettings(std::uint8_t flags, const std::uint8_t *p, std::uint32_t len);
    WireEvent event(EventKind kind, std::int64_t t) const;
    bool checkFrameHeader(const std::uint8_t *hdr, std::int64_t t, EventBatch &out);
    void fail(std::string reason, std::int64_t t, EventBatch &out);
    void applyPeerHeaderTableSize(std::uint32_t size);
    void applyPeerMaxFrameSize(std::uint32_t size) { m_maxFrameSize = size; }
    void peerResetStream(std::uint32_t stream);

    Direction m_dir;
    State m_state;
    std::string m_error;
    std::uint32_t m_connection = 0;
    H2Decoder *m_peer = nullptr;
    nghttp2_hd_inflater *m_inflater = nullptr;
    bool m_hpackBroken = false;
    size_t m_prefaceHave = 0;
    std::string m_sniff; // bytes that are not a preface, kept until they are enough to name what they are
    bool m_sawFirstFrame = false;
    std::uint32_t m_maxFrameSize = 16384; // SETTINGS_MAX_FRAME_SIZE of the receiving side
    std::string m_partial;                // an incomplete frame carried over from the previous feed

    // Header block in progress (HEADERS or PUSH_PROMISE followed by CONTINUATION).
    bool m_inBlock = false;
    std::uint32_t m_blockStream = 0;
    bool m_blockEndStream = false;
    bool m_blockIsPush = false;
    std::string m_block;

    std::unordered_map<std::uint32_t, MessageState> m_messages;
};

} // namespace rpcscope
