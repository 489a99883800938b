#include "hostileflood.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hostile {

namespace {

using Clock = std::chrono::steady_clock;

enum FrameType : std::uint8_t
{
    kHeaders = 0x1,
    kRstStream = 0x3,
    kSettings = 0x4,
    kPing = 0x6,
    kGoaway = 0x7,
    kContinuation = 0x9,
};
constexpr std::uint8_t kEndStream = 0x1;
constexpr std::uint8_t kEndHeaders = 0x4;
constexpr std::uint8_t kAck = 0x1;
constexpr std::uint32_t kCancel = 0x8;
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Write in chunks of about this much, so reading the replies keeps up.
constexpr size_t kChunk = 128 * 1024;

void putFrame(std::string &out, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
              const std::string &payload)
{
    const size_t n = payload.size();
    const char head[9] = {char(n >> 16),      char(n >> 8),      char(n),
                          char(type),         char(flags),       char((stream >> 24) & 0x7f),
                          char(stream >> 16), char(stream >> 8), char(stream)};
    out.append(head, 9);
    out += payload;
}

std::string be32(std::uint32_t v)
{
    return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// HPACK (RFC 7541): an integer with an N-bit prefix whose high bits are `first`.
void hpackInt(std::string &out, std::uint8_t first, int prefixBits, size_t v)
{
    const size_t max = (size_t(1) << prefixBits) - 1;
    if (v < max) {
        out += char(first | v);
        return;
    }
    out += char(first | max);
    v -= max;
    while (v >= 128) {
        out += char(0x80 | (v & 0x7f));
        v >>= 7;
    }
    out += char(v);
}

void hpackString(std::string &out, const std::string &s)
{
    hpackInt(out, 0x00, 7, s.size()); // no Huffman coding
    out += s;
}

// Literal without indexing, the name from the static table.
void literalIndexedName(std::string &out, size_t nameIndex, const std::string &value)
{
    hpackInt(out, 0x00, 4, nameIndex);
    hpackString(out, value);
}

// Literal without indexing, a new name.
void literal(std::string &out, const std::string &name, const std::string &value)
{
    out += char(0x00);
    hpackString(out, name);
    hpackString(out, value);
}

// A unary request's headers to `path` (Lab/Call's by default), without the body that would let the server
// answer it.
std::string requestBlock(std::uint16_t port, const std::string &path = "/rpcscope.lab.Lab/Call")
{
    std::string b;
    b += char(0x83); // :method POST
    b += char(0x86); // :scheme http
    literalIndexedName(b, 4, path);
    literalIndexedName(b, 1, "127.0.0.1:" + std::to_string(port));
    literalIndexedName(b, 31, "application/grpc");
    literal(b, "te", "trailers");
    return b;
}

// Filler that differs per stream, so nothing compresses it away.
std::string filler(std::uint64_t seed, size_t n)
{
    std::string s(n, 'a');
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (char &c : s) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = char('a' + x % 26);
    }
    return s;
}

// About 16 KiB on the wire that a decoder expands to about 64 KiB: one ~4 KiB header is added to the dynamic
// table, referred to a dozen times with one byte each, and ~11 KiB of literals follow.
std::string heavyBlock(std::uint16_t port, std::uint64_t stream)
{
    std::string b = requestBlock(port);
    b += char(0x40); // literal with incremental indexing, new name: becomes dynamic entry 62
    hpackString(b, "x-hostile-fill");
    hpackString(b, filler(stream, 4000)); // 14 + 4000 + 32 <= the default table size, 4096
    for (int i = 0; i < 12; ++i)
        hpackInt(b, 0x80, 7, 62);
    for (int i = 0; i < 11; ++i)
        literal(b, "x-hostile-pad-" + std::to_string(i), filler(stream * 16 + std::uint64_t(i), 1000));
    return b;
}

const char *errorCodeName(std::uint32_t code)
{
    static const char *names[] = {"NO_ERROR",
                                  "PROTOCOL_ERROR",
                                  "INTERNAL_ERROR",
                                  "FLOW_CONTROL_ERROR",
                                  "SETTINGS_TIMEOUT",
                                  "STREAM_CLOSED",
                                  "FRAME_SIZE_ERROR",
                                  "REFUSED_STREAM",
                                  "CANCEL",
                                  "COMPRESSION_ERROR",
                                  "CONNECT_ERROR",
                                  "ENHANCE_YOUR_CALM",
                                  "INADEQUATE_SECURITY",
                                  "HTTP_1_1_REQUIRED"};
    return code < sizeof names / sizeof *names ? names[code] : "UNKNOWN";
}

} // namespace

