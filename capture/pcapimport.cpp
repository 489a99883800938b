#include "pcapimport.h"

#include "connectiondecoder.h"
#include "tlsdecryptor.h"

#include <arpa/inet.h>
#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <pcap/pcap.h>
#include <set>
#include <sys/stat.h>

namespace rpcscope {

namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof kPreface - 1;

enum TcpFlag : std::uint8_t
{
    Fin = 0x01,
    Syn = 0x02,
    Rst = 0x04,
    Ack = 0x10
};

struct Endpoint
{
    std::array<std::uint8_t, 16> addr{};
    std::uint16_t port = 0;
    bool v6 = false;
    auto operator<=>(const Endpoint &) const = default;
    std::string toString() const
    {
        char buf[INET6_ADDRSTRLEN] = {};
        inet_ntop(v6 ? AF_INET6 : AF_INET, addr.data(), buf, sizeof buf);
        std::string s;
        if (v6) s += '[';
        s += buf;
        s += v6 ? "]:" : ":";
        s += std::to_string(port);
        return s;
    }
};

struct Segment
{
    Endpoint src, dst;
    std::uint32_t seq = 0;
    std::uint8_t flags = 0;
    const std::uint8_t *payload = nullptr;
    size_t length = 0;  // payload bytes present in the capture
    size_t missing = 0; // payload bytes the snap length cut off
};

std::uint16_t be16(const std::uint8_t *p)
{
    return std::uint16_t(p[0] << 8 | p[1]);
}

std::uint32_t be32(const std::uint8_t *p)
{
    return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}

// Finds the IP packet inside a link-layer frame: its start, and 4 or 6 (0 when it is not IP).
int linkToIp(int linkType, const std::uint8_t *p, size_t len, size_t *offset)
{
    auto byEthertype = [&](std::uint16_t type, size_t at) {
        *offset = at;
        return type == 0x0800 ? 4 : type == 0x86DD ? 6 : 0;
    };
    switch (linkType) {
    case DLT_EN10MB: {
        if (len < 14) return 0;
        size_t at = 12;
        std::uint16_t type = be16(p + at);
        while ((type == 0x8100 || type == 0x88A8) && len >= at + 6) { // VLAN tags
            at += 4;
            type = be16(p + at);
        }
        return byEthertype(type, at + 2);
    }
    case DLT_LINUX_SLL:
        return len < 16 ? 0 : byEthertype(be16(p + 14), 16);
    case DLT_LINUX_SLL2:
        return len < 20 ? 0 : byEthertype(be16(p), 20);
    case DLT_NULL:
    case DLT_LOOP: {
        if (len < 4) return 0;
        std::uint32_t family;
        std::memcpy(&family, p, 4);
        if (linkType == DLT_LOOP)
            family = ntohl(family);
        else if (family > 0xFFFF)
            family = __builtin_bswap32(family); // written on a host of the other byte order
        *offset = 4;
        return family == 2 ? 4 : (family == 24 || family == 28 || family == 30) ? 6 : 0;
    }
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
        *offset = 0;
        return len ? (p[0] >> 4 == 4 ? 4 : p[0] >> 4 == 6 ? 6 : 0) : 0;
    default:
        return -1;
    }
}

// Parses IP + TCP. `wireLen` is the frame's original length, to tell bytes cut by the snap length.
bool parseTcp(const std::uint8_t *p, size_t len, size_t wireLen, int ipVersion, Segment *s)
{
    size_t ipHeader = 0, ipTotal = 0;
    if (ipVersion == 4) {
        if (len < 20 || p[0] >> 4 != 4 || p[9] != 6) return false;
        ipHeader = size_t(p[0] & 0x0F) * 4;
        ipTotal = be16(p + 2);
        if ((be16(p + 6) & 0x3FFF) != 0) // a fragment: not reassembled
            return false;
        s->src.v6 = s->dst.v6 = false;
        std::memcpy(s->src.addr.data(), p + 12, 4);
        std::memcpy(s->dst.addr.data(), p + 16, 4);
    } else {
        if (len < 40 || p[0] >> 4 != 6 || p[6] != 6) // TCP right after the fixed header only
            return false;
        ipHeader = 40;
        ipTotal = 40 + size_t(be16(p + 4));
        s->src.v6 = s->dst.v6 = true;
        std::memcpy(s->src.addr.data(), p + 8, 16);
        std::memcpy(s->dst.addr.data(), p + 24, 16);
    }
    if (ipHeader < 20 || len < ipHeader + 20 || ipTotal < ipHeader + 20) return false;
    const std::uint8_t *t = p + ipHeader;
    const size_t tcpHeader = size_t(t[12] >> 4) * 4;
    if (tcpHeader < 20 || ipTotal < ipHeader + tcpHeader || len < ipHeader + tcpHeader) return false;
    s->src.port = be16(t);
    s->dst.port = be16(t + 2);
    s->seq = be32(t + 4);
    s->flags = t[13];
    s->payload = t + tcpHeader;
    const size_t payloadOnWire = ipTotal - ipHeader - tcpHeader;
    const size_t present =
        std::min(payloadOnWire, len - ipHeader - tcpHeader); // Ethernet padding is not payload
    s->length = present;
    s->missing = payloadOnWire - present;
    (void)wireLen;
    return true;
}

struct Side
{
    bool started = false;
    std::uint32_t next = 0;
    std::map<std::uint32_t, std::pair<std::string, std::int64_t>> held; // out of order, by sequence number
    size_t heldBytes = 0;
    bool fin = false;
    bool lost = false;
};

struct Conn
{
    std::uint32_t id = 0;
    Endpoint client, server;
    std::unique_ptr<ConnectionDecoder> decoder;
    std::unique_ptr<TlsDecryptor> tls; // with a key log, when the connection's first bytes are TLS
    bool sorted = false;               // plaintext or TLS decided (with a key log only)
    Side side[2];                      // by Direction
    bool closed = false;
};

class Importer
{
public:
    Importer(const PcapImportOptions &o, PcapImportResult *r) : m_opt(o), m_r(r) {}

