#pragma once

#include "decoderlimits.h"
#include "events.h"
#include "faultset.h"
#include "hostport.h"
#include "tlsintercept.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rpcscope {

// A TCP relay that forwards both directions byte-for-byte and hands copies of what it read to a decoder
// thread. Small reads are copied through a buffer; a direction carrying a stream is spliced from socket to
// socket through a pipe and duplicated for the decoder with tee(2), so the decoder's copy is the only one.
// The relay thread never waits for the decoder: if the decoder falls too far behind, decoding of that
// connection stops (marked undecodable) while relaying goes on.
class Relay
{
public:
    // Called on the decoder thread with batches at most ~16 ms old.
    using Sink = std::function<void(EventBatch &&)>;

    Relay();
    ~Relay();
    Relay(const Relay &) = delete;
    Relay &operator=(const Relay &) = delete;

    // Applies to connections accepted after the next start().
    void setDecoderLimits(const DecoderLimits &limits);
    // Weighs what this relay's decoder holds together with every other decoder given the same `held`
    // against the one DecoderLimits::maxDecoderHeldBytes (a CONNECT proxy's targets share one). Null: its
    // own. Before start().
    void shareDecoderHeld(std::shared_ptr<SharedDecoderHeld> held);
    // Off: relay only, nothing decoded (connections still open and close on the timeline). The benchmark's
    // baseline for what decoding costs. Applies to connections accepted after the next start().
    void setDecoding(bool on);
    // Names this relay's connections on the timeline (for example the hop "A->B" of a chain).
    void setLabel(const std::string &label);
    // Fault rules: those for this relay's hop (by its label) act on its connections; null, none. Applies to
    // the next start(), from which their time windows count. Each time a rule acts it is counted in `faults`
    // and noted on the connection ("fault: blackhole (rule 2)"). With TLS interception only the stream rules
    // act (on the decrypted HTTP/2).
    void setFaults(std::shared_ptr<FaultSet> faults);
    // TLS interception (tlsrelayloop.h) instead of the byte-for-byte relay. Applies from the next start().
    void setTlsIntercept(const TlsInterceptOptions &options);

    // Wire times from the kernel's receive timestamps (on by default; kernelrxtime.h) or, off, from when the
    // relay thread read. Applies from the next start().
    void setKernelTimestamps(bool on);

    // Binds and listens before returning, so the port is accepting when this returns true.
    bool start(const HostPort &listen, const HostPort &target, Sink sink, std::string *error);
    // A relay without a listener, for connections handed over by adopt() (a CONNECT proxy's tunnels to
    // `target`). With TLS interception set, a tunnel whose client starts TLS is intercepted; one that starts
    // anything else is relayed as without it.
    bool startTunnels(const HostPort &target, Sink sink, std::string *error);
    // Any thread, while running: relays and decodes an already connected client and server pair; takes both
    // descriptors. `early`: what the client sent after its CONNECT, read at `earlyAt`; it goes first.
    void adopt(int clientFd, int serverFd, const std::string &clientPeer, std::string early = {},
               std::int64_t earlyAt = 0);
    // Closes every connection (emitting their close events), drains the decoder and flushes the sink.
    void stop();
    // Waits (up to `timeout`) until the events of every byte relayed so far are with the sink
    // (DecoderThread::sync()); false on timeout.
    bool sync(std::chrono::milliseconds timeout);

    HostPort listenAddress() const;
    std::uint64_t bytesRelayed() const;
    // Of those, the bytes relayed without passing through user space (splice), as streams are; the decoder
    // still gets a copy of each.
    std::uint64_t bytesSpliced() const;
    int openConnections() const;
    // Bytes read but not yet decoded, now and at most so far: what the relay holds for the decoder.
    size_t decoderBacklog() const;
    size_t peakDecoderBacklog() const;
    // Whether that backlog has made the capture count as behind, until decoded (threadpriority.h).
    bool decoderBehind() const;
    // What the relay holds: its loop's buffers (RelayLoop::memoryBytes()), its decoder's
    // (DecoderThread::memoryBytes()) and, with TLS interception, its intercepted connections' (their TLS
    // sessions, buffers and threads) and the tunnels its TLS loop has not taken yet
    // (TlsRelayLoop::memoryBytes()).
    // A capture's budget counts it. Any thread.
    size_t memoryBytes() const;
    // Reads whose time is the kernel's receive timestamp, and reads timed when the relay read them (spliced
    // reads, timestamps off or not given by the platform).
    std::uint64_t kernelStampedReads() const;
    std::uint64_t readTimedReads() const;
    // CPU time the relay's two threads (I/O and decoder) have used so far, in ns; -1 when not running.
    std::int64_t threadCpuNs() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope
