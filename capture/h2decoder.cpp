#include "h2decoder.h"

#include "grpcfields.h"

#include <nghttp2/nghttp2.h>

#include <cstring>

namespace rpcscope {

namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof(kPreface) - 1;
constexpr size_t kFrameHeaderLen = 9;
// Frames split across reads are assembled in buffers kept for the next one up to this size.
constexpr size_t kReusedFrameBuffer = 1 << 20;
// Enough bytes to tell TLS, HTTP/1.x methods and responses apart.
constexpr size_t kSniffLen = 8;
// Placeholder entries for an unknown HPACK context (see resetInflater). 64 KiB covers the table sizes gRPC
// implementations advertise (C-core and grpc-go: 4096).
constexpr char kPlaceholderName[] = "\x01";
constexpr std::uint32_t kPlaceholderEntrySize = 32 + 1; // RFC 7541 4.1: 32 + name + value
constexpr std::uint32_t kPrimedTableSize = 64 * 1024;
// RFC 9113: SETTINGS_MAX_FRAME_SIZE may not exceed 2^24-1, so no frame needs more buffering than this.
constexpr std::uint32_t kMaxFrameSizeLimit = (1u << 24) - 1;

std::uint32_t be24(const std::uint8_t *p) { return (std::uint32_t(p[0]) << 16) | (p[1] << 8) | p[2]; }
std::uint32_t be32(const std::uint8_t *p)
{
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

bool startsWith(const std::uint8_t *data, size_t len, const char *s)
{
    const size_t n = std::strlen(s);
    return len >= n && std::memcmp(data, s, n) == 0;
}

// Names what the bytes look like, for the connection's "undecodable" reason.
std::string classifyNonH2(const std::uint8_t *data, size_t len, Direction dir)
{
    if (len >= 2 && data[0] == 0x16 && data[1] == 0x03)
        return dir == Direction::ClientToServer ? "TLS handshake (ClientHello): encrypted, not h2c"
                                                : "TLS handshake (ServerHello): encrypted, not h2c";
    static const char *const methods[] = {"GET ",  "POST ", "PUT ",     "HEAD ", "DELETE ",
                                          "PATCH ", "OPTIONS ", "CONNECT ", "TRACE "};
    for (const char *m : methods)
        if (startsWith(data, len, m))
            return "HTTP/1.x request, not HTTP/2";
    if (startsWith(data, len, "HTTP/1"))
        return "HTTP/1.x response, not HTTP/2";
    std::string hex;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len && i < 8; ++i) {
        hex += digits[data[i] >> 4];
        hex += digits[data[i] & 15];
        hex += ' ';
    }
    if (!hex.empty())
        hex.pop_back();
    return dir == Direction::ClientToServer ? "not HTTP/2: no connection preface (first bytes " + hex + ")"
                                            : "not HTTP/2: server did not start with SETTINGS (first bytes " +
                                                  hex + ")";
}
} // namespace

H2Decoder::H2Decoder(Direction dir, const DecoderLimits &limits)
    : m_dir(dir), m_limits(limits), m_state(dir == Direction::ClientToServer ? State::Preface : State::Frames)
{
    nghttp2_hd_inflate_new(&m_inflater);
}

// The HPACK context is unknown (we attached mid-connection, or a block failed to decode). Start a fresh
// inflater whose dynamic table is filled with placeholder entries: the sender's entries we never saw then
// sit at the same indices as placeholders, so a reference to one decodes as "unknown" instead of failing the
// whole block, while entries inserted from now on are real and at their true indices. Placeholders are
// smaller than any real entry (33 bytes), so they are evicted no sooner than the entries they stand for,
// and our newest real entries are never evicted before the sender's.
void H2Decoder::resetInflater()
{
    nghttp2_hd_inflate_del(m_inflater);
    nghttp2_hd_inflate_new(&m_inflater);
    nghttp2_hd_inflate_change_table_size(m_inflater, kPrimedTableSize);
    m_primed = true;

    std::string block;
    auto varint = [&block](std::uint8_t first, int prefixBits, std::uint32_t v) {
        const std::uint32_t max = (1u << prefixBits) - 1;
        if (v < max) {
            block += char(first | v);
            return;
        }
        block += char(first | max);
        for (v -= max; v >= 128; v >>= 7)
            block += char((v & 127) | 128);
        block += char(v);
    };
    varint(0x20, 5, kPrimedTableSize); // dynamic table size update
    for (std::uint32_t i = 0; i < kPrimedTableSize / kPlaceholderEntrySize; ++i) {
        block += char(0x40); // literal with incremental indexing, new name
        varint(0, 7, std::uint32_t(sizeof(kPlaceholderName) - 1));
        block += kPlaceholderName;
        varint(0, 7, 0);
    }
    auto *in = reinterpret_cast<std::uint8_t *>(block.data());
    size_t inlen = block.size();
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(m_inflater, &nv, &flags, in, inlen, 1);
        if (rv < 0 || (flags & NGHTTP2_HD_INFLATE_FINAL) || (rv == 0 && inlen == 0))
            break;
        in += rv;
        inlen -= size_t(rv);
    }
    nghttp2_hd_inflate_end_headers(m_inflater);
}

void H2Decoder::attachMidStream()
{
    m_midStream = true;
    resetInflater();
    if (m_state == State::Preface || m_state == State::Frames)
        m_state = State::Resync;
}

