#include "plainproxy.h"

#include "testnet.h"

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace rpcscope::bench {

namespace {
constexpr size_t kReadSize = 64 * 1024; // recording: the read size rpcscope::Relay used when this was written
constexpr int kPipeSize = 1 << 20;      // splicing: as rpcscope::Relay's pipes

void noDelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}
} // namespace

struct PlainProxy::Impl
{
    struct Conn
    {
        int cfd = -1;
        int sfd = -1;
        std::vector<Chunk> chunks;
    };

    explicit Impl(Mode m) : mode(m) {}

    // Relays src to dst through a pipe until EOF or an error; false (nothing relayed yet) if there is no
    // pipe.
    bool splice(int src, int dst)
    {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) return noPipe();
        if (fcntl(p[1], F_SETPIPE_SZ, kPipeSize) < kPipeSize) {
            close(p[0]);
            close(p[1]);
            return noPipe();
        }
        // Splicing into a socket the peer closed raises SIGPIPE; splice has no MSG_NOSIGNAL.
        sigset_t pipeSignal;
        sigemptyset(&pipeSignal);
        sigaddset(&pipeSignal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);
        for (bool open = true; open;) {
            ssize_t n = ::splice(src, nullptr, p[1], nullptr, size_t(kPipeSize), SPLICE_F_MOVE);
            open = n > 0;
            while (n > 0) {
                const ssize_t w = ::splice(p[0], nullptr, dst, nullptr, size_t(n), SPLICE_F_MOVE);
                if (w <= 0) {
                    open = false;
                    break;
                }
                n -= w;
            }
        }
        shutdown(dst, SHUT_WR);
        close(p[0]);
        close(p[1]);
        return true;
    }

    bool noPipe()
    {
        std::lock_guard lk(mu);
        ++copied;
        return false;
    }

    const Mode mode;
    int copied = 0;
    std::uint16_t targetPort = 0;
    std::uint16_t port = 0;
    int listenFd = -1;
    std::thread acceptThread;
    mutable std::mutex mu;
    std::vector<std::unique_ptr<Conn>> conns;
    std::vector<std::thread> pumps;
    bool stopping = false;

    void pump(Conn *c, bool fromClient)
    {
        const int src = fromClient ? c->cfd : c->sfd;
        const int dst = fromClient ? c->sfd : c->cfd;
        if (mode == Mode::Splice && splice(src, dst)) return;
        std::string buf(kReadSize, '\0');
        for (;;) {
            const ssize_t n = recv(src, buf.data(), buf.size(), 0);
            if (n <= 0) break;
            if (mode == Mode::Record) {
                std::lock_guard lk(mu);
                c->chunks.push_back({fromClient ? Direction::ClientToServer : Direction::ServerToClient,
                                     buf.substr(0, size_t(n))});
            }
            for (ssize_t off = 0; off < n;) {
                const ssize_t w = send(dst, buf.data() + off, size_t(n - off), MSG_NOSIGNAL);
                if (w <= 0) return;
                off += w;
            }
        }
        shutdown(dst, SHUT_WR);
    }

    void acceptLoop()
    {
        for (;;) {
            const int fd = accept(listenFd, nullptr, nullptr);
            if (fd < 0) return; // the listener was shut down
            const int sfd = testnet::connectLoopback(targetPort);
            if (sfd < 0) {
                close(fd);
                continue;
            }
            noDelay(fd);
            noDelay(sfd);
            std::lock_guard lk(mu);
            if (stopping) {
                close(fd);
                close(sfd);
                return;
            }
            auto c = std::make_unique<Conn>();
            c->cfd = fd;
            c->sfd = sfd;
            pumps.emplace_back([this, p = c.get()] { pump(p, true); });
            pumps.emplace_back([this, p = c.get()] { pump(p, false); });
            conns.push_back(std::move(c));
        }
    }
};

PlainProxy::PlainProxy(Mode mode) : d(std::make_unique<Impl>(mode)) {}

PlainProxy::~PlainProxy()
{
    stop();
}

bool PlainProxy::start(std::uint16_t targetPort, std::string *error)
{
    d->targetPort = targetPort;
    d->listenFd = testnet::listenLoopback();
    if (d->listenFd < 0) {
        *error = "plain proxy: cannot listen on 127.0.0.1";
        return false;
    }
    d->port = testnet::localPort(d->listenFd);
    d->acceptThread = std::thread([this] { d->acceptLoop(); });
    return true;
}

std::uint16_t PlainProxy::port() const
{
    return d->port;
}

void PlainProxy::stop()
{
    if (d->listenFd < 0) return;
    {
        std::lock_guard lk(d->mu);
        d->stopping = true;
        for (auto &c : d->conns) {
            shutdown(c->cfd, SHUT_RDWR);
            shutdown(c->sfd, SHUT_RDWR);
        }
    }
    shutdown(d->listenFd, SHUT_RDWR); // wakes accept()
    d->acceptThread.join();
    for (std::thread &t : d->pumps)
        t.join();
    d->pumps.clear();
    for (auto &c : d->conns) {
        close(c->cfd);
        close(c->sfd);
        c->cfd = c->sfd = -1;
    }
    close(d->listenFd);
    d->listenFd = -1;
}

std::vector<std::vector<Chunk>> PlainProxy::connections() const
{
    std::lock_guard lk(d->mu);
    std::vector<std::vector<Chunk>> out;
    for (const auto &c : d->conns)
        out.push_back(c->chunks);
    return out;
}

int PlainProxy::copiedDirections() const
{
    std::lock_guard lk(d->mu);
    return d->copied;
}

} // namespace rpcscope::bench
