#pragma once

#include "decoderthread.h"
#include "faultset.h"
#include "hostport.h"
#include "tlsintercept.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace rpcscope {

class RpcscopeCa;

// A hop with TLS interception: a thread per connection terminates the client's TLS with a certificate the
// rpcscope CA mints for its SNI, opens TLS to the target (during the client's handshake, so that a target
// that fails verification fails the client's handshake with an alert), and relays the plaintext between the
// two, handing a copy to the decoder thread like the plain relay does. Separate from RelayLoop: TLS records
// need user space in both directions, so there is nothing to splice.
class TlsRelayLoop
{
public:
    explicit TlsRelayLoop(DecoderThread &decoder);
    ~TlsRelayLoop();
    TlsRelayLoop(const TlsRelayLoop &) = delete;
    TlsRelayLoop &operator=(const TlsRelayLoop &) = delete;

    // Loads (or makes) the CA and the target's trust; false with the reason. Nothing runs before run().
    // listenFd -1: no listener, only tunnels handed over by adopt().
    bool open(int listenFd, const HostPort &target, std::vector<sockaddr_storage> targetAddrs,
              const TlsInterceptOptions &options, bool decoding, std::string *error);
    void run();

    // A CONNECT tunnel's client and target, already connected (the target is `target` of open()). Its first
    // byte decides: a TLS record is intercepted; anything else (a client speaking h2c through the tunnel) is
    // given to the plain handoff unread, with `early` (what the client sent after its CONNECT) still to go
    // first. Any thread, while running; takes both descriptors.
    using PlainHandoff = std::function<void(int clientFd, int serverFd, std::string clientPeer,
                                            std::string early, std::int64_t earlyAt)>;
    void setPlainHandoff(PlainHandoff handoff) { m_plainHandoff = std::move(handoff); }
    // Decrypted bytes take the kernel's receive time of the TLS records they came in (kernelrxtime.h), as the
    // plain relay's reads do; off, the time they were decrypted. Before run().
    void setKernelTimestamps(bool on) { m_kernelTimes = on; }
    // Reads of decrypted bytes whose time came from the kernel, and those that fell back to the read time.
    std::uint64_t kernelStampedReads() const { return m_kernelStamped.load(std::memory_order_relaxed); }
    std::uint64_t readTimedReads() const { return m_readTimed.load(std::memory_order_relaxed); }
    void adopt(int clientFd, int serverFd, std::string clientPeer, std::string early = {},
               std::int64_t earlyAt = 0);
    // The fault rules of `faults` for the hop `hopLabel` act on connections served after this, as on the
    // plain relay's; their time windows count from now. Stream rules act on the decrypted HTTP/2
    // (streamfaults.h); connection rules on both TCP connections (connectionfault.h), a bandwidth limit
    // counting decrypted bytes. Before run().
    void setFaults(std::shared_ptr<FaultSet> faults, const std::string &hopLabel);
    // Ends every connection (their close events go to the decoder) and joins the threads.
    void stop();
    bool running() const { return m_thread.joinable(); }

    std::uint64_t bytesRelayed() const { return m_bytes.load(); }
    int openConnections() const { return m_open.load(); }
    // The tunnels handed over by adopt() not yet taken by the accept thread (what their clients sent after
    // the CONNECT), as the allocator counts it. Any thread.
    size_t adoptedBytes() const { return m_adoptedBytes.load(std::memory_order_relaxed); }
    // What the intercepted connections hold: per connection its two TLS sessions (OpenSSL's record buffers
    // and state, estimated from their sizes), its relay buffers and what waits in them, and its thread's
    // stack pages; with the tunnels not taken yet. A capture's budget counts it. Any thread.
    size_t memoryBytes() const { return adoptedBytes() + m_connBytes.load(std::memory_order_relaxed); }
    // The estimate for one TLS session while it relays (tlsrelayloop.cpp says how it is made). A connection
    // idle for kIdleReleaseMs gives back its sessions' record buffers and its relay buffers until its next
    // bytes: then each session holds only its state, idleSessionBytes().
    static size_t tlsSessionBytes();
    static size_t idleSessionBytes();
    static constexpr int kIdleReleaseMs = 1000;

private:
    struct Conn;
    // A connection to serve: accepted (sfd -1, connected during the client's handshake) or a tunnel's.
    struct Incoming
    {
        int cfd = -1;
        int sfd = -1;
        std::string peer;
        std::string early;
        std::int64_t earlyAt = 0;
        bool tunnel = false;
    };
    struct Worker
    {
        std::thread thread;
        std::atomic<bool> done{false};
    };