void H2Decoder::notice(std::string text, std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    WireEvent e = event(EventKind::Notice, t);
    e.stream = stream;
    e.text = std::move(text);
    out.push_back(std::move(e));
}

void H2Decoder::protocolError(const std::string &what, const char *code, std::uint32_t stream, std::int64_t t,
                              EventBatch &out)
{
    constexpr std::uint32_t kRecorded = 4;
    const char *side = m_dir == Direction::ClientToServer ? "client" : "server";
    if (m_protocolErrors < kRecorded)
        notice(kProtocolErrorPrefix + std::string(side) + ": " + what + " (" + code + ")", stream, t, out);
    else if (m_protocolErrors == kRecorded)
        notice(std::string("further protocol errors by the ") + side + " are not recorded", stream, t, out);
    ++m_protocolErrors;
}

H2Decoder::~H2Decoder()
{
    nghttp2_hd_inflate_del(m_inflater);
}

void H2Decoder::fail(std::string reason, std::int64_t t, EventBatch &out)
{
    if (m_state == State::Failed)
        return;
    m_state = State::Failed;
    m_error = std::move(reason);
    m_partial.clear();
    m_partial.shrink_to_fit();
    m_streamed.active = false;
    m_streamed.events = EventBatch();
    WireEvent e = event(EventKind::DecodeError, t);
    e.text = m_error;
    out.push_back(std::move(e));
}

WireEvent H2Decoder::event(EventKind kind, std::int64_t t) const
{
    WireEvent e;
    e.kind = kind;
    e.connection = m_connection;
    e.dir = m_dir;
    e.tNs = t;
    return e;
}

void H2Decoder::finish(std::int64_t t, EventBatch &out)
{
    if (m_state == State::Sniffing)
        fail(classifyNonH2(reinterpret_cast<const std::uint8_t *>(m_sniff.data()), m_sniff.size(), m_dir), t, out);
    else if (m_state == State::Preface && m_prefaceHave > 0)
        fail("connection closed inside the HTTP/2 connection preface", t, out);
    else if (m_state == State::Frames && !m_sawFirstFrame && !m_partial.empty())
        fail(classifyNonH2(reinterpret_cast<const std::uint8_t *>(m_partial.data()), m_partial.size(), m_dir), t,
             out);
}

void H2Decoder::peerResetStream(std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    dropFlow(stream, t, out);
    auto it = m_messages.find(stream);
    if (it == m_messages.end())
        return;
    if (it->second.prefixHave == 0)
        m_messages.erase(it);
    else
        it->second.resetByPeer = true;
}

void H2Decoder::applyPeerHeaderTableSize(std::uint32_t size)
{
    // A primed inflater keeps its large table: shrinking it would demand a size update the sender never sends.
    if (!m_primed)
        nghttp2_hd_inflate_change_table_size(m_inflater, size);
}

void H2Decoder::stall(bool begin, std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    WireEvent e = event(begin ? EventKind::FlowStallBegin : EventKind::FlowStallEnd, t);
    e.stream = stream;
    out.push_back(std::move(e));
}

void H2Decoder::applyPeerInitialWindow(std::uint32_t size, std::int64_t t, EventBatch &out)
{
    // RFC 9113 6.9.2: a new initial window shifts every open stream's window by the difference.
    const std::int64_t delta = std::int64_t(size) - m_initialWindow;
    m_initialWindow = size;
    if (delta < 0)
        m_initialWindowLowered = true;
    for (auto &[stream, flow] : m_flows) {
        flow.window += delta;
        if (flow.stalled && flow.window > 0) {
            flow.stalled = false;
            stall(false, stream, t, out);
        }
    }
}

std::int64_t H2Decoder::windowOverflow(std::uint32_t stream, std::uint32_t increment) const
{
    constexpr std::int64_t kMaxWindow = 0x7fffffff;
    std::int64_t window = m_connWindow;
    if (stream != 0) {
        const auto it = m_flows.find(stream);
        window = it == m_flows.end() ? m_initialWindow : it->second.window;
    }
    return std::max<std::int64_t>(0, window + increment - kMaxWindow);
}

void H2Decoder::applyWindowUpdate(std::uint32_t stream, std::uint32_t increment, std::int64_t t, EventBatch &out)
{
    if (stream == 0) {
        m_connWindow += increment;
        if (m_connStalled && m_connWindow > 0) {
            m_connStalled = false;
            stall(false, 0, t, out);
        }
        return;
    }
    auto it = m_flows.find(stream);
    if (it == m_flows.end())
        return; // a stream this side has finished sending on (or one opened before the capture attached)
    it->second.window += increment;
    if (it->second.stalled && it->second.window > 0) {
        it->second.stalled = false;
        stall(false, stream, t, out);
    }
}

void H2Decoder::dropFlow(std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    auto it = m_flows.find(stream);
    if (it == m_flows.end())
        return;
    if (it->second.stalled)
        stall(false, stream, t, out);
    m_flows.erase(it);
}

size_t H2Decoder::feedPreface(const std::uint8_t *data, size_t len)
{
    const size_t n = std::min(len, kPrefaceLen - m_prefaceHave);
    if (std::memcmp(data, kPreface + m_prefaceHave, n) != 0)
        return size_t(-1);
    m_prefaceHave += n;
    if (m_prefaceHave == kPrefaceLen)
        m_state = State::Frames;
    return n;
}

