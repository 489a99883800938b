// TLS interception end to end: a real grpc++ TLS server (its certificates made with OpenSSL here), a grpc++
// client that trusts only the rpcscope CA, and a hop with interception between them. Calls succeed and the
// timeline shows them (retries grouped) as with h2c; a client that does not trust the CA, a target whose
// certificate does not verify and a plaintext client each end in a note that names the fix.

#include "capturedevents.h"
#include "lab.grpc.pb.h"
#include "relay.h"
#include "rpcscopeca.h"
#include "testnet.h"
#include "threadcpus.h"
#include "timelinestore.h"
#include "tlsrelayloop.h"
#include "tlstestclient.h"
#include "tlstestserver.h"

#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <future>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <map>
#include <mutex>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <thread>

using namespace rpcscope;
using namespace testnet;
using namespace tlstest;

namespace {

using Captured = CapturedEvents;

// A raw TLS target's and a raw TLS client's contexts, the target's certificate from a CA of its own that the
// hop is told to trust: for what grpc++ will not do on purpose (stall its reads, echo bytes that are no
// HTTP/2).
struct RawTls
{
    RpcscopeCa ca;
    SSL_CTX *serverCtx = nullptr;
    SSL_CTX *clientCtx = nullptr;
    int listenFd = -1;
    std::thread target;
    RawTls() = default;
    RawTls(const RawTls &) = delete;
    RawTls &operator=(const RawTls &) = delete;
    ~RawTls()
    {
        if (listenFd >= 0) shutdown(listenFd, SHUT_RDWR); // an accept still waiting returns
        if (target.joinable()) target.join();
        if (listenFd >= 0) close(listenFd);
        SSL_CTX_free(serverCtx);
        SSL_CTX_free(clientCtx);
    }
    // The target: one connection accepted on a port of its own (port()), handed to `body` once its
    // handshake succeeded, on a thread of its own.
    bool serve(std::function<void(SSL *ssl, int fd)> body)
    {
        listenFd = listenLoopback();
        if (listenFd < 0) return false;
        target = std::thread([this, body = std::move(body)] {
            const int fd = accept(listenFd, nullptr, nullptr);
            if (fd < 0) return;
            setIoTimeouts(fd, 20);
            SSL *ssl = SSL_new(serverCtx);
            SSL_set_fd(ssl, fd);
            if (SSL_accept(ssl) == 1) body(ssl, fd);
            SSL_free(ssl);
            close(fd);
        });
        return true;
    }
    std::uint16_t port() const { return localPort(listenFd); }
    bool open(const std::string &caDirectory, std::string *error)
    {
        if (!ca.open(caDirectory, false, error)) return false;
        const auto leaf = ca.leafFor("localhost", error);
        serverCtx = SSL_CTX_new(TLS_server_method());
        clientCtx = SSL_CTX_new(TLS_client_method());
        if (!leaf || !serverCtx || !clientCtx || SSL_CTX_use_certificate(serverCtx, leaf->cert) != 1 ||
            SSL_CTX_use_PrivateKey(serverCtx, leaf->key) != 1)
            return false;
        SSL_CTX_set_verify(clientCtx, SSL_VERIFY_NONE, nullptr);
        return true;
    }
    // A client connected through `relay` (its socket's receive buffer `rcvbuf` bytes, if set); its ssl is
    // null unless the handshake succeeded.
    struct Client
    {
        int fd = -1;
        SSL *ssl = nullptr;
        Client() = default;
        Client(const Client &) = delete;
        Client &operator=(const Client &) = delete;
        ~Client()
        {
            SSL_free(ssl);
            if (fd >= 0) close(fd);
        }
    };
    void connectThrough(const Relay &relay, Client *c, int rcvbuf = 0)
    {
        c->fd = connectLoopback(relay.listenAddress().port);
        if (c->fd < 0) return;
        if (rcvbuf) setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        setIoTimeouts(c->fd, 20);
        SSL *ssl = SSL_new(clientCtx);
        SSL_set_fd(ssl, c->fd);
        SSL_set_tlsext_host_name(ssl, "localhost");
        if (SSL_connect(ssl) == 1)
            c->ssl = ssl;
        else
            SSL_free(ssl);
    }
};

} // namespace