std::vector<Flood> allFloods()
{
    return {Flood::Ping,       Flood::Settings,    Flood::Continuation, Flood::HpackHeavy,
            Flood::RapidReset, Flood::OpenStreams, Flood::DistinctPaths};
}

const char *floodName(Flood flood)
{
    switch (flood) {
    case Flood::Ping:
        return "ping";
    case Flood::Settings:
        return "settings";
    case Flood::Continuation:
        return "continuation";
    case Flood::HpackHeavy:
        return "hpack-heavy";
    case Flood::RapidReset:
        return "rapid-reset";
    case Flood::OpenStreams:
        return "open-streams";
    case Flood::DistinctPaths:
        return "distinct-paths";
    }
    return "?";
}

bool floodFromName(const std::string &name, Flood *out)
{
    for (Flood f : allFloods())
        if (name == floodName(f)) {
            *out = f;
            return true;
        }
    return false;
}

FloodLimits paced(std::uint64_t count, double seconds)
{
    FloodLimits l;
    l.count = count;
    l.seconds = seconds;
    l.rate = double(count) / seconds;
    return l;
}

double suiteRate(Flood flood)
{
    switch (flood) {
    case Flood::Ping:
    case Flood::Settings:
    case Flood::Continuation:
        return 200'000; // 3.4 MB/s of 17- and 15-byte frames
    case Flood::HpackHeavy:
        return 600; // 10 MB/s on the wire, 38 MB/s of header lists
    case Flood::RapidReset:
        return 20'000;
    case Flood::OpenStreams:
        return 10'000;
    case Flood::DistinctPaths:
        return 2'000;
    }
    return 0;
}

std::string FloodResult::summary() const
{
    std::string s = std::to_string(units) + " units, " + std::to_string(frames) + " frames, " +
                    std::to_string(bytes / 1024) + " KiB in " + std::to_string(int(seconds * 1000)) +
                    " ms on " + std::to_string(connections) + " connections (" +
                    std::to_string(closedByPeer) + " closed by the peer), " + std::to_string(resetsReceived) +
                    " RST_STREAM and " + std::to_string(goaways) + " GOAWAY received";
    if (!lastGoaway.empty()) s += " (last: " + lastGoaway + ")";
    if (!error.empty()) s += "; stopped: " + error;
    return s;
}

struct FloodClient::Impl
{
    struct Conn
    {
        int fd = -1;
        std::string out;
        size_t outPos = 0;
        std::string in;
        bool inHeaderBlock = false; // between a HEADERS without END_HEADERS and its end: no other frame fits
        std::uint32_t nextStream = 1;
        std::uint64_t streams = 0;
        std::uint64_t maxConcurrent = UINT32_MAX; // the server's SETTINGS_MAX_CONCURRENT_STREAMS
        bool settingsSeen = false;
        bool closed = false;
        size_t pending() const { return out.size() - outPos; }
    };
    std::deque<Conn> conns; // stable addresses: `active` points into it
    FloodResult result;

    void frame(Conn &c, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
               const std::string &payload)
    {
        putFrame(c.out, type, flags, stream, payload);
        ++result.frames;
    }