void H2Decoder::feed(const std::uint8_t *data, size_t len, std::int64_t t, std::uint32_t connection,
                     EventBatch &out)
{
    m_connection = connection;
    if (m_state == State::Failed || len == 0)
        return;
    if (m_state == State::Preface) {
        const size_t used = feedPreface(data, len);
        if (used == size_t(-1)) {
            m_sniff.assign(kPreface, m_prefaceHave);
            m_state = State::Sniffing;
        } else {
            data += used;
            len -= used;
            if (m_state == State::Preface)
                return;
        }
    }
    if (m_state == State::Resync) {
        m_partial.append(reinterpret_cast<const char *>(data), len);
        resync(t, out);
        return;
    }
    if (m_state == State::Sniffing) {
        // Name the bytes only once there are enough of them, so "G" + "ET / HTTP/1.1" still reads as HTTP/1.x.
        m_sniff.append(reinterpret_cast<const char *>(data), std::min(len, kSniffLen - m_sniff.size()));
        if (m_sniff.size() >= kSniffLen)
            fail(classifyNonH2(reinterpret_cast<const std::uint8_t *>(m_sniff.data()), m_sniff.size(), m_dir), t,
                 out);
        return;
    }

    for (;;) {
        // A DATA frame whose payload is decoded as it arrives (see beginStreamedData).
        if (m_streamed.active) {
            const size_t n = std::min<size_t>(len, m_streamed.left);
            streamData(data, n);
            data += n;
            len -= n;
            if (m_streamed.left > 0)
                return;
            finishStreamedData(t, out);
            if (m_state == State::Failed)
                return;
        }

        // Complete a frame carried over from an earlier read.
        if (!m_partial.empty()) {
            if (m_partial.size() < kFrameHeaderLen) {
                const size_t n = std::min(len, kFrameHeaderLen - m_partial.size());
                m_partial.append(reinterpret_cast<const char *>(data), n);
                data += n;
                len -= n;
                if (m_partial.size() < kFrameHeaderLen)
                    return;
                const auto *hdr = reinterpret_cast<const std::uint8_t *>(m_partial.data());
                if (!checkFrameHeader(hdr, t, out))
                    return;
                if (len < be24(hdr) && streamable(hdr)) {
                    beginStreamedData(hdr);
                    m_partial.clear();
                    continue;
                }
            }
            const auto *hdr = reinterpret_cast<const std::uint8_t *>(m_partial.data());
            const size_t total = kFrameHeaderLen + be24(hdr); // checked against the limits above
            // One allocation, not a doubling series, for a large frame split across reads (promised bytes are
            // not reserved beyond the reuse bound: a peer may announce a big frame and never send it).
            m_partial.reserve(std::min(total, kReusedFrameBuffer));
            const size_t n = std::min(len, total - m_partial.size());
            m_partial.append(reinterpret_cast<const char *>(data), n);
            data += n;
            len -= n;
            if (m_partial.size() < total)
                return;
            // The frame moves to m_whole, whose buffer m_partial takes in exchange: while frames keep splitting
            // across reads the two buffers are reused instead of allocated each time. handleFrame may clear
            // m_partial (fail, resync); the frame it reads is m_whole.
            m_whole.swap(m_partial);
            m_partial.clear();
            const auto *f = reinterpret_cast<const std::uint8_t *>(m_whole.data());
            handleFrame(f, f + kFrameHeaderLen, t, out);
            m_whole.clear();
            if (m_whole.capacity() > kReusedFrameBuffer || m_state == State::Failed)
                m_whole.shrink_to_fit(); // an unusually large frame, or nothing more to decode: not kept
        }

        // Whole frames straight from the read buffer: no copy on the common path.
        while (len >= kFrameHeaderLen && m_state != State::Failed) {
            if (!checkFrameHeader(data, t, out))
                return;
            const size_t total = kFrameHeaderLen + be24(data);
            if (len < total)
                break;
            handleFrame(data, data + kFrameHeaderLen, t, out);
            data += total;
            len -= total;
        }
        if (len == 0 || m_state == State::Failed)
            return;
        if (len >= kFrameHeaderLen && streamable(data)) {
            beginStreamedData(data);
            data += kFrameHeaderLen;
            len -= kFrameHeaderLen;
            continue;
        }
        m_partial.assign(reinterpret_cast<const char *>(data), len);
        return;
    }
}

bool H2Decoder::streamable(const std::uint8_t *hdr) const
{
    // DATA that handleFrame would not refuse outright (those go the buffered way, to fail there as always).
    return hdr[3] == FrameData && (be32(hdr + 5) & 0x7fffffffu) != 0 && !m_inBlock && be24(hdr) > 0;
}

void H2Decoder::beginStreamedData(const std::uint8_t *hdr)
{
    StreamedData &s = m_streamed;
    s.active = true;
    std::memcpy(s.hdr, hdr, kFrameHeaderLen);
    s.left = be24(hdr);
    s.padKnown = !(hdr[4] & FlagPadded);
    s.dataLeft = s.padKnown ? s.left : 0;
    s.badPadding = false;
    s.streamGone = false;
    s.touched = false;
    s.events.clear();
}

