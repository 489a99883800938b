#pragma once

#include "decoderlimits.h"
#include "events.h"
#include "hostport.h"
#include "tlsintercept.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rpcscope {

class FaultSet;

// An HTTP/1.1 CONNECT proxy (RFC 9110 section 9.3.6) in front of any number of servers: a client that reads
// grpc_proxy or https_proxy reaches its real target through it without being re-pointed. Each target becomes
// a hop of its own, a Relay labelled by the authority and made on first use, so that after the 200 the tunnel
// is relayed and decoded exactly as a direct hop would be. A request it cannot serve is answered with a
// status and a reason in the body, and the timeline gets the same reason as a connection note.
class ConnectProxy
{
public:
    using Sink = std::function<void(EventBatch &&)>;

    // What one unfinished handshake may take; a client beyond them gets an answer and is closed.
    struct Limits
    {
        size_t maxHeadBytes = 8192;    // request line + header section (431 beyond)
        int headTimeoutMs = 10'000;    // to send the whole head from connecting (408 after)
        int connectTimeoutMs = 10'000; // to reach the target (504 after)
        size_t maxPending = 256;       // handshakes at once; the oldest unfinished one gives way (503)
        size_t maxTargets = 64;        // distinct targets, each a hop with its own threads (503 beyond)
    };

    ConnectProxy();
    ~ConnectProxy();
    ConnectProxy(const ConnectProxy &) = delete;
    ConnectProxy &operator=(const ConnectProxy &) = delete;

    // Before start(). Each target's relay decodes under these limits, except maxDecoderHeldBytes: that one is
    // the proxy's, for what all its targets' decoders hold together.
    void setDecoderLimits(const DecoderLimits &limits);
    void setLimits(const Limits &limits);
    // Names the proxy's own connection notes (refused requests) on the timeline.
    void setLabel(const std::string &label);
    // Connection fault rules for the tunnels; a rule's hop is a target's authority ("api.internal:50051").
    void setFaults(std::shared_ptr<FaultSet> faults);
    // TLS interception in the tunnels, as on a direct hop: a tunnel whose client starts TLS gets a
    // certificate minted for its SNI (or else the CONNECT authority's host), and the proxy opens TLS to the
    // target over the connection it made for the CONNECT. A tunnel whose client speaks h2c is relayed as
    // without it. start() checks the CA and the target's trust first.
    void setTlsIntercept(const TlsInterceptOptions &options);

    // Binds and listens before returning.
    bool start(const HostPort &listen, Sink sink, std::string *error);
    // Answers nothing more: unfinished handshakes are closed (each a note), then every tunnel.
    void stop();

    HostPort listenAddress() const;
    // Tunnels open now, plus handshakes not yet finished.
    int openConnections() const;
    // The targets that became hops so far, in the order they did.
    std::vector<std::string> targets() const;
    // Handshakes unfinished now and at most so far: what a flood of half-sent requests makes it hold.
    size_t pendingHandshakes() const;
    size_t peakPendingHandshakes() const;
    // What the proxy holds, as the allocator counts it: each unfinished handshake (the request head read so
    // far, its answer, the target's addresses, a lookup's result), the notes not yet handed to the sink, and
    // every target's relay with its tunnels (Relay::memoryBytes(): what a client sent after its CONNECT
    // while its tunnel starts, too). A capture's budget counts it, as it counts a direct hop's relay. Any
    // thread; the handshakes' part is refreshed every round of the proxy's loop.
    size_t memoryBytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope
