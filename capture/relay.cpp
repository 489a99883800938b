#include "relay.h"

#include "decoderthread.h"
#include "relayloop.h"
#include "tlsrelayloop.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

struct Relay::Impl
{
    DecoderLimits limits;
    bool decoding = true;
    bool kernelTimes = true;
    std::string label;
    std::shared_ptr<FaultSet> faults;
    HostPort listenAddr;
    // Declared in this order so that the loop, which pushes to the decoder thread, goes first.
    DecoderThread decoder;
    RelayLoop loop{decoder};
    TlsInterceptOptions tls;
    std::unique_ptr<TlsRelayLoop> tlsLoop; // instead of loop, with TLS interception
    // The TLS loops' read counts, kept past stop() as the plain loop's are.
    std::uint64_t tlsStamped = 0, tlsReadTimed = 0;
};

namespace {
std::int64_t cpuNs(std::thread::native_handle_type thread)
{
    clockid_t clock;
    timespec ts{};
    if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
} // namespace

Relay::Relay() : d(std::make_unique<Impl>()) {}

Relay::~Relay()
{
    stop();
}

void Relay::setDecoderLimits(const DecoderLimits &limits)
{
    d->limits = limits;
}

void Relay::shareDecoderHeld(std::shared_ptr<SharedDecoderHeld> held)
{
    d->decoder.shareHeld(std::move(held));
}

std::int64_t Relay::threadCpuNs() const
{
    if (!d->loop.running() || !d->decoder.running()) return -1;
    const std::int64_t io = cpuNs(d->loop.nativeHandle());
    const std::int64_t decoder = io < 0 ? -1 : cpuNs(d->decoder.nativeHandle());
    return decoder < 0 ? -1 : io + decoder;
}

void Relay::setKernelTimestamps(bool on)
{
    d->kernelTimes = on;
}

std::uint64_t Relay::kernelStampedReads() const
{
    return d->loop.kernelStampedReads() + d->tlsStamped + (d->tlsLoop ? d->tlsLoop->kernelStampedReads() : 0);
}

std::uint64_t Relay::readTimedReads() const
{
    return d->loop.readTimedReads() + d->tlsReadTimed + (d->tlsLoop ? d->tlsLoop->readTimedReads() : 0);
}

void Relay::setDecoding(bool on)
{
    d->decoding = on;
}

void Relay::setFaults(std::shared_ptr<FaultSet> faults)
{
    d->faults = std::move(faults);
}

void Relay::setLabel(const std::string &label)
{
    d->label = label;
}

void Relay::setTlsIntercept(const TlsInterceptOptions &options)
{
    d->tls = options;
}

bool Relay::start(const HostPort &listen, const HostPort &target, Sink sink, std::string *error)
{
    std::string dummy;
    std::string &err = error ? *error : dummy;
    if (d->loop.running() || d->tlsLoop) {
        err = "relay already running";
        return false;
    }
    const int fd = listenSocket(listen, &err);
    if (fd < 0) return false;
    AddrInfo targetInfo;
    if (!resolve(target, false, &targetInfo, &err)) {
        close(fd);
        return false;
    }
    std::vector<sockaddr_storage> targetAddrs;
    for (addrinfo *a = targetInfo.list; a; a = a->ai_next) {
        sockaddr_storage sa{};
        std::memcpy(&sa, a->ai_addr, a->ai_addrlen);
        targetAddrs.push_back(sa);
    }
    setNonBlocking(fd);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
    d->listenAddr.host = listen.host;
    d->listenAddr.port = ss.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
    if (d->tls.enabled) {
        auto tls = std::make_unique<TlsRelayLoop>(d->decoder);
        if (!tls->open(fd, target, std::move(targetAddrs), d->tls, d->decoding, &err)) {
            close(fd);
            return false;
        }
        d->tlsLoop = std::move(tls);
        d->decoder.start(std::move(sink), d->limits, d->label);
        d->tlsLoop->setFaults(d->faults, d->label);
        d->tlsLoop->setKernelTimestamps(d->kernelTimes);
        d->tlsLoop->run();
        return true;
    }
    if (!d->loop.open(fd, target, std::move(targetAddrs), d->decoding, &err)) {
        close(fd);
        return false;
    }
    d->decoder.start(std::move(sink), d->limits, d->label);
    d->loop.setFaults(d->faults, d->label);
    d->loop.setKernelTimestamps(d->kernelTimes);
    d->loop.setMaxQueuedBytes(d->limits.maxRelayQueuedBytes);
    d->loop.run();
    return true;
}

bool Relay::startTunnels(const HostPort &target, Sink sink, std::string *error)
{
    std::string dummy;
    std::string &err = error ? *error : dummy;
    if (d->loop.running() || d->tlsLoop) {
        err = "relay already running";
        return false;
    }
    // With interception, a tunnel whose client speaks TLS goes to the TLS loop; one that speaks h2c is handed
    // on to the plain loop, unread, and relayed as without interception. Both push to the one decoder.
    std::unique_ptr<TlsRelayLoop> tls;
    if (d->tls.enabled) {
        tls = std::make_unique<TlsRelayLoop>(d->decoder);
        if (!tls->open(-1, target, {}, d->tls, d->decoding, &err)) return false;
    }
    if (!d->loop.open(-1, target, {}, d->decoding, &err)) return false;
    d->decoder.start(std::move(sink), d->limits, d->label);
    d->loop.setFaults(d->faults, d->label);
    d->loop.setKernelTimestamps(d->kernelTimes);
    d->loop.setMaxQueuedBytes(d->limits.maxRelayQueuedBytes);
    d->loop.run();
    if (tls) {
        tls->setPlainHandoff([this](int cfd, int sfd, std::string peer, std::string early, std::int64_t at) {
            d->loop.adopt(cfd, sfd, std::move(peer), std::move(early), at);
        });
        d->tlsLoop = std::move(tls);
        d->tlsLoop->setFaults(d->faults, d->label);
        d->tlsLoop->setKernelTimestamps(d->kernelTimes);
        d->tlsLoop->run();
    }
    return true;
}

void Relay::adopt(int clientFd, int serverFd, const std::string &clientPeer, std::string early,
                  std::int64_t earlyAt)
{
    if (d->tlsLoop)
        d->tlsLoop->adopt(clientFd, serverFd, clientPeer, std::move(early), earlyAt);
    else
        d->loop.adopt(clientFd, serverFd, clientPeer, std::move(early), earlyAt);
}

void Relay::stop()
{
    if (!d->tlsLoop && !d->loop.running()) return;
    // The TLS loop first: it may hand a tunnel to the plain loop until its threads are joined.
    if (d->tlsLoop) {
        d->tlsLoop->stop();
        d->tlsStamped += d->tlsLoop->kernelStampedReads();
        d->tlsReadTimed += d->tlsLoop->readTimedReads();
        d->tlsLoop.reset();
    }
    // The loop's last chunks (every connection's close) reach the decoder thread before it drains and stops.
    if (d->loop.running()) d->loop.stop();
    d->decoder.stop();
}

bool Relay::sync(std::chrono::milliseconds timeout)
{
    return d->decoder.sync(timeout);
}

HostPort Relay::listenAddress() const
{
    return d->listenAddr;
}

std::uint64_t Relay::bytesRelayed() const
{
    return (d->tlsLoop ? d->tlsLoop->bytesRelayed() : 0) + d->loop.bytesRelayed();
}

std::uint64_t Relay::bytesSpliced() const
{
    return d->loop.bytesSpliced();
}

size_t Relay::decoderBacklog() const
{
    return d->decoder.backlog();
}

size_t Relay::peakDecoderBacklog() const
{
    return d->decoder.peakBacklog();
}

bool Relay::decoderBehind() const
{
    return d->decoder.behind();
}

size_t Relay::memoryBytes() const
{
    return d->loop.memoryBytes() + d->decoder.memoryBytes() + (d->tlsLoop ? d->tlsLoop->memoryBytes() : 0);
}

int Relay::openConnections() const
{
    return (d->tlsLoop ? d->tlsLoop->openConnections() : 0) + d->loop.openConnections();
}

} // namespace rpcscope
