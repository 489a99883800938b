#include "recordingproxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>

namespace rpcscope::bench {

namespace {
constexpr size_t kReadSize = 64 * 1024; // the same read size as rpcscope::Relay

sockaddr_in loopback(std::uint16_t port)
{
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    return sin;
}

void noDelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}
} // namespace

struct RecordingProxy::Impl
{
    struct Conn
    {
        int cfd = -1;
        int sfd = -1;
        std::vector<Chunk> chunks;
    };

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
        std::string buf(kReadSize, '\0');
        for (;;) {
            const ssize_t n = recv(src, buf.data(), buf.size(), 0);
            if (n <= 0)
                break;
            {
                std::lock_guard lk(mu);
                c->chunks.push_back({fromClient ? Direction::ClientToServer : Direction::ServerToClient,
                                     buf.substr(0, size_t(n))});
            }
            for (ssize_t off = 0; off < n;) {
                const ssize_t w = send(dst, buf.data() + off, size_t(n - off), MSG_NOSIGNAL);
                if (w <= 0)
                    return;
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
            const int sfd = socket(AF_INET, SOCK_STREAM, 0);
            const sockaddr_in target = loopback(targetPort);
            if (connect(sfd, reinterpret_cast<const sockaddr *>(&target), sizeof target) != 0) {
                close(fd);
                close(sfd);
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

RecordingProxy::RecordingProxy() : d(std::make_unique<Impl>()) {}

RecordingProxy::~RecordingProxy()
{
    stop();
}

bool RecordingProxy::start(std::uint16_t targetPort, std::string *error)
{
    d->targetPort = targetPort;
    d->listenFd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin = loopback(0);
    socklen_t len = sizeof sin;
    if (bind(d->listenFd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
        listen(d->listenFd, 16) != 0 ||
        getsockname(d->listenFd, reinterpret_cast<sockaddr *>(&sin), &len) != 0) {
        *error = "recording proxy: cannot listen on 127.0.0.1";
        close(d->listenFd);
        d->listenFd = -1;
        return false;
    }
    d->port = ntohs(sin.sin_port);
    d->acceptThread = std::thread([this] { d->acceptLoop(); });
    return true;
}

std::uint16_t RecordingProxy::port() const
{
    return d->port;
}

void RecordingProxy::stop()
{
    if (d->listenFd < 0)
        return;
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

std::vector<std::vector<Chunk>> RecordingProxy::connections() const
{
    std::lock_guard lk(d->mu);
    std::vector<std::vector<Chunk>> out;
    for (const auto &c : d->conns)
        out.push_back(c->chunks);
    return out;
}

} // namespace rpcscope::bench
