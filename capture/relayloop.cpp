#include "relayloop.h"

#include "clock.h"
#include "heapbytes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

namespace {
// A connection whose peer reads slower than the other side writes stops being read once this much waits
// for it, so memory stays bounded and TCP flow control pushes back on the sender.
constexpr size_t kMaxPendingPerDirection = 4 << 20;
// One read takes up to this much: large reads mean fewer system calls and fewer chunks for the decoder when
// streaming; a small unary RPC still arrives in one read.
constexpr size_t kReadSize = 256 * 1024;
// Streaming without copying: once a direction's reads are this large, it is relayed with splice(2) through a
// pipe (socket -> pipe -> socket, the pages never enter user space) and tee(2) duplicates what passed for the
// decoder, which is then the only copy. A small read (below kCopyBelow) sends the direction back to
// recv/send, whose two system calls are cheaper for unary traffic than splice + tee + splice + read.
constexpr size_t kSpliceFrom = 32 * 1024;
constexpr size_t kCopyBelow = 4 * 1024;
constexpr int kPipeSize = 1 << 20;
// Directions relayed by splice at once, each holding two pipes of kPipeSize (its own and a fallback copy
// pipe): bounded so that pipes never use up descriptors or an unprivileged user's pipe-buffer allowance (by
// default 64 MiB in all; with the handoff pipes below a relay holds at most 40 MiB). The other directions
// copy, as does any direction whose pipes cannot be made that large.
constexpr int kMaxSplicedDirections = 16;
// Pipes that carry the decoder's copy of a spliced read to the decoder thread, which reads it back there: the
// relay thread only duplicates page references. At most this many are in flight; beyond that (the decoder is
// behind) the relay thread reads the copy back itself.
constexpr int kHandoffPipes = 8;
// After one side resets, what the relay had read from it before is still delivered to the other side (as a
// direct peer would have received it before the reset), for at most this long; then the reset follows.
constexpr std::int64_t kResetDrainNs = 5'000'000'000;
// How often a draining connection looks whether its peer has acknowledged everything (no poll event says
// that a socket's send queue is empty).
constexpr int kDrainPollMs = 2;

std::atomic<std::uint32_t> g_nextConnectionId{1};

void setNoDelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}
} // namespace

bool RelayLoop::HalfConnection::wantsRead(size_t most) const
{
    return !eof && inPipe == 0 && pending() < most;
}

