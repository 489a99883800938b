#include "streamfaults.h"

#include "events.h"
#include "h2wire.h"

#include <algorithm>
#include <cstring>
#include <nghttp2/nghttp2.h>

namespace rpcscope {

namespace {
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = 24;
constexpr std::uint8_t kData = 0, kHeaders = 1, kPriority = 2, kRstStream = 3, kSettings = 4, kGoaway = 7,
                       kWindowUpdate = 8, kContinuation = 9;
constexpr std::uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriorityFlag = 0x20;
// A header block we write is cut into frames no larger than every peer accepts (SETTINGS_MAX_FRAME_SIZE's
// least value).
constexpr size_t kMaxOutFrame = 16384;
constexpr std::uint32_t kDefaultTableSize = 4096;
constexpr std::uint32_t kRefusedStream = 7;
constexpr std::uint32_t kCancel = 8;

void frameHeader(std::string &out, size_t len, std::uint8_t type, std::uint8_t flags, std::uint32_t stream)
{
    const char h[9] = {char(len >> 16),    char(len >> 8),     char(len),         char(type),  char(flags),
                       char(stream >> 24), char(stream >> 16), char(stream >> 8), char(stream)};
    out.append(h, 9);
}

void put32(std::string &out, std::uint32_t v)
{
    const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    out.append(b, 4);
}

// grpc-message is percent-encoded (gRPC over HTTP/2): anything outside printable ASCII, and '%' itself.
std::string percentEncoded(const std::string &s)
{
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char ch : s) {
        if (ch >= 0x20 && ch <= 0x7e && ch != '%') {
            out += char(ch);
        } else {
            out += '%';
            out += hex[ch >> 4];
            out += hex[ch & 15];
        }
    }
    return out;
}

std::string msText(std::int64_t ns)
{
    return std::to_string((ns + 500'000) / 1'000'000) + " ms";
}
} // namespace

StreamFaults::StreamFaults(std::shared_ptr<FaultSet> faults, std::string hop, std::int64_t origin,
                           std::uint64_t seed)
    : m_faults(std::move(faults)), m_hop(std::move(hop)), m_origin(origin), m_random(seed)
{
    m_rules = m_faults->snapshot();
    for (Side *s : {&m_up, &m_down}) {
        nghttp2_hd_inflate_new(&s->inflater);
        nghttp2_hd_deflate_new(&s->deflater, kDefaultTableSize);
    }
    nghttp2_hd_deflate_new(&m_literal, kDefaultTableSize);
}

StreamFaults::~StreamFaults()
{
    for (Side *s : {&m_up, &m_down}) {
        nghttp2_hd_inflate_del(s->inflater);
        nghttp2_hd_deflate_del(s->deflater);
    }
    nghttp2_hd_deflate_del(m_literal);
}

void StreamFaults::fromClient(const std::uint8_t *data, size_t size, std::int64_t now)
{
    if (m_passthrough) {
        toServer.append(reinterpret_cast<const char *>(data), size);
        return;
    }
    if (!m_preface) {
        m_up.in.append(reinterpret_cast<const char *>(data), size);
        const size_t have = std::min(m_up.in.size(), kPrefaceLen);
        if (std::memcmp(m_up.in.data(), kPreface, have) != 0) {
            // Not HTTP/2 with prior knowledge: nothing here can be understood, so it goes on untouched.
            m_passthrough = true;
            toServer += m_up.in;
            toClient.append(m_down.in, m_down.inOff);
            m_up.in.clear();
            m_down.in.clear();
            return;
        }
        if (m_up.in.size() < kPrefaceLen) return;
        toServer.append(m_up.in, 0, kPrefaceLen);
        m_preface = true;
        const std::string rest = m_up.in.substr(kPrefaceLen);
        m_up.in.clear();
        feed(true, reinterpret_cast<const std::uint8_t *>(rest.data()), rest.size(), now);
        return;
    }
    feed(true, data, size, now);
}

void StreamFaults::fromServer(const std::uint8_t *data, size_t size, std::int64_t now)
{
    if (m_passthrough) {
        toClient.append(reinterpret_cast<const char *>(data), size);
        return;
    }
    feed(false, data, size, now);
}

void StreamFaults::feed(bool fromClient, const std::uint8_t *data, size_t size, std::int64_t now)
{
    Side &s = fromClient ? m_up : m_down;
    if (s.in.size() == s.inOff) {
        // Nothing left over from the last read: its whole frames are handled where they were read, and only
        // a cut frame at its end is kept.
        s.in.clear();
        s.inOff = 0;
        const size_t used = frames(fromClient, data, size, now);
        if (failure.empty() && used < size)
            s.in.assign(reinterpret_cast<const char *>(data) + used, size - used);
        return;
    }
    s.in.append(reinterpret_cast<const char *>(data), size);
    // The handlers never touch s.in, so the frames stay where they are while they run.
    s.inOff += frames(fromClient, reinterpret_cast<const std::uint8_t *>(s.in.data()) + s.inOff,
                      s.in.size() - s.inOff, now);
    if (s.inOff == s.in.size()) {
        s.in.clear();
        s.inOff = 0;
    } else if (s.inOff >= 65536) {
        s.in.erase(0, s.inOff);
        s.inOff = 0;
    }
}

size_t StreamFaults::frames(bool fromClient, const std::uint8_t *data, size_t size, std::int64_t now)
{
    size_t off = 0;
    while (failure.empty()) {
        const size_t avail = size - off;
        if (avail < kFrameHeaderLen) break;
        const std::uint8_t *p = data + off;
        const std::uint32_t len = be24(p);
        if (avail < kFrameHeaderLen + len) break;
        off += kFrameHeaderLen + len;
        if (fromClient)
            clientFrame(p[3], p[4], frameStream(p), p, len, now);
        else
            serverFrame(p[3], p[4], frameStream(p), p, len, now);
    }
    return off;
}

// A HEADERS or CONTINUATION frame: its fragment joins the block; true once the block is whole (then
// side.blockView and side.rawView hold it, into the frame itself when it came in one).
static bool gather(auto &side, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                   const std::uint8_t *payload, size_t len, std::string *failure)
{
    const char *frame = reinterpret_cast<const char *>(payload) - kFrameHeaderLen;
    if (side.inBlock) {
        if (type != kContinuation || stream != side.blockStream) {
            *failure = "a header block was interrupted by another frame; the fault rules cannot follow it";
            return false;
        }
        side.block.append(reinterpret_cast<const char *>(payload), len);
        side.blockRaw.append(frame, kFrameHeaderLen + len);
        side.inBlock = !(flags & kEndHeaders);
        side.blockView = side.block;
        side.rawView = side.blockRaw;
        return !side.inBlock;
    }
    size_t off = 0, end = len;
    if (flags & kPadded) {
        if (len < 1 || payload[0] >= len) {
            *failure = "a HEADERS frame with bad padding";
            return false;
        }
        off = 1;
        end = len - payload[0];
    }
    if (flags & kPriorityFlag) off += 5;
    if (off > end) {
        *failure = "a HEADERS frame too short for its priority fields";
        return false;
    }
    side.blockStream = stream;
    side.blockFlags = flags;
    side.inBlock = !(flags & kEndHeaders);
    side.blockView = std::string_view(reinterpret_cast<const char *>(payload) + off, end - off);
    side.rawView = std::string_view(frame, kFrameHeaderLen + len);
    if (side.inBlock) { // CONTINUATIONs follow, perhaps in a later read: the block is gathered
        side.block.assign(side.blockView);
        side.blockRaw.assign(side.rawView);
    }
    return !side.inBlock;
}

void StreamFaults::clientFrame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                               const std::uint8_t *frame, size_t len, std::int64_t now)
{
    const std::uint8_t *payload = frame + kFrameHeaderLen;
    if (m_up.inBlock || type == kHeaders) {
        if (!gather(m_up, type, flags, stream, payload, len, &failure)) return;
        // The fields are kept only where they may be written again: on a side being re-encoded, or for a
        // stream a rule chose (a delay holds them). Else the block goes on as it came.
        const bool keep = m_up.rewriting || m_streams.count(m_up.blockStream);
        HeaderList list;
        Picks picks;
        if (!inflate(m_up, m_up.blockView, keep ? &list : nullptr, &picks)) {
            failure = "the client's header block does not decode (HPACK); the fault rules cannot go on";
            return;
        }
        clientHeaders(m_up.blockStream, m_up.blockFlags & kEndStream, std::move(list), picks, now);
        return;
    }
    const auto raw = [&] {
        return std::string(reinterpret_cast<const char *>(frame), kFrameHeaderLen + len);
    };
    switch (type) {
    case kData:
    case kRstStream:
    case kWindowUpdate:
    case kPriority:
        if (stream != 0) {
            if (auto it = m_streams.find(stream); it != m_streams.end()) {
                Stream &st = it->second;
                if (st.swallowUp) {
                    // The client spent connection credit on DATA the server never gets: it is given back.
                    if (type == kData && len > 0) writeWindowUpdate(false, std::uint32_t(len));
                    return;
                }
                if (st.holdUpUntil) {
                    st.heldUp.push_back({raw(), false, stream, false, {}});
                    return;
                }
            }
        }
        break;
    case kSettings:
        if (!(flags & kAck)) settings(true, payload, len);
        break;
    default:
        break;
    }
    toServer.append(reinterpret_cast<const char *>(frame), kFrameHeaderLen + len);
}

void StreamFaults::serverFrame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                               const std::uint8_t *frame, size_t len, std::int64_t now)
{
    const std::uint8_t *payload = frame + kFrameHeaderLen;
    if (m_down.inBlock || type == kHeaders) {
        if (!gather(m_down, type, flags, stream, payload, len, &failure)) return;
        const bool keep = m_down.rewriting || m_streams.count(m_down.blockStream);
        HeaderList list;
        if (!inflate(m_down, m_down.blockView, keep ? &list : nullptr, nullptr)) {
            failure = "the server's header block does not decode (HPACK); the fault rules cannot go on";
            return;
        }
        serverHeaders(m_down.blockStream, m_down.blockFlags & kEndStream, std::move(list), now);
        return;
    }
    switch (type) {
    case kData:
    case kRstStream:
    case kWindowUpdate:
    case kPriority:
        if (stream != 0) {
            if (auto it = m_streams.find(stream); it != m_streams.end()) {
                Stream &st = it->second;
                if (st.swallowDown) {
                    if (type == kData && len > 0) writeWindowUpdate(true, std::uint32_t(len));
                    return;
                }
                if (st.holdDownUntil) {
                    st.heldDown.push_back(
                        {std::string(reinterpret_cast<const char *>(frame), kFrameHeaderLen + len),
                         false,
                         stream,
                         false,
                         {}});
                    return;
                }
            }
        }
        break;
    case kSettings:
        if (!(flags & kAck)) settings(false, payload, len);
        break;
    case kGoaway:
        // After our own GOAWAY the client must never see a higher last-stream-id (RFC 9113 6.8).
        if (m_goawayLast >= 0 && len >= 8 && be32(payload) > std::uint32_t(m_goawayLast)) {
            std::string copy(reinterpret_cast<const char *>(frame), kFrameHeaderLen + len);
            std::string last;
            put32(last, std::uint32_t(m_goawayLast));
            copy.replace(kFrameHeaderLen, 4, last);
            toClient += copy;
            return;
        }
        break;
    default:
        break;
    }
    toClient.append(reinterpret_cast<const char *>(frame), kFrameHeaderLen + len);
}

