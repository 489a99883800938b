#include "pcapngwriter.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <nghttp2/nghttp2.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace rpcscope {

namespace {

// Segments stay below the 65,535-byte IPv4 limit with room for headers; Wireshark reassembles frames
// spanning several segments.
constexpr size_t kMaxSegment = 32000;
constexpr std::uint32_t kSettingsHeaderTableSize = 1;
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void put16(std::string &o, std::uint16_t v)
{
    o += char(v >> 8);
    o += char(v & 0xFF);
}
void put32(std::string &o, std::uint32_t v)
{
    put16(o, std::uint16_t(v >> 16));
    put16(o, std::uint16_t(v & 0xFFFF));
}
// pcapng blocks are written in host order (the section header's byte-order magic tells readers which).
template <typename T> void putHost(std::string &o, T v)
{
    o.append(reinterpret_cast<const char *>(&v), sizeof v);
}

std::uint16_t checksum(const std::string &bytes, size_t from, size_t len, std::uint32_t sum = 0)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (std::uint8_t(bytes[from + i]) << 8) | std::uint8_t(bytes[from + i + 1]);
    if (len & 1) sum += std::uint8_t(bytes[from + len - 1]) << 8;
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return std::uint16_t(~sum);
}

struct Endpoint
{
    std::uint32_t ip = 0; // host order
    std::uint16_t port = 0;
};

// "127.0.0.1:5000"; anything else (IPv6, a name) gets a stand-in address so the 4-tuple stays unique.
Endpoint parseEndpoint(const std::string &text, std::uint32_t fallbackIp, std::uint16_t fallbackPort)
{
    Endpoint e{fallbackIp, fallbackPort};
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return e;
    const std::string host = text.substr(0, colon);
    const long port = std::strtol(text.c_str() + colon + 1, nullptr, 10);
    if (port > 0 && port < 65536) e.port = std::uint16_t(port);
    in_addr a{};
    if (inet_pton(AF_INET, host.c_str(), &a) == 1) e.ip = ntohl(a.s_addr);
    return e;
}

// A TCP segment before it gets its sequence and acknowledgement numbers, which depend on where it lands in
// the file.
struct Segment
{
    std::int64_t tNs;
    std::uint64_t order; // ties in time keep the order the segments were made in
    std::uint32_t conn;
    int from; // 0 client, 1 server
    std::uint8_t tcpFlags;
    std::string payload;
};

// The heap's order: the earliest segment on top.
struct LaterSegment
{
    bool operator()(const Segment &a, const Segment &b) const
    {
        return a.tNs != b.tNs ? a.tNs > b.tNs : a.order > b.order;
    }
};

constexpr size_t kSegmentOverhead = sizeof(Segment) + 16;

struct Deflater
{
    nghttp2_hd_deflater *d = nullptr;
    Deflater() { nghttp2_hd_deflate_new(&d, 4096); }
    ~Deflater() { nghttp2_hd_deflate_del(d); }
    Deflater(const Deflater &) = delete;
    Deflater &operator=(const Deflater &) = delete;

    std::string encode(const std::vector<Header> &headers)
    {
        std::vector<nghttp2_nv> nva;
        nva.reserve(headers.size());
        for (const Header &h : headers)
            nva.push_back({reinterpret_cast<std::uint8_t *>(const_cast<char *>(h.name.data())),
                           reinterpret_cast<std::uint8_t *>(const_cast<char *>(h.value.data())),
                           h.name.size(), h.value.size(), NGHTTP2_NV_FLAG_NONE});
        std::string out(nghttp2_hd_deflate_bound(d, nva.data(), nva.size()), '\0');
        const auto n = nghttp2_hd_deflate_hd(d, reinterpret_cast<std::uint8_t *>(out.data()), out.size(),
                                             nva.data(), nva.size());
        out.resize(n < 0 ? 0 : size_t(n));
        return out;
    }
};

struct Conn
{
    Endpoint ends[2]; // client, server
    std::uint32_t seq[2] = {0, 0};
    // The time of the latest segment each side has sent so far, in the order the events came.
    std::int64_t lastNs[2] = {0, 0};
    std::int64_t openNs = 0; // the handshake's time
    std::uint32_t id = 0;
    bool open = false;
    bool closed = false;
    std::unique_ptr<Deflater> deflaters[2];
    std::uint16_t ipId = 0;
    size_t queuedSegments = 0; // not yet written: the connection is kept until they are
};

