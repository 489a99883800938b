#include "h2decoder.h"

#include "h2wire.h"
#include "heapbytes.h"
#include "tlsclienthello.h"

#include <cstring>
#include <nghttp2/nghttp2.h>

namespace rpcscope {

namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof(kPreface) - 1;
// Frames split across reads are assembled in buffers kept for the next one up to this size.
constexpr size_t kReusedFrameBuffer = 1 << 20;
// Enough bytes to tell TLS, HTTP/1.x methods and responses apart.
constexpr size_t kSniffLen = 8;
// A TLS client's first record is kept until its ClientHello can be read: one record at most.
constexpr size_t kMaxTlsSniff = 5 + 16384 + 2048;

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
    static const char *const methods[] = {"GET ",   "POST ",    "PUT ",     "HEAD ", "DELETE ",
                                          "PATCH ", "OPTIONS ", "CONNECT ", "TRACE "};
    for (const char *m : methods)
        if (startsWith(data, len, m)) return "HTTP/1.x request, not HTTP/2";
    if (startsWith(data, len, "HTTP/1")) return "HTTP/1.x response, not HTTP/2";
    std::string hex;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len && i < 8; ++i) {
        hex += digits[data[i] >> 4];
        hex += digits[data[i] & 15];
        hex += ' ';
    }
    if (!hex.empty()) hex.pop_back();
    return dir == Direction::ClientToServer
               ? "not HTTP/2: no connection preface (first bytes " + hex + ")"
               : "not HTTP/2: server did not start with SETTINGS (first bytes " + hex + ")";
}
} // namespace

H2Decoder::H2Decoder(Direction dir, const DecoderLimits &limits)
    : m_dir(dir), m_limits(limits),
      m_state(dir == Direction::ClientToServer ? State::Preface : State::Frames), m_headers(limits),
      m_messages(limits.maxMessageKeepBytes)
{
}

void H2Decoder::attachMidStream()
{
    m_midStream = true;
    m_headers.resetContext();
    if (m_state == State::Preface || m_state == State::Frames) m_state = State::Resync;
}

void H2Decoder::fail(std::string reason, std::int64_t t, EventBatch &out)
{
    if (m_state == State::Failed) return;
    m_state = State::Failed;
    m_error = std::move(reason);
    m_partial.clear();
    m_partial.shrink_to_fit();
    m_streamed.active = false;
    m_streamed.events = EventBatch();
    WireEvent e = event(EventKind::DecodeError, t);
    e.reason = m_error;
    out.push_back(std::move(e));
}

void H2Decoder::finish(std::int64_t t, EventBatch &out)
{
    m_controlRate.flush(t, out, true);
    if (m_state == State::Sniffing &&
        TlsClientHello::looksLikeTls(reinterpret_cast<const std::uint8_t *>(m_sniff.data()), m_sniff.size()))
        sniffTls(true, t, out);
    else if (m_state == State::Sniffing)
        fail(classifyNonH2(reinterpret_cast<const std::uint8_t *>(m_sniff.data()), m_sniff.size(), m_dir), t,
             out);
    else if (m_state == State::Preface && m_prefaceHave > 0)
        fail("connection closed inside the HTTP/2 connection preface", t, out);
    else if (m_state == State::Frames && !m_sawFirstFrame && !m_partial.empty() &&
             !answersTls(reinterpret_cast<const std::uint8_t *>(m_partial.data()), m_partial.size()))
        fail(cutFirstFrame(), t, out);
}

void H2Decoder::sniffTls(bool closing, std::int64_t t, EventBatch &out)
{
    ClientHelloInfo info;
    std::string error;
    const auto *data = reinterpret_cast<const std::uint8_t *>(m_sniff.data());
    switch (TlsClientHello::parse(data, m_sniff.size(), &info, &error)) {
    case TlsClientHello::Parsed: {
        // Not an error: the bytes are relayed as they are, only not decoded.
        m_state = State::Tls;
        m_sniff.clear();
        m_sniff.shrink_to_fit();
        WireEvent e = event(EventKind::Notice, t);
        e.reason = TlsClientHello::describe(info);
        out.push_back(std::move(e));
        return;
    }
    case TlsClientHello::Malformed:
        fail("TLS handshake, not h2c: " + error, t, out);
        return;
    case TlsClientHello::NotTls:
        fail(classifyNonH2(data, m_sniff.size(), m_dir), t, out);
        return;
    case TlsClientHello::NeedMore:
        if (closing || m_sniff.size() >= kMaxTlsSniff)
            fail("TLS handshake, not h2c: ClientHello cut short after " + std::to_string(m_sniff.size()) +
                     " bytes",
                 t, out);
        return;
    }
}

