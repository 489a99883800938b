#include "relay.h"

#include "clock.h"
#include "connectiondecoder.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace rpcscope {

namespace {
// A connection whose peer reads slower than the other side writes stops being read once this much waits
// for it, so memory stays bounded and TCP flow control pushes back on the sender.
constexpr size_t kMaxPendingPerDirection = 4 << 20;
// If the decoder falls this far behind, connections stop being decoded instead of the relay waiting.
constexpr size_t kMaxDecoderBacklog = 256u << 20;
// Decoded events are flushed to the sink at least this often (DESIGN.md: batches of <= 16 ms).
constexpr std::int64_t kFlushIntervalNs = 16'000'000;
constexpr size_t kFlushEvents = 4096;
// The decoder thread is not woken for every read. While reads keep coming it decodes them every kDecodeTickNs;
// only after a tick with nothing to do does it sleep until the relay wakes it. A busy relay then wakes nobody
// per read: on a machine with few cores the client and the server need that time. Events keep the time they
// were read at, and batches go out every kFlushIntervalNs anyway, so nothing shows the tick. A spliced read's
// handoff pipe, or kWakeBacklog bytes waiting, wakes the decoder at once.
constexpr std::int64_t kDecodeTickNs = 1'000'000;
constexpr size_t kWakeBacklog = 1 << 20;
// One read takes up to this much: large reads mean fewer system calls and fewer chunks for the decoder when
// streaming; a small unary RPC still arrives in one read.
constexpr size_t kReadSize = 256 * 1024;
// Streaming without copying: once a direction's reads are this large, it is relayed with splice(2) through a
// pipe (socket -> pipe -> socket, the pages never enter user space) and tee(2) duplicates what passed for the
// decoder, which is then the only copy. A small read (below kCopyBelow) sends the direction back to recv/send,
// whose two system calls are cheaper for unary traffic than splice + tee + splice + read.
constexpr size_t kSpliceFrom = 32 * 1024;
constexpr size_t kCopyBelow = 4 * 1024;
constexpr int kPipeSize = 1 << 20;
// Directions relayed by splice at once, each holding two pipes of kPipeSize (its own and a fallback copy pipe):
// bounded so that pipes never use up descriptors or an unprivileged user's pipe-buffer allowance (by default
// 64 MiB in all; with the handoff pipes below a relay holds at most 40 MiB). The other directions copy, as does
// any direction whose pipes cannot be made that large.
constexpr int kMaxSplicedDirections = 16;
// Pipes that carry the decoder's copy of a spliced read to the decoder thread, which reads it back there: the
// relay thread only duplicates page references. At most this many are in flight; beyond that (the decoder is
// behind) the relay thread reads the copy back itself.
constexpr int kHandoffPipes = 8;

std::atomic<std::uint32_t> g_nextConnectionId{1};

std::string peerName(const sockaddr_storage &ss)
{
    char host[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto *sin = reinterpret_cast<const sockaddr_in *>(&ss);
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        return HostPort{host, ntohs(sin->sin_port)}.toString();
    }
    const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
    return HostPort{host, ntohs(sin6->sin6_port)}.toString();
}

void setNonBlocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

void setNoDelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct AddrInfo
{
    addrinfo *list = nullptr;
    ~AddrInfo() { if (list) freeaddrinfo(list); }
};

bool resolve(const HostPort &hp, bool passive, AddrInfo *out, std::string *error)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const std::string port = std::to_string(hp.port);
    const int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &out->list);
    if (rc != 0) {
        if (error)
            *error = "cannot resolve '" + hp.host + "': " + gai_strerror(rc);
        return false;
    }
    return true;
}
} // namespace

std::string HostPort::toString() const
{
    if (host.find(':') != std::string::npos)
        return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

bool parseHostPort(const std::string &text, HostPort *out, std::string *errorOut)
{
    std::string dummy;
    std::string *error = errorOut ? errorOut : &dummy;
    std::string host, port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *error = "expected [IPV6]:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        if (host.empty()) {
            *error = "empty host in '" + text + "'";
            return false;
        }
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0) {
            *error = "expected HOST:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string::npos) {
            *error = "an IPv6 address needs brackets: write '" + text + "' as [" + host + "]:" + port;
            return false;
        }
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) > 65535) {
        *error = "bad port '" + port + "' in '" + text + "' (expected 0-65535)";
        return false;
    }
    out->host = host;
    out->port = std::uint16_t(std::stoi(port));
    return true;
}