// A frame or connection event waiting for its turn: what the packets need of it, not the whole event.
struct Held
{
    std::uint64_t index = 0; // its place among all events taken
    EventKind kind = EventKind::Frame;
    Direction dir = Direction::ClientToServer;
    std::uint8_t frameType = 0;
    std::uint8_t flags = 0;
    std::uint32_t connection = 0;
    std::uint32_t stream = 0;
    std::uint32_t length = 0;
    std::uint32_t errorCode = 0;
    std::uint32_t lastStreamId = 0;
    std::uint32_t windowIncrement = 0;
    std::uint64_t pingData = 0;
    std::int64_t tNs = 0;
    std::vector<std::pair<std::uint16_t, std::uint32_t>> settings;
    std::string reason;

    size_t bytes() const { return sizeof(Held) + settings.size() * 8 + reason.size(); }
};

// One header block: the HEADERS frame that opened it, its CONTINUATIONs, and the headers decoded.
struct Block
{
    std::uint32_t connection = 0;
    std::vector<std::uint64_t> continuations;
    bool hasHeaders = false;
    bool push = false;
    bool written = false; // its HEADERS (or PUSH_PROMISE) frame is
    size_t continuationsWritten = 0;
    std::vector<Header> headers;
    std::vector<std::string> pieces; // filled when the HEADERS frame is written

    size_t bytes() const
    {
        size_t n = sizeof(Block) + continuations.size() * 8;
        for (const Header &h : headers)
            n += sizeof(Header) + h.name.size() + h.value.size();
        for (const std::string &p : pieces)
            n += sizeof(std::string) + p.size();
        return n;
    }
};

// The gRPC messages of one direction of a stream, as DATA frames carry them: bytes [base, base + size) of
// the stream, of which DATA frames have taken everything before `cursor`.
struct StreamBytes
{
    std::string bytes;
    std::uint64_t base = 0;
    std::uint64_t cursor = 0;
    std::uint64_t end() const { return base + bytes.size(); }
};

constexpr size_t kOutputChunk = 1 << 20;

} // namespace

class PcapngStreamWriter::Impl
{
public:
    Impl(std::int64_t originNs, std::int64_t originWallNs, Output out, Limits limits)
        : m_origin(originNs), m_wall(originWallNs), m_output(std::move(out)), m_limits(limits)
    {
        fileHeader();
    }

    bool add(const WireEvent &e)
    {
        if (m_failed) return false;
        ++m_stats.events;
        take(e);
        m_stats.peakHeldEvents = std::max<std::uint64_t>(m_stats.peakHeldEvents, m_held.size());
        m_stats.peakHeldBytes = std::max<std::uint64_t>(m_stats.peakHeldBytes, heldBytes());
        drain(false);
        return !m_failed;
    }

    bool finish()
    {
        if (m_finished) return !m_failed;
        m_finished = true;
        drain(true);
        while (!m_reorder.empty())
            writeEarliest();
        flushOutput(true);
        return !m_failed;
    }

    Stats m_stats;

private:
    using DirKey = std::pair<std::uint32_t, Direction>;
    using StreamKey = std::tuple<std::uint32_t, Direction, std::uint32_t>;

    size_t heldBytes() const { return m_heldBytes + m_streamTotal + m_blockBytes; }

    // What a writer holding the whole capture learns in a first pass over it, learnt as the events come.
    void take(const WireEvent &e)
    {
        const std::uint64_t i = m_next++;
        const DirKey dk{e.connection, e.dir};
        switch (e.kind) {
        case EventKind::Frame:
            if (e.frameType == FrameHeaders || e.frameType == FramePushPromise) {
                Block &b = m_blocks[i];
                b.connection = e.connection;
                b.push = e.frameType == FramePushPromise;
                m_blockBytes += b.bytes();
                if (!(e.flags & FlagEndHeaders)) setBlock(m_pendingBlock, dk, i);
                setBlock(m_lastBlock, dk, i);
            } else if (e.frameType == FrameContinuation) {
                if (auto it = m_pendingBlock.find(dk); it != m_pendingBlock.end()) {
                    if (auto b = m_blocks.find(it->second); b != m_blocks.end()) {
                        b->second.continuations.push_back(i);
                        m_blockBytes += 8;
                    }
                    m_continuationOf[i] = it->second;
                    if (e.flags & FlagEndHeaders) {
                        const std::uint64_t done = it->second;
                        m_pendingBlock.erase(it);
                        maybeEraseBlock(done, dk);
                    }
                }
            }
            hold(e, i);
            return;
        case EventKind::Headers:
            // A decoded block follows the frame that completed it.
            if (auto it = m_lastBlock.find(dk); it != m_lastBlock.end())
                if (auto b = m_blocks.find(it->second);
                    b != m_blocks.end() && !b->second.hasHeaders && !b->second.written) {
                    m_blockBytes -= b->second.bytes();
                    b->second.hasHeaders = true;
                    b->second.headers = e.headers;
                    m_blockBytes += b->second.bytes();
                }
            return;
        case EventKind::Message: {
            StreamBytes &s = m_streams[{e.connection, e.dir, e.stream}];
            const size_t before = s.bytes.size();
            s.bytes += char(e.compressed ? 1 : 0);
            put32(s.bytes, e.length);
            s.bytes += e.payload.substr(0, e.length);
            s.bytes.append(e.length - std::min<size_t>(e.payload.size(), e.length), '\0');
            m_streamTotal += s.bytes.size() - before;
            return;
        }
        case EventKind::ConnectionOpened:
            if (!m_opened.count(e.connection) && !m_conns.count(e.connection) &&
                !m_closedIds.count(e.connection)) {
                const PeerNames *p = e.peers();
                m_opened.emplace(e.connection, p ? std::make_pair(p->client, p->server)
                                                 : std::pair<std::string, std::string>());
            }
            hold(e, i);
            return;
        case EventKind::ConnectionClosed:
            m_closing.insert(e.connection);
            hold(e, i);
            return;
        default:
            return;
        }
    }

