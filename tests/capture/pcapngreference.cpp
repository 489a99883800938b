// The pcapng writer as it was before it streamed: it held the whole capture, emitted every frame, then sorted
// all segments by time. Kept here only as the reference the streamed writer must match byte for byte.

#include "pcapngreference.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nghttp2/nghttp2.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <unordered_map>

namespace rpcscope::reference {

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

struct Packet
{
    std::int64_t tNs;
    std::string bytes;
};

// A TCP segment before it gets its sequence and acknowledgement numbers, which depend on where it lands in
// the file.
struct Segment
{
    std::int64_t tNs;
    std::uint32_t conn;
    int from; // 0 client, 1 server
    std::uint8_t tcpFlags;
    std::string payload;
};

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
};

// One header block: the HEADERS frame event that opened it, its CONTINUATIONs, and the headers decoded.
struct Block
{
    std::vector<size_t> continuations;
    const WireEvent *headers = nullptr;
    bool push = false;
    std::vector<std::string> pieces; // filled when the HEADERS frame is written
};

class Writer
{
public:
    explicit Writer(const CaptureData &data) : m_data(data)
    {
        for (const EventBatch &b : data.batches)
            for (const WireEvent &e : b)
                m_events.push_back(&e);
    }

    std::string run()
    {
        collect();
        for (size_t i = 0; i < m_events.size(); ++i)
            emit(i);
        // Events come in the order the relay read them, which across the two directions of a connection need
        // not be their time order (kernel receive times can put the bytes of a later read first). Numbering
        // segments in that order and sorting them by time afterwards left a segment acknowledging bytes the
        // file shows only later, which Wireshark takes for a spurious retransmission of them, and then drops
        // an HTTP/2 frame from its reassembly. So each side's segments keep their order, the file is in time
        // order, and sequence and acknowledgement numbers are given in file order.
        std::stable_sort(m_segments.begin(), m_segments.end(),
                         [](const Segment &a, const Segment &b) { return a.tNs < b.tNs; });
        for (const Segment &g : m_segments)
            packet(g);
        return file();
    }

private:
    using DirKey = std::pair<std::uint32_t, Direction>;
    using StreamKey = std::tuple<std::uint32_t, Direction, std::uint32_t>;

    void collect()
    {
        std::map<DirKey, size_t> pending; // header block in progress per direction
        for (size_t i = 0; i < m_events.size(); ++i) {
            const WireEvent &e = *m_events[i];
            const DirKey dk{e.connection, e.dir};
            if (e.kind == EventKind::Frame) {
                if (e.frameType == FrameHeaders || e.frameType == FramePushPromise) {
                    m_blocks[i].push = e.frameType == FramePushPromise;
                    if (!(e.flags & FlagEndHeaders)) pending[dk] = i;
                    m_lastBlock[dk] = i;
                } else if (e.frameType == FrameContinuation) {
                    if (auto it = pending.find(dk); it != pending.end()) {
                        m_blocks[it->second].continuations.push_back(i);
                        m_continuationOf[i] = it->second;
                        if (e.flags & FlagEndHeaders) pending.erase(it);
                    }
                }
            } else if (e.kind == EventKind::Headers) {
                // A decoded block follows the frame that completed it.
                if (auto it = m_lastBlock.find(dk); it != m_lastBlock.end() && !m_blocks[it->second].headers)
                    m_blocks[it->second].headers = &e;
            } else if (e.kind == EventKind::Message) {
                std::string &s = m_streamBytes[{e.connection, e.dir, e.stream}];
                s += char(e.compressed ? 1 : 0);
                put32(s, e.length);
                s += e.payload.substr(0, e.length);
                s.append(e.length - std::min<size_t>(e.payload.size(), e.length), '\0');
            } else if (e.kind == EventKind::ConnectionOpened) {
                m_opened.try_emplace(e.connection, &e);
            }
        }
    }