bool H2Decoder::answersTls(const std::uint8_t *data, size_t len)
{
    if (m_dir != Direction::ServerToClient || !m_peer || m_peer->m_state != State::Tls ||
        !TlsClientHello::looksLikeTls(data, len))
        return false;
    m_state = State::Tls;
    m_partial.clear();
    return true;
}

std::string H2Decoder::cutFirstFrame() const
{
    const auto *hdr = reinterpret_cast<const std::uint8_t *>(m_partial.data());
    const size_t have = m_partial.size();
    // After a whole client preface it is HTTP/2 whatever follows; a server's first bytes are HTTP/2 once
    // they name a SETTINGS frame (a whole header was checked on arrival).
    const bool preface = m_dir == Direction::ClientToServer && m_prefaceHave == kPrefaceLen;
    const bool settings = have > 3 && hdr[3] == FrameSettings;
    if (!preface && !settings) return classifyNonH2(hdr, have, m_dir);
    const std::string cut = have < kFrameHeaderLen
                                ? "cut short after " + std::to_string(have) + " of its 9 header bytes"
                                : "cut short after " + std::to_string(have) + " of its " +
                                      std::to_string(kFrameHeaderLen + be24(hdr)) + " bytes";
    return preface ? "HTTP/2 preface, then " + std::string(settings ? "a SETTINGS frame " : "a frame ") + cut
                   : "HTTP/2 SETTINGS frame from the server " + cut;
}

void H2Decoder::peerResetStream(std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    dropFlow(stream, t, out);
    m_messages.peerReset(stream);
}

void H2Decoder::stall(bool begin, std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    WireEvent e = event(begin ? EventKind::FlowStallBegin : EventKind::FlowStallEnd, t);
    e.stream = stream;
    out.push_back(std::move(e));
}

void H2Decoder::applyPeerInitialWindow(std::uint32_t size, std::int64_t t, EventBatch &out)
{
    m_windows.setInitialWindow(size, [&](std::uint32_t stream) { stall(false, stream, t, out); });
}

void H2Decoder::applyWindowUpdate(std::uint32_t stream, std::uint32_t increment, std::int64_t t,
                                  EventBatch &out)
{
    if (m_windows.grow(stream, increment)) stall(false, stream, t, out);
}

void H2Decoder::dropFlow(std::uint32_t stream, std::int64_t t, EventBatch &out)
{
    if (m_windows.close(stream)) stall(false, stream, t, out);
}

size_t H2Decoder::feedPreface(const std::uint8_t *data, size_t len)
{
    const size_t n = std::min(len, kPrefaceLen - m_prefaceHave);
    if (std::memcmp(data, kPreface + m_prefaceHave, n) != 0) return size_t(-1);
    m_prefaceHave += n;
    if (m_prefaceHave == kPrefaceLen) m_state = State::Frames;
    return n;
}