    // The latest (or the open) block of a direction moves on: the one before may be done with.
    void setBlock(std::map<DirKey, std::uint64_t> &map, const DirKey &dk, std::uint64_t i)
    {
        auto [it, fresh] = map.try_emplace(dk, i);
        if (fresh) return;
        const std::uint64_t before = it->second;
        it->second = i;
        maybeEraseBlock(before, dk);
    }

    // A block is needed until its frames are written and no later event can attach to it.
    void maybeEraseBlock(std::uint64_t index, const DirKey &dk)
    {
        const auto it = m_blocks.find(index);
        if (it == m_blocks.end()) return;
        const Block &b = it->second;
        if (!b.written || b.continuationsWritten < b.continuations.size()) return;
        const auto pending = m_pendingBlock.find(dk);
        const auto last = m_lastBlock.find(dk);
        if ((pending != m_pendingBlock.end() && pending->second == index) ||
            (last != m_lastBlock.end() && last->second == index))
            return;
        eraseBlock(it);
    }

    void hold(const WireEvent &e, std::uint64_t i)
    {
        Held h;
        h.index = i;
        h.kind = e.kind;
        h.dir = e.dir;
        h.frameType = e.frameType;
        h.flags = e.flags;
        h.connection = e.connection;
        h.stream = e.stream;
        h.length = e.length;
        h.errorCode = e.errorCode;
        h.lastStreamId = e.lastStreamId;
        h.windowIncrement = e.windowIncrement;
        h.pingData = e.pingData;
        h.tNs = e.tNs;
        if (e.kind == EventKind::Frame) {
            if (e.frameType == FrameSettings) h.settings = e.settings;
            if (e.frameType == FrameGoaway) h.reason = e.reason;
        }
        m_heldBytes += h.bytes();
        m_held.push_back(std::move(h));
    }

    // Whether the first held event is settled: nothing that comes later can change how it is written.
    bool settled(const Held &h) const
    {
        if (h.kind != EventKind::Frame || m_closing.count(h.connection)) return true;
        if (h.frameType == FrameData) {
            const auto it = m_streams.find({h.connection, h.dir, h.stream});
            const std::uint64_t cursor = it == m_streams.end() ? 0 : it->second.cursor;
            const std::uint64_t end = it == m_streams.end() ? 0 : it->second.end();
            return end >= cursor + h.length;
        }
        if (h.frameType == FrameHeaders) {
            const DirKey dk{h.connection, h.dir};
            const auto b = m_blocks.find(h.index);
            if (b == m_blocks.end()) return true;
            const auto last = m_lastBlock.find(dk);
            const auto pending = m_pendingBlock.find(dk);
            const bool headersKnown =
                b->second.hasHeaders || last == m_lastBlock.end() || last->second != h.index;
            const bool continuationsKnown = pending == m_pendingBlock.end() || pending->second != h.index;
            return headersKnown && continuationsKnown;
        }
        return true;
    }