    std::set<std::uint16_t> serverPorts;

    void packet(const Segment &s, std::int64_t t)
    {
        const bool toServer = serverPorts.count(s.dst.port) != 0;
        const bool fromServer = serverPorts.count(s.src.port) != 0;
        if (!toServer && !fromServer) return;
        ++m_r->tcpSegments;
        // Which end is the client: a bare SYN's sender; else the end that is not on a server port.
        const bool senderIsClient = (s.flags & Syn) ? !(s.flags & Ack) : toServer;
        const Endpoint &client = senderIsClient ? s.src : s.dst;
        const Endpoint &server = senderIsClient ? s.dst : s.src;
        auto key = std::make_pair(client, server);
        auto it = m_conns.find(key);
        if (it != m_conns.end() && it->second.closed && (s.flags & Syn) && !(s.flags & Ack)) {
            m_conns.erase(it); // the same ports used again: a new connection
            it = m_conns.end();
        }
        if (it == m_conns.end()) {
            if (s.flags & (Rst | Fin) && s.length == 0)
                return; // the tail of a connection that was not captured
            Conn c;
            c.id = std::uint32_t(++m_r->connections);
            c.client = client;
            c.server = server;
            c.decoder = std::make_unique<ConnectionDecoder>(c.id, m_opt.limits);
            it = m_conns.emplace(key, std::move(c)).first;
            WireEvent e;
            e.kind = EventKind::ConnectionOpened;
            e.connection = it->second.id;
            e.tNs = t;
            e.about = PeerNames{client.toString(), server.toString()};
            if (!(s.flags & Syn)) {
                it->second.decoder->attachMidStream();
                m_r->notes.push_back("connection " + std::to_string(it->second.id) + " (" +
                                     e.peers()->client +
                                     ") was already open when the capture began: decoded from the middle");
            }
            m_r->events.push_back(std::move(e));
        }
        Conn &c = it->second;
        if (c.closed) return;
        const Direction dir = senderIsClient ? Direction::ClientToServer : Direction::ServerToClient;
        Side &side = c.side[int(dir)];
        if (s.flags & Syn) {
            side.started = true;
            side.next = s.seq + 1;
            return;
        }
        if (!side.started) { // mid-stream: start where the first segment starts
            side.started = true;
            side.next = s.seq;
        }
        if (s.length || s.missing) accept(c, dir, s.seq, s.payload, s.length, s.missing, t);
        if (s.flags & Rst) {
            close(c, t,
                  std::string(dir == Direction::ClientToServer ? "client" : "server") +
                      " reset the connection (RST)");
            return;
        }
        if (s.flags & Fin) {
            side.fin = true;
            if (c.side[0].fin && c.side[1].fin)
                close(c, t, dir == Direction::ClientToServer ? "closed by server" : "closed by client");
        }
    }

