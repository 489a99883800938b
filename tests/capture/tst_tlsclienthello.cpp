// The ClientHello parser, on the first bytes of a real grpc++ TLS client, on every cut of them, and on
// garbage; and the decoder naming relayed TLS by it ("TLS, not decrypted: ...") instead of failing.

#include "connectiondecoder.h"
#include "testnet.h"
#include "tlsclienthello.h"

#include <QtTest>
#include <grpcpp/grpcpp.h>
#include <random>

using namespace rpcscope;
using namespace testnet;

namespace {
// What a grpc++ client sends first over TLS to "svc.example": read by a plain socket that never answers.
std::string grpcClientHello()
{
    const int lfd = listenLoopback();
    if (lfd < 0) return {};
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("svc.example");
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(localPort(lfd)),
                                             grpc::SslCredentials(grpc::SslCredentialsOptions()), args);
    channel->GetState(true); // connect now
    setIoTimeouts(lfd, 10);
    const int fd = accept(lfd, nullptr, nullptr);
    close(lfd);
    if (fd < 0) return {};
    setIoTimeouts(fd, 10);
    std::string hello;
    char buf[4096];
    while (hello.size() <
           TlsClientHello::recordSize(reinterpret_cast<const std::uint8_t *>(hello.data()), hello.size())) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        hello.append(buf, size_t(n));
    }
    close(fd);
    return hello;
}

const std::uint8_t *u8(const std::string &s)
{
    return reinterpret_cast<const std::uint8_t *>(s.data());
}
} // namespace

class TstTlsClientHello : public QObject
{
    Q_OBJECT
    std::string m_hello;

private slots:
    void initTestCase()
    {
        m_hello = grpcClientHello();
        QVERIFY2(m_hello.size() > 100, "no ClientHello from the grpc++ client");
    }

    void parsesRealClientHello()
    {
        ClientHelloInfo info;
        std::string error;
        QCOMPARE(TlsClientHello::parse(u8(m_hello), m_hello.size(), &info, &error), TlsClientHello::Parsed);
        QCOMPARE(info.sni, std::string("svc.example"));
        QVERIFY(std::find(info.alpn.begin(), info.alpn.end(), "h2") != info.alpn.end());
        QVERIFY(info.offersTls13);
        const std::string text = TlsClientHello::describe(info);
        QVERIFY2(text.starts_with("TLS, not decrypted: SNI svc.example, ALPN "), text.c_str());
        QVERIFY2(text.find("h2") != std::string::npos, text.c_str());
    }

    void everyCutNeedsMore()
    {
        ClientHelloInfo info;
        std::string error;
        for (size_t n = 0; n < m_hello.size(); ++n)
            QVERIFY2(TlsClientHello::parse(u8(m_hello), n, &info, &error) == TlsClientHello::NeedMore,
                     qPrintable(QString("cut at %1: %2").arg(n).arg(QString::fromStdString(error))));
    }

    void garbage()
    {
        ClientHelloInfo info;
        std::string error;
        const std::string h2 = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        QCOMPARE(TlsClientHello::parse(u8(h2), h2.size(), &info, &error), TlsClientHello::NotTls);
        const std::string get = "GET / HTTP/1.1\r\n";
        QCOMPARE(TlsClientHello::parse(u8(get), get.size(), &info, &error), TlsClientHello::NotTls);
        // A handshake record that holds a ServerHello (type 2).
        std::string server = m_hello;
        server[5] = 2;
        QCOMPARE(TlsClientHello::parse(u8(server), server.size(), &info, &error), TlsClientHello::Malformed);
        QVERIFY2(error.find("not a ClientHello") != std::string::npos, error.c_str());
        // An empty record, and one longer than TLS allows.
        const std::string empty("\x16\x03\x01\x00\x00", 5);
        QCOMPARE(TlsClientHello::parse(u8(empty), empty.size(), &info, &error), TlsClientHello::Malformed);
        const std::string huge("\x16\x03\x01\xff\xff", 5);
        QCOMPARE(TlsClientHello::parse(u8(huge), huge.size(), &info, &error), TlsClientHello::Malformed);
        // The whole record, with the extensions' length pointing past it.
        std::string lying = m_hello;
        auto byteAt = [&](size_t i) { return size_t(std::uint8_t(lying[i])); };
        size_t at = 5 + 4 + 2 + 32;                   // the session id's length
        at += 1 + byteAt(at);                         // the cipher suites' length
        at += 2 + (byteAt(at) << 8 | byteAt(at + 1)); // the compression methods' length
        const size_t extsAt = at + 1 + byteAt(at);
        lying[extsAt] = char(0xff);
        lying[extsAt + 1] = char(0xff);
        QCOMPARE(TlsClientHello::parse(u8(lying), lying.size(), &info, &error), TlsClientHello::Malformed);
        // Random bytes behind a TLS record header never crash it.
        std::mt19937 rng(18);
        for (int i = 0; i < 2000; ++i) {
            std::string junk("\x16\x03\x01", 3);
            const size_t len = rng() % 600;
            junk += char(len >> 8);
            junk += char(len & 0xff);
            junk += char(1);
            for (size_t k = 0; k < len; ++k)
                junk += char(rng());
            TlsClientHello::parse(u8(junk), junk.size(), &info, &error);
        }
    }

    void decoderNamesTlsInsteadOfFailing()
    {
        // Fed in random pieces, as reads come: one note, no decode error, on either side.
        std::mt19937 rng(7);
        ConnectionDecoder d(1);
        EventBatch out;
        size_t off = 0;
        while (off < m_hello.size()) {
            const size_t n = std::min<size_t>(1 + rng() % 300, m_hello.size() - off);
            d.feed(Direction::ClientToServer, u8(m_hello) + off, n, 1, out);
            off += n;
        }
        const std::string serverHello("\x16\x03\x03\x00\x7a\x02\x00\x00\x76\x03\x03", 11);
        d.feed(Direction::ServerToClient, u8(serverHello), serverHello.size(), 2, out);
        d.finish(3, out);
        int notes = 0;
        for (const WireEvent &e : out) {
            QVERIFY2(e.kind != EventKind::DecodeError, e.reason.c_str());
            if (e.kind == EventKind::Notice) {
                ++notes;
                QVERIFY2(e.reason.starts_with("TLS, not decrypted: SNI svc.example, ALPN"), e.reason.c_str());
            }
        }
        QCOMPARE(notes, 1);

        // A connection that ends inside its ClientHello says so.
        ConnectionDecoder cut(2);
        EventBatch cutOut;
        cut.feed(Direction::ClientToServer, u8(m_hello), 60, 1, cutOut);
        cut.finish(2, cutOut);
        QCOMPARE(cutOut.size(), size_t(1));
        QCOMPARE(cutOut[0].kind, EventKind::DecodeError);
        QVERIFY2(cutOut[0].reason.find("ClientHello cut short") != std::string::npos,
                 cutOut[0].reason.c_str());

        // A server that is not h2 is still an error when its client did not start TLS.
        ConnectionDecoder plain(3);
        EventBatch plainOut;
        plain.feed(Direction::ServerToClient, u8(serverHello), serverHello.size(), 1, plainOut);
        QCOMPARE(plainOut.size(), size_t(1));
        QCOMPARE(plainOut[0].kind, EventKind::DecodeError);
    }
};

QTEST_GUILESS_MAIN(TstTlsClientHello)
#include "tst_tlsclienthello.moc"