bool RelayLoop::open(int listenFd, const HostPort &target, std::vector<sockaddr_storage> targetAddrs,
                     bool decoding, std::string *error)
{
    if (pipe(m_wakePipe) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    setNonBlocking(m_wakePipe[0]);
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    if (m_epoll < 0) {
        *error = std::string("epoll_create1: ") + std::strerror(errno);
        for (int &fd : m_wakePipe) {
            close(fd);
            fd = -1;
        }
        return false;
    }
    m_listenWatched = false;
    m_listenFd = listenFd;
    m_target = target;
    m_targetAddrs = std::move(targetAddrs);
    m_decoding = decoding;
    m_readBuffer.resize(kReadSize);
    m_stopping = false;
    return true;
}

void RelayLoop::run()
{
    m_thread = std::thread([this] { loop(); });
    // Named for top -H and profilers (at most 15 characters).
    pthread_setname_np(m_thread.native_handle(), "rpcscope-relay");
}

void RelayLoop::stop()
{
    if (m_thread.joinable()) {
        m_stopping = true;
        const char x = 'x';
        [[maybe_unused]] auto rc = write(m_wakePipe[1], &x, 1);
        m_thread.join();
    }
    m_handoffPipes = 0;
    for (int *fd : {&m_listenFd, &m_wakePipe[0], &m_wakePipe[1], &m_epoll})
        if (*fd >= 0) {
            close(*fd);
            *fd = -1;
        }
}

void RelayLoop::closeConn(Conn &c, const std::string &reason)
{
    if (c.dead) return;
    const std::int64_t t = c.resetAt ? c.resetAt : steadyNowNs();
    if (c.reset) {
        // Pass the reset on instead of a clean close: a peer that sees EOF where the other side reset would
        // behave differently from one talking to it directly (gRPC tells the two apart).
        const linger abort{1, 0};
        for (int fd : {c.cfd, c.sfd})
            if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    unwatch(c.cWatchFd, c.cWatch);
    unwatch(c.sWatchFd, c.sWatch);
    if (c.cfd >= 0) close(c.cfd);
    if (c.sfd >= 0) close(c.sfd);
    c.cfd = c.sfd = -1;
    closePipes(c.up);
    closePipes(c.down);
    c.dead = true;
    --m_open;
    m_decoder.push(RelayChunk::close(c.id, t, reason.empty() ? c.closeReason : reason));
}

void RelayLoop::startConnect(Conn &c)
{
    // Addresses were resolved once at start(): no DNS lookup ever runs on the relay thread.
    while (c.addressIndex < m_targetAddrs.size()) {
        const sockaddr_storage &sa = m_targetAddrs[c.addressIndex];
        const socklen_t len = sa.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        if (c.sfd >= 0) {
            unwatch(c.sWatchFd, c.sWatch);
            close(c.sfd);
        }
        c.sfd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c.sfd < 0) break;
        setNonBlocking(c.sfd);
        setNoDelay(c.sfd);
        if (m_kernelTimes) KernelRxTime::enable(c.sfd);
        if (connect(c.sfd, reinterpret_cast<const sockaddr *>(&sa), len) == 0) {
            c.connecting = false;
            return;
        }
        if (errno == EINPROGRESS) return;
        c.lastConnectError = errno;
        ++c.addressIndex;
    }
    c.reset = true; // as near as the client can get to the refusal
    closeConn(c, "could not connect to target " + m_target.toString() + ": " +
                     std::strerror(c.lastConnectError ? c.lastConnectError : errno));
}

std::uint32_t RelayLoop::newConnectionId()
{
    return g_nextConnectionId++;
}

void RelayLoop::adopt(int clientFd, int serverFd, std::string clientPeer, std::string early,
                      std::int64_t earlyAt)
{
    {
        std::lock_guard lk(m_adoptMutex);
        m_adoptedBytes += heapbytes::string(early) + heapbytes::string(clientPeer);
        m_adopted.push_back({clientFd, serverFd, std::move(clientPeer), std::move(early), earlyAt});
    }
    const char x = 'a';
    [[maybe_unused]] auto rc = write(m_wakePipe[1], &x, 1);
}

void RelayLoop::takeAdopted()
{
    std::vector<Adopted> taken;
    {
        std::lock_guard lk(m_adoptMutex);
        taken.swap(m_adopted);
    }
    for (Adopted &a : taken) {
        // From here on its bytes are the connection's (queued for the server) and the decoder's.
        m_adoptedBytes -= heapbytes::string(a.early) + heapbytes::string(a.peer);
        // Not inherited by a process another thread starts: a copy there would keep the socket (and its
        // place in the epoll set) alive after the relay closed it.
        fcntl(a.cfd, F_SETFD, FD_CLOEXEC);
        fcntl(a.sfd, F_SETFD, FD_CLOEXEC);
        setNonBlocking(a.cfd);
        setNoDelay(a.cfd);
        setNonBlocking(a.sfd);
        setNoDelay(a.sfd);
        if (m_kernelTimes) {
            KernelRxTime::enable(a.cfd);
            KernelRxTime::enable(a.sfd);
        }
        Conn &c = m_conns.emplace_back();
        c.id = g_nextConnectionId++;
        c.cfd = a.cfd;
        c.sfd = a.sfd;
        c.connecting = false;
        c.decode = m_decoding;
        ++m_open;
        const std::int64_t now = steadyNowNs();
        m_decoder.push(RelayChunk::open(c.id, now, std::move(a.peer), m_target.toString()));
        c.up.lastNs = c.down.lastNs = now; // bytes the kernel stamped before the accept count from the open
        if (m_faults) chooseFault(c, now); // a tunnel is a connection of its target's hop
        if (!a.early.empty()) {
            m_bytes += a.early.size();
            if (c.decode) {
                RelayChunk chunk = RelayChunk::bytes(c.id, Direction::ClientToServer, a.earlyAt);
                chunk.size = a.early.size();
                chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(chunk.size);
                std::memcpy(chunk.data.get(), a.early.data(), chunk.size);
                toDecoder(c, std::move(chunk));
            }
            if (c.streams)
                streamEarly(c, std::move(a.early), a.earlyAt);
            else
                c.up.queued = std::move(a.early); // sent when the server's socket takes it (the loop polls)
        }
    }
}

void RelayLoop::acceptAll()
{
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        const int fd = accept4(m_listenFd, reinterpret_cast<sockaddr *>(&ss), &len, SOCK_CLOEXEC);
        if (fd < 0) {
            // Out of descriptors: the listener stays readable, so stop polling it for a moment instead of
            // spinning; pending clients wait in the backlog.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                m_acceptPausedUntil = steadyNowNs() + 100'000'000;
            return;
        }
        setNonBlocking(fd);
        setNoDelay(fd);
        if (m_kernelTimes) KernelRxTime::enable(fd);
        Conn &c = m_conns.emplace_back();
        c.id = g_nextConnectionId++;
        c.cfd = fd;
        c.decode = m_decoding;
        ++m_open;
        const std::int64_t now = steadyNowNs();
        m_decoder.push(RelayChunk::open(c.id, now, peerName(ss), m_target.toString()));
        c.up.lastNs = c.down.lastNs = now; // bytes the kernel stamped before the accept count from the open
        if (m_faults) chooseFault(c, now);
        startConnect(c);
    }
}