    void finish(std::int64_t t)
    {
        if (m_tlsProblems > kTlsProblemsListed)
            m_r->notes.push_back("TLS: " + std::to_string(m_tlsProblems - kTlsProblemsListed) +
                                 " more connections not (fully) decrypted; each has its note");
        for (auto &[key, c] : m_conns)
            if (!c.closed) {
                for (int d = 0; d < 2; ++d)
                    if (!c.side[d].held.empty()) declareLost(c, Direction(d), t);
                close(c, t, "capture ended");
            }
    }

private:
    void accept(Conn &c, Direction dir, std::uint32_t seq, const std::uint8_t *data, size_t len,
                size_t missing, std::int64_t t)
    {
        Side &side = c.side[int(dir)];
        if (side.lost) return;
        const std::int32_t ahead = std::int32_t(seq - side.next);
        if (ahead > 0) {
            ++m_r->outOfOrder;
            if (missing) {
                declareLost(c, dir, t);
                return;
            }
            auto [it, fresh] =
                side.held.try_emplace(seq, std::string(reinterpret_cast<const char *>(data), len), t);
            if (fresh)
                side.heldBytes += len;
            else if (it->second.first.size() < len) { // a longer retransmission of a held segment
                side.heldBytes += len - it->second.first.size();
                it->second.first.assign(reinterpret_cast<const char *>(data), len);
            }
            if (side.heldBytes > m_opt.maxOutOfOrderBytes) declareLost(c, dir, t);
            return;
        }
        const size_t skip = size_t(-std::int64_t(ahead));
        if (skip >= len + missing) {
            ++m_r->retransmitted;
            return;
        }
        if (skip) ++m_r->retransmitted;
        if (skip < len) deliver(c, dir, data + skip, len - skip, t);
        if (missing) {
            declareLost(c, dir, t);
            return;
        }
        drain(c, dir, t);
    }

    void deliver(Conn &c, Direction dir, const std::uint8_t *data, size_t len, std::int64_t t)
    {
        c.side[int(dir)].next += std::uint32_t(len);
        if (m_opt.keylog && !c.sorted) {
            c.sorted = true;
            if (TlsDecryptor::looksLikeTls(data, len)) c.tls = std::make_unique<TlsDecryptor>(*m_opt.keylog);
        }
        if (!c.tls) {
            c.decoder->feed(dir, data, len, t, m_r->events);
            return;
        }
        m_plain.clear();
        c.tls->feed(dir, data, len, &m_plain);
        for (TlsDecryptor::Note &note : c.tls->takeNotes()) {
            // What was not decrypted is also said for the file, up to a point: a capture of many such
            // connections gets a count, not a page of the same sentence.
            if (note.problem && ++m_tlsProblems <= kTlsProblemsListed)
                m_r->notes.push_back("connection " + std::to_string(c.id) + ": " + note.text);
            WireEvent e;
            e.kind = EventKind::Notice;
            e.connection = c.id;
            e.dir = dir;
            e.tNs = t;
            e.reason = std::move(note.text);
            m_r->events.push_back(std::move(e));
        }
        if (!m_plain.empty())
            c.decoder->feed(dir, reinterpret_cast<const std::uint8_t *>(m_plain.data()), m_plain.size(), t,
                            m_r->events);
    }

    void drain(Conn &c, Direction dir, std::int64_t)
    {
        Side &side = c.side[int(dir)];
        while (!side.held.empty() && !side.lost) {
            auto it = side.held.begin();
            // The held segment nearest to `next` (sequence numbers wrap, so compare relative to it).
            for (auto j = side.held.begin(); j != side.held.end(); ++j)
                if (std::int32_t(j->first - side.next) < std::int32_t(it->first - side.next)) it = j;
            const std::int32_t ahead = std::int32_t(it->first - side.next);
            if (ahead > 0) return;
            auto [bytes, when] = std::move(it->second);
            side.heldBytes -= bytes.size();
            side.held.erase(it);
            const size_t skip = size_t(-std::int64_t(ahead));
            if (skip < bytes.size())
                deliver(c, dir, reinterpret_cast<const std::uint8_t *>(bytes.data()) + skip,
                        bytes.size() - skip, when);
        }
    }