void H2Decoder::streamData(const std::uint8_t *p, size_t n)
{
    // n <= m_streamed.left: these are bytes of this frame's payload.
    StreamedData &s = m_streamed;
    s.left -= std::uint32_t(n);
    if (n > 0 && !s.padKnown) {
        s.padKnown = true;
        const std::uint32_t len = be24(s.hdr);
        if (p[0] >= len)
            s.badPadding = true; // reported when the frame completes, as handleFrame does
        else
            s.dataLeft = len - 1 - p[0];
        ++p;
        --n;
    }
    const std::uint32_t k = std::uint32_t(std::min<size_t>(n, s.dataLeft));
    s.dataLeft -= k;
    if (k > 0 && !s.badPadding && !s.streamGone) {
        s.touched = true;
        // Stamped when the frame completes, like the frame's other events.
        s.streamGone = !handleDataBytes(be32(s.hdr + 5) & 0x7fffffffu, p, k, 0, s.events);
    }
}

size_t H2Decoder::skippable() const
{
    const StreamedData &s = m_streamed;
    if (m_state != State::Frames || !s.active || !s.padKnown)
        return 0;
    if (s.badPadding || s.streamGone || s.dataLeft == 0)
        return s.left; // nothing more of this frame is looked at
    const auto it = m_messages.find(be32(s.hdr + 5) & 0x7fffffffu);
    if (it == m_messages.end() || it->second.prefixHave < 5 || it->second.kept.size() < m_limits.maxMessageKeepBytes)
        return 0;
    return std::min<size_t>(it->second.remaining, s.dataLeft); // the body past what is kept
}

void H2Decoder::skip(size_t n, std::int64_t t, std::uint32_t connection, EventBatch &out)
{
    m_connection = connection;
    if (n == 0)
        return;
    if (n > skippable()) {
        fail("skipped " + std::to_string(n) + " bytes the decoder needed", t, out);
        return;
    }
    StreamedData &s = m_streamed;
    s.left -= std::uint32_t(n);
    if (s.dataLeft > 0 && !s.badPadding && !s.streamGone) {
        const std::uint32_t stream = be32(s.hdr + 5) & 0x7fffffffu;
        MessageState &m = m_messages[stream];
        m.remaining -= std::uint32_t(n);
        s.dataLeft -= std::uint32_t(n);
        s.touched = true;
        if (m.remaining == 0)
            s.streamGone = !completeMessage(stream, m, 0, s.events); // stamped when the frame completes
    } else {
        s.dataLeft -= std::uint32_t(std::min<size_t>(n, s.dataLeft));
    }
    if (s.left == 0)
        finishStreamedData(t, out);
}

void H2Decoder::finishStreamedData(std::int64_t t, EventBatch &out)
{
    // The same events, in the same order and with the same time, as handleFrame gives the whole frame.
    StreamedData &s = m_streamed;
    s.active = false;
    const std::uint8_t flags = s.hdr[4];
    const std::uint32_t stream = be32(s.hdr + 5) & 0x7fffffffu;
    const std::uint32_t len = be24(s.hdr);
    m_sawFirstFrame = true;
    WireEvent e = event(EventKind::Frame, t);
    e.frameType = FrameData;
    e.flags = flags;
    e.stream = stream;
    e.length = len;
    out.push_back(std::move(e));
    dataFlow(stream, flags, len, t, out);
    if (s.badPadding) {
        s.events.clear();
        fail("bad padding in DATA on stream " + std::to_string(stream), t, out);
        return;
    }
    if (!s.touched)
        m_messages.try_emplace(stream);
    for (WireEvent &m : s.events) {
        m.tNs = t;
        out.push_back(std::move(m));
    }
    s.events.clear();
    if (!s.streamGone && (flags & FlagEndStream))
        m_messages.erase(stream);
}

bool H2Decoder::checkFrameHeader(const std::uint8_t *hdr, std::int64_t t, EventBatch &out)
{
    // Checked before buffering, so garbage cannot make us hold megabytes waiting for a frame that never ends.
    const std::uint32_t len = be24(hdr);
    if (!m_sawFirstFrame && !m_midStream && (hdr[3] != FrameSettings || (be32(hdr + 5) & 0x7fffffffu) != 0 || len % 6 != 0)) {
        fail(m_dir == Direction::ServerToClient ? classifyNonH2(hdr, kFrameHeaderLen, m_dir)
                                                : "first frame after the preface is not SETTINGS",
             t, out);
        return false;
    }
    if (len > m_maxFrameSize) {
        fail("frame length " + std::to_string(len) + " exceeds SETTINGS_MAX_FRAME_SIZE " +
                 std::to_string(m_maxFrameSize),
             t, out);
        return false;
    }
    if (len > m_limits.maxFrameBytes) {
        fail("frame length " + std::to_string(len) + " exceeds the decoder's frame limit " +
                 std::to_string(m_limits.maxFrameBytes),
             t, out);
        return false;
    }
    return true;
}