void H2Decoder::feed(const std::uint8_t *data, size_t len, std::int64_t t, std::uint32_t connection,
                     EventBatch &out)
{
    m_connection = connection;
    if (m_state == State::Failed || m_state == State::Tls || len == 0) return;
    if (m_state == State::Preface) {
        const size_t used = feedPreface(data, len);
        if (used == size_t(-1)) {
            m_sniff.assign(kPreface, m_prefaceHave);
            m_state = State::Sniffing;
        } else {
            data += used;
            len -= used;
            if (m_state == State::Preface) return;
        }
    }
    if (m_state == State::Resync) {
        m_partial.append(reinterpret_cast<const char *>(data), len);
        resync(t, out);
        return;
    }
    if (m_state == State::Sniffing && m_sniff.size() < 2) {
        const size_t n = std::min(len, 2 - m_sniff.size());
        m_sniff.append(reinterpret_cast<const char *>(data), n);
        data += n;
        len -= n;
    }
    if (m_state == State::Sniffing &&
        TlsClientHello::looksLikeTls(reinterpret_cast<const std::uint8_t *>(m_sniff.data()),
                                     m_sniff.size())) {
        m_sniff.append(reinterpret_cast<const char *>(data), std::min(len, kMaxTlsSniff - m_sniff.size()));
        sniffTls(false, t, out);
        return;
    }
    if (m_state == State::Sniffing) {
        // Name the bytes only once there are enough of them, so "G" + "ET / HTTP/1.1" still reads as
        // HTTP/1.x.
        m_sniff.append(reinterpret_cast<const char *>(data), std::min(len, kSniffLen - m_sniff.size()));
        if (m_sniff.size() >= kSniffLen)
            fail(classifyNonH2(reinterpret_cast<const std::uint8_t *>(m_sniff.data()), m_sniff.size(), m_dir),
                 t, out);
        return;
    }

    for (;;) {
        // A DATA frame whose payload is decoded as it arrives (see beginStreamedData).
        if (m_streamed.active) {
            const size_t n = std::min<size_t>(len, m_streamed.left);
            streamData(data, n);
            data += n;
            len -= n;
            if (m_streamed.left > 0) return;
            finishStreamedData(t, out);
            if (m_state == State::Failed) return;
        }

        // Complete a frame carried over from an earlier read.
        if (!m_partial.empty()) {
            if (m_partial.size() < kFrameHeaderLen) {
                const size_t n = std::min(len, kFrameHeaderLen - m_partial.size());
                m_partial.append(reinterpret_cast<const char *>(data), n);
                data += n;
                len -= n;
                if (m_partial.size() < kFrameHeaderLen) return;
                const auto *hdr = reinterpret_cast<const std::uint8_t *>(m_partial.data());
                if (!checkFrameHeader(hdr, t, out)) return;
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
            if (m_partial.size() < total) return;
            // The frame moves to m_whole, whose buffer m_partial takes in exchange: while frames keep
            // splitting across reads the two buffers are reused instead of allocated each time. handleFrame
            // may clear m_partial (fail, resync); the frame it reads is m_whole.
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
            if (!checkFrameHeader(data, t, out)) return;
            const size_t total = kFrameHeaderLen + be24(data);
            if (len < total) break;
            handleFrame(data, data + kFrameHeaderLen, t, out);
            data += total;
            len -= total;
        }
        if (len == 0 || m_state == State::Failed) return;
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
    return hdr[3] == FrameData && frameStream(hdr) != 0 && !m_headers.open() && be24(hdr) > 0;
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
        s.streamGone = !m_messages.feed(frameStream(s.hdr), p, k, stamp(0), s.events);
    }
}

size_t H2Decoder::skippable() const
{
    const StreamedData &s = m_streamed;
    if (m_state != State::Frames || !s.active || !s.padKnown) return 0;
    if (s.badPadding || s.streamGone || s.dataLeft == 0)
        return s.left; // nothing more of this frame is looked at
    return m_messages.skippable(frameStream(s.hdr), s.dataLeft);
}

void H2Decoder::skip(size_t n, std::int64_t t, std::uint32_t connection, EventBatch &out)
{
    m_connection = connection;
    if (n == 0) return;
    if (n > skippable()) {
        fail("skipped " + std::to_string(n) + " bytes the decoder needed", t, out);
        return;
    }
    StreamedData &s = m_streamed;
    s.left -= std::uint32_t(n);
    if (s.dataLeft > 0 && !s.badPadding && !s.streamGone) {
        s.dataLeft -= std::uint32_t(n);
        s.touched = true;
        // Stamped when the frame completes.
        s.streamGone = !m_messages.skip(frameStream(s.hdr), std::uint32_t(n), stamp(0), s.events);
    } else {
        s.dataLeft -= std::uint32_t(std::min<size_t>(n, s.dataLeft));
    }
    if (s.left == 0) finishStreamedData(t, out);
}

void H2Decoder::finishStreamedData(std::int64_t t, EventBatch &out)
{
    // The same events, in the same order and with the same time, as handleFrame gives the whole frame.
    StreamedData &s = m_streamed;
    s.active = false;
    const std::uint8_t flags = s.hdr[4];
    const std::uint32_t stream = frameStream(s.hdr);
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
    if (!s.touched) m_messages.touch(stream);
    for (WireEvent &m : s.events) {
        m.tNs = t;
        out.push_back(std::move(m));
    }
    s.events.clear();
    if (!s.streamGone && (flags & FlagEndStream)) m_messages.forget(stream);
}

bool H2Decoder::checkFrameHeader(const std::uint8_t *hdr, std::int64_t t, EventBatch &out)
{
    // Checked before buffering, so garbage cannot make us hold megabytes waiting for a frame that never ends.
    const std::uint32_t len = be24(hdr);
    if (!m_sawFirstFrame && !m_midStream &&
        (hdr[3] != FrameSettings || frameStream(hdr) != 0 || len % 6 != 0)) {
        if (answersTls(hdr, kFrameHeaderLen)) return false;
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
    if ((raw & 0x80000000u) || len > m_maxFrameSize) return false;
    switch (type) {
    case FrameData:
        return stream != 0 && !(flags & ~(FlagEndStream | FlagPadded));
    case FrameHeaders:
        return stream != 0 && !(flags & ~(FlagEndStream | FlagEndHeaders | FlagPadded | FlagPriority));
    case FramePriority:
        return stream != 0 && len == 5 && flags == 0;
    case FrameRstStream:
        return stream != 0 && len == 4 && flags == 0;
    case FrameSettings:
        return stream == 0 && len % 6 == 0 && !(flags & ~FlagAck) && (!(flags & FlagAck) || !len);
    case FramePing:
        return stream == 0 && len == 8 && !(flags & ~FlagAck);
    case FrameGoaway:
        return stream == 0 && len >= 8 && flags == 0;
    case FrameWindowUpdate:
        return len == 4 && flags == 0;
    case FrameContinuation:
        return stream != 0 && !(flags & ~FlagEndHeaders);
    default:
        return false; // unknown types are legal, but too weak to resynchronise on
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
            stamp(t).notice(
                "attached mid-connection: skipped " + std::to_string(off) +
                    " bytes to the first frame boundary; header blocks may be incomplete until HPACK "
                    "state is rebuilt",
                0, out);
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
    const std::uint32_t stream = frameStream(hdr);

    m_sawFirstFrame = true;
    if (stream == 0 && (type == FrameData || type == FrameHeaders || type == FrameContinuation ||
                        type == FrameRstStream || type == FramePushPromise)) {
        fail(std::string(frameTypeName(type)) + " on stream 0 (RFC 9113: a connection error)", t, out);
        return;
    }
    if (m_headers.open() && (type != FrameContinuation || stream != m_headers.stream())) {
        fail("header block on stream " + std::to_string(m_headers.stream()) + " interrupted by " +
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
        if (len >= 4) e.errorCode = be32(payload);
        break;
    case FrameGoaway:
        if (len >= 8) {
            e.lastStreamId = be32(payload) & 0x7fffffffu;
            e.errorCode = be32(payload + 4);
            // Debug data is free text meant for humans; a bounded prefix is enough to show.
            e.reason.assign(reinterpret_cast<const char *>(payload + 8), std::min<size_t>(len - 8, 256));
        }
        break;
    case FramePing:
        if (len == 8) {
            e.pingData = (std::uint64_t(be32(payload)) << 32) | be32(payload + 4);
            if (!(flags & FlagAck)) {
                if (m_pendingPings.size() >= 16) m_pendingPings.pop_front();
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
        if (len >= 4) e.windowIncrement = be32(payload) & 0x7fffffffu;
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
    m_controlRate.flush(t, out);
    if (m_controlRate.admit(e)) out.push_back(e);
    // DATA, CONTINUATION and plain HEADERS (most frames) have no rule checked there.
    if (!RuleChecks::unchecked(type, flags))
        m_rules.check(type, flags, stream, len, payload, m_peer && flowKnown() ? &m_peer->m_windows : nullptr,
                      stamp(t), out);

    // Strip padding for the frame types that carry it.
    auto unpad = [&](const std::uint8_t *&p, std::uint32_t &n) -> bool {
        if (!(flags & FlagPadded)) return true;
        if (n < 1 || payload[0] >= n) {
            fail(std::string("bad padding in ") + frameTypeName(type) + " on stream " +
                     std::to_string(stream),
                 t, out);
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
        if (!unpad(p, n)) return;
        if (m_messages.feed(stream, p, n, stamp(t), out) && (flags & FlagEndStream))
            m_messages.forget(stream);
        break;
    }
    case FrameHeaders: {
        const std::uint8_t *p = payload;
        std::uint32_t n = len;
        if (!unpad(p, n)) return;
        if (flags & FlagPriority) {
            if (n < 5) {
                fail("HEADERS priority fields truncated on stream " + std::to_string(stream), t, out);
                return;
            }
            p += 5;
            n -= 5;
        }
        const bool endStream = flags & FlagEndStream;
        m_headers.begin(stream, endStream, false);
        if (m_dir == Direction::ClientToServer && stream > m_lastOpenedStream) {
            // A new stream has windows both ways from now on: a WINDOW_UPDATE for it may come before its
            // first DATA (grpc++ raises a response stream's window as soon as it asks).
            m_lastOpenedStream = stream;
            if (!endStream) m_windows.open(stream);
            if (m_peer) m_peer->m_windows.open(stream);
        }
        if (endStream) dropFlow(stream, t, out);
        handleHeaderFragment(stream, p, n, flags & FlagEndHeaders, t, out);
        if (endStream && !m_headers.open()) m_messages.forget(stream);
        break;
    }
    case FramePushPromise: {
        const std::uint8_t *p = payload;
        std::uint32_t n = len;
        if (!unpad(p, n)) return;
        if (n < 4) {
            fail("PUSH_PROMISE truncated", t, out);
            return;
        }
        m_headers.begin(stream, false, true);
        handleHeaderFragment(stream, p + 4, n - 4, flags & FlagEndHeaders, t, out);
        break;
    }
    case FrameContinuation:
        if (!m_headers.open()) {
            fail("CONTINUATION without a header block on stream " + std::to_string(stream), t, out);
            return;
        }
        handleHeaderFragment(stream, payload, len, flags & FlagEndHeaders, t, out);
        if (m_headers.endStream() && !m_headers.open()) m_messages.forget(stream);
        break;
    case FrameSettings:
        if (m_peer)
            for (const auto &[id, value] : e.settings) {
                // Our SETTINGS bound what the other side may send us, so they configure the peer's decoder.
                if (id == NGHTTP2_SETTINGS_HEADER_TABLE_SIZE)
                    m_peer->m_headers.setTableSize(value);
                else if (id == NGHTTP2_SETTINGS_MAX_FRAME_SIZE && value >= 16384 &&
                         value <= kMaxFrameSizeLimit)
                    m_peer->m_maxFrameSize = value;
                else if (id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE && value <= 0x7fffffffu)
                    m_peer->applyPeerInitialWindow(value, t, out);
            }
        break;
    case FrameWindowUpdate:
        // Our WINDOW_UPDATE lets the other side send more.
        if (m_peer) m_peer->applyWindowUpdate(stream, e.windowIncrement, t, out);
        break;
    case FrameRstStream:
        // Frames the other side sent before it saw this reset are still on the wire; its decoder must
        // not lose its place in a message that is partly through.
        m_messages.forget(stream);
        dropFlow(stream, t, out);
        if (m_peer) m_peer->peerResetStream(stream, t, out);
        break;
    default:
        break; // PRIORITY, PING, GOAWAY and unknown types: recorded above, nothing more to track
    }
}

void H2Decoder::dataFlow(std::uint32_t stream, std::uint8_t flags, std::uint32_t len, std::int64_t t,
                         EventBatch &out)
{
    const FlowWindows::Spent spent = m_windows.spend(stream, flags & FlagEndStream, len);
    if ((spent.connectionOverrun || spent.streamOverrun) && flowKnown()) {
        if (spent.connectionOverrun)
            m_rules.report("DATA on stream " + std::to_string(stream) +
                               " overran the connection's flow-control window by " +
                               std::to_string(spent.connectionOverrun) + " bytes",
                           NGHTTP2_FLOW_CONTROL_ERROR, stream, stamp(t), out);
        if (spent.streamOverrun)
            m_rules.report("DATA on stream " + std::to_string(stream) +
                               " overran the stream's flow-control window by " +
                               std::to_string(spent.streamOverrun) + " bytes",
                           NGHTTP2_FLOW_CONTROL_ERROR, stream, stamp(t), out);
    }
    if (spent.streamStallEnded) stall(false, stream, t, out);
    if (spent.streamStalled) stall(true, stream, t, out);
    if (spent.connectionStalled) stall(true, 0, t, out);
}

void H2Decoder::handleHeaderFragment(std::uint32_t stream, const std::uint8_t *p, size_t len, bool endHeaders,
                                     std::int64_t t, EventBatch &out)
{
    if (!m_headers.append(p, len)) {
        // Without the whole block the HPACK context cannot stay in step, so this direction ends here.
        fail("header block on stream " + std::to_string(stream) + " exceeds the " +
                 std::to_string(m_limits.maxHeaderBlockBytes) + "-byte limit",
             t, out);
        return;
    }
    if (endHeaders) m_headers.finish(stamp(t), m_midStream, out);
}

size_t H2Decoder::memoryBytes() const
{
    return heapbytes::string(m_error) + heapbytes::string(m_sniff) + heapbytes::string(m_partial) +
           heapbytes::string(m_whole) + heapbytes::batch(m_streamed.events) + m_headers.memoryBytes() +
           m_messages.memoryBytes() + m_windows.memoryBytes() +
           m_pendingPings.size() * sizeof(m_pendingPings.front()) +
           (m_pendingPings.empty() ? 0 : heapbytes::block(512));
}

} // namespace rpcscope