    void drain(bool all)
    {
        while (!m_held.empty() && !m_failed) {
            const Held &h = m_held.front();
            const bool ready = all || settled(h);
            if (!ready && heldBytes() <= m_limits.heldBytes) break;
            if (!ready) ++m_stats.forcedFrames;
            emit(h);
            m_heldBytes -= h.bytes();
            m_held.pop_front();
            // Not while an event is written: that may hold on to its connection, which writing its last
            // segment forgets.
            while (m_reorderBytes > m_limits.reorderBytes && !m_reorder.empty())
                writeEarliest();
        }
        // Messages no DATA frame takes (a capture without frames): past the window, the largest go.
        while (heldBytes() > m_limits.heldBytes && m_streamTotal > 0) {
            auto largest = m_streams.end();
            for (auto it = m_streams.begin(); it != m_streams.end(); ++it)
                if (largest == m_streams.end() || it->second.bytes.size() > largest->second.bytes.size())
                    largest = it;
            StreamBytes &s = largest->second;
            m_streamTotal -= s.bytes.size();
            s.base = s.end();
            s.bytes.clear();
            s.bytes.shrink_to_fit();
        }
    }

    Conn &conn(std::uint32_t id)
    {
        auto [it, fresh] = m_conns.try_emplace(id);
        Conn &c = it->second;
        if (fresh) {
            c.id = id;
            std::pair<std::string, std::string> peers;
            if (auto o = m_opened.find(id); o != m_opened.end()) {
                peers = std::move(o->second);
                m_opened.erase(o);
            }
            // Stand-ins: 10.0.0.1 -> 10.0.0.2, a client port per connection.
            c.ends[0] = parseEndpoint(peers.first, 0x0A000001, std::uint16_t(40000 + id % 20000));
            c.ends[1] = parseEndpoint(peers.second, 0x0A000002, 50051);
            if (c.ends[0].ip == c.ends[1].ip && c.ends[0].port == c.ends[1].port)
                c.ends[0].port = std::uint16_t(40000 + id % 20000);
            // Distinct initial sequence numbers per connection, as a real stack would pick.
            c.seq[0] = 0x10000000u + id * 0x01000193u;
            c.seq[1] = 0x20000000u + id * 0x01000193u;
            c.deflaters[0] = std::make_unique<Deflater>();
            c.deflaters[1] = std::make_unique<Deflater>();
        }
        return c;
    }

    // Queues a segment from side `from`, no earlier than what that side sent before it, nor than the
    // connection's handshake, so that the order by time keeps each side's bytes in order.
    void segment(Conn &c, int from, std::int64_t t, std::uint8_t tcpFlags, const char *payload, size_t len)
    {
        t = std::max({t, c.lastNs[from], c.openNs});
        c.lastNs[from] = t;
        ++c.queuedSegments;
        m_reorder.push_back(
            {t, m_segmentOrder++, c.id, from, tcpFlags, std::string(payload ? payload : "", len)});
        std::push_heap(m_reorder.begin(), m_reorder.end(), LaterSegment{});
        m_reorderBytes += kSegmentOverhead + len;
        m_stats.peakReorderBytes = std::max<std::uint64_t>(m_stats.peakReorderBytes, m_reorderBytes);
    }

    void writeEarliest()
    {
        std::pop_heap(m_reorder.begin(), m_reorder.end(), LaterSegment{});
        Segment g = std::move(m_reorder.back());
        m_reorder.pop_back();
        m_reorderBytes -= kSegmentOverhead + g.payload.size();
        if (m_wroteAny && g.tNs < m_lastWrittenNs) ++m_stats.lateSegments;
        m_wroteAny = true;
        m_lastWrittenNs = std::max(m_lastWrittenNs, g.tNs);
        packet(g);
    }