bool RelayLoop::openPipes(HalfConnection &half, bool withCopy)
{
    if (half.spliceFailed || m_splicedDirections >= kMaxSplicedDirections) return false;
    // The pipe's capacity bounds one read; both pipes must hold the same so that tee always copies it all.
    auto make = [](int p[2]) {
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return 0;
        const int size = fcntl(p[1], F_SETPIPE_SZ, kPipeSize);
        if (size < kPipeSize) { // e.g. the user's pipe-buffer allowance is used up
            close(p[0]);
            close(p[1]);
            p[0] = p[1] = -1;
            return 0;
        }
        return size;
    };
    const int size = make(half.pipe);
    if (size > 0 && (!withCopy || make(half.copy) == size)) {
        half.pipeCapacity = std::min(size_t(size), size_t(kPipeSize));
        ++m_splicedDirections;
        return true;
    }
    closePipes(half);
    half.spliceFailed = true;
    return false;
}

void RelayLoop::closePipes(HalfConnection &half)
{
    const bool had = half.pipe[0] >= 0;
    for (int *p : {half.pipe, half.copy})
        for (int i = 0; i < 2; ++i)
            if (p[i] >= 0) {
                close(p[i]);
                p[i] = -1;
            }
    half.inPipe = 0;
    if (had && half.pipeCapacity) --m_splicedDirections;
    half.pipeCapacity = 0;
}