    // Reads what the server sent; answers its SETTINGS when a frame may go in between.
    void readFrom(Conn &c)
    {
        char buf[64 * 1024];
        for (;;) {
            const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
            if (n > 0) {
                c.in.append(buf, size_t(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            markClosed(c); // EOF or reset
            break;
        }
        size_t pos = 0;
        while (c.in.size() - pos >= 9) {
            const auto *h = reinterpret_cast<const unsigned char *>(c.in.data() + pos);
            const size_t len = size_t(h[0]) << 16 | size_t(h[1]) << 8 | h[2];
            if (c.in.size() - pos < 9 + len) break;
            const std::uint8_t type = h[3], flags = h[4];
            const unsigned char *p = h + 9;
            if (type == kSettings && !(flags & kAck)) {
                for (size_t i = 0; i + 6 <= len; i += 6)
                    if ((p[i] << 8 | p[i + 1]) == 3) // SETTINGS_MAX_CONCURRENT_STREAMS
                        c.maxConcurrent = std::uint32_t(p[i + 2]) << 24 | std::uint32_t(p[i + 3]) << 16 |
                                          std::uint32_t(p[i + 4]) << 8 | p[i + 5];
                c.settingsSeen = true;
                if (!c.inHeaderBlock) frame(c, kSettings, kAck, 0, {});
            } else if (type == kRstStream) {
                ++result.resetsReceived;
            } else if (type == kGoaway && len >= 8) {
                ++result.goaways;
                const std::uint32_t code =
                    std::uint32_t(p[4]) << 24 | std::uint32_t(p[5]) << 16 | std::uint32_t(p[6]) << 8 | p[7];
                result.lastGoaway = std::string(errorCodeName(code)) + " " +
                                    std::string(reinterpret_cast<const char *>(p + 8), len - 8);
            }
            pos += 9 + len;
        }
        c.in.erase(0, pos);
    }

    void markClosed(Conn &c)
    {
        if (c.closed) return;
        c.closed = true;
        ++result.closedByPeer;
        ::close(c.fd); // a flood that reconnects often would otherwise run out of descriptors
        c.fd = -1;
    }

    bool writeTo(Conn &c)
    {
        while (c.pending()) {
            const ssize_t n = send(c.fd, c.out.data() + c.outPos, c.pending(), MSG_NOSIGNAL);
            if (n > 0) {
                c.outPos += size_t(n);
                result.bytes += std::uint64_t(n);
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                break;
            } else {
                markClosed(c);
                return false;
            }
        }
        if (c.outPos == c.out.size()) {
            c.out.clear();
            c.outPos = 0;
        } else if (c.outPos > kChunk) {
            c.out.erase(0, c.outPos);
            c.outPos = 0;
        }
        return true;
    }

    // A new connection with the preface and the first SETTINGS exchanged (within two seconds).
    Conn *open(std::uint16_t port, Clock::time_point deadline)
    {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) {
            result.error = std::string("socket: ") + std::strerror(errno);
            return nullptr;
        }
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sin.sin_port = htons(port);
        if (connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
            result.error = std::string("connect: ") + std::strerror(errno);
            ::close(fd);
            return nullptr;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        ++result.connections;
        Conn &c = conns.emplace_back();
        c.fd = fd;
        c.out.append(kPreface, sizeof kPreface - 1);
        frame(c, kSettings, 0, 0, {});
        const Clock::time_point until = std::min(deadline, Clock::now() + std::chrono::seconds(2));
        while (!c.settingsSeen && !c.closed && Clock::now() < until) {
            pollfd p{fd, short(POLLIN | (c.pending() ? POLLOUT : 0)), 0};
            if (poll(&p, 1, 20) <= 0) continue;
            if (p.revents & POLLOUT) writeTo(c);
            if (!c.closed && (p.revents & (POLLIN | POLLHUP | POLLERR))) readFrom(c);
        }
        return &c;
    }

    // Appends the next flood unit to c; false when c can take no more (the server's stream limit).
    bool addUnit(Flood flood, Conn &c, std::uint16_t port, std::uint64_t unit)
    {
        switch (flood) {
        case Flood::Ping:
            frame(c, kPing, 0, 0, be32(std::uint32_t(unit >> 32)) + be32(std::uint32_t(unit)));
            return true;
        case Flood::Settings:
            frame(c, kSettings, 0, 0, std::string("\x00\x02\x00\x00\x00\x00", 6)); // ENABLE_PUSH 0
            return true;
        case Flood::Continuation:
            if (!c.inHeaderBlock) {
                // :method POST, :scheme http, and the block never ends
                frame(c, kHeaders, 0, c.nextStream, std::string("\x83\x86", 2));
                c.inHeaderBlock = true;
            }
            frame(c, kContinuation, 0, c.nextStream, {});
            return true;
        case Flood::HpackHeavy:
        case Flood::RapidReset:
        case Flood::OpenStreams:
            if (c.streams >= c.maxConcurrent || c.nextStream > 0x7ffffffd) return false;
            frame(c, kHeaders, kEndHeaders, c.nextStream,
                  flood == Flood::HpackHeavy ? heavyBlock(port, unit) : requestBlock(port));
            if (flood == Flood::RapidReset)
                frame(c, kRstStream, 0, c.nextStream, be32(kCancel));
            else
                ++c.streams; // reset streams do not count against the server's limit
            c.nextStream += 2;
            return true;
        case Flood::DistinctPaths:
            // The request ends with its headers: the server answers it (UNIMPLEMENTED) and the stream
            // closes, so it holds no place against the server's stream limit.
            if (c.nextStream > 0x7ffffffd) return false;
            frame(c, kHeaders, kEndHeaders | kEndStream, c.nextStream,
                  requestBlock(port, "/hostile.Paths/M" + std::to_string(unit)));
            c.nextStream += 2;
            return true;
        }
        return false;
    }

    void run(Flood flood, std::uint16_t port, const FloodLimits &limits)
    {
        const Clock::time_point start = Clock::now();
        const Clock::time_point deadline =
            start + std::chrono::microseconds(std::int64_t(limits.seconds * 1e6));
        const std::uint64_t count = limits.count ? limits.count : UINT64_MAX;
        // How many units may have gone by now.
        auto allowed = [&] {
            if (limits.rate <= 0) return count;
            const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
            return std::min(count, std::uint64_t(limits.rate * elapsed) + 1);
        };
        Conn *active = nullptr;
        std::vector<pollfd> fds;
        while (Clock::now() < deadline) {
            if (!active || active->closed) {
                if (result.units >= count) break; // written and sent: done
                active = open(port, deadline);
                if (!active) break;
                continue;
            }
            // Top up the active connection.
            const std::uint64_t upTo = allowed();
            while (active->pending() < kChunk && result.units < upTo) {
                if (!addUnit(flood, *active, port, result.units)) {
                    if (!writeTo(*active)) break;
                    active = open(port, deadline); // the server's stream limit: spread over another
                    if (!active) break;
                    continue;
                }
                ++result.units;
            }
            if (!active) break;
            if (result.units >= count && !active->pending()) break;
            fds.clear();
            for (const Conn &c : conns)
                if (!c.closed) fds.push_back({c.fd, short(POLLIN | (c.pending() ? POLLOUT : 0)), 0});
            if (poll(fds.data(), nfds_t(fds.size()), limits.rate > 0 ? 2 : 50) <= 0) continue;
            size_t i = 0;
            for (Conn &c : conns) {
                if (c.closed) continue;
                const short ev = fds[i++].revents;
                if (ev & POLLOUT) writeTo(c);
                if (!c.closed && (ev & (POLLIN | POLLHUP | POLLERR))) readFrom(c);
            }
            // A connection the server ended mid-flood is replaced by a new one on the next round.
            if (active->closed) active = nullptr;
        }
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }

    void closeAll()
    {
        for (Conn &c : conns)
            if (c.fd >= 0) ::close(c.fd);
        conns.clear();
    }
};

FloodClient::FloodClient() : d(std::make_unique<Impl>()) {}

FloodClient::~FloodClient()
{
    d->closeAll();
}

FloodResult FloodClient::run(Flood flood, std::uint16_t port, const FloodLimits &limits)
{
    d->result = {};
    d->run(flood, port, limits);
    return d->result;
}

void FloodClient::close()
{
    d->closeAll();
}

} // namespace hostile