    void declareLost(Conn &c, Direction dir, std::int64_t t)
    {
        Side &side = c.side[int(dir)];
        if (side.lost) return;
        side.lost = true;
        side.held.clear();
        side.heldBytes = 0;
        WireEvent e;
        e.kind = EventKind::DecodeError;
        e.connection = c.id;
        e.dir = dir;
        e.tNs = t;
        e.reason = "bytes missing from the capture (a lost segment or a short snap length); the rest of this "
                   "direction is not decoded";
        m_r->events.push_back(std::move(e));
        m_r->notes.push_back("connection " + std::to_string(c.id) + ": " + e.reason);
    }

    void close(Conn &c, std::int64_t t, const std::string &reason)
    {
        c.decoder->finish(t, m_r->events);
        WireEvent e;
        e.kind = EventKind::ConnectionClosed;
        e.connection = c.id;
        e.tNs = t;
        e.reason = reason;
        m_r->events.push_back(std::move(e));
        c.closed = true;
        // A closed connection keeps only its entry (so that its last ACKs are not taken for a new one), and
        // only the newest of those stay: a long capture of short connections does not grow with them.
        c.decoder.reset();
        c.tls.reset();
        c.side[0].held.clear();
        c.side[1].held.clear();
        m_closed.push_back({std::make_pair(c.client, c.server), c.id});
        while (m_closed.size() > kClosedKept) {
            auto it = m_conns.find(m_closed.front().first);
            if (it != m_conns.end() && it->second.closed && it->second.id == m_closed.front().second)
                m_conns.erase(it);
            m_closed.pop_front();
        }
    }

    static constexpr size_t kClosedKept = 4096;
    const PcapImportOptions &m_opt;
    PcapImportResult *m_r;
    std::map<std::pair<Endpoint, Endpoint>, Conn> m_conns;
    std::string m_plain; // a TLS segment's plaintext, reused
    static constexpr size_t kTlsProblemsListed = 20;
    size_t m_tlsProblems = 0;
    std::deque<std::pair<std::pair<Endpoint, Endpoint>, std::uint32_t>> m_closed;
};

struct PcapFile
{
    pcap_t *p = nullptr;
    PcapFile() = default;
    PcapFile(const PcapFile &) = delete;
    PcapFile &operator=(const PcapFile &) = delete;
    ~PcapFile() { close(); }
    void close()
    {
        if (p) pcap_close(p);
        p = nullptr;
    }
};

bool open(const std::string &path, PcapFile *f, std::string *error)
{
    char err[PCAP_ERRBUF_SIZE] = {};
    f->p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    if (!f->p) {
        *error = "cannot read " + path + " as pcap or pcapng: " + err;
        return false;
    }
    return true;
}

} // namespace

bool importPcap(const std::string &path, const PcapImportOptions &options, PcapImportResult *result,
                std::string *error)
{
    return importPcap(path, options, PcapEventSink{}, result, error);
}