void StreamFaults::clientHeaders(std::uint32_t stream, bool endStream, HeaderList &&list, const Picks &picks,
                                 std::int64_t now)
{
    if (auto it = m_streams.find(stream); it != m_streams.end()) {
        Stream &st = it->second;
        if (st.swallowUp) {
            m_up.rewriting = true; // the server's table never gets this block
            return;
        }
        if (st.holdUpUntil) {
            m_up.rewriting = true; // blocks of other streams may pass it
            st.heldUp.push_back({{}, true, stream, endStream, std::move(list)});
            return;
        }
        passHeaders(true, stream, endStream, list);
        return;
    }
    if (!(stream & 1) || stream <= m_lastClientStream) { // not a new stream: passed on as it is
        passHeaders(true, stream, endStream, list);
        return;
    }
    m_lastClientStream = stream;
    if (m_goawayLast >= 0 && stream > std::uint32_t(m_goawayLast)) {
        // Opened after our GOAWAY (it crossed it): refused, as the server would have.
        m_streams[stream].swallowUp = true;
        m_up.rewriting = true;
        writeRst(false, stream, kRefusedStream);
        return;
    }
    size_t index = 0;
    if (!choose(picks, now, &index)) {
        passHeaders(true, stream, endStream, list);
        m_lastForwarded = stream;
        return;
    }
    const FaultRule &r = m_rules->rules[index];
    Stream &st = m_streams[stream];
    st.rule = index;
    std::string what = "fault: ";
    switch (r.action) {
    case FaultAction::Abort:
        if (!r.beforeServer) {
            // Noted when it acts, once the server has answered.
            st.abortAfter = true;
            passHeaders(true, stream, endStream, list);
            m_lastForwarded = stream;
            return;
        }
        st.swallowUp = true;
        trailersOnly(stream, r);
        what += std::string("abort ") + grpcStatusName(r.status) + " before the server";
        break;
    case FaultAction::Reset:
        st.swallowUp = true;
        writeRst(false, stream, r.rstCode);
        what += std::string("reset ") + h2ErrorName(r.rstCode);
        break;
    case FaultAction::Goaway: {
        std::uint32_t last = stream;
        if (r.goawayBelow) {
            last = m_lastForwarded;
            st.swallowUp = true; // unprocessed: the client retries it elsewhere
        } else {
            passHeaders(true, stream, endStream, list);
            m_lastForwarded = stream;
        }
        writeGoaway(last);
        m_goawayLast = last;
        what += "goaway last-stream-id " + std::to_string(last) + (r.goawayBelow ? " (below" : " (at") +
                " the stream)";
        break;
    }
    case FaultAction::Delay: {
        const std::int64_t by = delayOf(r);
        passHeaders(true, stream, endStream, list);
        m_lastForwarded = stream;
        if (r.delayResponse) {
            st.holdDownBy = by;
            what += "delay the response headers by " + msText(by);
        } else {
            // The headers go at once (a later stream must not reach the server before this one opens);
            // the rest of the request waits.
            if (!endStream) {
                st.holdUpUntil = now + by;
                m_holding.push_back(stream);
            }
            what += "delay the request by " + msText(by);
        }
        break;
    }
    default:
        return;
    }
    if (st.swallowUp) m_up.rewriting = true;
    note(stream, index, what);
}