bool H2Decoder::plausibleFrameHeader(const std::uint8_t *hdr) const
{
    const std::uint32_t len = be24(hdr);
    const std::uint8_t type = hdr[3];
    const std::uint8_t flags = hdr[4];
    const std::uint32_t raw = be32(hdr + 5);
    const std::uint32_t stream = raw & 0x7fffffffu;
    if ((raw & 0x80000000u) || len > m_maxFrameSize)
        return false;
    switch (type) {
    case FrameData: return stream != 0 && !(flags & ~(FlagEndStream | FlagPadded));
    case FrameHeaders:
        return stream != 0 && !(flags & ~(FlagEndStream | FlagEndHeaders | FlagPadded | FlagPriority));
    case FramePriority: return stream != 0 && len == 5 && flags == 0;
    case FrameRstStream: return stream != 0 && len == 4 && flags == 0;
    case FrameSettings: return stream == 0 && len % 6 == 0 && !(flags & ~FlagAck) && (!(flags & FlagAck) || !len);
    case FramePing: return stream == 0 && len == 8 && !(flags & ~FlagAck);
    case FrameGoaway: return stream == 0 && len >= 8 && flags == 0;
    case FrameWindowUpdate: return len == 4 && flags == 0;
    case FrameContinuation: return stream != 0 && !(flags & ~FlagEndHeaders);
    default: return false; // unknown types are legal, but too weak to resynchronise on
    }
}

// Finds the first offset where three frames in a row (or frames up to the exact end of what we have) look
// like HTTP/2, drops what lies before it, and continues from there.
bool H2Decoder::resync(std::int64_t t, EventBatch &out)
{
    constexpr int kChain = 3;
    const auto *buf = reinterpret_cast<const std::uint8_t *>(m_partial.data());
    const size_t size = m_partial.size();
    // Offsets before m_resyncFrom were rejected already: resume there, so byte-sized reads stay linear.
    size_t off = m_resyncFrom;
    for (; off + kFrameHeaderLen <= size; ++off) {
        size_t at = off;
        int ok = 0;
        bool endedExactly = false;
        while (ok < kChain && at + kFrameHeaderLen <= size && plausibleFrameHeader(buf + at)) {
            ++ok;
            at += kFrameHeaderLen + be24(buf + at);
            if (at == size) {
                endedExactly = true;
                break;
            }
        }
        if (ok == kChain || (endedExactly && ok >= 2)) {
            std::string rest = m_partial.substr(off);
            m_partial.clear();
            m_resyncFrom = 0;
            m_state = State::Frames;
            m_sawFirstFrame = true;
            notice("attached mid-connection: skipped " + std::to_string(off) +
                       " bytes to the first frame boundary; header blocks may be incomplete until HPACK "
                       "state is rebuilt",
                   0, t, out);
            feed(reinterpret_cast<const std::uint8_t *>(rest.data()), rest.size(), t, m_connection, out);
            return true;
        }
        if (at + kFrameHeaderLen > size)
            break; // the chain from here runs past what we have: undecided, wait for more bytes
    }
    m_resyncFrom = off;
    if (size > 256 * 1024) {
        fail("attached mid-connection, but no HTTP/2 frame boundary in the first 256 KiB", t, out);
        return false;
    }
    return false;
}

