#pragma once

// Plain-socket helpers for tests, and an independent witness of TCP traffic: a dumb forwarder that records
// what it forwards. Nothing here shares code with the capture layer it is used to check.

#include "clock.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace testnet {

inline std::uint16_t localPort(int fd)
{
    sockaddr_in sin{};
    socklen_t len = sizeof sin;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len) != 0) return 0;
    return ntohs(sin.sin_port);
}

// Returns a listening socket on 127.0.0.1 (port 0 picks a free one), or -1.
inline int listenLoopback(std::uint16_t port = 0)
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// Blocking connect to 127.0.0.1:port, or -1.
inline int connectLoopback(std::uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// A port on 127.0.0.1 that nothing listens on: bound once to get a free number, then closed.
inline std::uint16_t closedPort()
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;
    if (bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return 0;
    }
    const std::uint16_t port = localPort(fd);
    close(fd);
    return port;
}

// Safety net only: a relay bug turns into a failed read/write instead of a hung test.
inline void setIoTimeouts(int fd, int seconds)
{
    timeval tv{seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Calls `io(data, len)` (a send or a recv) until all `len` bytes moved; false when the peer closed, a call
// failed or timed out first.
template <typename Bytes, typename Io> inline bool moveAll(Bytes *data, size_t len, Io io)
{
    while (len > 0) {
        const ssize_t n = io(data, len);
        if (n > 0) {
            data += n;
            len -= size_t(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return false;
        }
    }
    return true;
}

inline bool sendAll(int fd, const char *data, size_t len)
{
    return moveAll(data, len, [fd](const char *p, size_t n) { return send(fd, p, n, MSG_NOSIGNAL); });
}

// Reads exactly `len` bytes into `data`.
inline bool recvAll(int fd, char *data, size_t len)
{
    return moveAll(data, len, [fd](char *p, size_t n) { return recv(fd, p, n, 0); });
}

// A dumb blocking TCP forwarder, one thread per direction, recording every byte it reads in each direction
// (and forwarding it). Independent of the relay, so it can witness what went into and out of it.
class Tap
{
public:
    struct Conn
    {
        std::string c2s, s2c; // bytes read from the downstream (client) / upstream (server) side
        // (steady ns at the read, offset just past the bytes it delivered), per direction
        std::vector<std::pair<std::int64_t, size_t>> c2sReads, s2cReads;
        bool c2sDone = false, s2cDone = false;
        std::string c2sEnd, s2cEnd; // "eof" or the read error that ended the direction
        bool c2sSendFailed = false; // forwarding to upstream failed at some point
        bool s2cSendFailed = false; // forwarding to downstream failed at some point
        std::uint16_t upstreamLocalPort = 0;
        std::string connectError;
    };

    explicit Tap(std::uint16_t upstreamPort) : m_upstreamPort(upstreamPort) {}
    ~Tap()
    {
        m_stop = true;
        if (m_acceptThread.joinable()) m_acceptThread.join();
        {
            std::lock_guard lk(m_mu);
            for (int fd : m_fds)
                shutdown(fd, SHUT_RDWR); // wakes any pump still blocked
        }
        for (std::thread &t : m_threads)
            t.join();
        for (int fd : m_fds)
            close(fd);
        if (m_listen >= 0) close(m_listen);
    }

    bool start()
    {
        m_listen = listenLoopback();
        if (m_listen < 0) return false;
        m_acceptThread = std::thread([this] { acceptLoop(); });
        return true;
    }
    std::uint16_t port() const { return localPort(m_listen); }

    std::vector<Conn> connections() const
    {
        std::lock_guard lk(m_mu);
        return {m_conns.begin(), m_conns.end()};
    }
    bool allDone() const
    {
        std::lock_guard lk(m_mu);
        for (const Conn &c : m_conns)
            if (!c.c2sDone || !c.s2cDone) return false;
        return true;
    }

private:
    void acceptLoop()
    {
        while (!m_stop) {
            pollfd p{m_listen, POLLIN, 0};
            if (poll(&p, 1, 50) != 1) continue;
            const int down = accept(m_listen, nullptr, nullptr);
            if (down < 0) continue;
            const int up = connectLoopback(m_upstreamPort);
            // Without TCP_NODELAY, Nagle plus the peer's delayed ACK would hold small frames for up to 40 ms
            // and the witness would skew the very timing it is there to check.
            int one = 1;
            setsockopt(down, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (up >= 0) setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            size_t index;
            {
                std::lock_guard lk(m_mu);
                index = m_conns.size();
                Conn &c = m_conns.emplace_back();
                m_fds.push_back(down);
                if (up < 0) {
                    c.connectError = std::strerror(errno);
                    c.c2sDone = c.s2cDone = true;
                    shutdown(down, SHUT_RDWR);
                    continue;
                }
                m_fds.push_back(up);
                c.upstreamLocalPort = localPort(up);
            }
            m_threads.emplace_back([this, down, up, index] { pump(down, up, index, true); });
            m_threads.emplace_back([this, down, up, index] { pump(up, down, index, false); });
        }
    }

    void pump(int src, int dst, size_t index, bool c2s)
    {
        std::vector<char> buf(64 * 1024);
        std::string end;
        bool sendFailed = false;
        for (;;) {
            const ssize_t n = recv(src, buf.data(), buf.size(), 0);
            const std::int64_t t = rpcscope::steadyNowNs();
            if (n == 0) {
                end = "eof";
                break;
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                end = std::strerror(errno);
                break;
            }
            {
                std::lock_guard lk(m_mu);
                Conn &c = m_conns[index];
                std::string &bytes = c2s ? c.c2s : c.s2c;
                bytes.append(buf.data(), size_t(n));
                (c2s ? c.c2sReads : c.s2cReads).emplace_back(t, bytes.size());
            }
            // Keep reading even when the other side is gone, so everything sent to us is still recorded.
            if (!sendFailed && !sendAll(dst, buf.data(), size_t(n))) sendFailed = true;
        }
        shutdown(dst, SHUT_WR); // pass the EOF (or the end) on
        std::lock_guard lk(m_mu);
        Conn &c = m_conns[index];
        (c2s ? c.c2sDone : c.s2cDone) = true;
        (c2s ? c.c2sEnd : c.s2cEnd) = end;
        (c2s ? c.c2sSendFailed : c.s2cSendFailed) = sendFailed;
    }

    const std::uint16_t m_upstreamPort;
    int m_listen = -1;
    std::atomic<bool> m_stop{false};
    std::thread m_acceptThread;
    std::vector<std::thread>
        m_threads; // touched by the accept thread, then by the destructor after joining it
    mutable std::mutex m_mu;
    std::deque<Conn> m_conns;
    std::vector<int> m_fds;
};

} // namespace testnet