    Conn &conn(std::uint32_t id)
    {
        auto [it, fresh] = m_conns.try_emplace(id);
        Conn &c = it->second;
        if (fresh) {
            c.id = id;
            const WireEvent *opened = m_opened.count(id) ? m_opened[id] : nullptr;
            // Stand-ins: 10.0.0.1 -> 10.0.0.2, a client port per connection.
            c.ends[0] = parseEndpoint(opened && opened->peers() ? opened->peers()->client : std::string(),
                                      0x0A000001, std::uint16_t(40000 + id % 20000));
            c.ends[1] = parseEndpoint(opened && opened->peers() ? opened->peers()->server : std::string(),
                                      0x0A000002, 50051);
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
    // connection's handshake, so that the stable sort by time keeps each side's bytes in order.
    void segment(Conn &c, int from, std::int64_t t, std::uint8_t tcpFlags, const char *payload, size_t len)
    {
        t = std::max({t, c.lastNs[from], c.openNs});
        c.lastNs[from] = t;
        m_segments.push_back({t, c.id, from, tcpFlags, std::string(payload ? payload : "", len)});
    }

    void packet(const Segment &g)
    {
        Conn &c = m_conns.at(g.conn);
        const int from = g.from, to = 1 - from;
        const std::uint8_t tcpFlags = g.tcpFlags;
        const char *payload = g.payload.data();
        const size_t len = g.payload.size();
        std::string p;
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
        m_packets.push_back({g.tNs, std::move(p)});
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

    void emit(size_t i)
    {
        const WireEvent &e = *m_events[i];
        if (e.kind == EventKind::ConnectionOpened) {
            handshake(conn(e.connection), e.tNs);
            return;
        }
        if (e.kind == EventKind::ConnectionClosed) {
            Conn &c = conn(e.connection);
            if (c.open && !c.closed) {
                c.closed = true;
                // After the last bytes of either side, so nothing follows a FIN.
                const std::int64_t t = std::max({e.tNs, c.lastNs[0], c.lastNs[1]});
                segment(c, 0, t, 0x11, nullptr, 0); // FIN+ACK
                segment(c, 1, t, 0x11, nullptr, 0);
                segment(c, 0, t, 0x10, nullptr, 0);
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
            std::string &bytes = m_streamBytes[{e.connection, e.dir, e.stream}];
            size_t &cursor = m_cursor[{e.connection, e.dir, e.stream}];
            const size_t take = std::min<size_t>(e.length, bytes.size() - std::min(cursor, bytes.size()));
            payload = bytes.substr(std::min(cursor, bytes.size()), take);
            payload.append(e.length - take, '\0');
            cursor += e.length;
            break;
        }
        case FrameHeaders: {
            Block &b = m_blocks[i];
            std::string block = b.headers ? c.deflaters[side]->encode(b.headers->headers) : std::string();
            const size_t pieces = 1 + b.continuations.size();
            const size_t per = (block.size() + pieces - 1) / pieces;
            for (size_t k = 0; k < pieces; ++k)
                b.pieces.push_back(block.substr(std::min(block.size(), k * per), per));
            if (flags & FlagPriority)
                payload.assign("\x00\x00\x00\x00\x0F", 5); // no dependency, default weight
            payload += b.pieces[0];
            flags = b.continuations.empty() ? (flags | FlagEndHeaders) : (flags & ~FlagEndHeaders);
            break;
        }
        case FrameContinuation: {
            auto owner = m_continuationOf.find(i);
            if (owner == m_continuationOf.end()) return;
            Block &b = m_blocks[owner->second];
            if (b.push) return;
            const auto &conts = b.continuations;
            const size_t k = size_t(std::find(conts.begin(), conts.end(), i) - conts.begin()) + 1;
            payload = k < b.pieces.size() ? b.pieces[k] : std::string();
            flags = k == conts.size() ? FlagEndHeaders : 0;
            break;
        }
        case FramePushPromise:
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

    std::string file() const
    {
        std::string o;
        auto block = [&o](std::uint32_t type, const std::string &body) {
            const std::uint32_t total = std::uint32_t(12 + body.size());
            putHost(o, type);
            putHost(o, total);
            o += body;
            putHost(o, total);
        };
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

        const std::int64_t origin = m_data.info.originNs;
        const std::int64_t wall = m_data.info.originWallNs;
        for (const Packet &p : m_packets) {
            const std::uint64_t ts = std::uint64_t(std::max<std::int64_t>(0, wall + (p.tNs - origin)));
            std::string epb;
            putHost(epb, std::uint32_t(0));
            putHost(epb, std::uint32_t(ts >> 32));
            putHost(epb, std::uint32_t(ts & 0xFFFFFFFFu));
            putHost(epb, std::uint32_t(p.bytes.size()));
            putHost(epb, std::uint32_t(p.bytes.size()));
            epb += p.bytes;
            epb.append((4 - p.bytes.size() % 4) % 4, '\0');
            block(6, epb);
        }
        return o;
    }

    const CaptureData &m_data;
    std::vector<const WireEvent *> m_events;
    std::unordered_map<size_t, Block> m_blocks;
    std::map<DirKey, size_t> m_lastBlock;
    std::unordered_map<size_t, size_t> m_continuationOf;
    std::map<StreamKey, std::string> m_streamBytes;
    std::map<StreamKey, size_t> m_cursor;
    std::map<std::uint32_t, const WireEvent *> m_opened;
    std::map<std::uint32_t, Conn> m_conns;
    std::vector<Segment> m_segments;
    std::vector<Packet> m_packets;
};

} // namespace

std::string wholeCapturePcapng(const CaptureData &data)
{
    return Writer(data).run();
}

} // namespace rpcscope::reference
