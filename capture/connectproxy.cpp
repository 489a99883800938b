#include "connectproxy.h"

#include "clock.h"
#include "connectrequest.h"
#include "faultset.h"
#include "heapbytes.h"
#include "relay.h"
#include "relayloop.h"
#include "tlsrelayloop.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <list>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace rpcscope {

namespace {

// After an error answer, what the client still sends is read and dropped for at most this long, so that
// closing with unread bytes does not reset the connection before the client has read the answer.
constexpr std::int64_t kLingerNs = 2'000'000'000;

std::string seconds(int ms)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g s", ms / 1000.0);
    return text;
}

const char *statusText(int status)
{
    switch (status) {
    case 200:
        return "Connection Established";
    case 400:
        return "Bad Request";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 431:
        return "Request Header Fields Too Large";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

std::string errorResponse(int status, const std::string &reason)
{
    const std::string body = reason + "\n";
    std::string r = "HTTP/1.1 " + std::to_string(status) + " " + statusText(status) + "\r\n";
    if (status == 405) r += "Allow: CONNECT\r\n";
    r += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
    return r;
}

} // namespace

// A name lookup on a thread of its own: getaddrinfo cannot be given a timeout or be cancelled, so the proxy's
// thread never waits for one; it looks whether it is done each round. The thread holds only this.
struct Lookup
{
    std::mutex mu;
    bool done = false;
    std::vector<sockaddr_storage> addrs;
    std::string error;
};

namespace {
// Lookups in flight at once, across proxies: a flood of CONNECTs to names that never resolve ties up no more
// threads than this (503 beyond).
constexpr int kMaxLookups = 16;
std::atomic<int> g_lookups{0};
// While a lookup runs, the proxy's loop looks at it this often.
constexpr int kLookupPollMs = 5;

std::vector<sockaddr_storage> addressesOf(const addrinfo *list)
{
    std::vector<sockaddr_storage> out;
    for (const addrinfo *a = list; a; a = a->ai_next) {
        sockaddr_storage sa{};
        std::memcpy(&sa, a->ai_addr, a->ai_addrlen);
        out.push_back(sa);
    }
    return out;
}
} // namespace

struct ConnectProxy::Impl
{
    struct Pending
    {
        enum Stage
        {
            Reading,    // the request head
            Resolving,  // the target's name, on a thread of its own
            Connecting, // to the target
            Answering,  // writing the answer
            Lingering   // error answered: waiting for the client to go
        } stage = Reading;
        int cfd = -1;
        int sfd = -1;
        std::string peer;
        std::int64_t acceptedAt = 0;
        std::int64_t deadline = 0; // of the current stage
        std::string head;          // read so far
        std::int64_t lastReadAt = 0;
        ConnectRequest request;
        std::vector<sockaddr_storage> addrs;
        std::shared_ptr<struct Lookup> lookup; // Resolving
        size_t addrIndex = 0;
        int lastConnectError = 0;
        std::string answer;
        size_t answered = 0;
        int status = 0;     // the answer's status
        std::string reason; // an error answer's reason
        bool done = false;
    };

    DecoderLimits decoderLimits;
    // Every target's decoder weighs what it holds against the one maxDecoderHeldBytes, together: the proxy
    // is one hop of a capture, given one share of its budget however many targets it serves.
    std::shared_ptr<SharedDecoderHeld> decoderHeld = std::make_shared<SharedDecoderHeld>();
    std::shared_ptr<FaultSet> faults;
    TlsInterceptOptions tls;
    Limits limits;
    std::string label = "CONNECT proxy";
    Sink sink;
    HostPort listenAddr;
    int listenFd = -1;
    int wakePipe[2] = {-1, -1};
    std::atomic<bool> stopping{false};
    std::thread thread;
    std::atomic<size_t> pending{0};
    std::atomic<size_t> peakPending{0};
    std::atomic<size_t> heldBytes{0}; // the handshakes, the notes and the loop's lists, each round

    mutable std::mutex relaysMutex; // the relays map: made on the proxy thread, counted from any thread
    std::map<std::string, std::unique_ptr<Relay>> relays;
    std::vector<std::string> order;

    // The proxy thread only.
    std::list<Pending> handshakes;
    EventBatch notes;                   // handed to the sink once a round, so a flood costs one call a round
    std::int64_t acceptPausedUntil = 0; // out of descriptors: the listener rests instead of spinning

    void loop();
    void acceptAll();
    void readHead(Pending &p);
    void beginConnect(Pending &p);
    void resolved(Pending &p); // Resolving: goes on once the lookup is done
    void tryNextAddress(Pending &p);
    void refuse(Pending &p, int status, const std::string &reason, bool linger = true);
    void flushAnswer(Pending &p);
    void finish(Pending &p);
    void note(const Pending &p, const std::string &server, const std::string &reason);
    Relay *relayFor(const std::string &authority, const HostPort &target, std::string *error);
};

ConnectProxy::ConnectProxy() : d(std::make_unique<Impl>()) {}

ConnectProxy::~ConnectProxy()
{
    stop();
}

void ConnectProxy::setDecoderLimits(const DecoderLimits &limits)
{
    d->decoderLimits = limits;
}

void ConnectProxy::setLimits(const Limits &limits)
{
    d->limits = limits;
}

void ConnectProxy::setLabel(const std::string &label)
{
    d->label = label;
}

void ConnectProxy::setFaults(std::shared_ptr<FaultSet> faults)
{
    d->faults = std::move(faults);
}

void ConnectProxy::setTlsIntercept(const TlsInterceptOptions &options)
{
    d->tls = options;
}

bool ConnectProxy::start(const HostPort &listen, Sink sink, std::string *error)
{
    std::string dummy;
    std::string &err = error ? *error : dummy;
    if (d->thread.joinable()) {
        err = "proxy already running";
        return false;
    }
    if (d->tls.enabled) {
        // What each target's hop loads when a client first asks for it (the CA, --target-ca, the client
        // certificate, the key log), tried now: a mistake is said at start, not as a failed tunnel later.
        DecoderThread unused;
        TlsRelayLoop probe(unused);
        if (!probe.open(-1, {"localhost", 1}, {}, d->tls, false, &err)) return false;
    }
    const int fd = listenSocket(listen, &err);
    if (fd < 0) return false;
    if (pipe2(d->wakePipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        err = std::string("pipe: ") + std::strerror(errno);
        close(fd);
        return false;
    }
    setNonBlocking(fd);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
    d->listenAddr.host = listen.host;
    d->listenAddr.port = ss.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
    d->listenFd = fd;
    d->sink = std::move(sink);
    d->stopping = false;
    d->thread = std::thread([this] { d->loop(); });
    pthread_setname_np(d->thread.native_handle(), "rpcscope-proxy");
    return true;
}

void ConnectProxy::stop()
{
    if (d->thread.joinable()) {
        d->stopping = true;
        const char x = 'x';
        [[maybe_unused]] auto rc = write(d->wakePipe[1], &x, 1);
        d->thread.join();
    }
    // After the proxy thread: it hands tunnels to the relays, so none arrives at a stopped one.
    std::map<std::string, std::unique_ptr<Relay>> relays;
    {
        std::lock_guard lk(d->relaysMutex);
        relays.swap(d->relays);
    }
    for (auto &[name, relay] : relays)
        relay->stop();
    for (int *fd : {&d->listenFd, &d->wakePipe[0], &d->wakePipe[1]})
        if (*fd >= 0) {
            close(*fd);
            *fd = -1;
        }
}

HostPort ConnectProxy::listenAddress() const
{
    return d->listenAddr;
}

int ConnectProxy::openConnections() const
{
    int n = int(d->pending.load());
    std::lock_guard lk(d->relaysMutex);
    for (const auto &[name, relay] : d->relays)
        n += relay->openConnections();
    return n;
}

std::vector<std::string> ConnectProxy::targets() const
{
    std::lock_guard lk(d->relaysMutex);
    return d->order;
}

size_t ConnectProxy::pendingHandshakes() const
{
    return d->pending.load();
}

size_t ConnectProxy::peakPendingHandshakes() const
{
    return d->peakPending.load();
}

size_t ConnectProxy::memoryBytes() const
{
    size_t n = d->heldBytes.load(std::memory_order_relaxed);
    std::lock_guard lk(d->relaysMutex);
    for (const auto &[name, relay] : d->relays)
        // The map's node, the name twice (the key, the order), and what the relay holds.
        n += heapbytes::block(4 * sizeof(void *) + sizeof(std::string) + sizeof(relay)) +
             2 * heapbytes::string(name) + relay->memoryBytes();
    return n + heapbytes::block(d->order.capacity() * sizeof(std::string));
}

namespace {
// A handshake in the proxy's list, as the allocator counts it.
template <typename Pending> size_t handshakeBytes(const Pending &p)
{
    size_t n = heapbytes::block(2 * sizeof(void *) + sizeof(Pending)) + heapbytes::string(p.peer) +
               heapbytes::string(p.head) + heapbytes::string(p.answer) + heapbytes::string(p.reason) +
               heapbytes::string(p.request.authority) + heapbytes::string(p.request.target.host) +
               heapbytes::string(p.request.reason) +
               heapbytes::block(p.addrs.capacity() * sizeof(p.addrs[0]));
    // A lookup: the shared block with its control block, and once it is done the addresses it found (or why
    // it found none) until the proxy's loop takes them.
    if (p.lookup) {
        n += heapbytes::block(2 * sizeof(long) + sizeof(*p.lookup));
        std::lock_guard lk(p.lookup->mu);
        n += heapbytes::block(p.lookup->addrs.capacity() * sizeof(sockaddr_storage)) +
             heapbytes::string(p.lookup->error);
    }
    return n;
}
} // namespace

// A handshake that ended without a tunnel: a connection of its own on the timeline, opened when it was
// accepted and closed with the reason, under the proxy's label.
void ConnectProxy::Impl::note(const Pending &p, const std::string &server, const std::string &reason)
{
    const std::uint32_t id = RelayLoop::newConnectionId();
    EventBatch batch(2);
    batch[0].kind = EventKind::ConnectionOpened;
    batch[0].connection = id;
    batch[0].tNs = p.acceptedAt;
    batch[0].label = label;
    batch[0].about = PeerNames{p.peer, server};
    batch[1].kind = EventKind::ConnectionClosed;
    batch[1].connection = id;
    batch[1].tNs = std::max(p.acceptedAt, steadyNowNs());
    batch[1].reason = reason;
    notes.insert(notes.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
}

void ConnectProxy::Impl::finish(Pending &p)
{
    if (p.cfd >= 0) close(p.cfd);
    if (p.sfd >= 0) close(p.sfd);
    p.cfd = p.sfd = -1;
    p.done = true;
}

void ConnectProxy::Impl::refuse(Pending &p, int status, const std::string &reason, bool linger)
{
    if (p.sfd >= 0) close(p.sfd);
    p.sfd = -1;
    p.status = status;
    p.reason = reason;
    const std::string server = p.request.state == ConnectRequest::Complete ? p.request.authority : "(none)";
    note(p, server,
         "CONNECT refused with " + std::to_string(status) + " " + statusText(status) + ": " + reason);
    p.answer = errorResponse(status, reason);
    p.answered = 0;
    p.stage = Pending::Answering;
    p.deadline = steadyNowNs() + kLingerNs;
    flushAnswer(p);
    if (!linger && !p.done) finish(p);
}

void ConnectProxy::Impl::flushAnswer(Pending &p)
{
    while (p.answered < p.answer.size()) {
        const ssize_t n =
            send(p.cfd, p.answer.data() + p.answered, p.answer.size() - p.answered, MSG_NOSIGNAL);
        if (n > 0) {
            p.answered += size_t(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            finish(p); // the client went away; an error was noted already, a tunnel never started
            return;
        }
    }
    if (p.status == 200) {
        std::string error;
        Relay *relay = relayFor(p.request.authority, p.request.target, &error);
        if (!relay) { // not expected once the target answered; said all the same
            note(p, p.request.authority, "CONNECT tunnel could not start: " + error);
            finish(p);
            return;
        }
        std::string early = p.head.substr(p.request.consumed);
        relay->adopt(p.cfd, p.sfd, p.peer, std::move(early), p.lastReadAt);
        p.cfd = p.sfd = -1;
        p.done = true;
        return;
    }
    // The answer is out: end our side, and read what the client still sends until it goes.
    shutdown(p.cfd, SHUT_WR);
    p.stage = Pending::Lingering;
}

Relay *ConnectProxy::Impl::relayFor(const std::string &authority, const HostPort &target, std::string *error)
{
    std::lock_guard lk(relaysMutex);
    if (auto it = relays.find(authority); it != relays.end()) return it->second.get();
    auto relay = std::make_unique<Relay>();
    relay->setLabel(authority);
    relay->setDecoderLimits(decoderLimits);
    relay->shareDecoderHeld(decoderHeld);
    relay->setFaults(faults);
    relay->setTlsIntercept(tls);
    if (!relay->startTunnels(target, sink, error)) return nullptr;
    order.push_back(authority);
    return relays.emplace(authority, std::move(relay)).first->second.get();
}

void ConnectProxy::Impl::acceptAll()
{
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        const int fd =
            accept4(listenFd, reinterpret_cast<sockaddr *>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        // A flood of clients that never finish their request: past the bound, the one that has waited
        // longest gives way, so memory stays bounded and a client that sends its request at once still gets
        // through.
        if (handshakes.size() >= limits.maxPending) {
            auto oldest = std::find_if(handshakes.begin(), handshakes.end(),
                                       [](const Pending &p) { return p.stage == Pending::Reading; });
            if (oldest == handshakes.end()) oldest = handshakes.begin();
            if (oldest->stage == Pending::Lingering || oldest->stage == Pending::Answering)
                finish(*oldest);
            else
                refuse(*oldest, 503,
                       "too many unfinished CONNECT requests (" + std::to_string(limits.maxPending) +
                           "); this one had waited longest",
                       false);
            handshakes.erase(oldest);
        }
        Pending &p = handshakes.emplace_back();
        p.cfd = fd;
        p.peer = peerName(ss);
        p.acceptedAt = steadyNowNs();
        p.deadline = p.acceptedAt + std::int64_t(limits.headTimeoutMs) * 1'000'000;
    }
}

void ConnectProxy::Impl::readHead(Pending &p)
{
    char buf[4096];
    const size_t room = limits.maxHeadBytes + 1 > p.head.size() ? limits.maxHeadBytes + 1 - p.head.size() : 1;
    const ssize_t n = recv(p.cfd, buf, std::min(sizeof buf, room), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
        note(p, "(none)",
             p.head.empty() ? "client closed before sending a CONNECT request"
                            : "client closed before finishing its CONNECT request");
        finish(p);
        return;
    }
    p.lastReadAt = steadyNowNs();
    p.head.append(buf, size_t(n));
    p.request = parseConnectRequest(p.head, limits.maxHeadBytes);
    if (p.request.state == ConnectRequest::Refused) {
        refuse(p, p.request.status, p.request.reason);
        return;
    }
    if (p.request.state == ConnectRequest::Complete) beginConnect(p);
}

void ConnectProxy::Impl::beginConnect(Pending &p)
{
    {
        std::lock_guard lk(relaysMutex);
        if (!relays.count(p.request.authority) && relays.size() >= limits.maxTargets) {
            refuse(p, 503,
                   "too many distinct CONNECT targets in one capture (" + std::to_string(limits.maxTargets) +
                       ")");
            return;
        }
    }
    p.deadline = steadyNowNs() + std::int64_t(limits.connectTimeoutMs) * 1'000'000;
    // An address is taken as it is; a name is looked up on a thread of its own, so that a slow resolver
    // holds back no other client.
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo *list = nullptr;
    const std::string port = std::to_string(p.request.target.port);
    if (getaddrinfo(p.request.target.host.c_str(), port.c_str(), &hints, &list) == 0) {
        p.addrs = addressesOf(list);
        freeaddrinfo(list);
        p.stage = Pending::Connecting;
        tryNextAddress(p);
        return;
    }
    if (g_lookups.fetch_add(1) >= kMaxLookups) {
        --g_lookups;
        refuse(p, 503, "too many name lookups in flight (" + std::to_string(kMaxLookups) + ")");
        return;
    }
    auto lookup = std::make_shared<Lookup>();
    p.lookup = lookup;
    p.stage = Pending::Resolving;
    std::thread([lookup, target = p.request.target] {
        AddrInfo ai;
        std::string error;
        std::vector<sockaddr_storage> addrs;
        if (resolve(target, false, &ai, &error)) addrs = addressesOf(ai.list);
        {
            std::lock_guard lk(lookup->mu);
            lookup->addrs = std::move(addrs);
            lookup->error = std::move(error);
            lookup->done = true;
        }
        --g_lookups;
    }).detach();
}

void ConnectProxy::Impl::resolved(Pending &p)
{
    std::lock_guard lk(p.lookup->mu);
    if (!p.lookup->done) return;
    if (!p.lookup->error.empty() || p.lookup->addrs.empty()) {
        const std::string error = p.lookup->error.empty() ? "no address" : p.lookup->error;
        p.lookup.reset();
        refuse(p, 502, error);
        return;
    }
    p.addrs = std::move(p.lookup->addrs);
    p.lookup.reset();
    p.stage = Pending::Connecting;
    tryNextAddress(p);
}

void ConnectProxy::Impl::tryNextAddress(Pending &p)
{
    while (p.addrIndex < p.addrs.size()) {
        const sockaddr_storage &sa = p.addrs[p.addrIndex];
        const socklen_t len = sa.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        if (p.sfd >= 0) close(p.sfd);
        p.sfd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p.sfd < 0) {
            p.lastConnectError = errno;
            break;
        }
        if (connect(p.sfd, reinterpret_cast<const sockaddr *>(&sa), len) == 0 || errno == EINPROGRESS)
            return; // the loop waits for it to be writable
        p.lastConnectError = errno;
        ++p.addrIndex;
    }
    refuse(p, 502,
           "cannot connect to " + p.request.authority + ": " +
               std::strerror(p.lastConnectError ? p.lastConnectError : ECONNREFUSED));
}

void ConnectProxy::Impl::loop()
{
    std::vector<pollfd> fds;
    std::vector<Pending *> owners;
    while (!stopping.load()) {
        fds.clear();
        owners.clear();
        fds.push_back({wakePipe[0], POLLIN, 0});
        const bool acceptPaused = steadyNowNs() < acceptPausedUntil;
        fds.push_back({acceptPaused ? -1 : listenFd, POLLIN, 0});
        std::int64_t next = acceptPaused ? acceptPausedUntil : INT64_MAX;
        bool lookups = false;
        for (Pending &p : handshakes) {
            pollfd f{-1, 0, 0};
            switch (p.stage) {
            case Pending::Reading:
            case Pending::Lingering:
                f = {p.cfd, POLLIN, 0};
                break;
            case Pending::Resolving:
                lookups = true;
                break;
            case Pending::Connecting:
                f = {p.sfd, POLLOUT, 0};
                break;
            case Pending::Answering:
                f = {p.cfd, POLLOUT, 0};
                break;
            }
            fds.push_back(f);
            owners.push_back(&p);
            next = std::min(next, p.deadline);
        }
        int timeout = -1;
        if (next != INT64_MAX)
            timeout = int(std::clamp<std::int64_t>((next - steadyNowNs()) / 1'000'000 + 1, 0, 60'000));
        if (lookups) timeout = timeout < 0 ? kLookupPollMs : std::min(timeout, kLookupPollMs);
        if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
        if (fds[0].revents) {
            char drain[64];
            while (read(wakePipe[0], drain, sizeof drain) > 0) {
            }
        }
        const std::int64_t now = steadyNowNs();
        for (size_t i = 0; i < owners.size(); ++i) {
            Pending &p = *owners[i];
            const short r = fds[2 + i].revents;
            if (p.done) continue;
            switch (p.stage) {
            case Pending::Reading:
                if (r)
                    readHead(p);
                else if (now >= p.deadline)
                    refuse(p, 408,
                           "the CONNECT request was not complete within " + seconds(limits.headTimeoutMs));
                break;
            case Pending::Resolving:
                resolved(p);
                if (p.stage == Pending::Resolving && now >= p.deadline)
                    refuse(p, 504,
                           "timed out looking up " + p.request.target.host + " after " +
                               seconds(limits.connectTimeoutMs));
                break;
            case Pending::Connecting:
                if (r) {
                    int soerr = 0;
                    socklen_t len = sizeof soerr;
                    getsockopt(p.sfd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                    if (soerr != 0) {
                        p.lastConnectError = soerr;
                        ++p.addrIndex;
                        tryNextAddress(p);
                        break;
                    }
                    p.status = 200;
                    p.answer = "HTTP/1.1 200 Connection Established\r\n\r\n";
                    p.stage = Pending::Answering;
                    flushAnswer(p);
                } else if (now >= p.deadline) {
                    refuse(p, 504,
                           "timed out connecting to " + p.request.authority + " after " +
                               seconds(limits.connectTimeoutMs));
                }
                break;
            case Pending::Answering:
                if (r)
                    flushAnswer(p);
                else if (now >= p.deadline)
                    finish(p);
                break;
            case Pending::Lingering: {
                char drain[4096];
                ssize_t n = 1;
                if (r)
                    while ((n = recv(p.cfd, drain, sizeof drain, 0)) > 0) {
                    }
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                    now >= p.deadline)
                    finish(p);
                break;
            }
            }
        }
        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN)) acceptAll();
        handshakes.remove_if([](const Pending &p) { return p.done; });
        // Counted before the notes go: a sink that waits for the model holds them all that time.
        size_t held = heapbytes::block(fds.capacity() * sizeof(pollfd)) +
                      heapbytes::block(owners.capacity() * sizeof(Pending *));
        for (const Pending &p : handshakes)
            held += handshakeBytes(p);
        heldBytes.store(held + heapbytes::batch(notes), std::memory_order_relaxed);
        if (!notes.empty()) sink(std::exchange(notes, {}));
        heldBytes.store(held, std::memory_order_relaxed);
        pending = handshakes.size();
        if (pending > peakPending) peakPending = pending.load();
    }
    for (Pending &p : handshakes) {
        if (p.stage == Pending::Reading || p.stage == Pending::Resolving || p.stage == Pending::Connecting)
            note(p, p.request.state == ConnectRequest::Complete ? p.request.authority : "(none)",
                 "capture stopped during the CONNECT handshake");
        finish(p);
    }
    handshakes.clear();
    pending = 0;
    heldBytes.store(heapbytes::batch(notes), std::memory_order_relaxed);
    if (!notes.empty()) sink(std::exchange(notes, {}));
    heldBytes.store(0, std::memory_order_relaxed);
}

} // namespace rpcscope
