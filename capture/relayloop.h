#pragma once

#include "connectionfault.h"
#include "cpusteering.h"
#include "decoderthread.h"
#include "faultset.h"
#include "hostport.h"
#include "kernelrxtime.h"
#include "streamfaults.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace rpcscope {

// The relay's I/O thread: accepts clients, connects each to the target and forwards both directions
// byte-for-byte, by recv/send or, for a direction carrying a stream, by splice through a pipe. A copy of what
// it reads goes to the decoder thread (tee'd into a handoff pipe when spliced); it never waits for that
// thread.
class RelayLoop
{
public:
    explicit RelayLoop(DecoderThread &decoder) : m_decoder(decoder) {}
    ~RelayLoop() { stop(); }
    RelayLoop(const RelayLoop &) = delete;
    RelayLoop &operator=(const RelayLoop &) = delete;

    // Takes a listening socket and the target's resolved addresses; false (with the reason) when the loop's
    // wake-up pipe cannot be made. Nothing runs before run().
    bool open(int listenFd, const HostPort &target, std::vector<sockaddr_storage> targetAddrs, bool decoding,
              std::string *error);
    void run();
    // The connection fault rules of `faults` for the hop `hopLabel`, for connections accepted after run();
    // their time windows count from now. Null or no such rule: nothing is looked at per connection.
    void setFaults(std::shared_ptr<FaultSet> faults, const std::string &hopLabel);
    // Copied reads take their time from the kernel's receive timestamp (kernelrxtime.h) where it gives one;
    // off, or for spliced reads, the read time. For connections accepted after this; before run().
    void setKernelTimestamps(bool on) { m_kernelTimes = on; }
    // What the loop may queue for slow peers across all its connections (what a peer has not taken yet,
    // beyond the kernel's buffers): past it a direction with bytes waiting is not read until they are
    // taken, so the sender is held back by TCP flow control. One read (256 KiB) may go beyond it. Before
    // run(); by default only each direction's own bound (4 MiB) holds.
    void setMaxQueuedBytes(size_t bytes) { m_maxQueued = bytes; }
    // Any thread: relays an already connected pair (a CONNECT tunnel whose handshake the proxy did) as if it
    // had been accepted and connected here. The loop takes ownership of both descriptors. `early`: bytes the
    // client sent right after its CONNECT, read at `earlyAt`, which go to the server (and the decoder) first.
    void adopt(int clientFd, int serverFd, std::string clientPeer, std::string early = {},
               std::int64_t earlyAt = 0);
    // Connection ids are unique across every relay of the process, and so across a capture's hops.
    static std::uint32_t newConnectionId();
    // Closes every connection (their close events go to the decoder), ends the thread and closes the
    // listener.
    void stop();
    bool running() const { return m_thread.joinable(); }
    std::thread::native_handle_type nativeHandle() { return m_thread.native_handle(); }

    std::uint64_t bytesRelayed() const { return m_bytes.load(); }
    std::uint64_t bytesSpliced() const { return m_splicedBytes.load(); }
    int openConnections() const { return m_open.load(); }
    // What the loop holds (read buffer, connections, bytes queued for a slow peer), as the allocator counts
    // it, refreshed every round of the loop; and the tunnels handed over by adopt() that it has not taken
    // yet (what their clients sent after the CONNECT). Any thread.
    size_t memoryBytes() const
    {
        return m_heldBytes.load(std::memory_order_relaxed) + m_adoptedBytes.load(std::memory_order_relaxed);
    }
    // Reads whose event time is the kernel's receive timestamp, and reads timed when read. Any thread.
    std::uint64_t kernelStampedReads() const { return m_kernelStamped.load(std::memory_order_relaxed); }
    std::uint64_t readTimedReads() const { return m_readTimed.load(std::memory_order_relaxed); }

private:
    // One direction of a connection, as in TCP's half-close: what was read from one side and is on its way to
    // the other.
    struct HalfConnection
    {
        // The time given to this side's last read: times never go back within a direction, though a kernel
        // receive time (copied reads) and a read time (spliced reads) may come out of order.
        std::int64_t lastNs = 0;
        bool eof = false; // the source side sent EOF
        // The source side reset while the relay was still connecting: the reset's error was taken by
        // SO_ERROR, so the EOF that follows what it had sent is that reset.
        bool resetByPeer = false;
        bool shut = false;  // ... and it was passed on (shutdown(SHUT_WR) of the destination)
        std::string queued; // read with recv(), not yet taken by the destination
        size_t queuedOff = 0;
        int pipe[2] = {-1, -1}; // spliced in, not yet spliced out: inPipe bytes
        int copy[2] = {-1, -1}; // the decoder's copy when no handoff pipe is free: tee'd, read back at once
        size_t inPipe = 0;
        size_t pipeCapacity = 0;
        bool splicing = false;     // the last read was large enough to splice the next one
        bool spliceFailed = false; // no pipes for this direction: it always copies
        size_t pending() const { return queued.size() - queuedOff + inPipe; }
        // More is read only while less than `most` waits for the destination. A spliced direction reads only
        // into an empty pipe, because tee duplicates a pipe from its start.
        bool wantsRead(size_t most) const;
    };