void StreamFaults::serverHeaders(std::uint32_t stream, bool endStream, HeaderList &&list, std::int64_t now)
{
    auto it = m_streams.find(stream);
    if (it == m_streams.end()) {
        passHeaders(false, stream, endStream, list);
        return;
    }
    Stream &st = it->second;
    if (st.swallowDown) {
        m_down.rewriting = true;
        return;
    }
    if (st.abortAfter) {
        // The server has answered (its side effects happened); the client gets the rule's status instead.
        st.abortAfter = false;
        st.swallowDown = st.swallowUp = true;
        m_down.rewriting = true;
        const FaultRule &r = m_rules->rules[st.rule];
        trailersOnly(stream, r);
        if (!endStream) writeRst(true, stream, kCancel);
        note(stream, st.rule, std::string("fault: abort ") + grpcStatusName(r.status) + " after the server");
        return;
    }
    if (st.holdDownBy >= 0) {
        st.holdDownUntil = now + st.holdDownBy;
        st.holdDownBy = -1;
        m_holding.push_back(stream);
    }
    if (st.holdDownUntil) {
        m_down.rewriting = true;
        st.heldDown.push_back({{}, true, stream, endStream, std::move(list)});
        return;
    }
    passHeaders(false, stream, endStream, list);
}

bool StreamFaults::choose(const Picks &picks, std::int64_t now, size_t *rule)
{
    if (m_faults->version() != m_rules->version) m_rules = m_faults->snapshot();
    const std::string_view path = picks.path;
    const std::uint64_t attempt = picks.attempt;
    const std::int64_t since = now - m_origin;
    for (size_t i = 0; i < m_rules->rules.size(); ++i) {
        const FaultRule &r = m_rules->rules[i];
        if (!m_rules->enabled[i] || isConnectionAction(r.action)) continue;
        if (!r.hop.empty() && r.hop != m_hop) continue;
        if (!r.inWindow(since)) continue;
        if (!r.method.empty() && !faultGlobMatch(r.method, path)) continue;
        if (r.attempt && !r.attempt->contains(attempt)) continue;
        if (r.action == FaultAction::Goaway && m_goawayLast >= 0) continue; // one GOAWAY a connection
        if (r.nth && !r.nth->contains(m_faults->nextMatch(i))) continue;
        if (r.percent < 100 && std::uniform_real_distribution<double>(0, 100)(m_random) >= r.percent)
            continue;
        *rule = i;
        return true;
    }
    return false;
}