bool isLoopbackHost(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool canListen(const HostPort &listen, std::string *error)
{
    AddrInfo ai;
    if (!resolve(listen, true, &ai, error))
        return false;
    // Like Relay::start: the first address that binds is the one used.
    int err = 0;
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        const bool ok = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        err = errno;
        close(fd);
        if (ok)
            return true;
    }
    *error = err == EADDRINUSE      ? "port " + std::to_string(listen.port) + " is in use"
             : err == EADDRNOTAVAIL ? listen.host + " is not an address of this machine"
                                    : "cannot listen on " + listen.toString() + ": " + std::strerror(err);
    return false;
}

bool probeTarget(const HostPort &target, int timeoutMs, std::string *errorOut)
{
    std::string dummy;
    std::string *error = errorOut ? errorOut : &dummy;
    AddrInfo ai;
    if (!resolve(target, false, &ai, error))
        return false;
    std::string last = "no address";
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        setNonBlocking(fd);
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const int ready = poll(&p, 1, timeoutMs);
            if (ready == 1) {
                int soerr = 0;
                socklen_t len = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                rc = soerr == 0 ? 0 : -1;
                errno = soerr;
            } else {
                rc = -1;
                errno = ready == 0 ? ETIMEDOUT : errno;
            }
        }
        const int err = errno;
        close(fd);
        if (rc == 0)
            return true;
        last = std::strerror(err);
    }
    *error = "target " + target.toString() + " is unreachable: " + last;
    return false;
}

struct Relay::Impl
{
    struct Chunk
    {
        enum Kind { Open, Data, Close, Error } kind;
        std::uint32_t conn;
        Direction dir;
        std::int64_t t;
        std::string bytes; // Open: client peer; Error and Close: reason
        std::string extra; // Open: server peer
        std::unique_ptr<std::uint8_t[]> data = {}; // Data: the bytes read (not zero-filled first)
        size_t size = 0;
        int pipe[2] = {-1, -1}; // Data: instead of data, a handoff pipe holding the size bytes
    };

    // One direction of a connection: what was read from one side and is on its way to the other.
    struct Lane
    {
        bool eof = false;      // the source side sent EOF
        bool shut = false;     // ... and it was passed on (shutdown(SHUT_WR) of the destination)
        std::string queued;    // read with recv(), not yet taken by the destination
        size_t queuedOff = 0;
        int pipe[2] = {-1, -1}; // spliced in, not yet spliced out: inPipe bytes
        int copy[2] = {-1, -1}; // the decoder's copy when no handoff pipe is free: tee'd, read back at once
        size_t inPipe = 0;
        size_t pipeCapacity = 0;
        bool splicing = false;   // the last read was large enough to splice the next one
        bool spliceFailed = false; // no pipes for this direction: it always copies
        size_t pending() const { return queued.size() - queuedOff + inPipe; }
        // More is read only while little waits for the destination. A spliced direction reads only into an
        // empty pipe, because tee duplicates a pipe from its start.
        bool wantsRead() const { return !eof && inPipe == 0 && pending() < kMaxPendingPerDirection; }
    };

    struct Conn
    {
        std::uint32_t id = 0;
        int cfd = -1;
        int sfd = -1;
        bool connecting = true;
        Lane up;   // client -> server
        Lane down; // server -> client
        bool decode = true;
        bool dead = false;
        bool reset = false; // one side reset or broke the connection: the other side gets a reset too
        size_t addressIndex = 0; // which of the target's addresses is being tried
        std::string closeReason; // set where the connection's end is first noticed
        int lastConnectError = 0;
    };

    HostPort listenAddr;
    HostPort target;
    DecoderLimits limits;
    bool decoding = true;
    std::string label;
    std::vector<sockaddr_storage> targetAddrs;
    Sink sink;
    std::int64_t acceptPausedUntil = 0;
    int listenFd = -1;
    int wakePipe[2] = {-1, -1};
    std::atomic<bool> ioStopping{false};
    std::thread ioThread;
    std::list<Conn> conns;
    std::vector<char> readBuffer = std::vector<char>(kReadSize); // relay thread only
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint64_t> splicedBytes{0};
    std::atomic<int> open{0};
    int splicedDirections = 0; // relay thread only

    // Decoder queue: the only thing shared between the two threads.
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Chunk> queue;
    std::vector<std::array<int, 2>> freeHandoffPipes; // read back and returned by the decoder
    // Decoder thread only: where handoff pipes are read back, and where skipped bytes go.
    std::unique_ptr<std::uint8_t[]> readBack;
    int devNull = -1; // -2: not available, skipped bytes are read and dropped
    int handoffPipes = 0;                             // made so far (relay thread; closed at stop)
    bool decoderStopping = false;
    bool decoderAsleep = false; // waiting until woken, not for its next tick
    std::atomic<size_t> backlog{0};
    std::atomic<size_t> peakBacklog{0};
    std::thread decoderThread;