void H2Decoder::handleFrame(const std::uint8_t *hdr, const std::uint8_t *payload, std::int64_t t,
                            EventBatch &out)
{
    const std::uint32_t len = be24(hdr);
    const std::uint8_t type = hdr[3];
    const std::uint8_t flags = hdr[4];
    const std::uint32_t stream = be32(hdr + 5) & 0x7fffffffu;

    m_sawFirstFrame = true;
    if (stream == 0 && (type == FrameData || type == FrameHeaders || type == FrameContinuation ||
                        type == FrameRstStream || type == FramePushPromise)) {
        fail(std::string(frameTypeName(type)) + " on stream 0 (RFC 9113: a connection error)", t, out);
        return;
    }
    if (m_inBlock && (type != FrameContinuation || stream != m_blockStream)) {
        fail("header block on stream " + std::to_string(m_blockStream) + " interrupted by " +
                 frameTypeName(type) + " (CONTINUATION expected)",
             t, out);
        return;
    }

    WireEvent e = event(EventKind::Frame, t);
    e.frameType = type;
    e.flags = flags;
    e.stream = stream;
    e.length = len;
    switch (type) {
    case FrameRstStream:
        if (len >= 4)
            e.errorCode = be32(payload);
        break;
    case FrameGoaway:
        if (len >= 8) {
            e.lastStreamId = be32(payload) & 0x7fffffffu;
            e.errorCode = be32(payload + 4);
            // Debug data is free text meant for humans; a bounded prefix is enough to show.
            e.text.assign(reinterpret_cast<const char *>(payload + 8), std::min<size_t>(len - 8, 256));
        }
        break;
    case FramePing:
        if (len == 8) {
            e.pingData = (std::uint64_t(be32(payload)) << 32) | be32(payload + 4);
            if (!(flags & FlagAck)) {
                if (m_pendingPings.size() >= 16)
                    m_pendingPings.pop_front();
                m_pendingPings.emplace_back(e.pingData, t);
            } else if (m_peer) {
                // The ACK answers a PING the other direction sent.
                auto &pending = m_peer->m_pendingPings;
                for (auto it = pending.begin(); it != pending.end(); ++it) {
                    if (it->first == e.pingData) {
                        e.rttNs = t - it->second;
                        pending.erase(it);
                        break;
                    }
                }
            }
        }
        break;
    case FrameWindowUpdate:
        if (len >= 4)
            e.windowIncrement = be32(payload) & 0x7fffffffu;
        break;
    case FrameSettings:
        if (!(flags & FlagAck))
            for (std::uint32_t off = 0; off + 6 <= len; off += 6)
                e.settings.emplace_back(std::uint16_t((payload[off] << 8) | payload[off + 1]),
                                        be32(payload + off + 2));
        break;
    default:
        break;
    }
    out.push_back(e);
    // DATA, CONTINUATION and plain HEADERS (most frames) have no rule checked there.
    if (type != FrameData && type != FrameContinuation && (type != FrameHeaders || (flags & FlagPriority)))
        checkFrameRules(type, flags, stream, len, payload, t, out);

    // Strip padding for the frame types that carry it.
    auto unpad = [&](const std::uint8_t *&p, std::uint32_t &n) -> bool {
        if (!(flags & FlagPadded))
            return true;
        if (n < 1 || payload[0] >= n) {
            fail(std::string("bad padding in ") + frameTypeName(type) + " on stream " + std::to_string(stream), t,
                 out);
            return false;
        }
        const std::uint32_t pad = payload[0];
        p += 1;
        n -= 1 + pad;
        return true;
    };

    switch (type) {
    case FrameData: {
        dataFlow(stream, flags, len, t, out);
        const std::uint8_t *p = payload;
        std::uint32_t n = len;
        if (!unpad(p, n))
            return;
        handleData(stream, flags, p, n, t, out);
        break;
    }
    case FrameHeaders: {
        const std::uint8_t *p = payload;
        std::uint32_t n = len;
        if (!unpad(p, n))
            return;
        if (flags & FlagPriority) {
            if (n < 5) {
                fail("HEADERS priority fields truncated on stream " + std::to_string(stream), t, out);
                return;
            }
            p += 5;
            n -= 5;
        }
        m_inBlock = true;
        m_blockStream = stream;
        m_blockEndStream = flags & FlagEndStream;
        m_blockIsPush = false;
        m_block.clear();
        if (m_dir == Direction::ClientToServer && stream > m_lastOpenedStream) {
            // A new stream has windows both ways from now on: a WINDOW_UPDATE for it may come before its first
            // DATA (grpc++ raises a response stream's window as soon as it asks).
            m_lastOpenedStream = stream;
            if (!m_blockEndStream)
                m_flows.try_emplace(stream, StreamFlow{m_initialWindow, false});
            if (m_peer)
                m_peer->m_flows.try_emplace(stream, StreamFlow{m_peer->m_initialWindow, false});
        }
        if (m_blockEndStream)
            dropFlow(stream, t, out);
        handleHeaderFragment(stream, p, n, flags & FlagEndHeaders, t, out);
        if (m_blockEndStream && !m_inBlock)
            m_messages.erase(stream);
        break;
    }
    case FramePushPromise: {
        const std::uint8_t *p = payload;
        std::uint32_t n = len;
        if (!unpad(p, n))
            return;
        if (n < 4) {
            fail("PUSH_PROMISE truncated", t, out);
            return;
        }
        m_inBlock = true;
        m_blockStream = stream;
        m_blockEndStream = false;
        m_blockIsPush = true;
        m_block.clear();
        handleHeaderFragment(stream, p + 4, n - 4, flags & FlagEndHeaders, t, out);
        break;
    }
    case FrameContinuation:
        if (!m_inBlock) {
            fail("CONTINUATION without a header block on stream " + std::to_string(stream), t, out);
            return;
        }
        handleHeaderFragment(stream, payload, len, flags & FlagEndHeaders, t, out);
        if (m_blockEndStream && !m_inBlock)
            m_messages.erase(stream);
        break;
    case FrameSettings:
        if (m_peer)
            for (const auto &[id, value] : e.settings) {
                // Our SETTINGS bound what the other side may send us, so they configure the peer's decoder.
                if (id == NGHTTP2_SETTINGS_HEADER_TABLE_SIZE)
                    m_peer->applyPeerHeaderTableSize(value);
                else if (id == NGHTTP2_SETTINGS_MAX_FRAME_SIZE && value >= 16384 && value <= kMaxFrameSizeLimit)
                    m_peer->applyPeerMaxFrameSize(value);
                else if (id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE && value <= 0x7fffffffu)
                    m_peer->applyPeerInitialWindow(value, t, out);
            }
        break;
    case FrameWindowUpdate:
        // Our WINDOW_UPDATE lets the other side send more.
        if (m_peer)
            m_peer->applyWindowUpdate(stream, e.windowIncrement, t, out);
        break;
    case FrameRstStream:
        // Frames the other side sent before it saw this reset are still on the wire; its decoder must
        // not lose its place in a message that is partly through.
        m_messages.erase(stream);
        dropFlow(stream, t, out);
        if (m_peer)
            m_peer->peerResetStream(stream, t, out);
        break;
    default:
        break; // PRIORITY, PING, GOAWAY and unknown types: recorded above, nothing more to track
    }
}