void StreamFaults::note(std::uint32_t stream, size_t rule, const std::string &what)
{
    m_faults->hit(rule);
    injections.push_back(
        {stream, rule, what + " (rule " + std::to_string(rule + 1) + ")", m_rules->rules[rule].text});
}

std::int64_t StreamFaults::delayOf(const FaultRule &rule)
{
    std::int64_t by = rule.byNs;
    if (rule.jitterNs > 0)
        by += std::uniform_int_distribution<std::int64_t>(-rule.jitterNs, rule.jitterNs)(m_random);
    return std::max<std::int64_t>(by, 0);
}

bool StreamFaults::inflate(Side &side, std::string_view block, HeaderList *out, Picks *picks)
{
    const auto *in = reinterpret_cast<const std::uint8_t *>(block.data());
    size_t inlen = block.size();
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(side.inflater, &nv, &flags, in, inlen, 1);
        if (rv < 0) return false;
        in += rv;
        inlen -= size_t(rv);
        if (flags & NGHTTP2_HD_INFLATE_EMIT) {
            const std::string_view name(reinterpret_cast<const char *>(nv.name), nv.namelen);
            const std::string_view value(reinterpret_cast<const char *>(nv.value), nv.valuelen);
            if (out)
                out->fields.push_back({std::string(name), std::string(value),
                                       std::uint8_t(nv.flags & NGHTTP2_NV_FLAG_NO_INDEX)});
            if (picks && name == ":path") {
                picks->path = value;
            } else if (picks && name == "grpc-previous-rpc-attempts") {
                std::uint64_t n = 0;
                bool ok = !value.empty() && value.size() < 10;
                for (char ch : value)
                    ok = ok && ch >= '0' && ch <= '9' && ((n = n * 10 + std::uint64_t(ch - '0')), true);
                if (ok) picks->attempt = n + 1;
            }
        }
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(side.inflater);
            return true;
        }
        if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && inlen == 0) return false;
    }
}