    // Sequence and acknowledgement numbers are given in file order: Wireshark takes a segment acknowledging
    // bytes the file shows only later for a spurious retransmission, and drops an HTTP/2 frame from its
    // reassembly.
    void packet(const Segment &g)
    {
        const auto cit = m_conns.find(g.conn);
        if (cit == m_conns.end()) return;
        Conn &c = cit->second;
        const int from = g.from, to = 1 - from;
        const std::uint8_t tcpFlags = g.tcpFlags;
        const char *payload = g.payload.data();
        const size_t len = g.payload.size();
        std::string &p = m_packet;
        p.clear();
        p.reserve(54 + len);
        // Ethernet: locally administered addresses, one per side.
        p.append("\x02\x00\x00\x00\x00", 5);
        p += char(to + 1);
        p.append("\x02\x00\x00\x00\x00", 5);
        p += char(from + 1);
        put16(p, 0x0800);
        // IPv4
        const size_t ip = p.size();
        p += char(0x45);
        p += char(0);
        put16(p, std::uint16_t(20 + 20 + len));
        put16(p, c.ipId++);
        put16(p, 0x4000); // don't fragment
        p += char(64);
        p += char(6); // TCP
        put16(p, 0);
        put32(p, c.ends[from].ip);
        put32(p, c.ends[to].ip);
        const std::uint16_t ipSum = checksum(p, ip, 20);
        p[ip + 10] = char(ipSum >> 8);
        p[ip + 11] = char(ipSum & 0xFF);
        // TCP
        const size_t tcp = p.size();
        put16(p, c.ends[from].port);
        put16(p, c.ends[to].port);
        put32(p, c.seq[from]);
        put32(p, (tcpFlags & 0x10) ? c.seq[to] : 0);
        p += char(5 << 4);
        p += char(tcpFlags);
        put16(p, 65535);
        put16(p, 0);
        put16(p, 0);
        p.append(payload, len);
        std::uint32_t pseudo = (c.ends[from].ip >> 16) + (c.ends[from].ip & 0xFFFF) + (c.ends[to].ip >> 16) +
                               (c.ends[to].ip & 0xFFFF) + 6 + std::uint32_t(20 + len);
        const std::uint16_t tcpSum = checksum(p, tcp, 20 + len, pseudo);
        p[tcp + 16] = char(tcpSum >> 8);
        p[tcp + 17] = char(tcpSum & 0xFF);

        c.seq[from] += std::uint32_t(len) + ((tcpFlags & 0x03) ? 1 : 0); // SYN and FIN count one
        enhancedPacket(g.tNs, p);
        ++m_stats.packets;
        if (--c.queuedSegments == 0 && c.closed) {
            m_closedIds.insert(c.id);
            m_conns.erase(cit);
        }
    }

    void handshake(Conn &c, std::int64_t t)
    {
        if (c.open) return;
        c.open = true;
        c.openNs = t;
        segment(c, 0, t, 0x02, nullptr, 0); // SYN
        segment(c, 1, t, 0x12, nullptr, 0); // SYN+ACK
        segment(c, 0, t, 0x10, nullptr, 0); // ACK
        // A client sends the preface as soon as it is connected; first on the wire, it also lets Wireshark's
        // heuristics recognize HTTP/2 on any port.
        send(c, Direction::ClientToServer, t, std::string(kPreface, sizeof kPreface - 1));
    }

    void send(Conn &c, Direction dir, std::int64_t t, const std::string &bytes)
    {
        const int from = dir == Direction::ClientToServer ? 0 : 1;
        for (size_t off = 0; off < bytes.size(); off += kMaxSegment)
            segment(c, from, t, 0x18, bytes.data() + off,
                    std::min(kMaxSegment, bytes.size() - off)); // PSH+ACK
    }