    void push(Chunk &&c)
    {
        const size_t now = backlog += c.size;
        if (now > peakBacklog.load(std::memory_order_relaxed))
            peakBacklog.store(now, std::memory_order_relaxed); // only the relay thread writes it
        // A handoff pipe must come back soon, and a large backlog is worth decoding now; anything else waits
        // for the decoder's next tick unless it is asleep.
        const bool urgent = c.pipe[0] >= 0 || now >= kWakeBacklog;
        bool wake;
        {
            std::lock_guard lk(mu);
            queue.push_back(std::move(c));
            wake = urgent || decoderAsleep;
        }
        if (wake)
            cv.notify_one();
    }

    void ioLoop();
    void acceptAll();
    void startConnect(Conn &c);
    bool readSide(Conn &c, bool fromClient);
    bool copySide(Conn &c, bool fromClient);
    bool spliceSide(Conn &c, bool fromClient);
    bool openPipes(Lane &lane, bool withCopy);
    void closePipes(Lane &lane);
    void toDecoder(Conn &c, Chunk &&chunk);
    std::array<int, 2> handoffPipe();
    void releaseHandoffPipe(const int pipe[2]);
    void copyForDecoder(Conn &c, bool fromClient, std::int64_t t, size_t n);
    // A read (recv or splice) returned n <= 0: false when the connection is over.
    bool readEnded(Conn &c, bool fromClient, ssize_t n);
    bool writeFailed(Conn &c, bool toClient, int err);
    bool flush(Conn &c, bool toClient);
    void closeConn(Conn &c, const std::string &reason);
    void decoderLoop();
    bool readPipe(Chunk &c, ConnectionDecoder *decoder, EventBatch &batch);
};