void StreamFaults::passHeaders(bool server, std::uint32_t stream, bool endStream, const HeaderList &list)
{
    Side &from = server ? m_up : m_down;
    if (from.rewriting)
        writeHeaders(server, stream, endStream, list);
    else
        (server ? toServer : toClient) += from.rawView;
}

void StreamFaults::writeHeaders(bool server, std::uint32_t stream, bool endStream, const HeaderList &list)
{
    writeBlock(server ? m_up.deflater : m_down.deflater, server ? toServer : toClient, stream, endStream,
               list);
}

void StreamFaults::writeBlock(nghttp2_hd_deflater *deflater, std::string &out, std::uint32_t stream,
                              bool endStream, const HeaderList &list)
{
    std::vector<nghttp2_nv> nva;
    nva.reserve(list.fields.size());
    for (const Field &f : list.fields)
        nva.push_back({reinterpret_cast<std::uint8_t *>(const_cast<char *>(f.name.data())),
                       reinterpret_cast<std::uint8_t *>(const_cast<char *>(f.value.data())), f.name.size(),
                       f.value.size(), f.flags});
    std::string block(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
    const ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<std::uint8_t *>(block.data()),
                                            block.size(), nva.data(), nva.size());
    if (n < 0) {
        failure = "could not encode a header block (HPACK)";
        return;
    }
    size_t off = 0;
    bool first = true;
    do {
        const size_t part = std::min(size_t(n) - off, kMaxOutFrame);
        const bool last = off + part == size_t(n);
        std::uint8_t flags = last ? kEndHeaders : 0;
        if (first && endStream) flags |= kEndStream;
        frameHeader(out, part, first ? kHeaders : kContinuation, flags, stream);
        out.append(block, off, part);
        off += part;
        first = false;
    } while (off < size_t(n));
}

