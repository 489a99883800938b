#pragma once

#include "decoderthread.h"
#include "hostport.h"
#include "tlsintercept.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
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
    bool open(int listenFd, const HostPort &target, std::vector<sockaddr_storage> targetAddrs,
              const TlsInterceptOptions &options, bool decoding, std::string *error);
    void run();
    // Ends every connection (their close events go to the decoder) and joins the threads.
    void stop();
    bool running() const { return m_thread.joinable(); }

    std::uint64_t bytesRelayed() const { return m_bytes.load(); }
    int openConnections() const { return m_open.load(); }

private:
    struct Conn;
    struct Worker
    {
        std::thread thread;
        std::atomic<bool> done{false};
    };

    void acceptLoop();
    void serve(int cfd, const sockaddr_storage &peer);
    // Called from the client handshake's ClientHello: connects and handshakes with the target, and picks the
    // certificate to show the client.
    int onClientHello(SSL *ssl, int *alert);
    bool connectTarget(Conn &c);
    bool handshakeTarget(Conn &c);
    void relay(Conn &c);
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
    std::atomic<bool> m_stopping{false};
    std::thread m_thread;
    std::atomic<std::uint64_t> m_bytes{0};
    std::atomic<int> m_open{0};

    std::mutex m_pushMutex; // DecoderThread::push expects one pushing thread at a time
    std::mutex m_keylogMutex;
    std::FILE *m_keylog = nullptr;
    std::mutex m_fdMutex;
    std::set<int> m_fds; // connection sockets, shut down by stop() to end their threads' blocking calls
    std::list<std::unique_ptr<Worker>> m_workers; // the accept thread's
};

} // namespace rpcscope