void H2Decoder::checkFrameRules(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::uint32_t len,
                                const std::uint8_t *payload, std::int64_t t, EventBatch &out)
{
    // The framing stays intact whatever the payload says, so each of these is a notice, never a reason to stop.
    // Strings are built only for a rule broken.
    auto sized = [&](std::uint32_t want) {
        if (len != want)
            protocolError(std::string(frameTypeName(type)) + " of " + std::to_string(len) + " bytes, not " + std::to_string(want),
                          "FRAME_SIZE_ERROR", stream, t, out);
        return len == want;
    };
    auto onConnection = [&] {
        if (stream != 0)
            protocolError(std::string(frameTypeName(type)) + " on stream " + std::to_string(stream) + ", not on stream 0", "PROTOCOL_ERROR",
                          stream, t, out);
    };
    switch (type) {
    case FramePriority:
        if (stream == 0)
            protocolError("PRIORITY on stream 0", "PROTOCOL_ERROR", 0, t, out);
        if (sized(5) && (be32(payload) & 0x7fffffffu) == stream)
            protocolError("PRIORITY makes stream " + std::to_string(stream) + " depend on itself", "PROTOCOL_ERROR",
                          stream, t, out);
        break;
    case FrameHeaders:
        if (flags & FlagPriority) {
            const std::uint32_t pad = (flags & FlagPadded) && len ? 1 : 0;
            if (len >= pad + 5 && (be32(payload + pad) & 0x7fffffffu) == stream)
                protocolError("HEADERS makes stream " + std::to_string(stream) + " depend on itself",
                              "PROTOCOL_ERROR", stream, t, out);
        }
        break;
    case FrameRstStream:
        sized(4);
        break;
    case FrameSettings:
        onConnection();
        if (flags & FlagAck) {
            if (len != 0)
                protocolError("SETTINGS ACK with " + std::to_string(len) + " bytes of payload", "FRAME_SIZE_ERROR",
                              stream, t, out);
            break;
        }
        if (len % 6 != 0)
            protocolError("SETTINGS of " + std::to_string(len) + " bytes, not a multiple of 6", "FRAME_SIZE_ERROR",
                          stream, t, out);
        for (std::uint32_t off = 0; off + 6 <= len; off += 6) {
            const std::uint16_t id = std::uint16_t((payload[off] << 8) | payload[off + 1]);
            const std::uint32_t value = be32(payload + off + 2);
            if (id == NGHTTP2_SETTINGS_ENABLE_PUSH && value > 1)
                protocolError("SETTINGS_ENABLE_PUSH " + std::to_string(value) + ", not 0 or 1", "PROTOCOL_ERROR",
                              0, t, out);
            else if (id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE && value > 0x7fffffffu)
                protocolError("SETTINGS_INITIAL_WINDOW_SIZE " + std::to_string(value) + " above 2^31-1",
                              "FLOW_CONTROL_ERROR", 0, t, out);
            else if (id == NGHTTP2_SETTINGS_MAX_FRAME_SIZE && (value < 16384 || value > kMaxFrameSizeLimit))
                protocolError("SETTINGS_MAX_FRAME_SIZE " + std::to_string(value) + " outside 16384 to 16777215",
                              "PROTOCOL_ERROR", 0, t, out);
        }
        break;
    case FramePing:
        onConnection();
        sized(8);
        break;
    case FrameGoaway:
        onConnection();
        if (len < 8)
            protocolError("GOAWAY of " + std::to_string(len) + " bytes, under 8", "FRAME_SIZE_ERROR", stream, t,
                          out);
        break;
    case FrameWindowUpdate:
        if (!sized(4))
            break;
        if ((be32(payload) & 0x7fffffffu) == 0)
            protocolError(std::string("WINDOW_UPDATE of 0 on ") +
                              (stream ? "stream " + std::to_string(stream) : std::string("the connection")),
                          "PROTOCOL_ERROR", stream, t, out);
        else if (m_peer && flowKnown())
            if (const std::int64_t over = m_peer->windowOverflow(stream, be32(payload) & 0x7fffffffu))
                protocolError(std::string("WINDOW_UPDATE takes ") +
                                  (stream ? "stream " + std::to_string(stream) + "'s" : std::string("the connection's")) +
                                  " window " + std::to_string(over) + " bytes past 2^31-1",
                              "FLOW_CONTROL_ERROR", stream, t, out);
        break;
    default:
        break;
    }
}

void H2Decoder::dataFlow(std::uint32_t stream, std::uint8_t flags, std::uint32_t len, std::int64_t t,
                         EventBatch &out)
{
    // Flow control counts the whole payload, padding included (RFC 9113 6.9.1). The relay sees a receiver's
    // WINDOW_UPDATE before the sender does, so a window below 0 here was overrun by the sender.
    const bool wasOverrun = m_connWindow < 0;
    m_connWindow -= len;
    if (m_connWindow < 0 && !wasOverrun && flowKnown())
        protocolError("DATA on stream " + std::to_string(stream) + " overran the connection's flow-control window by " +
                          std::to_string(-m_connWindow) + " bytes",
                      "FLOW_CONTROL_ERROR", stream, t, out);
    auto it = m_flows.try_emplace(stream, StreamFlow{m_initialWindow, false}).first;
    StreamFlow &flow = it->second;
    const bool streamWasOverrun = flow.window < 0;
    flow.window -= len;
    if (flow.window < 0 && !streamWasOverrun && !m_initialWindowLowered && flowKnown())
        protocolError("DATA on stream " + std::to_string(stream) + " overran the stream's flow-control window by " +
                          std::to_string(-flow.window) + " bytes",
                      "FLOW_CONTROL_ERROR", stream, t, out);
    if (flags & FlagEndStream) {
        dropFlow(stream, t, out);
        return;
    }
    if (flow.window <= 0 && !flow.stalled) {
        flow.stalled = true;
        stall(true, stream, t, out);
    }
    // Only a stream that has more to send makes an empty connection window a stall.
    if (m_connWindow <= 0 && !m_connStalled) {
        m_connStalled = true;
        stall(true, 0, t, out);
    }
}