void StreamFaults::writeRst(bool server, std::uint32_t stream, std::uint32_t code)
{
    std::string &out = server ? toServer : toClient;
    frameHeader(out, 4, kRstStream, 0, stream);
    put32(out, code);
}

void StreamFaults::writeWindowUpdate(bool server, std::uint32_t increment)
{
    std::string &out = server ? toServer : toClient;
    frameHeader(out, 4, kWindowUpdate, 0, 0);
    put32(out, increment & 0x7fffffffu);
}

void StreamFaults::writeGoaway(std::uint32_t lastStream)
{
    frameHeader(toClient, 8, kGoaway, 0, 0);
    put32(toClient, lastStream);
    put32(toClient, 0); // NO_ERROR: a graceful shutdown, as a server going away sends
}

void StreamFaults::trailersOnly(std::uint32_t stream, const FaultRule &rule)
{
    HeaderList l;
    l.fields.push_back({":status", "200", 0});
    l.fields.push_back({"content-type", "application/grpc", 0});
    l.fields.push_back({"grpc-status", std::to_string(rule.status), 0});
    if (!rule.message.empty()) l.fields.push_back({"grpc-message", percentEncoded(rule.message), 0});
    if (rule.pushbackMs) l.fields.push_back({"grpc-retry-pushback-ms", std::to_string(*rule.pushbackMs), 0});
    if (m_down.rewriting) {
        writeHeaders(false, stream, true, l);
        return;
    }
    for (Field &f : l.fields)
        f.flags = NGHTTP2_NV_FLAG_NO_INDEX;
    writeBlock(m_literal, toClient, stream, true, l);
}

void StreamFaults::settings(bool fromClient, const std::uint8_t *payload, size_t len)
{
    for (size_t off = 0; off + 6 <= len; off += 6) {
        if (((payload[off] << 8) | payload[off + 1]) != 1) continue; // SETTINGS_HEADER_TABLE_SIZE
        const std::uint32_t v = be32(payload + off + 2);
        // The sender's decoder holds at most v: our encoder toward it stays within that (and our 4096).
        Side &towardSender = fromClient ? m_down : m_up;
        nghttp2_hd_deflate_change_table_size(towardSender.deflater, std::min(v, kDefaultTableSize));
        // The other peer's encoder may now grow its table to v: our decoder of it accepts that. A smaller v
        // needs nothing: the encoder signals its own smaller size.
        std::uint32_t &limit = fromClient ? m_downInflateLimit : m_upInflateLimit;
        if (v > limit) {
            limit = v;
            nghttp2_hd_inflate_change_table_size((fromClient ? m_down : m_up).inflater, v);
        }
    }
}

void StreamFaults::release(std::vector<Held> &held, bool server)
{
    for (Held &h : held) {
        if (h.headers)
            writeHeaders(server, h.stream, h.endStream, h.list);
        else
            (server ? toServer : toClient) += h.raw;
    }
    held.clear();
}

void StreamFaults::onTime(std::int64_t now)
{
    for (size_t i = 0; i < m_holding.size();) {
        Stream &st = m_streams[m_holding[i]];
        if (st.holdUpUntil && now >= st.holdUpUntil) {
            st.holdUpUntil = 0;
            release(st.heldUp, true);
        }
        if (st.holdDownUntil && now >= st.holdDownUntil) {
            st.holdDownUntil = 0;
            release(st.heldDown, false);
        }
        if (!st.holdUpUntil && !st.holdDownUntil) {
            m_holding[i] = m_holding.back();
            m_holding.pop_back();
        } else {
            ++i;
        }
    }
}

std::int64_t StreamFaults::nextTime() const
{
    std::int64_t next = 0;
    for (std::uint32_t id : m_holding) {
        const Stream &st = m_streams.at(id);
        for (std::int64_t at : {st.holdUpUntil, st.holdDownUntil})
            if (at && (!next || at < next)) next = at;
    }
    return next;
}

int StreamFaults::pollTimeout(std::int64_t now) const
{
    const std::int64_t at = nextTime();
    if (!at) return -1;
    return at <= now ? 0 : int(std::min<std::int64_t>((at - now + 999'999) / 1'000'000, 60'000));
}

} // namespace rpcscope