    static std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                             const std::string &payload)
    {
        std::string f;
        f += char((payload.size() >> 16) & 0xFF);
        f += char((payload.size() >> 8) & 0xFF);
        f += char(payload.size() & 0xFF);
        f += char(type);
        f += char(flags);
        put32(f, stream & 0x7FFFFFFFu);
        return f + payload;
    }

    // Everything a closed connection held that no later event can use.
    void forgetConnection(std::uint32_t id)
    {
        m_closing.erase(id);
        for (auto it = m_streams.lower_bound({id, Direction::ClientToServer, 0});
             it != m_streams.end() && std::get<0>(it->first) == id;) {
            m_streamTotal -= it->second.bytes.size();
            it = m_streams.erase(it);
        }
        for (auto *map : {&m_lastBlock, &m_pendingBlock})
            for (auto it = map->lower_bound({id, Direction::ClientToServer});
                 it != map->end() && it->first.first == id;)
                it = map->erase(it);
        for (auto it = m_blocks.begin(); it != m_blocks.end();) {
            if (it->second.connection == id) {
                for (std::uint64_t k : it->second.continuations)
                    m_continuationOf.erase(k);
                m_blockBytes -= it->second.bytes();
                it = m_blocks.erase(it);
            } else {
                ++it;
            }
        }
    }

    void eraseBlock(std::unordered_map<std::uint64_t, Block>::iterator it)
    {
        m_blockBytes -= it->second.bytes();
        m_blocks.erase(it);
    }

    void emit(const Held &e)
    {
        if (m_closedIds.count(e.connection) ||
            (e.kind == EventKind::Frame && m_conns.count(e.connection) && m_conns[e.connection].closed)) {
            // Closed: nothing follows its FIN.
            if (auto b = m_blocks.find(e.index); b != m_blocks.end()) eraseBlock(b);
            return;
        }
        if (e.kind == EventKind::ConnectionOpened) {
            handshake(conn(e.connection), e.tNs);
            return;
        }
        if (e.kind == EventKind::ConnectionClosed) {
            m_closing.erase(e.connection);
            Conn &c = conn(e.connection);
            if (c.open && !c.closed) {
                c.closed = true;
                // After the last bytes of either side, so nothing follows a FIN.
                const std::int64_t t = std::max({e.tNs, c.lastNs[0], c.lastNs[1]});
                segment(c, 0, t, 0x11, nullptr, 0); // FIN+ACK
                segment(c, 1, t, 0x11, nullptr, 0);
                segment(c, 0, t, 0x10, nullptr, 0);
                forgetConnection(e.connection);
            }
            return;
        }
        if (e.kind != EventKind::Frame) return;
        Conn &c = conn(e.connection);
        if (c.closed) return;
        handshake(c, e.tNs);
        const int side = e.dir == Direction::ClientToServer ? 0 : 1;

        std::string payload;
        std::uint8_t flags = e.flags & ~FlagPadded;
        switch (e.frameType) {
        case FrameData: {
            const StreamKey key{e.connection, e.dir, e.stream};
            StreamBytes &s = m_streams[key];
            const std::uint64_t end = s.end();
            const std::uint64_t from = std::min(s.cursor, end);
            const size_t take = size_t(std::min<std::uint64_t>(e.length, end - from));
            if (from >= s.base)
                payload = s.bytes.substr(size_t(from - s.base), take);
            else // bytes dropped past the window: zeros stand in for them
                payload.assign(take, '\0');
            payload.append(e.length - take, '\0');
            s.cursor += e.length;
            // What DATA frames took is dropped, in large steps so that taking it costs linear time.
            const std::uint64_t used = s.cursor > s.base ? std::min(s.cursor, s.end()) - s.base : 0;
            if (used && (used == s.bytes.size() || used >= (1u << 16))) {
                m_streamTotal -= size_t(used);
                s.bytes.erase(0, size_t(used));
                s.base += used;
            }
            if ((e.flags & FlagEndStream) && s.cursor >= s.end()) {
                m_streamTotal -= s.bytes.size();
                m_streams.erase(key);
            }
            break;
        }
        case FrameHeaders: {
            auto it = m_blocks.find(e.index);
            if (it == m_blocks.end()) { // forgotten: an empty block
                it = m_blocks.try_emplace(e.index).first;
                it->second.connection = e.connection;
                m_blockBytes += it->second.bytes();
            }
            Block &b = it->second;
            m_blockBytes -= b.bytes();
            std::string block = b.hasHeaders ? c.deflaters[side]->encode(b.headers) : std::string();
            const size_t pieces = 1 + b.continuations.size();
            const size_t per = (block.size() + pieces - 1) / pieces;
            for (size_t k = 0; k < pieces; ++k)
                b.pieces.push_back(block.substr(std::min(block.size(), k * per), per));
            b.headers.clear();
            b.headers.shrink_to_fit();
            if (flags & FlagPriority)
                payload.assign("\x00\x00\x00\x00\x0F", 5); // no dependency, default weight
            payload += b.pieces[0];
            flags = b.continuations.empty() ? (flags | FlagEndHeaders) : (flags & ~FlagEndHeaders);
            m_blockBytes += b.bytes();
            b.written = true;
            maybeEraseBlock(e.index, {e.connection, e.dir});
            if (e.flags & FlagEndStream) {
                // Trailers or a request without a body: the direction's messages are complete.
                if (auto s = m_streams.find({e.connection, e.dir, e.stream});
                    s != m_streams.end() && s->second.cursor >= s->second.end()) {
                    m_streamTotal -= s->second.bytes.size();
                    m_streams.erase(s);
                }
            }
            break;
        }
        case FrameContinuation: {
            auto owner = m_continuationOf.find(e.index);
            if (owner == m_continuationOf.end()) return;
            const std::uint64_t ownerIndex = owner->second;
            m_continuationOf.erase(owner);
            const auto it = m_blocks.find(ownerIndex);
            if (it == m_blocks.end()) return;
            Block &b = it->second;
            ++b.continuationsWritten;
            if (b.push) {
                maybeEraseBlock(ownerIndex, {e.connection, e.dir});
                return;
            }
            const auto &conts = b.continuations;
            const size_t k = size_t(std::find(conts.begin(), conts.end(), e.index) - conts.begin()) + 1;
            payload = k < b.pieces.size() ? b.pieces[k] : std::string();
            flags = k == conts.size() ? FlagEndHeaders : 0;
            maybeEraseBlock(ownerIndex, {e.connection, e.dir});
            break;
        }
        case FramePushPromise:
            if (auto b = m_blocks.find(e.index); b != m_blocks.end()) {
                b->second.written = true;
                maybeEraseBlock(e.index, {e.connection, e.dir});
            }
            return; // gRPC never pushes; a promise's block would need the promised stream we did not keep
        case FrameRstStream:
            put32(payload, e.errorCode);
            break;
        case FrameSettings:
            if (!(e.flags & FlagAck))
                for (const auto &[id, value] : e.settings) {
                    put16(payload, id);
                    put32(payload, value);
                    // The peer's encoder must keep its dynamic table within what this side allows.
                    if (id == kSettingsHeaderTableSize)
                        nghttp2_hd_deflate_change_table_size(c.deflaters[1 - side]->d, value);
                }
            break;
        case FramePing:
            put32(payload, std::uint32_t(e.pingData >> 32));
            put32(payload, std::uint32_t(e.pingData & 0xFFFFFFFFu));
            break;
        case FrameGoaway:
            put32(payload, e.lastStreamId);
            put32(payload, e.errorCode);
            payload += e.reason;
            break;
        case FrameWindowUpdate:
            put32(payload, e.windowIncrement);
            break;
        case FramePriority:
            payload.assign("\x00\x00\x00\x00\x0F", 5);
            break;
        default:
            payload.assign(std::min<size_t>(e.length, 16384), '\0');
            break;
        }
        send(c, e.dir, e.tNs, frame(e.frameType, flags, e.stream, payload));
    }

    void block(std::uint32_t type, const std::string &body)
    {
        const std::uint32_t total = std::uint32_t(12 + body.size());
        putHost(m_out, type);
        putHost(m_out, total);
        m_out += body;
        putHost(m_out, total);
    }

    void fileHeader()
    {
        auto option = [](std::string &b, std::uint16_t code, const std::string &value) {
            putHost(b, code);
            putHost(b, std::uint16_t(value.size()));
            b += value;
            b.append((4 - value.size() % 4) % 4, '\0');
        };
        std::string shb;
        putHost(shb, std::uint32_t(0x1A2B3C4D));
        putHost(shb, std::uint16_t(1));
        putHost(shb, std::uint16_t(0));
        putHost(shb, std::int64_t(-1));                                      // section length unknown
        option(shb, 4, "rpcscope (synthesized from decoded HTTP/2 events)"); // shb_userappl
        option(shb, 0, {});
        block(0x0A0D0D0A, shb);

        std::string idb;
        putHost(idb, std::uint16_t(1)); // LINKTYPE_ETHERNET
        putHost(idb, std::uint16_t(0));
        putHost(idb, std::uint32_t(0));          // no snap length limit
        option(idb, 2, "rpcscope");              // if_name
        option(idb, 9, std::string(1, char(9))); // if_tsresol: nanoseconds
        option(idb, 0, {});
        block(1, idb);
    }

    void enhancedPacket(std::int64_t tNs, const std::string &bytes)
    {
        const std::uint64_t ts = std::uint64_t(std::max<std::int64_t>(0, m_wall + (tNs - m_origin)));
        std::string &epb = m_epb;
        epb.clear();
        putHost(epb, std::uint32_t(0));
        putHost(epb, std::uint32_t(ts >> 32));
        putHost(epb, std::uint32_t(ts & 0xFFFFFFFFu));
        putHost(epb, std::uint32_t(bytes.size()));
        putHost(epb, std::uint32_t(bytes.size()));
        epb += bytes;
        epb.append((4 - bytes.size() % 4) % 4, '\0');
        block(6, epb);
        flushOutput(false);
    }

    void flushOutput(bool all)
    {
        if (m_out.empty() || (!all && m_out.size() < kOutputChunk) || m_failed) return;
        if (!m_output(m_out.data(), m_out.size())) m_failed = true;
        m_out.clear();
    }

    const std::int64_t m_origin, m_wall;
    Output m_output;
    const Limits m_limits;
    bool m_failed = false, m_finished = false;
    std::string m_out, m_packet, m_epb;

    std::uint64_t m_next = 0; // the next event's index
    std::deque<Held> m_held;
    size_t m_heldBytes = 0;
    std::unordered_map<std::uint64_t, Block> m_blocks;
    size_t m_blockBytes = 0;
    std::map<DirKey, std::uint64_t> m_lastBlock, m_pendingBlock; // per direction: latest block, one open
    std::unordered_map<std::uint64_t, std::uint64_t> m_continuationOf;
    std::map<StreamKey, StreamBytes> m_streams;
    size_t m_streamTotal = 0;
    std::unordered_map<std::uint32_t, std::pair<std::string, std::string>> m_opened; // client, server
    std::unordered_set<std::uint32_t> m_closing;   // closed: nothing after it completes a frame of it
    std::unordered_set<std::uint32_t> m_closedIds; // closed and written
    std::map<std::uint32_t, Conn> m_conns;

    std::vector<Segment> m_reorder; // a heap, earliest on top
    size_t m_reorderBytes = 0;
    std::uint64_t m_segmentOrder = 0;
    std::int64_t m_lastWrittenNs = 0;
    bool m_wroteAny = false;
};