void H2Decoder::handleData(std::uint32_t stream, std::uint8_t flags, const std::uint8_t *p, std::uint32_t len,
                           std::int64_t t, EventBatch &out)
{
    if (handleDataBytes(stream, p, len, t, out) && (flags & FlagEndStream))
        m_messages.erase(stream);
}

bool H2Decoder::handleDataBytes(std::uint32_t stream, const std::uint8_t *p, std::uint32_t len, std::int64_t t,
                                EventBatch &out)
{
    MessageState &m = m_messages[stream];
    while (len > 0) {
        if (m.prefixHave < 5) {
            const std::uint32_t n = std::min<std::uint32_t>(len, 5 - m.prefixHave);
            std::memcpy(m.prefix + m.prefixHave, p, n);
            m.prefixHave += n;
            p += n;
            len -= n;
            if (m.prefixHave < 5)
                break;
            m.remaining = be32(m.prefix + 1);
        }
        const std::uint32_t n = std::min(len, m.remaining);
        if (m.kept.size() < m_limits.maxMessageKeepBytes)
            m.kept.append(reinterpret_cast<const char *>(p),
                          std::min<size_t>(n, m_limits.maxMessageKeepBytes - m.kept.size()));
        p += n;
        len -= n;
        m.remaining -= n;
        if (m.remaining == 0 && !completeMessage(stream, m, t, out))
            return false;
    }
    return true;
}

bool H2Decoder::completeMessage(std::uint32_t stream, MessageState &m, std::int64_t t, EventBatch &out)
{
    WireEvent e = event(EventKind::Message, t);
    e.stream = stream;
    e.length = be32(m.prefix + 1);
    e.compressed = m.prefix[0] & 1;
    e.truncated = e.length > m.kept.size();
    if (e.truncated && !m_noticedMessageLimit) {
        m_noticedMessageLimit = true;
        notice("messages over " + std::to_string(m_limits.maxMessageKeepBytes) +
                   " bytes are kept truncated for inspection",
               stream, t, out);
    }
    e.payload = std::move(m.kept);
    m.kept = std::string();
    out.push_back(std::move(e));
    m.prefixHave = 0;
    if (m.resetByPeer) {
        m_messages.erase(stream);
        return false;
    }
    return true;
}

void H2Decoder::handleHeaderFragment(std::uint32_t stream, const std::uint8_t *p, size_t len, bool endHeaders,
                                     std::int64_t t, EventBatch &out)
{
    if (m_block.size() + len > m_limits.maxHeaderBlockBytes) {
        // Without the whole block the HPACK context cannot stay in step, so this direction ends here.
        fail("header block on stream " + std::to_string(stream) + " exceeds the " +
                 std::to_string(m_limits.maxHeaderBlockBytes) + "-byte limit",
             t, out);
        return;
    }
    m_block.append(reinterpret_cast<const char *>(p), len);
    if (!endHeaders)
        return;
    m_inBlock = false;

    WireEvent e = event(EventKind::Headers, t);
    e.stream = stream;
    e.frameType = m_blockIsPush ? FramePushPromise : FrameHeaders;
    e.endStream = m_blockEndStream;
    inflateBlock(e, t, out);
    m_block.clear();
    out.push_back(std::move(e));
}

void H2Decoder::inflateBlock(WireEvent &e, std::int64_t t, EventBatch &out)
{
    auto *in = reinterpret_cast<std::uint8_t *>(m_block.data());
    size_t inlen = m_block.size();
    size_t kept = 0;
    for (;;) {
        nghttp2_nv nv;
        int inflateFlags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(m_inflater, &nv, &inflateFlags, in, inlen, 1);
        if (rv < 0) {
            // The block refers to context we do not have (attached mid-connection) or is corrupt. The entries
            // we hold are the sender's newest ones at their true indices, so a fresh context is right again as
            // soon as the sender's references stay within what we have seen since.
            e.hpackUnknown = true;
            resetInflater();
            if (!m_midStream)
                notice(std::string("HPACK error on stream ") + std::to_string(e.stream) + ": " +
                           nghttp2_strerror(int(rv)) + "; header context reset",
                       e.stream, t, out);
            break;
        }
        in += rv;
        inlen -= size_t(rv);
        if ((inflateFlags & NGHTTP2_HD_INFLATE_EMIT) && nv.namelen == 1 && nv.name[0] == 1) {
            e.hpackUnknown = true; // a reference to an entry from before we had the context
            inflateFlags &= ~NGHTTP2_HD_INFLATE_EMIT;
        }
        if (inflateFlags & NGHTTP2_HD_INFLATE_EMIT) {
            // Inflate everything to keep the HPACK context in step, but keep only up to the limit.
            if (kept + nv.namelen + nv.valuelen <= m_limits.maxHeaderListBytes) {
                kept += nv.namelen + nv.valuelen;
                e.headers.push_back({std::string(reinterpret_cast<const char *>(nv.name), nv.namelen),
                                     std::string(reinterpret_cast<const char *>(nv.value), nv.valuelen)});
            } else {
                e.truncated = true;
            }
        }
        if (inflateFlags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(m_inflater);
            break;
        }
        if (rv == 0 && inlen == 0)
            break;
    }
    if (e.truncated)
        notice("header list on stream " + std::to_string(e.stream) + " exceeds the " +
                   std::to_string(m_limits.maxHeaderListBytes) + "-byte limit; the rest is not kept",
               e.stream, t, out);
    e.grpc = extractGrpcFields(e.headers);
}

} // namespace rpcscope