bool importPcap(const std::string &path, const PcapImportOptions &options, const PcapEventSink &sink,
                PcapImportResult *result, std::string *error)
{
    *result = PcapImportResult{};
    const size_t batchEvents = std::max<size_t>(1, options.batchEvents);
    auto handOver = [&](bool all) {
        if (!sink || result->events.empty() || (!all && result->events.size() < batchEvents)) return;
        EventBatch batch;
        batch.swap(result->events);
        sink(std::move(batch));
        result->events.reserve(batchEvents);
    };
    struct stat st
    {
    };
    const double fileSize = ::stat(path.c_str(), &st) == 0 ? double(st.st_size) : 0;
    Importer importer(options, result);

    PcapFile file;
    if (!open(path, &file, error)) return false;
    const int linkType = pcap_datalink(file.p);
    {
        size_t off = 0;
        if (linkToIp(linkType, nullptr, 0, &off) < 0) {
            *error = std::string("unsupported link type ") +
                     (pcap_datalink_val_to_name(linkType) ? pcap_datalink_val_to_name(linkType)
                                                          : std::to_string(linkType).c_str()) +
                     " (supported: Ethernet, Linux cooked, BSD loopback, raw IP)";
            return false;
        }
    }

    // How far through the file, for progress: of the first pass (when there is one) or the second.
    auto fractionRead = [&] {
        FILE *fp = pcap_file(file.p);
        return fp && fileSize > 0 ? std::min(1.0, double(std::ftell(fp)) / fileSize) : 0.0;
    };
    constexpr double kFirstPass = 0.2;
    const double secondFrom = options.serverPort ? 0.0 : kFirstPass;

    // Pass 1 (unless given): the server ports, from client prefaces.
    if (options.serverPort) {
        importer.serverPorts.insert(*options.serverPort);
    } else {
        pcap_pkthdr *h;
        const std::uint8_t *data;
        int rc;
        std::uint64_t seen = 0;
        std::uint16_t tlsPort = 0; // without a key log: TLS seen, for the error's hint
        while ((rc = pcap_next_ex(file.p, &h, &data)) == 1) {
            if (options.progress && ++seen % 4096 == 0 && !options.progress(kFirstPass * fractionRead())) {
                result->cancelled = true;
                return true;
            }
            size_t off = 0;
            const int ip = linkToIp(linkType, data, h->caplen, &off);
            Segment s;
            if (ip <= 0 || !parseTcp(data + off, h->caplen - off, h->len, ip, &s)) continue;
            if (s.length >= kPrefaceLen && std::memcmp(s.payload, kPreface, kPrefaceLen) == 0)
                importer.serverPorts.insert(s.dst.port);
            // A ClientHello: a handshake record (0x16 0x03) whose first message is of type 1.
            if (s.length >= 6 && s.payload[0] == 0x16 && s.payload[1] == 0x03 && s.payload[5] == 0x01) {
                if (options.keylog)
                    importer.serverPorts.insert(s.dst.port);
                else if (!tlsPort)
                    tlsPort = s.dst.port;
            }
        }
        if (importer.serverPorts.empty() && tlsPort) {
            *error = "no HTTP/2 connection start (client preface) found in " + path + ", but TLS to port " +
                     std::to_string(tlsPort) +
                     ": decrypting it needs the TLS key log its client or server wrote (convert --keylog "
                     "FILE; in the GUI, "
                     "File > Open with key log…)";
            return false;
        }
        if (importer.serverPorts.empty()) {
            *error = std::string("no HTTP/2 connection start (client preface") +
                     (options.keylog ? " or TLS ClientHello" : "") + ") found in " + path +
                     "; if the capture began mid-connection, give the server port";
            return false;
        }
        file.close(); // read it again from the start
        if (!open(path, &file, error)) return false;
    }
    result->serverPort = *importer.serverPorts.begin();

    pcap_pkthdr *h;
    const std::uint8_t *data;
    int rc;
    std::int64_t last = 0;
    while ((rc = pcap_next_ex(file.p, &h, &data)) == 1) {
        const std::int64_t t = std::int64_t(h->ts.tv_sec) * 1'000'000'000 + std::int64_t(h->ts.tv_usec);
        if (!result->packets++) result->firstPacketWallNs = t;
        last = std::max(last, t);
        size_t off = 0;
        const int ip = linkToIp(linkType, data, h->caplen, &off);
        Segment s;
        if (ip > 0 && parseTcp(data + off, h->caplen - off, h->len, ip, &s)) importer.packet(s, t);
        handOver(false);
        if (options.progress && result->packets % 4096 == 0 && fileSize > 0) {
            if (!options.progress(secondFrom + (1 - secondFrom) * fractionRead())) {
                result->cancelled = true;
                break;
            }
        }
    }
    if (rc == PCAP_ERROR) // a damaged or cut-off file: keep what was read
        result->notes.push_back(std::string("the file ends early or is damaged after packet ") +
                                std::to_string(result->packets) + ": " + pcap_geterr(file.p) +
                                "; everything before it was imported");
    importer.finish(last);
    handOver(true);
    if (importer.serverPorts.size() > 1) {
        std::string ports;
        for (auto p : importer.serverPorts)
            ports += (ports.empty() ? "" : ", ") + std::to_string(p);
        result->notes.push_back("HTTP/2 servers on ports " + ports);
    }
    return true;
}

} // namespace rpcscope