PcapngStreamWriter::PcapngStreamWriter(std::int64_t originNs, std::int64_t originWallNs, Output out,
                                       Limits limits)
    : d(std::make_unique<Impl>(originNs, originWallNs, std::move(out), limits))
{
}

PcapngStreamWriter::~PcapngStreamWriter() = default;

bool PcapngStreamWriter::add(const EventBatch &batch)
{
    for (const WireEvent &e : batch)
        if (!d->add(e)) return false;
    return true;
}

bool PcapngStreamWriter::add(const WireEvent &event)
{
    return d->add(event);
}

bool PcapngStreamWriter::finish()
{
    return d->finish();
}

const PcapngStreamWriter::Stats &PcapngStreamWriter::stats() const
{
    return d->m_stats;
}

PcapngFileWriter::PcapngFileWriter() = default;

PcapngFileWriter::~PcapngFileWriter()
{
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_tmp.c_str());
    }
}

bool PcapngFileWriter::fail(std::string *error)
{
    *error = "cannot write " + m_path + ": " + std::strerror(m_errno ? m_errno : errno);
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_tmp.c_str());
        m_fd = -1;
    }
    return false;
}

bool PcapngFileWriter::open(const std::string &path, const CaptureInfo &info, std::string *error,
                            PcapngStreamWriter::Limits limits)
{
    m_path = path;
    m_tmp = path + ".XXXXXX";
    m_fd = mkstemp(m_tmp.data());
    if (m_fd < 0) {
        m_errno = errno;
        return fail(error);
    }
    m_writer = std::make_unique<PcapngStreamWriter>(
        info.originNs, info.originWallNs,
        [this](const char *data, size_t size) {
            size_t done = 0;
            while (done < size) {
                const ssize_t n = ::write(m_fd, data + done, size - done);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                    m_errno = n < 0 ? errno : ENOSPC;
                    return false;
                }
                done += size_t(n);
            }
            return true;
        },
        limits);
    return true;
}