    struct Conn
    {
        std::uint32_t id = 0;
        int cfd = -1;
        int sfd = -1;
        bool connecting = true;
        HalfConnection up;   // client -> server
        HalfConnection down; // server -> client
        bool decode = true;
        size_t decoderBytes = 0; // handed to the decoder so far (who is flooding it when it falls behind)
        bool dead = false;
        bool reset = false; // one side reset or broke the connection: the other side gets a reset too
        // After a reset: the side still open (the survivor) is being given what was read from the other side
        // before it reset; then it gets the reset. Nothing more is read from it.
        bool draining = false;
        bool drainToClient = false;
        std::int64_t drainUntil = 0; // past this the survivor is reset, whatever it has not taken
        std::int64_t resetAt = 0;    // when the reset was noticed: the connection's close time
        size_t addressIndex = 0;     // which of the target's addresses is being tried
        std::string closeReason;     // set where the connection's end is first noticed
        int lastConnectError = 0;
        std::unique_ptr<ConnectionFault> fault; // null unless a fault rule chose this connection
        // What the loop's epoll set watches for on each socket (0: not in the set), and on which descriptor:
        // a socket closed elsewhere left the set with its file, so a changed descriptor means nothing is
        // registered for it.
        std::uint32_t cWatch = 0, sWatch = 0;
        int cWatchFd = -1, sWatchFd = -1;
        short cEvents = 0, sEvents = 0; // this round's events (poll bits)
        bool watched = false;           // in the set before this round's wait (not accepted during it)
        // Null unless the hop has a stream fault rule: then both directions are framed and rewritten
        // (relayloopstreamfaults.cpp) instead of relayed byte for byte.
        std::unique_ptr<StreamFaults> streams;
    };

