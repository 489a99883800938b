#include "faultfront.h"

#include "clock.h"

#include <arpa/inet.h>
#include <cerrno>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpcscope::lab {

namespace {

constexpr int kPollMs = 20; // how often blocked threads look at the stop flag
constexpr size_t kPrefaceSize = 24;

int connectLoopback(std::uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

bool sendAll(int fd, const std::string &bytes)
{
    size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        off += size_t(n);
    }
    return true;
}

// One HTTP/2 frame: 9-byte header (RFC 9113 section 4.1) and payload.
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string &payload)
{
    std::string f;
    const std::uint32_t len = std::uint32_t(payload.size());
    f += char((len >> 16) & 0xff);
    f += char((len >> 8) & 0xff);
    f += char(len & 0xff);
    f += char(type);
    f += char(flags);
    f += char((stream >> 24) & 0x7f);
    f += char((stream >> 16) & 0xff);
    f += char((stream >> 8) & 0xff);
    f += char(stream & 0xff);
    return f + payload;
}

std::string goawayPayload(std::uint32_t lastStreamId, std::uint32_t errorCode)
{
    std::string p;
    for (std::uint32_t v : {lastStreamId & 0x7fffffffu, errorCode})
        for (int shift = 24; shift >= 0; shift -= 8)
            p += char((v >> shift) & 0xff);
    return p;
}

} // namespace

struct FaultFront::Impl
{
    int listenFd = -1;
    std::uint16_t port = 0;
    std::uint16_t targetPort = 0;
    int refuseFirst = 0;
    std::atomic<bool> stopping{false};
    std::atomic<int> accepted{0};
    std::atomic<int> refusedCount{0};
    // Bumped by blackhole(); a connection opened before the bump stops forwarding.
    std::atomic<int> blackholeEpoch{0};
    std::atomic<std::int64_t> noticedNs{0};
    std::thread acceptThread;
    std::mutex mu;
    std::vector<std::thread> workers;

    void acceptLoop()
    {
        while (!stopping) {
            pollfd p{listenFd, POLLIN, 0};
            if (poll(&p, 1, kPollMs) <= 0) continue;
            const int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const int n = ++accepted;
            std::lock_guard lk(mu);
            if (n <= refuseFirst)
                workers.emplace_back([this, fd] { refuse(fd); });
            else
                workers.emplace_back([this, fd, epoch = blackholeEpoch.load()] { forward(fd, epoch); });
        }
    }

    // Reads until the client's first HEADERS frame, then answers GOAWAY(last-stream-id 0) and closes.
    void refuse(int fd)
    {
        std::string in;
        bool sentSettings = false, goaway = false;
        size_t pos = kPrefaceSize;
        while (!stopping && !goaway) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, kPollMs) <= 0) continue;
            char buf[4096];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, size_t(n));
            if (in.size() < kPrefaceSize) continue;
            if (!sentSettings) {
                // C-core's client waits for the server's SETTINGS before it calls the connection ready.
                sendAll(fd, frame(4, 0, 0, {}));
                sentSettings = true;
            }
            while (in.size() >= pos + 9) {
                const auto *h = reinterpret_cast<const unsigned char *>(in.data() + pos);
                const size_t len = (size_t(h[0]) << 16) | (size_t(h[1]) << 8) | h[2];
                if (in.size() < pos + 9 + len) break;
                const std::uint8_t type = h[3], flags = h[4];
                pos += 9 + len;
                if (type == 4 && !(flags & 1)) {
                    sendAll(fd, frame(4, 1, 0, {})); // SETTINGS ACK
                } else if (type == 1) {
                    sendAll(fd, frame(7, 0, 0, goawayPayload(0, 0) + "lab: refused before any stream"));
                    ++refusedCount;
                    goaway = true;
                    break;
                }
            }
        }
        // A FIN after the GOAWAY, then drain until the client closes too: closing with unread bytes would
        // send a reset that can overtake the GOAWAY.
        shutdown(fd, SHUT_WR);
        const std::int64_t until = steadyNowNs() + 2'000'000'000;
        while (!stopping && steadyNowNs() < until) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, kPollMs) <= 0) continue;
            char buf[4096];
            if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
        }
        close(fd);
    }

    void forward(int client, int epoch)
    {
        const int server = connectLoopback(targetPort);
        if (server < 0) {
            close(client);
            return;
        }
        bool clientOpen = true, serverOpen = true;
        while (!stopping && clientOpen) {
            const bool holed = blackholeEpoch.load() > epoch;
            pollfd p[2] = {{client, POLLIN, 0}, {server, short(serverOpen ? POLLIN : 0), 0}};
            if (poll(p, 2, kPollMs) <= 0) continue;
            char buf[16384];
            if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                const ssize_t n = ::recv(client, buf, sizeof buf, 0);
                if (n <= 0) {
                    clientOpen = false;
                    if (holed && noticedNs.load() == 0) noticedNs = steadyNowNs();
                    break;
                }
                if (!holed && serverOpen && !sendAll(server, std::string(buf, size_t(n)))) break;
            }
            if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                const ssize_t n = ::recv(server, buf, sizeof buf, 0);
                if (n <= 0) {
                    serverOpen = false;
                    if (!holed) break; // the server closed: pass that on
                    continue;
                }
                if (!holed && !sendAll(client, std::string(buf, size_t(n)))) break;
            }
        }
        close(server);
        close(client);
    }
};

FaultFront::FaultFront() : d(std::make_unique<Impl>()) {}

FaultFront::~FaultFront()
{
    stop();
}

void FaultFront::refuseFirstConnections(int n)
{
    d->refuseFirst = n;
}

bool FaultFront::start(std::uint16_t targetPort, std::string *error)
{
    d->targetPort = targetPort;
    d->listenFd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sin;
    if (d->listenFd < 0 || bind(d->listenFd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
        listen(d->listenFd, 64) != 0 ||
        getsockname(d->listenFd, reinterpret_cast<sockaddr *>(&sin), &len) != 0) {
        if (error) *error = "lab fault front could not listen on 127.0.0.1";
        if (d->listenFd >= 0) close(d->listenFd);
        d->listenFd = -1;
        return false;
    }
    d->port = ntohs(sin.sin_port);
    d->acceptThread = std::thread([this] { d->acceptLoop(); });
    return true;
}

void FaultFront::stop()
{
    if (d->listenFd < 0) return;
    d->stopping = true;
    d->acceptThread.join();
    std::vector<std::thread> workers;
    {
        std::lock_guard lk(d->mu);
        workers.swap(d->workers);
    }
    for (auto &t : workers)
        t.join();
    close(d->listenFd);
    d->listenFd = -1;
}

std::uint16_t FaultFront::port() const
{
    return d->port;
}

std::string FaultFront::address() const
{
    return "127.0.0.1:" + std::to_string(d->port);
}

void FaultFront::blackhole()
{
    ++d->blackholeEpoch;
}

std::optional<std::int64_t> FaultFront::blackholeNoticedNs() const
{
    const std::int64_t t = d->noticedNs.load();
    return t ? std::optional(t) : std::nullopt;
}

int FaultFront::connections() const
{
    return d->accepted.load();
}

int FaultFront::refused() const
{
    return d->refusedCount.load();
}

} // namespace rpcscope::lab