bool PcapngFileWriter::add(const EventBatch &batch, std::string *error)
{
    if (m_fd < 0) return false;
    return m_writer->add(batch) || fail(error);
}

bool PcapngFileWriter::commit(std::string *error)
{
    if (m_fd < 0) return false;
    if (!m_writer->finish()) return fail(error);
    // mkstemp creates the file 0600; an export is meant to be shared like any other file the user writes.
    ::fchmod(m_fd, 0644);
    const int fd = m_fd;
    m_fd = -1;
    if (::fsync(fd) != 0 || ::close(fd) != 0 || std::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
        *error = "cannot write " + m_path + ": " + std::strerror(errno);
        ::unlink(m_tmp.c_str());
        return false;
    }
    return true;
}

const PcapngStreamWriter::Stats &PcapngFileWriter::stats() const
{
    static const PcapngStreamWriter::Stats none;
    return m_writer ? m_writer->stats() : none;
}

std::string captureToPcapng(const CaptureData &data)
{
    std::string out;
    // Every window as large as the capture: the whole capture's file, whatever its events' order.
    PcapngStreamWriter::Limits all{SIZE_MAX, SIZE_MAX};
    PcapngStreamWriter w(
        data.info.originNs, data.info.originWallNs,
        [&out](const char *bytes, size_t size) {
            out.append(bytes, size);
            return true;
        },
        all);
    for (const EventBatch &b : data.batches)
        w.add(b);
    w.finish();
    return out;
}

bool writePcapng(const std::string &path, const CaptureData &data, std::string *error)
{
    PcapngFileWriter file;
    if (!file.open(path, data.info, error)) return false;
    for (const EventBatch &b : data.batches)
        if (!file.add(b, error)) return false;
    return file.commit(error);
}

} // namespace rpcscope