    void loop();
    // Brings the epoll set in line with what the loop wants from `fd` this round (level-triggered, like
    // poll); `tag` says whose socket it is.
    void watch(int fd, int &watchedFd, std::uint32_t &watched, std::uint32_t want, std::uint64_t tag);
    // Takes `fd` out of the set before it is closed (its number may come back at once for another socket).
    void unwatch(int &watchedFd, std::uint32_t &watched);
    void acceptAll();
    void takeAdopted();
    void startConnect(Conn &c);
    bool readSide(Conn &c, bool fromClient);
    bool copySide(Conn &c, bool fromClient, size_t limit = SIZE_MAX, size_t *got = nullptr);
    bool spliceSide(Conn &c, bool fromClient);
    bool openPipes(HalfConnection &half, bool withCopy);
    void closePipes(HalfConnection &half);
    void toDecoder(Conn &c, RelayChunk &&chunk);
    std::array<int, 2> handoffPipe();
    void copyForDecoder(Conn &c, bool fromClient, std::int64_t t, size_t n);
    // A read (recv or splice) returned n <= 0: false when the connection is over.
    bool readEnded(Conn &c, bool fromClient, ssize_t n);
    bool writeFailed(Conn &c, bool toClient, int err);
    bool flush(Conn &c, bool toClient);
    // One side reset (or cannot be written): it is closed at once, and the other side, `toClient` or the
    // server, is drained and then reset (drained()).
    void passReset(Conn &c, bool toClient);
    // While draining: true once the survivor has everything (or the time is up) and can be reset.
    bool drained(Conn &c, std::int64_t now) const;
    void closeConn(Conn &c, const std::string &reason);
    // Fault rules (relayloopfaults.cpp), looked at only for a connection a rule chose (c.fault).
    void refreshFaultRules(); // takes the rules anew when they have changed
    void chooseFault(Conn &c, std::int64_t now);
    // What to poll for a faulted connection, and by when to wake.
    void faultPoll(Conn &c, std::int64_t now, short &ce, short &se, int &timeout);
    // Starts the rule when its time has come; true when it dealt with the connection's events itself.
    bool faultEvents(Conn &c, short cr, short sr, std::int64_t now);
    void blackholeRead(Conn &c, bool fromClient);
    // Stream fault rules (relayloopstreamfaults.cpp), only for a connection with c.streams.
    bool streamRead(Conn &c, bool fromClient);
    void streamEarly(Conn &c, std::string early, std::int64_t at);
    // Hands on what the rewriter wrote for each side (and its notes); false when the connection is over.
    bool streamOutput(Conn &c, std::int64_t t);
    void streamPoll(Conn &c, std::int64_t now, int &timeout);
    bool streamTimers(Conn &c, std::int64_t now);

    DecoderThread &m_decoder;
    HostPort m_target;
    std::vector<sockaddr_storage> m_targetAddrs;
    bool m_decoding = true;
    int m_listenFd = -1;
    int m_wakePipe[2] = {-1, -1};
    // One epoll set for the loop's lifetime instead of a poll() list rebuilt every round: a unary call wakes
    // the loop about twice, and each poll() re-armed every socket, the wake pipe and the listener.
    int m_epoll = -1;
    bool m_listenWatched = false;
    std::atomic<bool> m_stopping{false};
    std::thread m_thread;
    std::atomic<std::uint64_t> m_bytes{0};
    std::atomic<std::uint64_t> m_splicedBytes{0};
    std::atomic<int> m_open{0};
    std::atomic<size_t> m_heldBytes{0};
    size_t m_maxQueued = SIZE_MAX; // setMaxQueuedBytes()
    size_t m_queued = 0;           // what every connection's queues held at the loop's last round
    std::atomic<std::uint64_t> m_kernelStamped{0};
    std::atomic<std::uint64_t> m_readTimed{0};
    bool m_kernelTimes = true;

    struct Adopted
    {
        int cfd;
        int sfd;
        std::string peer;
        std::string early;
        std::int64_t earlyAt;
    };
    std::mutex m_adoptMutex;
    std::vector<Adopted> m_adopted;        // handed over by adopt(), not yet taken by the loop
    std::atomic<size_t> m_adoptedBytes{0}; // what m_adopted holds

    // The loop's thread only.
    std::list<Conn> m_conns;
    std::vector<char> m_readBuffer;
    KernelRxTime m_rxTime;
    CpuSteering m_steering; // the loop's thread on its client's core (cpusteering.h)
    std::int64_t m_acceptPausedUntil = 0;
    int m_splicedDirections = 0;
    int m_handoffPipes = 0; // made so far (closed by the decoder thread's stop)
    std::shared_ptr<FaultSet> m_faults;
    std::string m_faultHop;
    // The rules as last seen (a rule's index stays valid in every later snapshot: rules are never removed),
    // and which of them, switched on, act on this hop's connections.
    std::shared_ptr<const FaultSet::Rules> m_faultRules;
    std::vector<size_t> m_connectionRules;
    bool m_streamRules = false; // a stream rule (switched on or not) names this hop: connections are framed
    std::int64_t m_faultOrigin = 0; // where their time windows start
    std::mt19937_64 m_faultRandom{std::random_device{}()};
};

} // namespace rpcscope