    void acceptLoop();
    void spawn(Incoming in);
    void serve(Incoming in);
    // A tunnel's first byte, waited for (stop() ends the wait): true for a TLS handshake record.
    bool startsWithTls(const Incoming &in);
    // Called from the client handshake's ClientHello: connects and handshakes with the target, and picks the
    // certificate to show the client.
    int onClientHello(SSL *ssl, int *alert);
    bool connectTarget(Conn &c);
    bool handshakeTarget(Conn &c);
    void relay(Conn &c);
    // With stream fault rules: hands on what the connection's StreamFaults wrote; false when it must end.
    bool streamOutput(Conn &c, std::int64_t t, std::string &toServer, std::string &toClient);
    // A connection fault rule's time has come: it starts; false when it has ended the connection.
    bool startFault(Conn &c);
    // blackhole: drops whatever either side sends until the client leaves (or the capture stops).
    void blackhole(Conn &c);
    void push(RelayChunk &&chunk);
    void note(std::uint32_t conn, std::string text);
    void keylog(const char *line);
    void track(int fd, bool add);

    static int clientHelloCallback(SSL *ssl, int *alert, void *arg);
    static int alpnCallback(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                            const unsigned char *in, unsigned int inlen, void *arg);
    static void keylogCallback(const SSL *ssl, const char *line);

    DecoderThread &m_decoder;
    HostPort m_target;
    std::vector<sockaddr_storage> m_targetAddrs;
    TlsInterceptOptions m_options;
    bool m_decoding = true;
    std::unique_ptr<RpcscopeCa> m_ca;
    SSL_CTX *m_serverCtx = nullptr; // facing the client
    SSL_CTX *m_clientCtx = nullptr; // facing the target
    int m_listenFd = -1;
    int m_wakePipe[2] = {-1, -1};
    int m_adoptPipe[2] = {-1, -1}; // adopt() wakes the accept thread, which starts the tunnel's thread
    std::mutex m_adoptMutex;
    std::vector<Incoming> m_adopted;
    std::atomic<size_t> m_adoptedBytes{0}; // what m_adopted holds
    std::atomic<size_t> m_connBytes{0};    // what the connections being served hold (Conn::recount)
    // What connections gave back (idle, or closed) since the accept thread last trimmed the allocator.
    std::atomic<size_t> m_trimBytes{0};
    std::int64_t m_lastTrimNs = 0; // the accept thread's, as the two below
    size_t m_trimSeen = 0;         // m_trimBytes as it last saw it, since m_trimSeenNs
    std::int64_t m_trimSeenNs = 0;
    PlainHandoff m_plainHandoff;
    std::atomic<bool> m_stopping{false};
    std::thread m_thread;
    std::atomic<std::uint64_t> m_bytes{0};
    std::atomic<int> m_open{0};
    bool m_kernelTimes = true;
    std::atomic<std::uint64_t> m_kernelStamped{0};
    std::atomic<std::uint64_t> m_readTimed{0};

    std::mutex m_pushMutex; // DecoderThread::push expects one pushing thread at a time
    std::mutex m_keylogMutex;
    std::FILE *m_keylog = nullptr;
    std::mutex m_fdMutex;
    std::set<int> m_fds; // connection sockets, shut down by stop() to end their threads' blocking calls
    std::list<std::unique_ptr<Worker>> m_workers; // the accept thread's
    std::shared_ptr<FaultSet> m_faults;
    std::string m_faultHop;
    std::int64_t m_faultOrigin = 0;
    std::mutex m_randomMutex; // connection threads seed their StreamFaults from it
    std::mt19937_64 m_faultRandom{std::random_device{}()};
};

} // namespace rpcscope
