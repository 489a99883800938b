#include "tlsrelayloop.h"

#include "clock.h"
#include "connectionfault.h"
#include "cpusteering.h"
#include "heapbytes.h"
#include "kernelrxtime.h"
#include "relayloop.h"
#include "rpcscopeca.h"
#include "streamfaultoutput.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rpcscope {

namespace {
// A peer that stalls a handshake (or a connect) this long is given up.
constexpr int kHandshakeTimeoutMs = 10'000;
// OpenSSL's own suites and TLS 1.2 ciphers (DEFAULT), with AES-128-GCM moved first.
constexpr const char *kTls13Suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char *kTls12Ciphers = "ECDHE+AESGCM+AES128:ALL:!COMPLEMENTOFDEFAULT:!eNULL";
constexpr size_t kReadSize = 64 * 1024;
// A direction whose reads decrypt records this large is streaming: it reads ahead, and reads up to
// kBulkBurst records in a row before looking at the other direction (whose read would mostly find nothing).
constexpr size_t kBulkRecord = 8 * 1024;
constexpr int kBulkBurst = 4;
// A thread (and two TLS sessions) per connection: past this many at once a new client is turned away, with a
// note, so that a connection flood cannot exhaust threads or memory.
constexpr int kMaxConnections = 512;
// Connections that gave back this much (idle, or closed) have the allocator trimmed (acceptLoop).
constexpr size_t kTrimBytes = 4 << 20;
const char kTrustFix[] = "client does not trust the rpcscope CA: see `rpcscope-cli ca`";

// What a connection holds, for the capture's budget (memoryBytes()). OpenSSL allocates a record buffer to
// read and one to write per TLS session (ssl3_setup_read_buffer, ssl3_setup_write_buffer: the largest
// record's plaintext, its encryption overhead and header, aligned) and keeps them while the session relays
// (SSL_MODE_RELEASE_BUFFERS is not set: it would free and make them for every record); relay() gives them
// back when its connection has been idle for kIdleReleaseMs.
constexpr size_t kSslRecordBuffer = SSL3_RT_MAX_PLAIN_LENGTH + SSL3_RT_MAX_ENCRYPTED_OVERHEAD +
                                    2 * SSL3_RT_HEADER_LENGTH + SSL3_ALIGN_PAYLOAD - 1;
// A streaming direction's source session reads with a buffer this large: with read-ahead on, one read of
// the socket takes up to a burst's records instead of one. Each system call costs more than its bytes on a
// virtual machine, where these reads were a tenth of the relay thread's time.
constexpr size_t kBulkReadBuffer = kBulkBurst * kSslRecordBuffer;
// And its destination's records, written during a burst, go out in one send at its end (at most this many
// bytes wait) instead of one each.
constexpr size_t kCoalesceBytes =
    kBulkBurst * (SSL3_RT_MAX_PLAIN_LENGTH + SSL3_RT_MAX_ENCRYPTED_OVERHEAD + SSL3_RT_HEADER_LENGTH);
// Beside them, the SSL object (7.5 KB as SSL_new makes it, with OpenSSL 3.0), and after the handshake its
// keys, cipher contexts, session and the peer's certificate: measured at 48-51 KB a session with the two
// buffers, after a TLS 1.3 handshake and a record each way.
constexpr size_t kSslStateBytes = 16 * 1024;
// A thread serves each connection: the pages of its stack a handshake and the relay touch (measured as the
// stack mapping's resident size after a handshake).
constexpr size_t kThreadStackBytes = 16 * 1024;

std::string sslErrors()
{
    std::string s;
    while (const unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        if (!s.empty()) s += "; ";
        s += buf;
    }
    return s.empty() ? "connection closed" : s;
}

void setTimeouts(int fd, int ms)
{
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void setBlocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

std::string subjectOf(X509 *cert)
{
    if (!cert) return "(none)";
    BIO *bio = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio, &p);
    std::string s(p, size_t(n));
    BIO_free(bio);
    return s;
}

std::string alpnOf(SSL *ssl)
{
    const unsigned char *p = nullptr;
    unsigned int n = 0;
    SSL_get0_alpn_selected(ssl, &p, &n);
    return n ? std::string(reinterpret_cast<const char *>(p), n) : std::string("(none)");
}

// The ALPN wire list ("\x02h2...") of the protocols gRPC speaks that the client offered, h2 first.
std::string grpcAlpn(const std::vector<std::string> &offered)
{
    std::string wire;
    for (const char *p : {"h2", "grpc-exp"})
        if (offered.empty() || std::find(offered.begin(), offered.end(), p) != offered.end())
            wire += char(std::strlen(p)) + std::string(p);
    return wire.empty() ? std::string("\x02h2", 3) : wire;
}

bool isIp(const std::string &host)
{
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(host.c_str());
    ASN1_OCTET_STRING_free(ip);
    return ip != nullptr;
}

// How a peer that is not speaking TLS started, for the note.
std::string plaintextOpening(const unsigned char *p, size_t n)
{
    if (n >= 3 && std::memcmp(p, "PRI", 3) == 0) return "an h2c (cleartext HTTP/2) preface";
    for (const char *m : {"GET ", "POST ", "PUT ", "HEAD ", "CONNECT ", "OPTIONS "})
        if (n >= std::strlen(m) && std::memcmp(p, m, std::strlen(m)) == 0) return "an HTTP/1.x request";
    return "bytes that are no TLS record";
}

// A socket as OpenSSL reads and writes it. A CONNECT tunnel's client may send its ClientHello with the
// request, and the proxy has read those bytes: they are handed to OpenSSL first (`prefix`), then the socket.
// Reads take the kernel's receive time (kernelrxtime.h) when the socket asked for it; the relay claims the
// first time since it last looked (takeReceiveTime) for the bytes a read decrypts next.
struct StampedSocket
{
    int fd = -1;
    std::string prefix;
    size_t at = 0;
    bool stamps = false;
    bool eof = false; // the socket's read returned 0: OpenSSL asks (BIO_eof) to tell a peer's FIN
    bool readSinceTaken = false;
    std::int64_t kernelNs = 0; // realtime; the first stamp since the relay took the last one, 0: none
    // While coalescing (a streaming burst), written records wait here, up to kCoalesceBytes, and go out
    // together when the relay sends them (sendUnsent) or a write does not fit.
    bool coalesce = false;
    std::string unsent;
    size_t unsentAt = 0;
};

// Sends what waits in p->unsent. False when some still waits: errno tells why (EAGAIN: the socket is full).
bool sendUnsent(StampedSocket *p)
{
    while (p->unsentAt < p->unsent.size()) {
        const ssize_t n =
            send(p->fd, p->unsent.data() + p->unsentAt, p->unsent.size() - p->unsentAt, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p->unsentAt += size_t(n);
    }
    p->unsent.clear();
    p->unsentAt = 0;
    return true;
}

int stampedRead(BIO *b, char *out, int len)
{
    auto *p = static_cast<StampedSocket *>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (len <= 0) return 0;
    if (p->at < p->prefix.size()) {
        const size_t n = std::min(size_t(len), p->prefix.size() - p->at);
        std::memcpy(out, p->prefix.data() + p->at, n);
        p->at += n;
        p->readSinceTaken = true;
        return int(n);
    }
    std::int64_t kernelNs = 0;
    const ssize_t n = p->stamps ? KernelRxTime::receive(p->fd, out, size_t(len), &kernelNs)
                                : recv(p->fd, out, size_t(len), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
    if (n == 0) p->eof = true;
    if (n > 0) {
        if (!p->readSinceTaken || !p->kernelNs) p->kernelNs = kernelNs;
        p->readSinceTaken = true;
    }
    return int(n);
}

int stampedWrite(BIO *b, const char *in, int len)
{
    auto *p = static_cast<StampedSocket *>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (len <= 0) return 0;
    // What waits goes first; OpenSSL retries this record's write until it is taken.
    const bool fits = p->unsent.size() + size_t(len) <= kCoalesceBytes;
    if ((!p->coalesce || !fits) && !p->unsent.empty() && !sendUnsent(p)) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
        return -1;
    }
    if (p->coalesce) {
        p->unsent.append(in, size_t(len));
        return len;
    }
    const ssize_t n = send(p->fd, in, size_t(len), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
    return int(n);
}

long stampedCtrl(BIO *b, int cmd, long, void *)
{
    auto *p = static_cast<StampedSocket *>(BIO_get_data(b));
    switch (cmd) {
    case BIO_CTRL_FLUSH: // records a burst left waiting
        if (p->unsent.empty() || sendUnsent(p)) return 1;
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
        return 0;
    case BIO_CTRL_PENDING:
        return long(p->prefix.size() - p->at);
    case BIO_CTRL_EOF: // a FIN without close_notify is then a close (SSL_OP_IGNORE_UNEXPECTED_EOF), as with
                       // SSL_set_fd's socket BIO
        return p->eof ? 1 : 0;
    default:
        return 0;
    }
}

int stampedDestroy(BIO *b)
{
    delete static_cast<StampedSocket *>(BIO_get_data(b));
    BIO_set_data(b, nullptr);
    return 1;
}

int stampedType()
{
    static const int type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK;
    return type;
}

BIO_METHOD *stampedMethod()
{
    static BIO_METHOD *method = [] {
        BIO_METHOD *m = BIO_meth_new(stampedType(), "rpcscope stamped socket");
        BIO_meth_set_read(m, stampedRead);
        BIO_meth_set_write(m, stampedWrite);
        BIO_meth_set_ctrl(m, stampedCtrl);
        BIO_meth_set_destroy(m, stampedDestroy);
        return m;
    }();
    return method;
}

// Gives `ssl` the socket `fd` for both directions. Does not own the descriptor, like SSL_set_fd's BIO. Out of
// memory, `ssl` is left without one, and its handshake fails with OpenSSL's reason.
void setStampedSocket(SSL *ssl, int fd, bool stamps, std::string prefix = {})
{
    BIO *b = BIO_new(stampedMethod());
    if (!b) return;
    auto *socket = new StampedSocket;
    socket->fd = fd;
    socket->prefix = std::move(prefix);
    socket->stamps = stamps && KernelRxTime::enable(fd);
    BIO_set_data(b, socket);
    BIO_set_init(b, 1);
    SSL_set_bio(ssl, b, b);
}

StampedSocket *stampedSocketOf(BIO *b)
{
    return b && BIO_method_type(b) == stampedType() ? static_cast<StampedSocket *>(BIO_get_data(b)) : nullptr;
}

// Whether what `ssl` writes waits to be sent together (a streaming burst's records) or goes out at once.
void setCoalescing(SSL *ssl, bool on)
{
    if (StampedSocket *p = stampedSocketOf(SSL_get_wbio(ssl))) p->coalesce = on;
}

// Sends the records waiting in `ssl`'s socket. False when the connection failed (errno); *waiting: bytes
// still wait for room in the socket.
bool flushCoalesced(SSL *ssl, bool *waiting)
{
    *waiting = false;
    StampedSocket *p = stampedSocketOf(SSL_get_wbio(ssl));
    if (!p || sendUnsent(p)) return true;
    *waiting = errno == EAGAIN || errno == EWOULDBLOCK;
    return *waiting;
}

// Gives back the memory `ssl`'s socket keeps for a burst's records, when none wait.
void releaseCoalesceBuffer(SSL *ssl)
{
    if (StampedSocket *p = stampedSocketOf(SSL_get_wbio(ssl)); p && p->unsent.empty())
        std::string().swap(p->unsent);
}

// What waits in `ssl`'s socket to be sent, as allocated.
size_t coalescedBytes(SSL *ssl)
{
    const StampedSocket *p = stampedSocketOf(SSL_get_wbio(ssl));
    return p ? heapbytes::string(p->unsent) : 0;
}

// Whether `ssl`'s socket was read since the last call, and the first kernel receive time of those reads
// (realtime ns; 0: none).
std::pair<bool, std::int64_t> takeReceiveTime(SSL *ssl)
{
    StampedSocket *p = stampedSocketOf(SSL_get_rbio(ssl));
    if (!p) return {true, 0};
    const std::pair<bool, std::int64_t> taken{p->readSinceTaken, p->kernelNs};
    p->readSinceTaken = false;
    p->kernelNs = 0;
    return taken;
}
} // namespace

struct TlsRelayLoop::Conn
{
    std::uint32_t id = 0;
    int cfd = -1;
    int sfd = -1;
    SSL *cs = nullptr; // facing the client
    SSL *ss = nullptr; // facing the target
    std::string sni;
    std::vector<std::string> clientAlpn;
    std::string failure; // why the target's side failed, said to the client with an alert
    bool decode = true;
    // Null unless the hop has a stream fault rule: then the plaintext of both directions is framed and
    // rewritten by it instead of relayed as it came.
    std::unique_ptr<StreamFaults> streams;
    // Null unless a connection fault rule chose this connection (when it opened, at openedAt).
    std::unique_ptr<ConnectionFault> fault;
    std::int64_t openedAt = 0;
    std::string closeReason; // set by relay() when it ends the connection itself

    // What the connection holds, in the loop's sum (m_connBytes) while it lives: its thread's stack, its TLS
    // sessions, and `buffers` (relay()'s read buffers and what waits in them).
    std::atomic<size_t> *sum = nullptr;
    std::atomic<size_t> *given = nullptr; // the loop's m_trimBytes: what it held, when it ends
    size_t counted = 0;
    size_t buffers = 0;
    bool idle = false; // relay() gave back the sessions' record buffers (idle for kIdleReleaseMs)
    void recount()
    {
        const size_t session = idle ? idleSessionBytes() : tlsSessionBytes();
        const size_t n = kThreadStackBytes + heapbytes::string(sni) + heapbytes::string(failure) +
                         (cs ? session : 0) + (ss ? session : 0) + buffers;
        if (!sum || n == counted) return;
        sum->fetch_add(n - counted, std::memory_order_relaxed); // unsigned: a smaller n wraps and subtracts
        counted = n;
    }
    ~Conn()
    {
        if (sum) sum->fetch_sub(counted, std::memory_order_relaxed);
        if (given) given->fetch_add(counted, std::memory_order_relaxed);
    }
};

size_t TlsRelayLoop::tlsSessionBytes()
{
    return 2 * heapbytes::block(kSslRecordBuffer) + kSslStateBytes;
}

size_t TlsRelayLoop::idleSessionBytes()
{
    return kSslStateBytes;
}

TlsRelayLoop::TlsRelayLoop(DecoderThread &decoder) : m_decoder(decoder) {}

TlsRelayLoop::~TlsRelayLoop()
{
    stop();
    // Opened but never run (a proxy's check of its options at start): only the pipes to close.
    for (int fd : {m_wakePipe[0], m_wakePipe[1], m_adoptPipe[0], m_adoptPipe[1]})
        if (fd >= 0) close(fd);
    SSL_CTX_free(m_serverCtx);
    SSL_CTX_free(m_clientCtx);
    if (m_keylog) std::fclose(m_keylog);
}

bool TlsRelayLoop::open(int listenFd, const HostPort &target, std::vector<sockaddr_storage> targetAddrs,
                        const TlsInterceptOptions &options, bool decoding, std::string *error)
{
    m_target = target;
    m_targetAddrs = std::move(targetAddrs);
    m_options = options;
    m_decoding = decoding;
    m_ca = std::make_unique<RpcscopeCa>();
    if (!m_ca->open(options.caDirectory, false, error)) return false;

    m_serverCtx = SSL_CTX_new(TLS_server_method());
    m_clientCtx = SSL_CTX_new(TLS_client_method());
    if (!m_serverCtx || !m_clientCtx) {
        *error = "cannot set up TLS: " + sslErrors();
        return false;
    }
    for (SSL_CTX *ctx : {m_serverCtx, m_clientCtx}) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        SSL_CTX_set_app_data(ctx, this);
        // Both legs prefer AES-128-GCM, as nghttpx and Go's TLS do: the relay decrypts and re-encrypts every
        // byte, and 128-bit keys take 10 AES rounds to 256-bit keys' 14. The same suites stay allowed, so
        // every peer that connected before still does.
        if (SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1 ||
            SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
            *error = "cannot set up TLS cipher suites: " + sslErrors();
            return false;
        }
    }
    // Facing the client the relay's order decides, except for a client that asks for ChaCha20 first (one
    // without AES instructions), which gets it.
    SSL_CTX_set_options(m_serverCtx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA);
    SSL_CTX_set_client_hello_cb(m_serverCtx, clientHelloCallback, this);
    SSL_CTX_set_alpn_select_cb(m_serverCtx, alpnCallback, this);
    // Minted certificates are per connection; resuming a session would skip the ClientHello callback's check
    // of the target.
    SSL_CTX_set_session_cache_mode(m_serverCtx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(m_serverCtx, 0);

    if (options.targetInsecure) {
        SSL_CTX_set_verify(m_clientCtx, SSL_VERIFY_NONE, nullptr);
    } else {
        SSL_CTX_set_verify(m_clientCtx, SSL_VERIFY_PEER, nullptr);
        const bool loaded =
            options.targetCaFile.empty()
                ? SSL_CTX_set_default_verify_paths(m_clientCtx) == 1
                : SSL_CTX_load_verify_locations(m_clientCtx, options.targetCaFile.c_str(), nullptr) == 1;
        if (!loaded) {
            *error = options.targetCaFile.empty()
                         ? "cannot load the system's root certificates: " + sslErrors()
                         : "cannot read --target-ca " + options.targetCaFile + ": " + sslErrors();
            return false;
        }
    }
    if (!options.targetCertFile.empty() || !options.targetKeyFile.empty()) {
        if (options.targetCertFile.empty() || options.targetKeyFile.empty()) {
            *error = "--target-cert and --target-key go together (a client certificate and its key)";
            return false;
        }
        if (SSL_CTX_use_certificate_chain_file(m_clientCtx, options.targetCertFile.c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(m_clientCtx, options.targetKeyFile.c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(m_clientCtx) != 1) {
            *error = "cannot use --target-cert " + options.targetCertFile + " with --target-key " +
                     options.targetKeyFile + ": " + sslErrors();
            return false;
        }
    }
    if (!options.keylogFile.empty()) {
        // Key logs unlock the traffic: created private, like the CA's key.
        const int fd = ::open(options.keylogFile.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0 || !(m_keylog = fdopen(fd, "a"))) {
            *error = "cannot write --keylog " + options.keylogFile + ": " + std::strerror(errno);
            if (fd >= 0) close(fd);
            return false;
        }
        SSL_CTX_set_keylog_callback(m_serverCtx, keylogCallback);
        SSL_CTX_set_keylog_callback(m_clientCtx, keylogCallback);
    }
    if (pipe2(m_wakePipe, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(m_adoptPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        *error = std::string("cannot make a pipe: ") + std::strerror(errno);
        return false;
    }
    m_listenFd = listenFd;
    return true;
}

void TlsRelayLoop::setFaults(std::shared_ptr<FaultSet> faults, const std::string &hopLabel)
{
    m_faults = std::move(faults);
    m_faultHop = hopLabel;
    m_faultOrigin = steadyNowNs();
}

void TlsRelayLoop::run()
{
    m_stopping = false;
    m_thread = std::thread([this] { acceptLoop(); });
    pthread_setname_np(m_thread.native_handle(), "rpcscope-tls");
}

void TlsRelayLoop::stop()
{
    if (!m_thread.joinable()) return;
    m_stopping = true;
    const char c = 0;
    (void)!write(m_wakePipe[1], &c, 1); // never read: every poll on it wakes from now on
    {
        std::lock_guard lk(m_fdMutex);
        for (int fd : m_fds)
            shutdown(fd, SHUT_RDWR); // ends blocking handshakes and connects
    }
    m_thread.join();
    if (m_listenFd >= 0) close(m_listenFd);
    m_listenFd = -1;
    for (int *fd : {&m_wakePipe[0], &m_wakePipe[1], &m_adoptPipe[0], &m_adoptPipe[1]}) {
        close(*fd);
        *fd = -1;
    }
    // Tunnels handed over after the accept thread's last look: never served, only closed.
    std::lock_guard lk(m_adoptMutex);
    for (const Incoming &in : m_adopted) {
        close(in.cfd);
        close(in.sfd);
    }
    m_adopted.clear();
    m_adoptedBytes = 0;
}

void TlsRelayLoop::adopt(int clientFd, int serverFd, std::string clientPeer, std::string early,
                         std::int64_t earlyAt)
{
    {
        std::lock_guard lk(m_adoptMutex);
        m_adoptedBytes += heapbytes::string(early) + heapbytes::string(clientPeer);
        m_adopted.push_back({clientFd, serverFd, std::move(clientPeer), std::move(early), earlyAt, true});
    }
    const char c = 'a';
    (void)!write(m_adoptPipe[1], &c, 1);
}

void TlsRelayLoop::track(int fd, bool add)
{
    std::lock_guard lk(m_fdMutex);
    if (add) {
        m_fds.insert(fd);
        if (m_stopping) shutdown(fd, SHUT_RDWR);
    } else {
        m_fds.erase(fd);
    }
}

void TlsRelayLoop::push(RelayChunk &&chunk)
{
    std::lock_guard lk(m_pushMutex);
    m_decoder.push(std::move(chunk));
}

void TlsRelayLoop::note(std::uint32_t conn, std::string text)
{
    RelayChunk c = RelayChunk::close(conn, steadyNowNs(), std::move(text));
    c.kind = RelayChunk::Note;
    push(std::move(c));
}

void TlsRelayLoop::keylogCallback(const SSL *ssl, const char *line)
{
    auto *self = static_cast<TlsRelayLoop *>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    if (self) self->keylog(line);
}

void TlsRelayLoop::keylog(const char *line)
{
    std::lock_guard lk(m_keylogMutex);
    if (!m_keylog) return;
    std::fputs(line, m_keylog);
    std::fputc('\n', m_keylog);
    std::fflush(m_keylog); // a reader (a packet analyser) may look while the capture runs
}

void TlsRelayLoop::acceptLoop()
{
    while (!m_stopping) {
        // Threads that are done are joined here, so a long capture does not keep one per past connection.
        for (auto it = m_workers.begin(); it != m_workers.end();) {
            if ((*it)->done) {
                (*it)->thread.join();
                it = m_workers.erase(it);
            } else {
                ++it;
            }
        }
        // What connections gave back (idle, or closed) goes back to the system. The allocator keeps what a
        // thread frees in that thread's arena, and the resident size does not go down without a trim. A trim
        // walks every arena, each under its lock (1-10 ms in all with 100 connections): it is done here, at
        // most once a second, once connections gave back kTrimBytes since the last, or less that stayed
        // unchanged for a second (the last of a pool going idle, without a trim for each of them).
        const std::int64_t now = steadyNowNs();
        const size_t given = m_trimBytes.load(std::memory_order_relaxed);
        if (given != m_trimSeen) {
            m_trimSeen = given;
            m_trimSeenNs = now;
        }
        const bool settled = given > 0 && now - m_trimSeenNs >= 1'000'000'000;
        if (now - m_lastTrimNs >= 1'000'000'000 && (given >= kTrimBytes || settled)) {
            m_trimBytes.fetch_sub(given, std::memory_order_relaxed);
            m_lastTrimNs = now;
            malloc_trim(0);
        }
        pollfd fds[3] = {{m_listenFd, POLLIN, 0}, {m_wakePipe[0], POLLIN, 0}, {m_adoptPipe[0], POLLIN, 0}};
        if (poll(fds, 3, 1000) <= 0 || m_stopping) continue;
        if (fds[2].revents) {
            char drain[64];
            while (read(m_adoptPipe[0], drain, sizeof drain) > 0) {
            }
            std::vector<Incoming> taken;
            {
                std::lock_guard lk(m_adoptMutex);
                taken.swap(m_adopted);
                m_adoptedBytes = 0;
            }
            for (Incoming &in : taken)
                spawn(std::move(in));
        }
        if (!(fds[0].revents & POLLIN)) continue;
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        const int cfd = accept4(m_listenFd, reinterpret_cast<sockaddr *>(&peer), &len, SOCK_CLOEXEC);
        if (cfd < 0) continue;
        Incoming in;
        in.cfd = cfd;
        in.peer = peerName(peer);
        spawn(std::move(in));
    }
    for (auto &w : m_workers)
        w->thread.join();
    m_workers.clear();
}

void TlsRelayLoop::spawn(Incoming in)
{
    if (m_open.load() >= kMaxConnections) {
        const std::uint32_t id = RelayLoop::newConnectionId();
        push(RelayChunk::open(id, steadyNowNs(), in.peer, m_target.toString()));
        push(RelayChunk::error(id, Direction::ClientToServer, steadyNowNs(),
                               "turned away: " + std::to_string(kMaxConnections) +
                                   " intercepted connections are open already"));
        close(in.cfd);
        if (in.sfd >= 0) close(in.sfd);
        push(RelayChunk::close(id, steadyNowNs(), "turned away"));
        return;
    }
    auto worker = std::make_unique<Worker>();
    Worker *w = worker.get();
    track(in.cfd, true);
    if (in.sfd >= 0) track(in.sfd, true);
    ++m_open;
    w->thread = std::thread([this, in = std::move(in), w]() mutable {
        serve(std::move(in));
        --m_open;
        w->done = true;
    });
    m_workers.push_back(std::move(worker));
}

bool TlsRelayLoop::startsWithTls(const Incoming &in)
{
    if (!in.early.empty()) return static_cast<unsigned char>(in.early[0]) == 0x16;
    // A tunnel may stay quiet for as long as its client likes before it speaks: no timeout, only stop().
    for (;;) {
        pollfd fds[2] = {{in.cfd, POLLIN, 0}, {m_wakePipe[0], POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return false;
        if (m_stopping) return false;
        if (!fds[0].revents) continue;
        unsigned char first = 0;
        const ssize_t n = recv(in.cfd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        return n == 1 && first == 0x16;
    }
}

bool TlsRelayLoop::connectTarget(Conn &c)
{
    int lastErrno = ECONNREFUSED;
    for (const sockaddr_storage &sa : m_targetAddrs) {
        const int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            lastErrno = errno;
            continue;
        }
        track(fd, true);
        const socklen_t len = sa.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        int err = 0;
        if (connect(fd, reinterpret_cast<const sockaddr *>(&sa), len) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                pollfd p{fd, POLLOUT, 0};
                err = poll(&p, 1, kHandshakeTimeoutMs) == 1 ? 0 : ETIMEDOUT;
                socklen_t l = sizeof err;
                if (err == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
            }
        }
        if (err == 0 && !m_stopping) {
            setBlocking(fd);
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setTimeouts(fd, kHandshakeTimeoutMs);
            c.sfd = fd;
            return true;
        }
        lastErrno = err ? err : ECONNABORTED;
        track(fd, false);
        close(fd);
    }
    c.failure = "cannot connect to the target " + m_target.toString() + ": " + std::strerror(lastErrno);
    return false;
}

bool TlsRelayLoop::handshakeTarget(Conn &c)
{
    c.ss = SSL_new(m_clientCtx);
    c.recount();
    setStampedSocket(c.ss, c.sfd, m_kernelTimes);
    // The name the client asked for is what its own check would have used; without one, the target's.
    const std::string name = !c.sni.empty() ? c.sni : m_target.host;
    if (!isIp(name)) SSL_set_tlsext_host_name(c.ss, name.c_str());
    if (!m_options.targetInsecure) {
        if (isIp(name))
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c.ss), name.c_str());
        else
            SSL_set1_host(c.ss, name.c_str());
    }
    const std::string alpn = grpcAlpn(c.clientAlpn);
    SSL_set_alpn_protos(c.ss, reinterpret_cast<const unsigned char *>(alpn.data()), unsigned(alpn.size()));
    ERR_clear_error();
    if (SSL_connect(c.ss) == 1) return true;
    const long verify = SSL_get_verify_result(c.ss);
    if (verify != X509_V_OK)
        c.failure =
            "the target's certificate failed verification: " +
            std::string(X509_verify_cert_error_string(verify)) + " (for " + name +
            "); pass --target-ca FILE with the CA that signed it, or --target-insecure to skip the check";
    else
        c.failure = "TLS handshake with the target " + m_target.toString() + " failed: " + sslErrors();
    return false;
}

int TlsRelayLoop::clientHelloCallback(SSL *ssl, int *alert, void *arg)
{
    return static_cast<TlsRelayLoop *>(arg)->onClientHello(ssl, alert);
}

int TlsRelayLoop::onClientHello(SSL *ssl, int *alert)
{
    Conn &c = *static_cast<Conn *>(SSL_get_app_data(ssl));
    if (c.ss) return SSL_CLIENT_HELLO_SUCCESS; // the second hello after a HelloRetryRequest: all is set
    const unsigned char *p = nullptr;
    size_t n = 0;
    // server_name: list length (2), then entries of type (1), length (2), name.
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &n) && n >= 5 && p[2] == 0) {
        const size_t len = size_t(p[3]) << 8 | p[4];
        if (5 + len <= n) c.sni.assign(reinterpret_cast<const char *>(p + 5), len);
    }
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p, &n) &&
        n >= 2) {
        for (size_t i = 2; i < n;) {
            const size_t len = p[i];
            if (i + 1 + len > n) break;
            c.clientAlpn.emplace_back(reinterpret_cast<const char *>(p + i + 1), len);
            i += 1 + len;
        }
    }
    // The target first: if it cannot be reached or trusted, the client's handshake fails with an alert
    // rather than succeeding into a connection that goes nowhere.
    if ((c.sfd < 0 && !connectTarget(c)) || !handshakeTarget(c)) {
        *alert = SSL_AD_HANDSHAKE_FAILURE;
        return SSL_CLIENT_HELLO_ERROR;
    }
    const std::string name = !c.sni.empty() ? c.sni : m_target.host;
    std::string error;
    const std::shared_ptr<const RpcscopeCa::Leaf> leaf = m_ca->leafFor(name, &error);
    if (!leaf || SSL_use_certificate(ssl, leaf->cert) != 1 || SSL_use_PrivateKey(ssl, leaf->key) != 1) {
        c.failure = error.empty() ? "cannot use the minted certificate: " + sslErrors() : error;
        *alert = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

int TlsRelayLoop::alpnCallback(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                               const unsigned char *in, unsigned int inlen, void *)
{
    Conn &c = *static_cast<Conn *>(SSL_get_app_data(ssl));
    // What the target chose, when the client offered it; otherwise h2, then grpc-exp.
    const unsigned char *chosen = nullptr;
    unsigned int chosenLen = 0;
    if (c.ss) SSL_get0_alpn_selected(c.ss, &chosen, &chosenLen);
    std::string prefs;
    if (chosenLen) prefs += char(chosenLen) + std::string(reinterpret_cast<const char *>(chosen), chosenLen);
    prefs += std::string("\x02h2\x08grpc-exp", 12);
    unsigned char *sel = nullptr;
    if (SSL_select_next_proto(&sel, outlen, reinterpret_cast<const unsigned char *>(prefs.data()),
                              unsigned(prefs.size()), in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL; // a gRPC hop: a client that speaks neither is told so
    // sel points into `in` (the client's list) or prefs: copy it into the client's list, which outlives this.
    for (unsigned int i = 0; i < inlen;) {
        const unsigned int len = in[i];
        if (len == *outlen && std::memcmp(in + i + 1, sel, len) == 0) {
            *out = in + i + 1;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

void TlsRelayLoop::serve(Incoming in)
{
    // OpenSSL writes with write(2): a peer that has gone must give EPIPE, not kill the process. Blocked in
    // this thread only, so the signal stays pending here and ends with it.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    const int cfd = in.cfd;
    if (in.tunnel && !startsWithTls(in)) {
        // Not TLS (or the capture stops first): relayed as a plain tunnel would be, its bytes still unread.
        track(cfd, false);
        track(in.sfd, false);
        if (m_plainHandoff && !m_stopping) {
            m_plainHandoff(cfd, in.sfd, std::move(in.peer), std::move(in.early), in.earlyAt);
        } else {
            close(cfd);
            close(in.sfd);
        }
        return;
    }
    Conn c;
    c.sum = &m_connBytes;
    c.given = &m_trimBytes;
    c.recount();
    c.id = RelayLoop::newConnectionId();
    c.cfd = cfd;
    c.decode = m_decoding;
    c.openedAt = steadyNowNs();
    push(RelayChunk::open(c.id, c.openedAt, in.peer, m_target.toString()));
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setTimeouts(cfd, kHandshakeTimeoutMs);
    if (in.sfd >= 0) { // a tunnel's target, connected by the proxy
        setBlocking(in.sfd);
        setsockopt(in.sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setTimeouts(in.sfd, kHandshakeTimeoutMs);
        c.sfd = in.sfd;
    }
    if (in.tunnel) setBlocking(cfd);
    std::string closeReason;
    // A failure is the connection's decode error: nothing of it can be decoded, and the CLI and the status
    // bar list such connections with their reason.
    auto fail = [&](std::string why) {
        push(RelayChunk::error(c.id, Direction::ClientToServer, steadyNowNs(), std::move(why)));
        closeReason = "TLS interception failed";
    };

    unsigned char first[8];
    ssize_t got = 0;
    if (!in.early.empty()) {
        got = ssize_t(std::min(in.early.size(), sizeof first));
        std::memcpy(first, in.early.data(), size_t(got));
    } else {
        got = recv(cfd, first, sizeof first, MSG_PEEK);
    }
    if (got <= 0) {
        closeReason = got == 0 ? "closed by client" : "client sent nothing";
    } else if (first[0] != 0x16) {
        fail("plaintext client on a TLS-intercepting hop: it sent " + plaintextOpening(first, size_t(got)) +
             "; make the client use TLS, or capture this hop without --tls-intercept");
    } else {
        c.cs = SSL_new(m_serverCtx);
        c.recount();
        SSL_set_app_data(c.cs, &c);
        setStampedSocket(c.cs, cfd, m_kernelTimes, std::move(in.early));
        ERR_clear_error();
        if (SSL_accept(c.cs) == 1) {
            X509 *serverCert = SSL_get0_peer_certificate(c.ss);
            note(c.id, "TLS intercepted: SNI " + (c.sni.empty() ? std::string("(none)") : c.sni) + ", ALPN " +
                           alpnOf(c.cs) + "; client side " + SSL_get_version(c.cs) + " " +
                           SSL_get_cipher_name(c.cs) + "; target side " + SSL_get_version(c.ss) + " " +
                           SSL_get_cipher_name(c.ss) + ", certificate " + subjectOf(serverCert) +
                           (m_options.targetInsecure ? " (not verified: --target-insecure)" : ""));
            relay(c);
            closeReason = c.closeReason.empty() ? "closed" : c.closeReason;
        } else if (!c.failure.empty()) {
            fail(c.failure);
        } else {
            const unsigned long e = ERR_peek_error();
            const int reason = ERR_GET_REASON(e);
            // The client's alert after it saw the minted certificate: it does not trust the CA that signed
            // it.
            const bool untrusted =
                reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
                reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN || reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR;
            const std::string errors = sslErrors();
            if (untrusted)
                fail(std::string(kTrustFix) + " (" + errors + ")");
            else if (c.ss && SSL_get_state(c.cs) != TLS_ST_BEFORE && errors == "connection closed")
                // Some clients hang up without an alert when they reject the certificate.
                fail(std::string(kTrustFix) + " (the client closed the connection after the certificate)");
            else
                fail("TLS handshake with the client failed: " + errors);
        }
    }
    if (c.cs) SSL_free(c.cs);
    if (c.ss) SSL_free(c.ss);
    if (c.sfd >= 0) {
        track(c.sfd, false);
        close(c.sfd);
    }
    track(cfd, false);
    close(cfd);
    push(RelayChunk::close(c.id, steadyNowNs(), closeReason));
}

bool TlsRelayLoop::streamOutput(Conn &c, std::int64_t t, std::string &toServer, std::string &toClient)
{
    const std::function<void(RelayChunk &&)> chunk = [this](RelayChunk &&ch) { push(std::move(ch)); };
    if (takeStreamOutput(*c.streams, c.id, t, toServer, toClient, chunk, c.decode ? chunk : nullptr))
        return true;
    c.closeReason = "fault rules: " + c.streams->failure;
    return false;
}

void TlsRelayLoop::relay(Conn &c)
{
    setNonBlocking(c.cfd);
    setNonBlocking(c.sfd);
    if (m_faults) {
        const std::shared_ptr<const FaultSet::Rules> rules = m_faults->snapshot();
        std::lock_guard lk(m_randomMutex);
        if (rules->framesHop(m_faultHop))
            c.streams = std::make_unique<StreamFaults>(m_faults, m_faultHop, m_faultOrigin, m_faultRandom());
        // The rule's `after` counts from when the client connected, as on the plain relay, the handshakes
        // included.
        c.fault = ConnectionFault::choose(*m_faults, *rules, ConnectionFault::rulesFor(*rules, m_faultHop),
                                          m_faultOrigin, c.openedAt, m_faultRandom);
    }
    struct Half
    {
        SSL *src;
        SSL *dst;
        int srcFd;
        int dstFd;
        Direction dir;
        std::unique_ptr<unsigned char[]> buf = std::make_unique_for_overwrite<unsigned char[]>(kReadSize);
        size_t off = 0;
        size_t len = 0;
        bool eof = false;
        bool shut = false;
        bool readAhead = false;
        bool bigBuffer = false; // src reads with kBulkReadBuffer
        bool waiting = false;   // records written for dst wait for room in its socket
        // The last poll asked src for input and it had none (and OpenSSL holds none of it): not read until a
        // poll says otherwise. Reading it anyway cost a system call that found nothing for every record the
        // other direction carried.
        bool quiet = false;
        std::int64_t lastNs = 0; // the time of the last bytes decrypted: a direction's times never go back
        // With stream faults, what dst is to get, as StreamFaults wrote it (the read buffer is handed to it
        // whole at once). OpenSSL takes a retried write from a moved buffer
        // (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
        bool framed = false;
        std::string out = {};
        size_t outOff = 0;
        // A streaming burst's record is read into a pooled buffer (spare) and written from it (chunk), which
        // then goes to the decoder as it is: no copy of the record for it (handOnRead below).
        ChunkBytes spare = {};
        ChunkBytes chunk = {};
        size_t pending() const { return framed ? out.size() - outOff : len; }
        const unsigned char *next() const
        {
            return framed ? reinterpret_cast<const unsigned char *>(out.data()) + outOff
                          : (chunk ? chunk.get() : buf.get()) + off;
        }
        void wrote(size_t n)
        {
            if (!framed) {
                off += n;
                len -= n;
            } else if ((outOff += n) == out.size()) {
                out.clear();
                outOff = 0;
            }
        }
        // A framed direction reads on while its destination has less than a read's worth waiting.
        bool readable() const { return !eof && (framed ? pending() < kReadSize : len == 0); }
    };
    KernelRxTime rx; // this connection's thread's
    // This connection's thread follows its client's core while the client makes small calls (cpusteering.h).
    CpuSteering steering;
    steering.start();
    struct StopSteering
    {
        CpuSteering &s;
        ~StopSteering() { s.stop(); }
    } stopSteering{steering};
    // What the handshakes read is no application data's time.
    takeReceiveTime(c.cs);
    takeReceiveTime(c.ss);
    Half halves[2] = {{c.cs, c.ss, c.cfd, c.sfd, Direction::ClientToServer},
                      {c.ss, c.cs, c.sfd, c.cfd, Direction::ServerToClient}};
    halves[0].framed = halves[1].framed = c.streams != nullptr;
    // OpenSSL reads what the socket holds, not a record's 5-byte header and then its body: one read instead
    // of two for every record. Records that arrived together share the read's kernel time, as frames that
    // arrive together on a plain hop do.
    SSL_set_read_ahead(c.cs, 1);
    SSL_set_read_ahead(c.ss, 1);
    // Gives back what an idle connection does not need: the read buffers, the sessions' record buffers
    // (OpenSSL makes them again for the next record, of the default size), and what carried a burst's
    // records. A session whose buffer still holds part of a record keeps it.
    auto releaseIdle = [&] {
        bool freed = true;
        for (Half &h : halves) {
            h.buf.reset();
            h.spare.reset();
            std::string().swap(h.out);
            releaseCoalesceBuffer(h.dst);
            if (h.bigBuffer) SSL_set_default_read_buffer_len(h.src, 0);
            if (SSL_free_buffers(h.src) == 1) {
                h.bigBuffer = false;
            } else {
                if (h.bigBuffer) SSL_set_default_read_buffer_len(h.src, kBulkReadBuffer);
                freed = false;
            }
        }
        c.idle = freed;
        if (freed) { // all of it: the buffers are gone
            const size_t was = c.counted;
            c.buffers = 0;
            c.recount();
            if (was > c.counted) m_trimBytes.fetch_add(was - c.counted, std::memory_order_relaxed);
        }
    };
    for (;;) {
        // The read buffers (back after an idle spell), and with stream faults what waits for each side.
        if (!c.idle)
            for (Half &h : halves)
                if (!h.buf) h.buf = std::make_unique_for_overwrite<unsigned char[]>(kReadSize);
        c.buffers = (halves[0].buf ? heapbytes::block(kReadSize) : 0) +
                    (halves[1].buf ? heapbytes::block(kReadSize) : 0) + heapbytes::string(halves[0].out) +
                    heapbytes::string(halves[1].out) + coalescedBytes(c.cs) + coalescedBytes(c.ss);
        for (const Half &h : halves) {
            if (h.spare) c.buffers += heapbytes::block(kPooledChunkBytes);
            if (h.bigBuffer)
                c.buffers += heapbytes::block(kBulkReadBuffer) - heapbytes::block(kSslRecordBuffer);
        }
        c.recount();
        bool progress = false;
        short want[2] = {0, 0}; // poll events for cfd, sfd
        auto wantFor = [&](int fd, int sslError) {
            short &w = want[fd == c.cfd ? 0 : 1];
            w |= sslError == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
        };
        if (c.fault && !c.fault->applied() && !startFault(c)) return;
        if (c.streams) {
            // A delay's time has come: what it held goes out now.
            const std::int64_t now = steadyNowNs();
            const std::int64_t at = c.streams->nextTime();
            if (at && at <= now) {
                c.streams->onTime(now);
                if (!streamOutput(c, now, halves[0].out, halves[1].out)) return;
            }
        }
        // Writes what waits for h's destination; false when the peer went away.
        auto forward = [&](Half &h) {
            while (h.pending() > 0) {
                const int n = SSL_write(h.dst, h.next(), int(std::min<size_t>(h.pending(), INT_MAX)));
                if (n > 0) {
                    h.wrote(size_t(n));
                    progress = true;
                    continue;
                }
                const int e = SSL_get_error(h.dst, n);
                if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ) return false;
                wantFor(h.dstFd, e);
                break;
            }
            return true;
        };
        // Sends the records a burst wrote for h's destination; false when the peer went away.
        auto flushOut = [&](Half &h) {
            setCoalescing(h.dst, false);
            if (!flushCoalesced(h.dst, &h.waiting)) return false;
            if (h.waiting) wantFor(h.dstFd, SSL_ERROR_WANT_WRITE);
            return true;
        };
        // A decoder woken by what is read wakes once the bytes are forwarded, not in between (and before the
        // poll below).
        std::optional<DecoderThread::DeferWakes> forwardFirst(std::in_place);
        for (Half &h : halves) {
            if (!flushOut(h) || !forward(h)) return;
            const bool fromClient = h.dir == Direction::ClientToServer;
            // A streaming direction's records go out together at the burst's end.
            const bool coalescing = h.readAhead;
            setCoalescing(h.dst, coalescing);
            // bandwidth counts the decrypted bytes (what the peers' HTTP/2 carries), read in measured
            // amounts.
            for (int burst = 0; burst < kBulkBurst; ++burst) {
                const size_t allowance =
                    c.fault ? c.fault->readAllowance(fromClient, steadyNowNs()) : SIZE_MAX;
                if (!h.readable() || allowance == 0 || h.quiet) break;
                // While h.dst's records wait for the burst's end, a record written is not out yet when its
                // write returns: the buffer it was read into can go to the decoder then, which still gets
                // the bytes before the peer does. Otherwise the decoder gets a copy before the write.
                const bool handOnRead = coalescing && c.decode && !c.streams;
                if (handOnRead && !h.spare) h.spare = pooledChunkBytes();
                if (!h.buf) h.buf = std::make_unique_for_overwrite<unsigned char[]>(kReadSize);
                const int n =
                    handOnRead ? SSL_read(h.src, h.spare.get(), int(std::min(kPooledChunkBytes, allowance)))
                               : SSL_read(h.src, h.buf.get(), int(std::min(kReadSize, allowance)));
                if (n > 0) {
                    // A large record is a bulk transfer: read on (and coalesce what goes out) without asking
                    // poll in between.
                    const bool bulk = size_t(n) >= kBulkRecord;
                    h.readAhead = bulk;
                    // The larger read buffer replaces the session's first one when it holds nothing.
                    if (bulk && !h.bigBuffer && !SSL_has_pending(h.src)) {
                        SSL_set_default_read_buffer_len(h.src, kBulkReadBuffer);
                        h.bigBuffer = SSL_free_buffers(h.src) == 1;
                    }
                    // The bytes' time is when the kernel took in the first record read for them. Bytes of a
                    // record read before (OpenSSL keeps what one read does not take) are as old as the last
                    // ones. A connection fault holding reads back makes the kernel's time the wrong one, as
                    // on the plain relay: then it is the read's.
                    const std::int64_t readNs = steadyNowNs();
                    const auto [socketRead, kernelNs] = takeReceiveTime(h.src);
                    const bool kernelTimes = m_kernelTimes && !(c.fault && c.fault->applied());
                    std::int64_t t = readNs;
                    if (kernelTimes && !socketRead && h.lastNs) {
                        t = h.lastNs;
                    } else {
                        bool fromKernel = false;
                        if (kernelTimes) t = rx.eventTime(kernelNs, readNs, &fromKernel);
                        (fromKernel ? m_kernelStamped : m_readTimed).fetch_add(1, std::memory_order_relaxed);
                    }
                    t = h.lastNs = std::max(h.lastNs, t);
                    m_bytes += size_t(n);
                    progress = true;
                    if (c.fault) c.fault->spent(fromClient, size_t(n));
                    // As in the plain relay: past DecoderLimits::maxDecoderHeldBytes the decoder is too far
                    // behind and the connection is only relayed.
                    if (c.decode && m_decoder.overHeldLimit()) {
                        c.decode = false;
                        push(RelayChunk::error(c.id, h.dir, t, m_decoder.overHeldLimitReason()));
                    }
                    // With stream faults the decoder gets what the client sent and what it is given, as the
                    // plain relay's.
                    if (c.decode && !handOnRead && (!c.streams || h.dir == Direction::ClientToServer))
                        push(copiedBytes(c.id, h.dir, t, h.buf.get(), size_t(n)));
                    if (!c.streams) {
                        if (handOnRead) h.chunk = std::move(h.spare);
                        h.off = 0;
                        h.len = size_t(n);
                    } else {
                        const auto *bytes = reinterpret_cast<const std::uint8_t *>(h.buf.get());
                        if (h.dir == Direction::ClientToServer)
                            c.streams->fromClient(bytes, size_t(n), t);
                        else
                            c.streams->fromServer(bytes, size_t(n), t);
                        if (!streamOutput(c, t, halves[0].out, halves[1].out)) return;
                    }
                    // On at once, before the other direction is looked at.
                    const bool forwarded = forward(h);
                    if (h.chunk) {
                        // What the write did not take yet is retried from the read buffer (OpenSSL takes a
                        // retried write from a moved buffer); the record goes to the decoder whole.
                        if (forwarded && h.len > 0) std::memcpy(h.buf.get(), h.chunk.get() + h.off, h.len);
                        h.off = 0;
                        if (c.decode) {
                            RelayChunk bytes = RelayChunk::bytes(c.id, h.dir, t);
                            bytes.data = std::move(h.chunk);
                            bytes.size = size_t(n);
                            push(std::move(bytes));
                        } else { // decoding stopped since the read (too far behind): kept for the next one
                            h.spare = std::move(h.chunk);
                        }
                    }
                    if (!forwarded) return;
                    // Then steering's look at the core (cpusteering.h), off the bytes' way.
                    if (bulk)
                        steering.bulk();
                    else
                        steering.read(h.srcFd, fromClient, size_t(n));
                    if (!bulk) break;
                } else {
                    const int e = SSL_get_error(h.src, n);
                    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                        wantFor(h.srcFd, e);
                    else if (e == SSL_ERROR_ZERO_RETURN)
                        h.eof = true;
                    else
                        return; // reset, or a TLS error: both sides close
                    break;
                }
            }
            if (!flushOut(h)) return;
            if (h.eof && h.pending() == 0 && !h.waiting && !h.shut &&
                !(c.fault && c.fault->holdsClose(fromClient, steadyNowNs()))) {
                // The close_notify, then the TCP half-close, as the peer sent them.
                SSL_shutdown(h.dst);
                shutdown(h.dstFd, SHUT_WR);
                h.shut = true;
                progress = true;
            }
        }
        forwardFirst.reset();
        if (halves[0].shut && halves[1].shut) return;
        // After small records, another round of reads would mostly find both sockets empty (two reads for
        // nothing per record): the poll below asks the kernel instead, and returns at once if more came. Only
        // bytes OpenSSL already holds (read ahead, or a record it has not yet handed out), a streaming
        // direction, or fault rules' timing go round again without it.
        const bool goRound = SSL_has_pending(c.cs) || SSL_has_pending(c.ss) || halves[0].readAhead ||
                             halves[1].readAhead || c.streams || c.fault;
        if (progress && goRound) {
            halves[0].quiet = halves[1].quiet = false;
            continue;
        }
        // POLLIN on a side at EOF, or whose bytes wait for a destination that cannot take them, would spin:
        // only asked for when that side is to be read or a TLS write wants it.
        bool clientIn = halves[0].readable(), serverIn = halves[1].readable();
        int timeout = c.streams ? c.streams->pollTimeout(steadyNowNs()) : -1;
        if (c.fault) c.fault->poll(steadyNowNs(), clientIn, serverIn, true, true, timeout);
        // With nothing waiting either way, a poll that finds nothing for kIdleReleaseMs finds an idle
        // connection (a pooled channel between calls, a stream between messages): its buffers go back until
        // its next bytes. No clock is read for it on the way of a call.
        const bool mayIdle = timeout < 0 && !c.idle && !((want[0] | want[1]) & POLLOUT) &&
                             halves[0].pending() == 0 && halves[1].pending() == 0;
        if (mayIdle) timeout = kIdleReleaseMs;
        pollfd fds[3] = {{c.cfd, short(want[0] | (clientIn ? POLLIN : 0)), 0},
                         {c.sfd, short(want[1] | (serverIn ? POLLIN : 0)), 0},
                         {m_wakePipe[0], POLLIN, 0}};
        const int ready = poll(fds, 3, timeout);
        if (ready < 0 && errno != EINTR) return;
        if (m_stopping) return;
        if (mayIdle && ready == 0) {
            releaseIdle();
        } else if (ready > 0 && c.idle) {
            c.idle = false; // the sessions' record buffers come back with the next read or write
        }
        for (int i = 0; i < 2; ++i)
            halves[i].quiet = ready >= 0 && (fds[i].events & POLLIN) && !SSL_has_pending(halves[i].src) &&
                              !(fds[i].revents & (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLNVAL));
    }
}

bool TlsRelayLoop::startFault(Conn &c)
{
    std::string what;
    if (!c.fault->start(*m_faults, steadyNowNs(), &what)) return true;
    note(c.id, what);
    switch (c.fault->action()) {
    case FaultAction::Close:
        // A clean close of both TLS sessions (close_notify), then of both TCP connections (FIN).
        SSL_shutdown(c.cs);
        SSL_shutdown(c.ss);
        c.closeReason = what;
        return false;
    case FaultAction::TcpReset: {
        const linger abort{1, 0};
        for (int fd : {c.cfd, c.sfd})
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
        c.closeReason = what;
        return false;
    }
    case FaultAction::Blackhole:
        blackhole(c);
        return false;
    default:
        return true; // bandwidth and slow-close act as the relay goes on
    }
}

void TlsRelayLoop::blackhole(Conn &c)
{
    // Nothing more reaches either side, whatever was on its way included. Both are still read (and what they
    // send dropped), so neither is held up by a full window; the decoder still sees what the client sent into
    // the hole, so the timeline shows the calls the server never got. It ends when the client gives up.
    const auto buf = std::make_unique_for_overwrite<unsigned char[]>(kReadSize);
    c.buffers += heapbytes::block(kReadSize);
    c.recount();
    bool serverOpen = true;
    for (;;) {
        short events[2] = {POLLIN, short(serverOpen ? POLLIN : 0)};
        for (int side = 0; side < 2; ++side) {
            SSL *ssl = side == 0 ? c.cs : c.ss;
            const Direction dir = side == 0 ? Direction::ClientToServer : Direction::ServerToClient;
            while (side == 0 || serverOpen) {
                const int n = SSL_read(ssl, buf.get(), int(kReadSize));
                if (n > 0) {
                    // A framed connection's decoder gets what the client is given, which from now is nothing.
                    if (c.decode && (side == 0 || !c.streams))
                        push(copiedBytes(c.id, dir, steadyNowNs(), buf.get(), size_t(n)));
                    continue;
                }
                const int e = SSL_get_error(ssl, n);
                if (e == SSL_ERROR_WANT_WRITE) events[side] = POLLOUT;
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
                if (side == 0) { // the client gave up: the connection is over
                    c.closeReason =
                        e == SSL_ERROR_ZERO_RETURN ? "closed by client" : "client reset the connection";
                    return;
                }
                serverOpen = false; // the server went away; the client, in the hole, is not told
                events[1] = 0;
            }
        }
        pollfd fds[3] = {{c.cfd, events[0], 0}, {c.sfd, events[1], 0}, {m_wakePipe[0], POLLIN, 0}};
        if (poll(fds, 3, -1) < 0 && errno != EINTR) return;
        if (m_stopping) return;
    }
}

} // namespace rpcscope