bool RelayLoop::readEnded(Conn &c, bool fromClient, ssize_t n)
{
    HalfConnection &half = fromClient ? c.up : c.down;
    if (n == 0 && !half.resetByPeer) { // EOF: passed on once everything before it has been delivered (loop)
        half.eof = true;
        if (c.closeReason.empty()) c.closeReason = fromClient ? "closed by client" : "closed by server";
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    c.closeReason = std::string(fromClient ? "client" : "server") + " reset the connection (" +
                    std::strerror(n == 0 ? ECONNRESET : errno) + ")";
    passReset(c, !fromClient);
    return true;
}

void RelayLoop::passReset(Conn &c, bool toClient)
{
    if (c.draining) return;
    c.reset = true;
    c.draining = true;
    c.drainToClient = toClient;
    c.resetAt = steadyNowNs();
    c.drainUntil = c.resetAt + kResetDrainNs;
    // The side that went away: closed now (a reset socket sends nothing more), with what was on its way to
    // it.
    int &gone = toClient ? c.sfd : c.cfd;
    if (gone >= 0) {
        const linger abort{1, 0};
        setsockopt(gone, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
        if (toClient)
            unwatch(c.sWatchFd, c.sWatch);
        else
            unwatch(c.cWatchFd, c.cWatch);
        ::close(gone);
        gone = -1;
    }
    HalfConnection &toGone = toClient ? c.up : c.down;
    toGone.queued.clear();
    toGone.queuedOff = 0;
    closePipes(toGone);
    // Neither side is read again, and no half-close is passed on: the survivor must not see an EOF first.
    for (HalfConnection *h : {&c.up, &c.down})
        h->eof = h->shut = true;
}

bool RelayLoop::drained(Conn &c, std::int64_t now) const
{
    const HalfConnection &half = c.drainToClient ? c.down : c.up;
    const int fd = c.drainToClient ? c.cfd : c.sfd;
    if (fd < 0 || now >= c.drainUntil) return true;
    if (half.pending()) return false;
    // A reset discards what the survivor has not acknowledged yet, so wait until its kernel took it all.
    int unacked = 0;
    return ioctl(fd, SIOCOUTQ, &unacked) != 0 || unacked == 0;
}

bool RelayLoop::writeFailed(Conn &c, bool toClient, int err)
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
    if (!c.draining)
        c.closeReason =
            std::string("could not write to ") + (toClient ? "client" : "server") + ": " + std::strerror(err);
    // The side written to is gone: it gets no more, but the other side still gets what it sent before.
    if (c.draining)
        c.drainUntil = 0; // the survivor itself went away
    else
        passReset(c, !toClient);
    return true;
}

bool RelayLoop::flush(Conn &c, bool toClient)
{
    HalfConnection &half = toClient ? c.down : c.up;
    const int fd = toClient ? c.cfd : c.sfd;
    std::string &buf = half.queued;
    size_t &off = half.queuedOff;
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
    // All taken: a buffer a slow peer grew goes back (the loop counts its capacity).
    if (buf.capacity() > kReadSize)
        std::string().swap(buf);
    else
        buf.clear();
    off = 0;
    while (half.inPipe > 0) {
        const ssize_t n =
            splice(half.pipe[0], nullptr, fd, nullptr, half.inPipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0)
            half.inPipe -= size_t(n);
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return writeFailed(c, toClient, n == 0 ? EPIPE : errno);
    }
    return true;
}

std::array<int, 2> RelayLoop::handoffPipe()
{
    std::array<int, 2> p = m_decoder.takeHandoffPipe();
    if (p[0] >= 0) return p;
    if (m_handoffPipes >= kHandoffPipes || pipe2(p.data(), O_NONBLOCK | O_CLOEXEC) != 0) return {-1, -1};
    if (fcntl(p[1], F_SETPIPE_SZ, kPipeSize) < kPipeSize) {
        close(p[0]);
        close(p[1]);
        return {-1, -1};
    }
    ++m_handoffPipes;
    return p;
}

void RelayLoop::toDecoder(Conn &c, RelayChunk &&chunk)
{
    // If the decoder falls too far behind (DecoderLimits::maxDecoderHeldBytes), connections stop being
    // decoded instead of the relay waiting. The heavy ones go first: a connection that has handed over less
    // than a quarter of the limit (an ordinary call beside a flood) is shed only at twice the limit, so
    // shedding the flood usually spares it.
    const bool heavy = c.decoderBytes >= m_decoder.heldLimit() / 4;
    if (m_decoder.overHeldLimit(heavy ? 1 : 2)) {
        c.decode = false;
        if (chunk.pipe[0] >= 0) {
            char scratch[4096]; // the pipe goes back empty
            while (read(chunk.pipe[0], scratch, sizeof scratch) > 0) {
            }
            m_decoder.releaseHandoffPipe(chunk.pipe);
        }
        m_decoder.push(RelayChunk::error(c.id, chunk.dir, chunk.t, m_decoder.overHeldLimitReason()));
        return;
    }
    c.decoderBytes += chunk.size;
    m_decoder.push(std::move(chunk));
}

// The decoder's copy of the n bytes just spliced into the direction's pipe.
void RelayLoop::copyForDecoder(Conn &c, bool fromClient, std::int64_t t, size_t n)
{
    HalfConnection &half = fromClient ? c.up : c.down;
    const Direction dir = fromClient ? Direction::ClientToServer : Direction::ServerToClient;
    RelayChunk chunk = RelayChunk::bytes(c.id, dir, t);
    chunk.size = n;
    // Usually: duplicate the pipe's page references into a handoff pipe; the decoder thread reads them back.
    const std::array<int, 2> handoff = handoffPipe();
    if (handoff[0] >= 0) {
        if (tee(half.pipe[0], handoff[1], n, SPLICE_F_NONBLOCK) == ssize_t(n)) {
            chunk.pipe[0] = handoff[0];
            chunk.pipe[1] = handoff[1];
            toDecoder(c, std::move(chunk));
            return;
        }
        close(handoff[0]); // not expected (same capacity, empty); whatever it holds is not wanted
        close(handoff[1]);
        --m_handoffPipes;
    }
    // The decoder is behind: read the copy back here, through the direction's own copy pipe.
    const ssize_t dup = tee(half.pipe[0], half.copy[1], n, SPLICE_F_NONBLOCK);
    const int teeError = dup < 0 ? errno : 0;
    size_t got = 0;
    if (dup > 0) {
        chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(dup));
        while (got < size_t(dup)) {
            const ssize_t r = read(half.copy[0], chunk.data.get() + got, size_t(dup) - got);
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
    // still in the direction's pipe and are relayed.
    c.decode = false;
    for (int &fd : half.copy) {
        close(fd);
        fd = -1;
    }
    m_decoder.push(RelayChunk::error(c.id, dir, t,
                                     "could not copy relayed bytes for the decoder (" +
                                         std::string(dup < 0 ? std::strerror(teeError) : "short copy") +
                                         "); relaying continues without decoding"));
}

bool RelayLoop::readSide(Conn &c, bool fromClient)
{
    HalfConnection &half = fromClient ? c.up : c.down;
    // Bytes go out in the order they came in: while either way of relaying still holds some, that way goes
    // on.
    if (half.inPipe > 0) return spliceSide(c, fromClient);
    if (c.streams) return streamRead(c, fromClient);
    // A faulted connection (bandwidth) is read in measured amounts, so always by copy.
    if (c.fault && c.fault->applied()) {
        const size_t allowance = c.fault->readAllowance(fromClient, steadyNowNs());
        if (allowance == 0) return true;
        size_t got = 0;
        const bool ok = copySide(c, fromClient, allowance, &got);
        c.fault->spent(fromClient, got);
        return ok;
    }
    if (half.queued.size() > half.queuedOff || !half.splicing) return copySide(c, fromClient);
    if (half.pipe[0] < 0 && !openPipes(half, c.decode)) {
        half.splicing = false;
        return copySide(c, fromClient);
    }
    return spliceSide(c, fromClient);
}

bool RelayLoop::copySide(Conn &c, bool fromClient, size_t limit, size_t *got)
{
    HalfConnection &half = fromClient ? c.up : c.down;
    char *buf = m_readBuffer.data();
    const int src = fromClient ? c.cfd : c.sfd;
    std::int64_t kernelNs = 0;
    const size_t want = std::min(m_readBuffer.size(), limit);
    // A connection a fault rule throttles holds bytes back in the kernel on purpose: they reach the peer, and
    // the timeline, when read, not when they arrived.
    const bool kernelTimes = m_kernelTimes && !(c.fault && c.fault->applied());
    const ssize_t n =
        kernelTimes ? KernelRxTime::receive(src, buf, want, &kernelNs) : recv(src, buf, want, 0);
    // The event time: the kernel's receive time where it gave one, else the read time, taken before
    // forwarding so relaying cannot skew it.
    const std::int64_t readNs = steadyNowNs();
    if (n <= 0) return readEnded(c, fromClient, n);
    bool fromKernel = false;
    const std::int64_t t = half.lastNs =
        std::max(half.lastNs, kernelTimes ? m_rxTime.eventTime(kernelNs, readNs, &fromKernel) : readNs);
    (fromKernel ? m_kernelStamped : m_readTimed).fetch_add(1, std::memory_order_relaxed);
    if (got) *got = size_t(n);
    half.splicing = size_t(n) >= kSpliceFrom;

    // The bytes go to the decoder before the peer gets them, so that whoever has seen the peer get them and
    // then asks DecoderThread::sync() finds them decoded; its wake waits until they are out.
    const DecoderThread::DeferWakes forwardFirst;
    if (c.decode) {
        RelayChunk chunk =
            RelayChunk::bytes(c.id, fromClient ? Direction::ClientToServer : Direction::ServerToClient, t);
        chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(n));
        chunk.size = size_t(n);
        std::memcpy(chunk.data.get(), buf, size_t(n));
        toDecoder(c, std::move(chunk));
    }
    // Forward straight from the read buffer; only what the peer cannot take now is queued for it.
    size_t sent = 0;
    if (half.pending() == 0) {
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
    if (sent < size_t(n)) half.queued.append(buf + sent, size_t(n) - sent);
    m_bytes += std::uint64_t(n);
    m_steering.read(src, fromClient, size_t(n)); // after forwarding: its look at the core waits for the bytes
    return true;
}

bool RelayLoop::spliceSide(Conn &c, bool fromClient)
{
    HalfConnection &half = fromClient ? c.up : c.down;
    if (half.inPipe > 0) // the destination has not taken the last read yet (a hang-up woke the loop)
        return true;
    const int src = fromClient ? c.cfd : c.sfd;
    const ssize_t n =
        splice(src, nullptr, half.pipe[1], nullptr, half.pipeCapacity, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    const std::int64_t t = half.lastNs = std::max(half.lastNs, steadyNowNs());
    if (n <= 0) return readEnded(c, fromClient, n);
    half.inPipe = size_t(n);
    half.splicing = size_t(n) >= kCopyBelow;
    m_steering.bulk();
    m_bytes += std::uint64_t(n);
    m_splicedBytes += std::uint64_t(n);
    if (c.decode) copyForDecoder(c, fromClient, t, size_t(n));
    return flush(c, !fromClient);
}

void RelayLoop::watch(int fd, int &watchedFd, std::uint32_t &watched, std::uint32_t want, std::uint64_t tag)
{
    if (fd != watchedFd) { // closed since (and so out of the set): nothing is registered for fd
        watchedFd = -1;
        watched = 0;
    }
    if (fd < 0 || want == watched) return;
    if (want == 0) { // left out, as poll() left it out: a hang-up would otherwise wake the loop forever
        unwatch(watchedFd, watched);
        return;
    }
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = tag;
    int op = watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(m_epoll, op, fd, &ev) != 0) {
        op = errno == EEXIST ? EPOLL_CTL_MOD : errno == ENOENT ? EPOLL_CTL_ADD : -1;
        if (op < 0 || epoll_ctl(m_epoll, op, fd, &ev) != 0) return;
    }
    watched = want;
    watchedFd = fd;
}

void RelayLoop::unwatch(int &watchedFd, std::uint32_t &watched)
{
    if (watchedFd >= 0 && watched) epoll_ctl(m_epoll, EPOLL_CTL_DEL, watchedFd, nullptr);
    watchedFd = -1;
    watched = 0;
}

void RelayLoop::loop()
{
    // splice(2) into a closed socket raises SIGPIPE; writeFailed() takes it back off this thread.
    sigset_t pipeSignal;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);
    // Tags: the wake pipe and the listener, else a connection's id and side (client 0, server 1).
    constexpr std::uint64_t kWakeTag = ~std::uint64_t(0), kListenTag = ~std::uint64_t(0) - 1;
    {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = kWakeTag;
        epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wakePipe[0], &ev);
    }
    std::vector<epoll_event> ready(64);
    std::vector<std::pair<std::uint64_t, short>> events; // (tag, poll bits), by tag
    m_steering.start();
    while (!m_stopping.load()) {
        const bool acceptPaused = steadyNowNs() < m_acceptPausedUntil;
        if (m_listenFd >= 0 && acceptPaused == m_listenWatched) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u64 = kListenTag;
            epoll_ctl(m_epoll, acceptPaused ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, m_listenFd, &ev);
            m_listenWatched = !acceptPaused;
        }
        int timeout = acceptPaused ? 100 : -1;
        // What the relay holds is counted on the way (the budget counts it): per connection its node and
        // what a slow peer left queued, beside the read buffer and the loop's lists.
        size_t held = heapbytes::block(m_readBuffer.capacity()) +
                      heapbytes::block(ready.capacity() * sizeof(epoll_event)) +
                      heapbytes::block(events.capacity() * sizeof(events[0]));
        // Past setMaxQueuedBytes() in all, only directions with nothing waiting are read.
        const size_t most = m_queued >= m_maxQueued ? 1 : std::min(kMaxPendingPerDirection, m_maxQueued);
        m_queued = 0;
        for (Conn &c : m_conns) {
            const size_t queued = heapbytes::string(c.up.queued) + heapbytes::string(c.down.queued);
            held += heapbytes::block(sizeof(Conn) + 2 * sizeof(void *)) + queued +
                    heapbytes::string(c.closeReason);
            m_queued += queued;
            short ce = 0, se = 0;
            if (c.draining) {
                // Only the survivor's writability matters, and (with a timeout) its acknowledgements.
                const bool more = (c.drainToClient ? c.down : c.up).pending() > 0;
                (c.drainToClient ? ce : se) = more ? POLLOUT : 0;
                timeout = kDrainPollMs;
            } else if (c.connecting) {
                se = POLLOUT;
            } else {
                if (c.up.wantsRead(most)) ce |= POLLIN;
                if (c.down.wantsRead(most)) se |= POLLIN;
                if (c.up.pending()) se |= POLLOUT;
                if (c.down.pending()) ce |= POLLOUT;
            }
            if (c.fault) faultPoll(c, steadyNowNs(), ce, se, timeout);
            if (c.streams) streamPoll(c, steadyNowNs(), timeout);
            // poll's bits are epoll's (POLLIN == EPOLLIN, POLLOUT == EPOLLOUT) on Linux.
            watch(c.cfd, c.cWatchFd, c.cWatch, std::uint32_t(std::uint16_t(ce)), std::uint64_t(c.id) << 1);
            watch(c.sfd, c.sWatchFd, c.sWatch, std::uint32_t(std::uint16_t(se)),
                  std::uint64_t(c.id) << 1 | 1);
            c.cEvents = c.sEvents = 0;
            c.watched = true;
        }
        m_heldBytes.store(held, std::memory_order_relaxed);
        const int n = epoll_wait(m_epoll, ready.data(), int(ready.size()), timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        bool woken = false, acceptable = false;
        events.clear();
        for (int i = 0; i < n; ++i) {
            const std::uint64_t tag = ready[size_t(i)].data.u64;
            const short ev = short(ready[size_t(i)].events & 0xffff);
            if (tag == kWakeTag)
                woken = true;
            else if (tag == kListenTag)
                acceptable = acceptable || (ev & POLLIN);
            else
                events.emplace_back(tag, ev);
        }
        // Connections are listed in the order of their ids (each is appended when it gets the next one), so
        // one walk hands each its events. A tag of a connection already gone matches nothing.
        std::sort(events.begin(), events.end());
        // Looked up per connection rather than walked in step with m_conns: adopted tunnels take their ids
        // on the proxy's threads, so the list need not be in id order.
        for (Conn &c : m_conns) {
            auto next = std::lower_bound(events.begin(), events.end(), std::uint64_t(c.id) << 1,
                                         [](const auto &e, std::uint64_t tag) { return e.first < tag; });
            for (; next != events.end() && (next->first >> 1) == c.id; ++next)
                (next->first & 1 ? c.sEvents : c.cEvents) |= next->second;
        }
        if (woken) {
            char drain[64];
            while (read(m_wakePipe[0], drain, sizeof drain) > 0) {
            }
            takeAdopted();
        }
        if (acceptable) acceptAll();

        for (Conn &c : m_conns) {
            // Connections accepted or adopted in this round wait for the next one.
            if (!c.watched) continue;
            const short cr = c.cEvents;
            const short sr = c.sEvents;
            bool ok = true;
            std::string reason;
            if (c.fault && faultEvents(c, cr, sr, steadyNowNs())) continue;
            if (c.streams && !streamTimers(c, steadyNowNs())) continue;
            if (c.draining) {
                if (cr & POLLOUT) flush(c, true);
                if (sr & POLLOUT) flush(c, false);
                if (drained(c, steadyNowNs())) closeConn(c, {});
                continue;
            }
            if (c.connecting) {
                if (sr) {
                    int soerr = 0;
                    socklen_t len = sizeof soerr;
                    getsockopt(c.sfd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                    if (soerr == ECONNRESET || soerr == EPIPE) {
                        // Connected, and reset by the server before the relay saw it: what the server sent
                        // first is still to be read, then its reset passed on (the EOF that ends it).
                        c.down.resetByPeer = true;
                        soerr = 0;
                    }
                    if (soerr != 0) {
                        c.lastConnectError = soerr;
                        ++c.addressIndex;
                        startConnect(c);
                        continue;
                    }
                    c.connecting = false;
                }
            } else {
                if (ok && (cr & (POLLIN | POLLHUP | POLLERR)) && !c.up.eof) ok = readSide(c, true);
                if (ok && (sr & (POLLIN | POLLHUP | POLLERR)) && !c.down.eof) ok = readSide(c, false);
                if (ok && (sr & POLLOUT)) ok = flush(c, false);
                if (ok && (cr & POLLOUT)) ok = flush(c, true);
            }
            if (!ok) {
                closeConn(c, {});
                continue;
            }
            if (c.draining) {
                if (drained(c, steadyNowNs())) closeConn(c, {});
                continue;
            }
            // Half-close: pass an EOF on once everything before it has been delivered.
            if (c.up.eof && !c.up.shut && !c.up.pending() && !c.connecting &&
                !(c.fault && c.fault->holdsClose(true, steadyNowNs()))) {
                shutdown(c.sfd, SHUT_WR);
                c.up.shut = true;
            }
            if (c.down.eof && !c.down.shut && !c.down.pending() &&
                !(c.fault && c.fault->holdsClose(false, steadyNowNs()))) {
                shutdown(c.cfd, SHUT_WR);
                c.down.shut = true;
            }
            if (c.up.shut && c.down.shut) closeConn(c, {});
        }
        m_conns.remove_if([](const Conn &c) { return c.dead; });
    }
    takeAdopted(); // handed over just before the stop: their open and close still reach the timeline
    for (Conn &c : m_conns)
        closeConn(c, "capture stopped");
    m_conns.clear();
    m_steering.stop();
}

} // namespace rpcscope