class TstTlsIntercept : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    TlsServer m_server;
    std::string m_proxyCaPem;
    TlsInterceptOptions m_tls;

    bool startRelay(Relay &relay, Captured &cap, const TlsInterceptOptions &tls)
    {
        relay.setTlsIntercept(tls);
        std::string error;
        const bool ok =
            relay.start({"127.0.0.1", 0}, {"localhost", std::uint16_t(m_server.port)}, cap.sink(), &error);
        if (!ok) qWarning("%s", error.c_str());
        return ok;
    }

    // An intercepting hop in front of a raw TLS target, trusting that target's CA.
    bool startRawHop(Relay &relay, Captured &cap, const RawTls &raw)
    {
        TlsInterceptOptions tls = m_tls;
        tls.targetCaFile = raw.ca.certPath();
        relay.setTlsIntercept(tls);
        std::string error;
        const bool ok = relay.start({"127.0.0.1", 0}, {"localhost", raw.port()}, cap.sink(), &error);
        if (!ok) qWarning("%s", error.c_str());
        return ok;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(m_server.start(m_dir.path().toStdString()));
        m_tls.enabled = true;
        m_tls.caDirectory = m_dir.filePath("rpcscope").toStdString();
        m_tls.targetCaFile = m_server.caFile;
        m_tls.keylogFile = m_dir.filePath("keys.log").toStdString();
        RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(m_tls.caDirectory, false, &error), error.c_str());
        m_proxyCaPem = ca.certPem();
    }

    void callsThroughInterception()
    {
        m_server.service.m_flaky = true;
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, m_tls));
        auto channel = tlsChannel(relay.listenAddress().port, m_proxyCaPem, true);
        for (int i = 0; i < 3; ++i) {
            const grpc::Status s = labCall(channel);
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        channel.reset();
        relay.stop();
        m_server.service.m_flaky = false;

        const TimelineStore store = cap.store();
        QCOMPARE(store.calls().size(), size_t(3));
        for (const Call &c : store.calls()) {
            QCOMPARE(c.method, std::string("/rpcscope.lab.Lab/Call"));
            QCOMPARE(c.attempts.size(), size_t(2)); // the failed first attempt and its retry, one call
        }
        QVERIFY(!store.connections().empty());
        const Connection &conn = store.connections().front();
        QVERIFY2(conn.decodeError.empty(), conn.decodeError.c_str());
        const std::string notes = cap.notes();
        QVERIFY2(notes.find("TLS intercepted: SNI localhost, ALPN h2; client side TLSv1.3") !=
                     std::string::npos,
                 notes.c_str());
        QVERIFY2(notes.find("certificate CN=localhost") != std::string::npos, notes.c_str());

        // Both legs' secrets, in NSS key-log lines.
        QFile keys(QString::fromStdString(m_tls.keylogFile));
        QVERIFY(keys.open(QIODevice::ReadOnly));
        const QByteArray log = keys.readAll();
        QVERIFY2(log.count("CLIENT_TRAFFIC_SECRET_0 ") >= 2, log.constData());
        QVERIFY(keys.permissions() ==
                (QFile::ReadOwner | QFile::WriteOwner | QFile::ReadUser | QFile::WriteUser));
    }

    // Decrypted bytes take the kernel's receive time of their records, as the plain relay's reads do; with
    // kernel timestamps off, the time they were decrypted.
    void decryptedBytesTakeTheKernelsTime_data()
    {
        QTest::addColumn<bool>("kernelTimes");
        QTest::newRow("kernel times") << true;
        QTest::newRow("read times") << false;
    }
    void decryptedBytesTakeTheKernelsTime()
    {
        QFETCH(bool, kernelTimes);
        Captured cap;
        Relay relay;
        relay.setKernelTimestamps(kernelTimes);
        QVERIFY(startRelay(relay, cap, m_tls));
        auto channel = tlsChannel(relay.listenAddress().port, m_proxyCaPem, true);
        // The kernel turns stamping on a moment after the first socket asks: the first reads may not be.
        for (int i = 0; i < 3 || (kernelTimes && relay.kernelStampedReads() == 0 && i < 100); ++i) {
            const grpc::Status s = labCall(channel);
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        channel.reset();
        relay.stop();
        if (kernelTimes) {
            QVERIFY2(relay.kernelStampedReads() > 0, "no decrypted read was timed by the kernel");
        } else {
            QCOMPARE(relay.kernelStampedReads(), std::uint64_t(0));
            QVERIFY(relay.readTimedReads() > 0);
        }
        // Either way a connection's frames in one direction never go back in time.
        std::map<std::pair<std::uint32_t, Direction>, std::int64_t> last;
        size_t frames = 0;
        {
            std::lock_guard lk(cap.mutex);
            for (const WireEvent &e : cap.events) {
                if (e.kind != EventKind::Frame) continue;
                std::int64_t &prev = last[{e.connection, e.dir}];
                QVERIFY2(
                    e.tNs >= prev,
                    qPrintable(QStringLiteral("a frame %1 ns before the one it follows").arg(prev - e.tNs)));
                prev = e.tNs;
                ++frames;
            }
        }
        QVERIFY(frames > 10);
        QVERIFY(cap.store().calls().size() >= 3);
    }

    void clientThatDoesNotTrustTheCa()
    {
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, m_tls));
        // Trusts the server's CA only: the minted certificate is rejected.
        const grpc::Status s = labCall(tlsChannel(relay.listenAddress().port, m_server.caPem, false));
        QCOMPARE(s.error_code(), grpc::StatusCode::UNAVAILABLE);
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("client does not trust the rpcscope CA: see `rpcscope-cli ca`") !=
                std::string::npos,
            10000);
        relay.stop();
    }

    void targetCertificateFailsVerification()
    {
        // Verified against a CA that did not sign the server's certificate.
        QTemporaryDir other;
        RpcscopeCa otherCa;
        std::string error;
        QVERIFY(otherCa.open(other.path().toStdString(), false, &error));
        TlsInterceptOptions tls = m_tls;
        tls.targetCaFile = otherCa.certPath();
        tls.keylogFile.clear();
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, tls));
        const grpc::Status s = labCall(tlsChannel(relay.listenAddress().port, m_proxyCaPem, false));
        QCOMPARE(s.error_code(), grpc::StatusCode::UNAVAILABLE); // the client got an alert, not a call
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("the target's certificate failed verification") != std::string::npos, 10000);
        QVERIFY2(cap.notes().find("--target-ca") != std::string::npos, cap.notes().c_str());
        relay.stop();

        // --target-insecure lets it through, and says so.
        tls.targetInsecure = true;
        Captured insecure;
        Relay relay2;
        QVERIFY(startRelay(relay2, insecure, tls));
        const grpc::Status ok = labCall(tlsChannel(relay2.listenAddress().port, m_proxyCaPem, false));
        QVERIFY2(ok.ok(), ok.error_message().c_str());
        relay2.stop();
        QVERIFY2(insecure.notes().find("not verified: --target-insecure") != std::string::npos,
                 insecure.notes().c_str());
        QCOMPARE(insecure.store().calls().size(), size_t(1));
    }

    void plaintextClient()
    {
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, m_tls));
        const int fd = connectLoopback(relay.listenAddress().port);
        QVERIFY(fd >= 0);
        setIoTimeouts(fd, 10);
        const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        QVERIFY(sendAll(fd, preface.data(), preface.size()));
        char c;
        const ssize_t r = recv(fd, &c, 1, 0); // closed on it (reset: what it sent was never read)
        QVERIFY2(r == 0 || (r < 0 && errno == ECONNRESET), std::strerror(errno));
        close(fd);
        QTRY_VERIFY_WITH_TIMEOUT(
            cap.notes().find("plaintext client on a TLS-intercepting hop: it sent an h2c") !=
                std::string::npos,
            10000);
        // The hop goes on serving TLS clients.
        const grpc::Status s = labCall(tlsChannel(relay.listenAddress().port, m_proxyCaPem, false));
        QVERIFY2(s.ok(), s.error_message().c_str());
        relay.stop();
    }

    // The key log decrypts both legs in a packet analyser: each leg's capture shows the call's :path.
    void keylogDecryptsBothLegs()
    {
        const QString dumpcap = QStandardPaths::findExecutable("dumpcap");
        const QString tshark = QStandardPaths::findExecutable("tshark");
        QVERIFY2(!dumpcap.isEmpty() && !tshark.isEmpty(), "dumpcap and tshark come with the tshark package "
                                                          "(scripts/setup.sh installs it)");
        TlsInterceptOptions tls = m_tls;
        tls.keylogFile = m_dir.filePath("legs.log").toStdString();
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, tls));
        const std::uint16_t proxyPort = relay.listenAddress().port;
        // The kernel hands dumpcap packets in blocks it retires after a timeout, and dumpcap buffers its
        // file: no event says that the call's packets are in. So each round gives it a while after the call,
        // then stops it (which writes out what it holds) and reads its file whole. On a loaded machine a
        // round can come out short: up to three, each waiting longer. Missing keys fail every round.
        QString missing;
        for (int round = 1; round <= 3; ++round) {
            const QString pcap = m_dir.filePath(QStringLiteral("legs-%1.pcapng").arg(round));
            QProcess capture;
            capture.setProcessChannelMode(QProcess::MergedChannels);
            capture.start(dumpcap, {"-i", "lo", "-f", "tcp", "-w", pcap});
            QByteArray said;
            QTRY_VERIFY2_WITH_TIMEOUT((said += capture.readAll()).contains("Capturing on") ||
                                          capture.state() == QProcess::NotRunning,
                                      "dumpcap did not start", 10000);
            if (capture.state() == QProcess::NotRunning)
                QSKIP("dumpcap cannot capture on the loopback interface here (needs capture rights)");
            const grpc::Status s = labCall(tlsChannel(proxyPort, m_proxyCaPem, false));
            QVERIFY2(s.ok(), s.error_message().c_str());
            QTest::qWait(2000 * round);
            capture.terminate();
            QVERIFY(capture.waitForFinished(10000));
            missing.clear();
            for (const int port : {int(proxyPort), m_server.port}) {
                QProcess read;
                read.start(tshark,
                           {"-r", pcap, "-o", "tls.keylog_file:" + QString::fromStdString(tls.keylogFile),
                            "-Y", QString("tcp.port == %1 && http2.header.name == \":path\"").arg(port), "-T",
                            "fields", "-e", "http2.header.value"});
                QVERIFY(read.waitForFinished(60000));
                const QByteArray out = read.readAllStandardOutput();
                if (!out.contains("/rpcscope.lab.Lab/Call"))
                    missing +=
                        QString("round %1, port %2: '%3'; ").arg(round).arg(port).arg(QString::fromUtf8(out));
            }
            if (missing.isEmpty()) break;
        }
        relay.stop();
        QVERIFY2(missing.isEmpty(), qPrintable(missing));
    }

    // A streaming direction's records are written in bursts and sent together; a client that stops reading
    // leaves them waiting in the relay, which must send them, whole and in order, once it reads again. A raw
    // TLS target streams 16 MiB as fast as it can; the client reads nothing until the whole path is full (the
    // target's write blocks), then reads it all.
    void aStalledClientGetsTheStreamWhole()
    {
        RawTls raw;
        std::string error;
        QVERIFY2(raw.open(m_dir.filePath("raw-target-ca").toStdString(), &error), error.c_str());

        constexpr size_t kTotal = 16u << 20;
        auto byteAt = [](size_t i) { return std::uint8_t((i >> 14) * 7 + i * 13); };
        std::atomic<bool> blocked{false};
        std::atomic<size_t> written{0};
        QVERIFY(raw.serve([&](SSL *ssl, int fd) {
            std::vector<std::uint8_t> chunk(16 * 1024);
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            while (written < kTotal) {
                const size_t at = written;
                const size_t n = std::min(chunk.size(), kTotal - at);
                for (size_t i = 0; i < n; ++i)
                    chunk[i] = byteAt(at + i);
                const int w = SSL_write(ssl, chunk.data(), int(n));
                if (w > 0) {
                    written += size_t(w);
                    continue;
                }
                if (SSL_get_error(ssl, w) != SSL_ERROR_WANT_WRITE) break;
                blocked = true; // the client, the relay and every socket between them are full
                pollfd p{fd, POLLOUT, 0};
                if (poll(&p, 1, 20000) != 1) break;
            }
            SSL_shutdown(ssl);
        }));

        Captured cap;
        Relay relay;
        QVERIFY(startRawHop(relay, cap, raw));
        RawTls::Client client;
        raw.connectThrough(relay, &client, 64 * 1024); // a small receive buffer fills sooner
        SSL *ssl = client.ssl;
        QVERIFY2(ssl, "a handshake through the intercepting hop");
        QTRY_VERIFY2_WITH_TIMEOUT(blocked.load(),
                                  qPrintable(QStringLiteral("the target wrote %1 bytes and never "
                                                            "blocked")
                                                 .arg(written.load())),
                                  20000);
        QVERIFY2(written < kTotal, "the whole stream fitted in the sockets; the client never held it up");

        std::vector<std::uint8_t> buf(64 * 1024);
        size_t got = 0;
        while (got < kTotal) {
            const int n = SSL_read(ssl, buf.data(), int(buf.size()));
            QVERIFY2(
                n > 0,
                qPrintable(QStringLiteral("the stream ended after %1 of %2 bytes").arg(got).arg(kTotal)));
            for (int i = 0; i < n; ++i)
                if (buf[size_t(i)] != byteAt(got + size_t(i)))
                    QFAIL(qPrintable(QStringLiteral("byte %1 differs").arg(got + size_t(i))));
            got += size_t(n);
        }
        QCOMPARE(got, kTotal);
        relay.stop();
    }

    // An intercepted connection's thread follows its client's core while the client makes small calls, as the
    // plain relay's thread does (capture/cpusteering.h): a raw TLS client on one core, then on another, each
    // record echoed by a raw TLS target.
    void aClientMakingSmallCallsIsFollowed()
    {
        const std::vector<int> cpus = threadcpus::allowedCpus();
        if (cpus.size() < 2) QSKIP("steering needs two cores");
        if (!threadcpus::loopbackReportsSendersCore({cpus.front(), cpus.back()}))
            QSKIP("this kernel does not report a loopback sender's core (SO_INCOMING_CPU)");
        RawTls raw;
        std::string error;
        QVERIFY2(raw.open(m_dir.filePath("echo-target-ca").toStdString(), &error), error.c_str());
        QVERIFY(raw.serve([](SSL *ssl, int) { // echoes every record until the client goes
            char buf[4096];
            for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;)
                if (SSL_write(ssl, buf, n) != n) break;
        }));
        Captured cap;
        Relay relay;
        QVERIFY(startRawHop(relay, cap, raw));
        RawTls::Client client;
        raw.connectThrough(relay, &client);
        SSL *ssl = client.ssl;
        QVERIFY2(ssl, "a handshake through the intercepting hop");
        auto calls = [&] {
            const char ping[] = "a small request";
            for (int i = 0; i < 10; ++i) {
                char back[sizeof ping];
                if (SSL_write(ssl, ping, sizeof ping) != int(sizeof ping) ||
                    SSL_read(ssl, back, sizeof back) != int(sizeof back) ||
                    std::memcmp(ping, back, sizeof ping))
                    return false;
            }
            return true;
        };
        // The connection's thread (named as the loop that started it) is the one pinned.
        auto pinnedTo = [](int cpu) {
            int n = 0;
            for (const std::vector<int> &c : threadcpus::namedThreadsCpus("rpcscope-tls"))
                n += c == std::vector<int>{cpu};
            return n;
        };
        QVERIFY(threadcpus::onCore(cpus.front(), calls));
        QCOMPARE(pinnedTo(cpus.front()), 1);
        QVERIFY(threadcpus::onCore(cpus.back(), calls));
        QCOMPARE(pinnedTo(cpus.back()), 1);
        QCOMPARE(pinnedTo(cpus.front()), 0);
        SSL_shutdown(ssl);
        relay.stop();
    }

    // Large messages come through in records that a burst reads and writes back to back; the decoder gets
    // each such record in the buffer it was read into (no copy of it), and decodes them as it did copies.
    // Each request is kept whole here, so every byte the client sent is looked at.
    void largeMessagesAreDecodedWhole()
    {
        Captured cap;
        Relay relay;
        DecoderLimits limits;
        limits.maxMessageKeepBytes = 1 << 20;
        relay.setDecoderLimits(limits);
        QVERIFY(startRelay(relay, cap, m_tls));
        auto channel = tlsChannel(relay.listenAddress().port, m_proxyCaPem, false);
        constexpr size_t kPayload = 300'000;
        for (int i = 0; i < 4; ++i) {
            const grpc::Status s = labCall(channel, "big-" + std::to_string(i), kPayload);
            QVERIFY2(s.ok(), s.error_message().c_str());
        }
        channel.reset();
        relay.stop();
        std::lock_guard lk(cap.mutex);
        int whole = 0;
        for (const WireEvent &e : cap.events) {
            if (e.kind != EventKind::Message || e.dir != Direction::ClientToServer) continue;
            QVERIFY2(e.length > kPayload, qPrintable(QString::number(e.length)));
            QCOMPARE(e.payload.size(), size_t(e.length));
            QVERIFY(!e.truncated);
            // The request's last field is its payload: 'p' to the end.
            QCOMPARE(e.payload.substr(e.payload.size() - kPayload), std::string(kPayload, 'p'));
            ++whole;
        }
        QCOMPARE(whole, 4);
    }

    // Both legs prefer AES-128-GCM, as nghttpx does. A client listing AES-256 first (OpenSSL's own order)
    // gets AES-128, and so does a target that takes its client's order; a client asking for ChaCha20 first
    // (one without AES instructions) gets ChaCha20.
    void bothLegsPreferAes128Gcm()
    {
        for (const bool chachaFirst : {false, true}) {
            // What the target negotiated, and when the test is done with it (declared before the target,
            // whose thread uses them).
            std::mutex lock;
            std::string targetSuite;
            std::promise<void> checked;
            RawTls raw;
            std::string error;
            QVERIFY2(raw.open(m_dir.filePath("cipher-target-ca").toStdString(), &error), error.c_str());
            if (chachaFirst)
                QVERIFY(SSL_CTX_set_ciphersuites(raw.clientCtx,
                                                 "TLS_CHACHA20_POLY1305_SHA256:"
                                                 "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256") == 1);
            else // the premise: left to itself, the client would have AES-256
                QCOMPARE(std::string(
                             SSL_CIPHER_get_name(sk_SSL_CIPHER_value(SSL_CTX_get_ciphers(raw.clientCtx), 0))),
                         std::string("TLS_AES_256_GCM_SHA384"));
            QVERIFY(raw.serve([&, done = checked.get_future().share()](SSL *ssl, int) {
                {
                    std::lock_guard<std::mutex> g(lock);
                    targetSuite = SSL_get_cipher_name(ssl);
                }
                done.wait_for(std::chrono::seconds(20));
            }));
            auto release = qScopeGuard([&] { checked.set_value(); });
            Captured cap;
            Relay relay;
            QVERIFY(startRawHop(relay, cap, raw));
            RawTls::Client client;
            raw.connectThrough(relay, &client);
            QVERIFY2(client.ssl, "a handshake through the intercepting hop");
            QCOMPARE(std::string(SSL_get_cipher_name(client.ssl)),
                     std::string(chachaFirst ? "TLS_CHACHA20_POLY1305_SHA256" : "TLS_AES_128_GCM_SHA256"));
            auto suite = [&] {
                std::lock_guard<std::mutex> g(lock);
                return targetSuite;
            };
            QTRY_VERIFY_WITH_TIMEOUT(!suite().empty(), 20000);
            QCOMPARE(suite(), std::string("TLS_AES_128_GCM_SHA256"));
        }
    }

    // What intercepted connections hold (two TLS sessions, relay buffers and a thread each) is in the relay's
    // memory, which a capture's budget counts: it grows with every connection and goes when they close. An
    // idle connection (a pooled channel between calls) holds little: its buffers come back with its next
    // bytes.
    void interceptedConnectionsCountInMemory()
    {
        Captured cap;
        Relay relay;
        QVERIFY(startRelay(relay, cap, m_tls));
        const size_t idle = relay.memoryBytes();
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        QVERIFY(ctx);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); // the minted certificate is not what this is about
        std::vector<std::pair<int, SSL *>> clients;
        auto closeAll = qScopeGuard([&] {
            for (auto &[fd, ssl] : clients) {
                SSL_free(ssl);
                close(fd);
            }
            clients.clear();
        });
        constexpr size_t kConnections = 8;
        for (size_t i = 0; i < kConnections; ++i) {
            const int fd = connectLoopback(relay.listenAddress().port);
            QVERIFY(fd >= 0);
            setIoTimeouts(fd, 10);
            SSL *ssl = SSL_new(ctx);
            clients.emplace_back(fd, ssl);
            SSL_set_fd(ssl, fd);
            SSL_set_tlsext_host_name(ssl, "localhost");
            QVERIFY2(SSL_connect(ssl) == 1, "a handshake through the intercepting hop");
        }
        QTRY_COMPARE_WITH_TIMEOUT(relay.openConnections(), int(kConnections), 10000);
        const auto bytes = [&] {
            return QStringLiteral("%1 bytes, %2 before the connections")
                .arg(relay.memoryBytes())
                .arg(idle)
                .toUtf8();
        };
        // Idle (the server's SETTINGS relayed, nothing since), each connection gives back its sessions'
        // record buffers and its 64 KiB read buffers: what stays is the sessions' state and the thread's
        // stack.
        const size_t asleep = 2 * TlsRelayLoop::idleSessionBytes() + (32u << 10);
        QTRY_VERIFY2_WITH_TIMEOUT(relay.memoryBytes() < idle + kConnections * asleep, bytes().constData(),
                                  10000);
        const size_t rested = relay.memoryBytes();
        // Bytes again on one connection: its buffers come back, and are counted, while it relays. Every check
        // sends a WINDOW_UPDATE, so the connection is never idle for long.
        SSL *busy = clients.front().second;
        static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                       "\0\0\0\x04\0\0\0\0\0"    // SETTINGS, empty
                                       "\0\0\0\x04\x01\0\0\0\0"; // SETTINGS ACK (of the server's)
        QCOMPARE(SSL_write(busy, kPreface, int(sizeof kPreface - 1)), int(sizeof kPreface - 1));
        const auto poke = [&] {
            static const char kWindowUpdate[] = "\0\0\x04\x08\0\0\0\0\0\0\0\0\x01";
            return SSL_write(busy, kWindowUpdate, int(sizeof kWindowUpdate - 1)) > 0;
        };
        const size_t relaying =
            2 * (TlsRelayLoop::tlsSessionBytes() - TlsRelayLoop::idleSessionBytes()) + 2 * (64u << 10);
        QTRY_VERIFY2_WITH_TIMEOUT(poke() && relay.memoryBytes() >= rested + relaying, bytes().constData(),
                                  10000);
        // Beyond that, little per connection: its thread's stack, its decoder's state.
        const size_t each = 2 * TlsRelayLoop::tlsSessionBytes() + 2 * (64u << 10);
        QVERIFY2(relay.memoryBytes() < idle + each + kConnections * asleep, bytes().constData());
        // Quiet again, it gives them back again.
        QTRY_VERIFY2_WITH_TIMEOUT(relay.memoryBytes() < idle + kConnections * asleep, bytes().constData(),
                                  10000);
        closeAll.dismiss();
        for (auto &[fd, ssl] : clients) {
            SSL_free(ssl);
            close(fd);
        }
        clients.clear();
        SSL_CTX_free(ctx);
        QTRY_COMPARE_WITH_TIMEOUT(relay.openConnections(), 0, 10000);
        QTRY_VERIFY2_WITH_TIMEOUT(
            relay.memoryBytes() < idle + each,
            qPrintable(QStringLiteral("%1 bytes, %2 idle").arg(relay.memoryBytes()).arg(idle)), 10000);
        relay.stop();
    }

    void withoutInterceptionTlsIsNamed()
    {
        // The same client straight through the plain relay: relayed unchanged (the call works against the
        // server's own certificate), and the connection is named by its ClientHello.
        Captured cap;
        Relay relay;
        std::string error;
        QVERIFY2(
            relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(m_server.port)}, cap.sink(), &error),
            error.c_str());
        const grpc::Status s = labCall(tlsChannel(relay.listenAddress().port, m_server.caPem, false));
        QVERIFY2(s.ok(), s.error_message().c_str());
        relay.stop();
        const std::string notes = cap.notes();
        QVERIFY2(notes.find("TLS, not decrypted: SNI localhost, ALPN grpc-exp, h2") != std::string::npos ||
                     notes.find("TLS, not decrypted: SNI localhost, ALPN h2") != std::string::npos,
                 notes.c_str());
        const TimelineStore store = cap.store();
        QVERIFY(!store.connections().empty());
        QVERIFY2(store.connections().front().decodeError.empty(),
                 store.connections().front().decodeError.c_str());
    }
};

QTEST_GUILESS_MAIN(TstTlsIntercept)
#include "tst_tlsintercept.moc"