void Relay::Impl::closeConn(Conn &c, const std::string &reason)
{
    if (c.dead)
        return;
    const std::int64_t t = steadyNowNs();
    if (c.reset) {
        // Pass the reset on instead of a clean close: a peer that sees EOF where the other side reset would
        // behave differently from one talking to it directly (gRPC tells the two apart).
        const linger abort{1, 0};
        for (int fd : {c.cfd, c.sfd})
            if (fd >= 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    if (c.cfd >= 0)
        close(c.cfd);
    if (c.sfd >= 0)
        close(c.sfd);
    c.cfd = c.sfd = -1;
    closePipes(c.up);
    closePipes(c.down);
    c.dead = true;
    --open;
    push({Chunk::Close, c.id, Direction::ClientToServer, t, reason.empty() ? c.closeReason : reason, {}});
}

void Relay::Impl::startConnect(Conn &c)
{
    // Addresses were resolved once at start(): no DNS lookup ever runs on the relay thread.
    while (c.addressIndex < targetAddrs.size()) {
        const sockaddr_storage &sa = targetAddrs[c.addressIndex];
        const socklen_t len = sa.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        if (c.sfd >= 0)
            close(c.sfd);
        c.sfd = socket(sa.ss_family, SOCK_STREAM, 0);
        if (c.sfd < 0)
            break;
        setNonBlocking(c.sfd);
        setNoDelay(c.sfd);
        if (connect(c.sfd, reinterpret_cast<const sockaddr *>(&sa), len) == 0) {
            c.connecting = false;
            return;
        }
        if (errno == EINPROGRESS)
            return;
        c.lastConnectError = errno;
        ++c.addressIndex;
    }
    c.reset = true; // as near as the client can get to the refusal
    closeConn(c, "could not connect to target " + target.toString() + ": " +
                     std::strerror(c.lastConnectError ? c.lastConnectError : errno));
}

void Relay::Impl::acceptAll()
{
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        const int fd = accept(listenFd, reinterpret_cast<sockaddr *>(&ss), &len);
        if (fd < 0) {
            // Out of descriptors: the listener stays readable, so stop polling it for a moment instead of
            // spinning; pending clients wait in the backlog.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                acceptPausedUntil = steadyNowNs() + 100'000'000;
            return;
        }
        setNonBlocking(fd);
        setNoDelay(fd);
        Conn &c = conns.emplace_back();
        c.id = g_nextConnectionId++;
        c.cfd = fd;
        c.decode = decoding;
        ++open;
        push({Chunk::Open, c.id, Direction::ClientToServer, steadyNowNs(), peerName(ss), target.toString()});
        startConnect(c);
    }
}

bool Relay::Impl::openPipes(Lane &lane, bool withCopy)
{
    if (lane.spliceFailed || splicedDirections >= kMaxSplicedDirections)
        return false;
    // The pipe's capacity bounds one read; both pipes must hold the same so that tee always copies it all.
    auto make = [](int p[2]) {
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
            return 0;
        const int size = fcntl(p[1], F_SETPIPE_SZ, kPipeSize);
        if (size < kPipeSize) { // e.g. the user's pipe-buffer allowance is used up
            close(p[0]);
            close(p[1]);
            p[0] = p[1] = -1;
            return 0;
        }
        return size;
    };
    const int size = make(lane.pipe);
    if (size > 0 && (!withCopy || make(lane.copy) == size)) {
        lane.pipeCapacity = std::min(size_t(size), size_t(kPipeSize));
        ++splicedDirections;
        return true;
    }
    closePipes(lane);
    lane.spliceFailed = true;
    return false;
}

void Relay::Impl::closePipes(Lane &lane)
{
    const bool had = lane.pipe[0] >= 0;
    for (int *p : {lane.pipe, lane.copy})
        for (int i = 0; i < 2; ++i)
            if (p[i] >= 0) {
                close(p[i]);
                p[i] = -1;
            }
    lane.inPipe = 0;
    if (had && lane.pipeCapacity)
        --splicedDirections;
    lane.pipeCapacity = 0;
}

bool Relay::Impl::readEnded(Conn &c, bool fromClient, ssize_t n)
{
    if (n == 0) { // EOF: passed on once everything before it has been delivered (ioLoop)
        (fromClient ? c.up : c.down).eof = true;
        if (c.closeReason.empty())
            c.closeReason = fromClient ? "closed by client" : "closed by server";
        return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return true;
    c.closeReason = std::string(fromClient ? "client" : "server") + " reset the connection (" +
                    std::strerror(errno) + ")";
    c.reset = true;
    return false;
}

bool Relay::Impl::writeFailed(Conn &c, bool toClient, int err)
{
    if (err == EPIPE) {
        // splice(2) into a socket whose peer has gone raises SIGPIPE (it has no MSG_NOSIGNAL); it is blocked
        // on this thread, so take it off the pending set instead of leaving it there.
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        const timespec zero{};
        sigtimedwait(&set, nullptr, &zero);
    }
    c.closeReason = std::string("could not write to ") + (toClient ? "client" : "server") + ": " + std::strerror(err);
    c.reset = true;
    return false;
}

bool Relay::Impl::flush(Conn &c, bool toClient)
{
    Lane &lane = toClient ? c.down : c.up;
    const int fd = toClient ? c.cfd : c.sfd;
    std::string &buf = lane.queued;
    size_t &off = lane.queuedOff;
    while (off < buf.size()) {
        const ssize_t n = send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += size_t(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // Drop the sent prefix once it is no smaller than what still waits, so the buffer stays within
            // about twice kMaxPendingPerDirection however long the peer stays slow (amortised O(1) a byte).
            if (off >= buf.size() - off) {
                buf.erase(0, off);
                off = 0;
            }
            return true;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return writeFailed(c, toClient, errno);
        }
    }
    buf.clear();
    off = 0;
    while (lane.inPipe > 0) {
        const ssize_t n = splice(lane.pipe[0], nullptr, fd, nullptr, lane.inPipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0)
            lane.inPipe -= size_t(n);
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return writeFailed(c, toClient, n == 0 ? EPIPE : errno);
    }
    return true;
}

std::array<int, 2> Relay::Impl::handoffPipe()
{
    {
        std::lock_guard lk(mu);
        if (!freeHandoffPipes.empty()) {
            const std::array<int, 2> p = freeHandoffPipes.back();
            freeHandoffPipes.pop_back();
            return p;
        }
    }
    std::array<int, 2> p{-1, -1};
    if (handoffPipes >= kHandoffPipes || pipe2(p.data(), O_NONBLOCK | O_CLOEXEC) != 0)
        return {-1, -1};
    if (fcntl(p[1], F_SETPIPE_SZ, kPipeSize) < kPipeSize) {
        close(p[0]);
        close(p[1]);
        return {-1, -1};
    }
    ++handoffPipes;
    return p;
}

void Relay::Impl::releaseHandoffPipe(const int pipe[2])
{
    std::lock_guard lk(mu);
    freeHandoffPipes.push_back({pipe[0], pipe[1]});
}

void Relay::Impl::toDecoder(Conn &c, Chunk &&chunk)
{
    if (backlog.load(std::memory_order_relaxed) > kMaxDecoderBacklog) {
        c.decode = false;
        if (chunk.pipe[0] >= 0) {
            char scratch[4096]; // the pipe goes back empty
            while (read(chunk.pipe[0], scratch, sizeof scratch) > 0) {
            }
            releaseHandoffPipe(chunk.pipe);
        }
        push({Chunk::Error, c.id, chunk.dir, chunk.t,
              "decoder fell behind (over 256 MiB queued); relaying continues without decoding", {}});
        return;
    }
    push(std::move(chunk));
}

// The decoder's copy of the n bytes just spliced into the lane's pipe.
void Relay::Impl::copyForDecoder(Conn &c, bool fromClient, std::int64_t t, size_t n)
{
    Lane &lane = fromClient ? c.up : c.down;
    const Direction dir = fromClient ? Direction::ClientToServer : Direction::ServerToClient;
    Chunk chunk{Chunk::Data, c.id, dir, t, {}, {}};
    chunk.size = n;
    // Usually: duplicate the pipe's page references into a handoff pipe; the decoder thread reads them back.
    const std::array<int, 2> handoff = handoffPipe();
    if (handoff[0] >= 0) {
        if (tee(lane.pipe[0], handoff[1], n, SPLICE_F_NONBLOCK) == ssize_t(n)) {
            chunk.pipe[0] = handoff[0];
            chunk.pipe[1] = handoff[1];
            toDecoder(c, std::move(chunk));
            return;
        }
        close(handoff[0]); // not expected (same capacity, empty); whatever it holds is not wanted
        close(handoff[1]);
        --handoffPipes;
    }
    // The decoder is behind: read the copy back here, through the lane's own copy pipe.
    const ssize_t dup = tee(lane.pipe[0], lane.copy[1], n, SPLICE_F_NONBLOCK);
    const int teeError = dup < 0 ? errno : 0;
    size_t got = 0;
    if (dup > 0) {
        chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(dup));
        while (got < size_t(dup)) {
            const ssize_t r = read(lane.copy[0], chunk.data.get() + got, size_t(dup) - got);
            if (r > 0)
                got += size_t(r);
            else if (!(r < 0 && errno == EINTR))
                break;
        }
    }
    if (dup == ssize_t(n) && got == n) {
        toDecoder(c, std::move(chunk));
        return;
    }
    // Not expected either; the decoder would see a gap, so decoding stops rather than guess. The bytes are
    // still in the lane's pipe and are relayed.
    c.decode = false;
    for (int &fd : lane.copy) {
        close(fd);
        fd = -1;
    }
    push({Chunk::Error, c.id, dir, t,
          "could not copy relayed bytes for the decoder (" + std::string(dup < 0 ? std::strerror(teeError) : "short copy") +
              "); relaying continues without decoding",
          {}});
}

bool Relay::Impl::readSide(Conn &c, bool fromClient)
{
    Lane &lane = fromClient ? c.up : c.down;
    // Bytes go out in the order they came in: while either way of relaying still holds some, that way goes on.
    if (lane.inPipe > 0)
        return spliceSide(c, fromClient);
    if (lane.queued.size() > lane.queuedOff || !lane.splicing)
        return copySide(c, fromClient);
    if (lane.pipe[0] < 0 && !openPipes(lane, c.decode)) {
        lane.splicing = false;
        return copySide(c, fromClient);
    }
    return spliceSide(c, fromClient);
}

bool Relay::Impl::copySide(Conn &c, bool fromClient)
{
    Lane &lane = fromClient ? c.up : c.down;
    char *buf = readBuffer.data();
    const int src = fromClient ? c.cfd : c.sfd;
    const ssize_t n = recv(src, buf, readBuffer.size(), 0);
    // The read time is the event time: taken before forwarding so relaying cannot skew it.
    const std::int64_t t = steadyNowNs();
    if (n <= 0)
        return readEnded(c, fromClient, n);
    lane.splicing = size_t(n) >= kSpliceFrom;

    // Forward straight from the read buffer; only what the peer cannot take now is queued for it.
    size_t sent = 0;
    if (lane.pending() == 0) {
        const int dst = fromClient ? c.sfd : c.cfd;
        while (sent < size_t(n)) {
            const ssize_t w = send(dst, buf + sent, size_t(n) - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += size_t(w);
            else if (w < 0 && errno == EINTR)
                continue;
            else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            else
                return writeFailed(c, !fromClient, errno);
        }
    }
    if (sent < size_t(n))
        lane.queued.append(buf + sent, size_t(n) - sent);
    bytes += std::uint64_t(n);
    if (c.decode) {
        Chunk chunk{Chunk::Data, c.id, fromClient ? Direction::ClientToServer : Direction::ServerToClient, t, {}, {}};
        chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(n));
        chunk.size = size_t(n);
        std::memcpy(chunk.data.get(), buf, size_t(n));
        toDecoder(c, std::move(chunk));
    }
    return true;
}

bool Relay::Impl::spliceSide(Conn &c, bool fromClient)
{
    Lane &lane = fromClient ? c.up : c.down;
    if (lane.inPipe > 0) // the destination has not taken the last read yet (a hang-up woke the loop)
        return true;
    const int src = fromClient ? c.cfd : c.sfd;
    const ssize_t n = splice(src, nullptr, lane.pipe[1], nullptr, lane.pipeCapacity, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    const std::int64_t t = steadyNowNs();
    if (n <= 0)
        return readEnded(c, fromClient, n);
    lane.inPipe = size_t(n);
    lane.splicing = size_t(n) >= kCopyBelow;
    bytes += std::uint64_t(n);
    splicedBytes += std::uint64_t(n);
    if (c.decode)
        copyForDecoder(c, fromClient, t, size_t(n));
    return flush(c, !fromClient);
}

void Relay::Impl::ioLoop()
{
    // splice(2) into a closed socket raises SIGPIPE; writeFailed() takes it back off this thread.
    sigset_t pipeSignal;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);
    std::vector<pollfd> fds;
    std::vector<Conn *> owners;
    while (!ioStopping.load()) {
        fds.clear();
        owners.clear();
        fds.push_back({wakePipe[0], POLLIN, 0});
        const bool acceptPaused = steadyNowNs() < acceptPausedUntil;
        fds.push_back({acceptPaused ? -1 : listenFd, POLLIN, 0});
        for (Conn &c : conns) {
            short ce = 0, se = 0;
            if (c.connecting) {
                se = POLLOUT;
            } else {
                if (c.up.wantsRead())
                    ce |= POLLIN;
                if (c.down.wantsRead())
                    se |= POLLIN;
                if (c.up.pending())
                    se |= POLLOUT;
                if (c.down.pending())
                    ce |= POLLOUT;
            }
            // A socket we want nothing from is left out: POLLHUP on a half-closed peer would otherwise wake
            // the loop forever.
            fds.push_back({ce ? c.cfd : -1, ce, 0});
            fds.push_back({se ? c.sfd : -1, se, 0});
            owners.push_back(&c);
        }
        if (poll(fds.data(), fds.size(), acceptPaused ? 100 : -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[0].revents) {
            char drain[64];
            while (read(wakePipe[0], drain, sizeof drain) > 0) {
            }
        }
        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN))
            acceptAll();

        for (size_t i = 0; i < owners.size(); ++i) {
            Conn &c = *owners[i];
            const short cr = fds[2 + 2 * i].revents;
            const short sr = fds[3 + 2 * i].revents;
            bool ok = true;
            std::string reason;
            if (c.connecting) {
                if (sr) {
                    int soerr = 0;
                    socklen_t len = sizeof soerr;
                    getsockopt(c.sfd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                    if (soerr != 0) {
                        c.lastConnectError = soerr;
                        ++c.addressIndex;
                        startConnect(c);
                        continue;
                    }
                    c.connecting = false;
                }
            } else {
                if (ok && (cr & (POLLIN | POLLHUP | POLLERR)) && !c.up.eof)
                    ok = readSide(c, true);
                if (ok && (sr & (POLLIN | POLLHUP | POLLERR)) && !c.down.eof)
                    ok = readSide(c, false);
                if (ok && (sr & POLLOUT))
                    ok = flush(c, false);
                if (ok && (cr & POLLOUT))
                    ok = flush(c, true);
            }
            if (!ok) {
                closeConn(c, {});
                continue;
            }
            // Half-close: pass an EOF on once everything before it has been delivered.
            if (c.up.eof && !c.up.shut && !c.up.pending() && !c.connecting) {
                shutdown(c.sfd, SHUT_WR);
                c.up.shut = true;
            }
            if (c.down.eof && !c.down.shut && !c.down.pending()) {
                shutdown(c.cfd, SHUT_WR);
                c.down.shut = true;
            }
            if (c.up.shut && c.down.shut)
                closeConn(c, {});
        }
        conns.remove_if([](const Conn &c) { return c.dead; });
    }
    for (Conn &c : conns)
        closeConn(c, "capture stopped");
    conns.clear();
}

// Reads a handoff pipe's c.size bytes into the decoder (none without one), in pieces of kReadBack so that a
// long DATA frame spans them and the decoder can say how much of it it will not look at; that much is spliced
// to /dev/null instead of read. False when the pipe held less than it should.
bool Relay::Impl::readPipe(Chunk &c, ConnectionDecoder *decoder, EventBatch &batch)
{
    constexpr size_t kReadBack = 64 * 1024;
    if (!readBack)
        readBack = std::make_unique_for_overwrite<std::uint8_t[]>(kReadBack);
    if (devNull == -1 && (devNull = ::open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
        devNull = -2;
    size_t left = c.size;
    while (left > 0) {
        const size_t skip = decoder ? std::min(decoder->skippable(c.dir), left) : left;
        if (skip > 0 && devNull >= 0) {
            const ssize_t n = splice(c.pipe[0], nullptr, devNull, nullptr, skip, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                if (decoder)
                    decoder->skip(c.dir, size_t(n), c.t, batch);
                left -= size_t(n);
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0 || errno == EAGAIN)
                return false;
            devNull = -2; // this system cannot splice to /dev/null: read and drop instead
            continue;
        }
        const size_t want = std::min(left, kReadBack);
        size_t got = 0;
        while (got < want) {
            const ssize_t r = read(c.pipe[0], readBack.get() + got, want - got);
            if (r > 0)
                got += size_t(r);
            else if (!(r < 0 && errno == EINTR))
                return false;
        }
        if (decoder)
            decoder->feed(c.dir, readBack.get(), want, c.t, batch);
        left -= want;
    }
    return true;
}

void Relay::Impl::decoderLoop()
{
    std::unordered_map<std::uint32_t, std::unique_ptr<ConnectionDecoder>> decoders;
    std::vector<std::array<int, 2>> returned;  // handoff pipes read back in this round
    auto giveBackPipes = [&] {
        if (returned.empty())
            return;
        std::lock_guard lk(mu);
        freeHandoffPipes.insert(freeHandoffPipes.end(), returned.begin(), returned.end());
        returned.clear();
    };
    EventBatch batch;
    std::int64_t firstPending = 0;
    bool busy = false; // the last round had work
    for (;;) {
        std::deque<Chunk> work;
        bool stopping = false;
        {
            std::unique_lock lk(mu);
            auto ready = [&] { return decoderStopping || !queue.empty(); };
            auto untilFlush = [&] {
                return std::chrono::nanoseconds(
                    std::max<std::int64_t>(0, firstPending + kFlushIntervalNs - steadyNowNs()));
            };
            if (busy && !ready()) // reads are coming: take the next ones a tick from now
                cv.wait_for(lk, std::chrono::nanoseconds(kDecodeTickNs), ready);
            if (!ready()) { // a quiet tick: sleep until the relay wakes us (or the batch is due)
                decoderAsleep = true;
                if (batch.empty())
                    cv.wait(lk, ready);
                else
                    cv.wait_for(lk, untilFlush(), ready);
                decoderAsleep = false;
            }
            work.swap(queue);
            stopping = decoderStopping;
        }
        busy = !work.empty();
        for (Chunk &c : work) {
            const size_t before = batch.size();
            switch (c.kind) {
            case Chunk::Open: {
                decoders[c.conn] = std::make_unique<ConnectionDecoder>(c.conn, limits);
                WireEvent e;
                e.kind = EventKind::ConnectionOpened;
                e.connection = c.conn;
                e.tNs = c.t;
                e.text = std::move(c.bytes);
                e.text2 = std::move(c.extra);
                e.label = label;
                batch.push_back(std::move(e));
                break;
            }
            case Chunk::Data: {
                auto it = decoders.find(c.conn);
                ConnectionDecoder *decoder = it == decoders.end() ? nullptr : it->second.get();
                if (c.pipe[0] < 0) {
                    if (decoder)
                        decoder->feed(c.dir, c.data.get(), c.size, c.t, batch);
                    break;
                }
                // A spliced read's copy, read back here and then returned. Only what the decoder looks at is
                // read: bytes it can skip (message bodies past the kept bytes) are discarded unread.
                if (!readPipe(c, decoder, batch) && decoder) {
                    decoders.erase(it);
                    WireEvent e;
                    e.kind = EventKind::DecodeError;
                    e.connection = c.conn;
                    e.dir = c.dir;
                    e.tNs = c.t;
                    e.text = "lost part of the decoder's copy of the relayed bytes; relaying continues without decoding";
                    batch.push_back(std::move(e));
                }
                returned.push_back({c.pipe[0], c.pipe[1]});
                break;
            }
            case Chunk::Error: {
                decoders.erase(c.conn);
                WireEvent e;
                e.kind = EventKind::DecodeError;
                e.connection = c.conn;
                e.dir = c.dir;
                e.tNs = c.t;
                e.text = std::move(c.bytes);
                batch.push_back(std::move(e));
                break;
            }
            case Chunk::Close: {
                if (auto it = decoders.find(c.conn); it != decoders.end())
                    it->second->finish(c.t, batch);
                decoders.erase(c.conn);
                WireEvent e;
                e.kind = EventKind::ConnectionClosed;
                e.connection = c.conn;
                e.tNs = c.t;
                e.text = std::move(c.bytes);
                batch.push_back(std::move(e));
                break;
            }
            }
            if (before == 0 && !batch.empty())
                firstPending = steadyNowNs();
            // Counted out only now: while this round is decoded (or waits for the model below), the relay
            // still sees it as backlog and stops decoding past kMaxDecoderBacklog rather than queue more.
            backlog -= c.size;
            // A round can hold up to the whole backlog; its events go out in batches of kFlushEvents as they
            // come rather than as one batch of millions (a client opening streams as fast as it can).
            if (batch.size() >= kFlushEvents) {
                giveBackPipes(); // before a sink that may wait: the relay thread can splice with them meanwhile
                if (sink)
                    sink(std::move(batch)); // may wait while the model is behind (app/modelsink.h)
                batch = EventBatch();
            }
        }
        giveBackPipes();
        if (!batch.empty() &&
            (stopping || batch.size() >= kFlushEvents || steadyNowNs() - firstPending >= kFlushIntervalNs)) {
            if (sink)
                sink(std::move(batch));
            batch = EventBatch();
        }
        if (stopping)
            return;
    }
}

Relay::Relay() : d(std::make_unique<Impl>()) {}

Relay::~Relay()
{
    stop();
}

void Relay::setDecoderLimits(const DecoderLimits &limits)
{
    d->limits = limits;
}

std::int64_t Relay::threadCpuNs() const
{
    std::int64_t total = 0;
    for (const std::thread *t : {&d->ioThread, &d->decoderThread}) {
        if (!t->joinable())
            return -1;
        clockid_t clock;
        timespec ts{};
        if (pthread_getcpuclockid(const_cast<std::thread *>(t)->native_handle(), &clock) != 0 ||
            clock_gettime(clock, &ts) != 0)
            return -1;
        total += std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }
    return total;
}

void Relay::setDecoding(bool on)
{
    d->decoding = on;
}

void Relay::setLabel(const std::string &label)
{
    d->label = label;
}

bool Relay::start(const HostPort &listen, const HostPort &target, Sink sink, std::string *error)
{
    std::string dummy;
    std::string &err = error ? *error : dummy;
    if (d->ioThread.joinable()) {
        err = "relay already running";
        return false;
    }
    AddrInfo ai;
    if (!resolve(listen, true, &ai, &err))
        return false;
    int fd = -1;
    int lastErrno = 0;
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            lastErrno = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0)
            break;
        lastErrno = errno;
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        err = "cannot listen on " + listen.toString() + ": " + std::strerror(lastErrno);
        return false;
    }
    AddrInfo targetInfo;
    if (!resolve(target, false, &targetInfo, &err)) {
        close(fd);
        return false;
    }
    d->targetAddrs.clear();
    for (addrinfo *a = targetInfo.list; a; a = a->ai_next) {
        sockaddr_storage sa{};
        std::memcpy(&sa, a->ai_addr, a->ai_addrlen);
        d->targetAddrs.push_back(sa);
    }
    setNonBlocking(fd);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
    d->listenAddr.host = listen.host;
    d->listenAddr.port = ss.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
    if (pipe(d->wakePipe) != 0) {
        close(fd);
        err = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    setNonBlocking(d->wakePipe[0]);
    d->listenFd = fd;
    d->target = target;
    d->sink = std::move(sink);
    d->ioStopping = false;
    d->decoderStopping = false;
    d->decoderThread = std::thread([this] { d->decoderLoop(); });
    d->ioThread = std::thread([this] { d->ioLoop(); });
    // Named for top -H and profilers (at most 15 characters).
    pthread_setname_np(d->ioThread.native_handle(), "rpcscope-relay");
    pthread_setname_np(d->decoderThread.native_handle(), "rpcscope-decode");
    return true;
}

void Relay::stop()
{
    if (!d->ioThread.joinable())
        return;
    d->ioStopping = true;
    const char x = 'x';
    [[maybe_unused]] auto rc = write(d->wakePipe[1], &x, 1);
    d->ioThread.join();
    {
        std::lock_guard lk(d->mu);
        d->decoderStopping = true;
    }
    d->cv.notify_one();
    d->decoderThread.join();
    for (const std::array<int, 2> &p : d->freeHandoffPipes) {
        close(p[0]);
        close(p[1]);
    }
    d->freeHandoffPipes.clear();
    d->handoffPipes = 0;
    if (d->devNull >= 0)
        close(d->devNull);
    d->devNull = -1;
    close(d->listenFd);
    close(d->wakePipe[0]);
    close(d->wakePipe[1]);
    d->listenFd = d->wakePipe[0] = d->wakePipe[1] = -1;
}

HostPort Relay::listenAddress() const
{
    return d->listenAddr;
}

std::uint64_t Relay::bytesRelayed() const
{
    return d->bytes.load();
}

std::uint64_t Relay::bytesSpliced() const
{
    return d->splicedBytes.load();
}

size_t Relay::decoderBacklog() const
{
    return d->backlog.load();
}

size_t Relay::peakDecoderBacklog() const
{
    return d->peakBacklog.load();
}

int Relay::openConnections() const
{
    return d->open.load();
}

} // namespace rpcscope
