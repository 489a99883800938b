// Decrypting TLS from its bytes and a key log: the key schedule against RFC 8448 (TLS 1.3) and the TLS WG's
// PRF vector (TLS 1.2), the key-log parser's errors, and real OpenSSL connections (client and server in
// memory, each suite forced in turn) whose recorded bytes the decryptor must turn back into what was sent.

#include "rpcscopeca.h"
#include "tlsdecryptor.h"
#include "tlskeylog.h"
#include "tlskeyschedule.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <openssl/err.h>
#include <openssl/ssl.h>

using namespace rpcscope;

namespace {

std::string unhex(const char *hex)
{
    std::string out;
    for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
        out += char(std::stoi(std::string(hex + i, 2), nullptr, 16));
    return out;
}

std::string tohex(const std::string &s)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string g_keylog; // SSL_CTX_set_keylog_callback has no user pointer

void keylogLine(const SSL *, const char *line)
{
    g_keylog += line;
    g_keylog += '\n';
}

// Both ends of one TLS connection in memory; every byte either sends is kept, in order, by direction.
struct Pair
{
    SSL_CTX *clientCtx = nullptr, *serverCtx = nullptr;
    SSL *client = nullptr, *server = nullptr;
    std::vector<std::pair<Direction, std::string>> wire;

    ~Pair()
    {
        SSL_free(client);
        SSL_free(server);
        SSL_CTX_free(clientCtx);
        SSL_CTX_free(serverCtx);
    }

    bool start(const RpcscopeCa::Leaf &leaf, int version, const char *suite)
    {
        clientCtx = SSL_CTX_new(TLS_client_method());
        serverCtx = SSL_CTX_new(TLS_server_method());
        for (SSL_CTX *ctx : {clientCtx, serverCtx}) {
            SSL_CTX_set_min_proto_version(ctx, version);
            SSL_CTX_set_max_proto_version(ctx, version);
            if (version == TLS1_3_VERSION)
                SSL_CTX_set_ciphersuites(ctx, suite);
            else
                SSL_CTX_set_cipher_list(ctx, suite);
        }
        SSL_CTX_set_keylog_callback(clientCtx, keylogLine);
        if (SSL_CTX_use_certificate(serverCtx, leaf.cert) != 1 ||
            SSL_CTX_use_PrivateKey(serverCtx, leaf.key) != 1)
            return false;
        client = SSL_new(clientCtx);
        server = SSL_new(serverCtx);
        SSL_set_bio(client, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
        SSL_set_bio(server, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
        SSL_set_tlsext_host_name(client, "localhost");
        SSL_set_connect_state(client);
        SSL_set_accept_state(server);
        for (int i = 0; i < 20; ++i) {
            const int c = SSL_do_handshake(client);
            pump();
            const int s = SSL_do_handshake(server);
            pump();
            if (c == 1 && s == 1) return true;
        }
        return false;
    }

    // Moves what each end wrote to the other, recording it.
    void pump()
    {
        for (bool more = true; more;) {
            more = false;
            for (int d = 0; d < 2; ++d) {
                SSL *from = d == 0 ? client : server, *to = d == 0 ? server : client;
                char buf[4096];
                int n;
                while ((n = BIO_read(SSL_get_wbio(from), buf, sizeof buf)) > 0) {
                    BIO_write(SSL_get_rbio(to), buf, n);
                    const Direction dir = d == 0 ? Direction::ClientToServer : Direction::ServerToClient;
                    if (wire.empty() || wire.back().first != dir) wire.push_back({dir, {}});
                    wire.back().second.append(buf, size_t(n));
                    more = true;
                }
            }
        }
    }

    // `from` sends `data`; the other end reads it all.
    bool send(SSL *from, const std::string &data)
    {
        if (SSL_write(from, data.data(), int(data.size())) != int(data.size())) return false;
        pump();
        SSL *to = from == client ? server : client;
        std::string got;
        char buf[16384];
        int n;
        while (got.size() < data.size() && (n = SSL_read(to, buf, sizeof buf)) > 0) {
            got.append(buf, size_t(n));
            pump();
        }
        return got == data;
    }
};

// Feeds the recorded bytes in order, `chunk` bytes at a time; the plaintext by direction.
std::pair<std::string, std::string> decrypt(TlsDecryptor &d, const Pair &p, size_t chunk)
{
    std::string plain[2];
    for (const auto &[dir, bytes] : p.wire)
        for (size_t i = 0; i < bytes.size(); i += chunk)
            d.feed(dir, reinterpret_cast<const std::uint8_t *>(bytes.data()) + i,
                   std::min(chunk, bytes.size() - i), &plain[int(dir)]);
    return {plain[0], plain[1]};
}

std::string joined(const std::vector<TlsDecryptor::Note> &notes)
{
    std::string s;
    for (const TlsDecryptor::Note &n : notes)
        s += n.text + (n.problem ? " (problem)\n" : "\n");
    return s;
}

// A fuzz seed (tests/fuzz/fuzz_tlsdecrypt.cpp): the key log, then each read as direction, length, bytes.
bool writeSeed(const Pair &p, const QString &dir, const char *tag)
{
    std::string seed;
    seed += char(g_keylog.size() >> 8);
    seed += char(g_keylog.size() & 0xFF);
    seed += g_keylog;
    for (const auto &[dir, bytes] : p.wire)
        for (size_t i = 0; i < bytes.size(); i += 0xFFFF) {
            const size_t n = std::min<size_t>(0xFFFF, bytes.size() - i);
            seed += char(dir == Direction::ServerToClient);
            seed += char(n >> 8);
            seed += char(n & 0xFF);
            seed += bytes.substr(i, n);
        }
    QString name = QString::fromLatin1(tag).toLower();
    name.replace(QRegularExpression("[^a-z0-9]+"), "-");
    QFile f(dir + "/" + name);
    return f.open(QIODevice::WriteOnly) && f.write(seed.data(), qint64(seed.size())) == qint64(seed.size());
}

} // namespace

class TstTlsDecrypt : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    RpcscopeCa m_ca;
    std::shared_ptr<const RpcscopeCa::Leaf> m_leaf;

private slots:
    void initTestCase()
    {
        std::string error;
        QVERIFY2(m_ca.open(m_dir.path().toStdString(), false, &error), error.c_str());
        m_leaf = m_ca.leafFor("localhost", &error);
        QVERIFY2(m_leaf, error.c_str());
    }

    // RFC 8448 section 3 (simple 1-RTT handshake, TLS_AES_128_GCM_SHA256): traffic secrets to key and IV.
    void tls13KeysMatchRfc8448()
    {
        const TlsSuite &suite = *TlsKeySchedule::suite(0x1301);
        std::string key, iv;
        TlsKeySchedule::traffic13(
            suite, unhex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38"), &key, &iv);
        QCOMPARE(tohex(key), std::string("3fce516009c21727d0f2e4e86ee403bc"));
        QCOMPARE(tohex(iv), std::string("5d313eb2671276ee13000b30"));
        TlsKeySchedule::traffic13(
            suite, unhex("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21"), &key, &iv);
        QCOMPARE(tohex(key), std::string("dbfaa693d1762c5b666af5d950258d01"));
        QCOMPARE(tohex(iv), std::string("5bd3c71b836e0b76bb73265f"));
        TlsKeySchedule::traffic13(
            suite, unhex("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643"), &key, &iv);
        QCOMPARE(tohex(key), std::string("9f02283b6c9c07efc26bb9f2ac92e356"));
        QCOMPARE(tohex(iv), std::string("cf782b88dd83549aadf1e984"));
    }

    // The TLS 1.2 P_SHA256 vector published on the TLS working group's list.
    void tls12PrfMatchesVector()
    {
        const std::string out =
            TlsKeySchedule::prf12(false, unhex("9bbe436ba940f017b17652849a71db35"), "test label",
                                  unhex("a0ba9f936cda311827a6f796ffd5198c"), 100);
        QCOMPARE(tohex(out), std::string("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a"
                                         "6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab"
                                         "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701"
                                         "87347b66"));
    }

    void keyLogErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("error");
        const QString random(64, 'a'), secret(96, 'b');
        QTest::newRow("empty") << ""
                               << "holds no key line";
        QTest::newRow("comments only") << "# SSL/TLS secrets log file\n\n"
                                       << "holds no key line";
        QTest::newRow("not a key log") << "hello world\n"
                                       << "line 1 is no key-log line";
        QTest::newRow("short random") << "# x\nCLIENT_RANDOM abcd " + secret << "line 2: the client random";
        QTest::newRow("bad hex") << "CLIENT_RANDOM " + random + " zz" + secret.mid(2) << "line 1: the secret";
        QTest::newRow("extra field") << "CLIENT_RANDOM " + random + " " + secret + " x"
                                     << "line 1: the secret";
    }

    void keyLogErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, error);
        TlsKeyLog log;
        std::string why;
        QVERIFY(!log.parse(text.toStdString(), &why));
        QVERIFY2(why.find(error.toStdString()) != std::string::npos, why.c_str());
        QVERIFY(why.find('\n') == std::string::npos);
    }

    void keyLogSkipsOtherLabels()
    {
        const std::string random(64, 'a');
        TlsKeyLog log;
        std::string error;
        QVERIFY2(log.parse("# comment\r\nEXPORTER_SECRET " + random + " " + std::string(64, 'c') +
                               "\r\nCLIENT_TRAFFIC_SECRET_0 " + random + " " + std::string(64, 'd') + "\r\n",
                           &error),
                 error.c_str());
        QCOMPARE(log.size(), size_t(1));
        TlsKeyLog::Random r;
        r.fill(0xAA);
        QVERIFY(log.find(r));
        QCOMPARE(log.find(r)->clientTraffic0, std::string(32, char(0xDD)));
        QVERIFY(log.find(r)->masterSecret.empty());
        QTemporaryDir dir;
        QVERIFY(!log.load(dir.filePath("absent.log").toStdString(), &error));
        QVERIFY2(error.find("cannot read the key log") != std::string::npos, error.c_str());
    }

    void decryptsRealConnections_data()
    {
        QTest::addColumn<int>("version");
        QTest::addColumn<QString>("suite");
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("chunk");
        QTest::newRow("1.3 AES-128-GCM") << TLS1_3_VERSION << "TLS_AES_128_GCM_SHA256"
                                         << "TLS_AES_128_GCM_SHA256" << 100000;
        QTest::newRow("1.3 AES-256-GCM") << TLS1_3_VERSION << "TLS_AES_256_GCM_SHA384"
                                         << "TLS_AES_256_GCM_SHA384" << 7;
        QTest::newRow("1.3 ChaCha20") << TLS1_3_VERSION << "TLS_CHACHA20_POLY1305_SHA256"
                                      << "TLS_CHACHA20_POLY1305_SHA256" << 100000;
        QTest::newRow("1.2 AES-128-GCM") << TLS1_2_VERSION << "ECDHE-ECDSA-AES128-GCM-SHA256"
                                         << "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" << 100000;
        QTest::newRow("1.2 AES-256-GCM") << TLS1_2_VERSION << "ECDHE-ECDSA-AES256-GCM-SHA384"
                                         << "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" << 3;
        QTest::newRow("1.2 ChaCha20") << TLS1_2_VERSION << "ECDHE-ECDSA-CHACHA20-POLY1305"
                                      << "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" << 100000;
    }

    void decryptsRealConnections()
    {
        QFETCH(int, version);
        QFETCH(QString, suite);
        QFETCH(QString, name);
        QFETCH(int, chunk);
        g_keylog.clear();
        Pair p;
        QVERIFY(p.start(*m_leaf, version, suite.toLatin1().constData()));
        // Larger than a record (16 KiB), so that the plaintext spans records.
        std::string request = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        for (int i = 0; request.size() < 40000; ++i)
            request += "request " + std::to_string(i) + ";";
        const std::string reply(30000, 'r');
        QVERIFY(p.send(p.client, request));
        QVERIFY(p.send(p.server, reply));
        if (version == TLS1_3_VERSION) { // both ends move to new keys, and go on
            QCOMPARE(SSL_key_update(p.client, SSL_KEY_UPDATE_REQUESTED), 1);
            QVERIFY(p.send(p.client, "after the update"));
            QVERIFY(p.send(p.server, "the server's after the update"));
        }
        TlsKeyLog keys;
        std::string error;
        QVERIFY2(keys.parse(g_keylog, &error), error.c_str());
        TlsDecryptor d(keys);
        const auto [c2s, s2c] = decrypt(d, p, size_t(chunk));
        const std::string notes = joined(d.takeNotes());
        QVERIFY2(d.decrypting(), notes.c_str());
        QVERIFY2(notes.find(", " + name.toStdString() + ", SNI localhost") != std::string::npos,
                 notes.c_str());
        if (version == TLS1_3_VERSION) {
            QCOMPARE(c2s, request + "after the update");
            QCOMPARE(s2c, reply + "the server's after the update");
            QVERIFY2(notes.find("TLS key update by the client: followed") != std::string::npos,
                     notes.c_str());
        } else {
            QCOMPARE(c2s, request);
            QCOMPARE(s2c, reply);
        }
    }

    // The fuzz seeds (a short exchange per suite): into RPCSCOPE_TLS_SEEDS=DIR to regenerate
    // tests/fuzz/tlsdecrypt-corpus, else into a scratch directory.
    void writeFuzzSeeds()
    {
        QTemporaryDir scratch;
        const QString dir = qEnvironmentVariableIsSet("RPCSCOPE_TLS_SEEDS")
                                ? qEnvironmentVariable("RPCSCOPE_TLS_SEEDS")
                                : scratch.path();
        const struct
        {
            int version;
            const char *suite, *tag;
        } suites[] = {{TLS1_3_VERSION, "TLS_AES_128_GCM_SHA256", "1.3 AES-128-GCM"},
                      {TLS1_3_VERSION, "TLS_AES_256_GCM_SHA384", "1.3 AES-256-GCM"},
                      {TLS1_3_VERSION, "TLS_CHACHA20_POLY1305_SHA256", "1.3 ChaCha20"},
                      {TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256", "1.2 AES-128-GCM"},
                      {TLS1_2_VERSION, "ECDHE-ECDSA-AES256-GCM-SHA384", "1.2 AES-256-GCM"},
                      {TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305", "1.2 ChaCha20"}};
        for (const auto &s : suites) {
            g_keylog.clear();
            Pair p;
            QVERIFY(p.start(*m_leaf, s.version, s.suite));
            QVERIFY(p.send(p.client, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + std::string(100, 'c')));
            QVERIFY(p.send(p.server, std::string(50, 's')));
            if (s.version == TLS1_3_VERSION) {
                QCOMPARE(SSL_key_update(p.client, SSL_KEY_UPDATE_REQUESTED), 1);
                QVERIFY(p.send(p.client, "after"));
                QVERIFY(p.send(p.server, "after"));
            }
            QVERIFY(writeSeed(p, dir, s.tag));
        }
    }

    void missingKeyIsOneNote()
    {
        g_keylog.clear();
        Pair p;
        QVERIFY(p.start(*m_leaf, TLS1_3_VERSION, "TLS_AES_128_GCM_SHA256"));
        QVERIFY(p.send(p.client, "hello"));
        TlsKeyLog other; // another connection's keys only
        std::string error;
        QVERIFY(
            other.parse("CLIENT_RANDOM " + std::string(64, '1') + " " + std::string(96, '2') + "\n", &error));
        TlsDecryptor d(other);
        const auto [c2s, s2c] = decrypt(d, p, 100000);
        QVERIFY(c2s.empty() && s2c.empty());
        const std::vector<TlsDecryptor::Note> notes = d.takeNotes();
        QCOMPARE(notes.size(), size_t(1));
        QVERIFY(notes[0].problem);
        QVERIFY2(notes[0].text.rfind(
                     "TLS, no key in the key log for this connection: SNI localhost, client random ", 0) == 0,
                 notes[0].text.c_str());

        // A TLS 1.2 connection whose log has only TLS 1.3 lines for it.
        g_keylog.clear();
        Pair p12;
        QVERIFY(p12.start(*m_leaf, TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256"));
        QVERIFY(p12.send(p12.client, "hello"));
        std::string random = g_keylog.substr(g_keylog.find(' ') + 1, 64);
        TlsKeyLog wrong;
        QVERIFY(wrong.parse("CLIENT_TRAFFIC_SECRET_0 " + random + " " + std::string(64, '3') + "\n", &error));
        TlsDecryptor d12(wrong);
        decrypt(d12, p12, 100000);
        const std::string said = joined(d12.takeNotes());
        QVERIFY2(said.find("TLS 1.2 needs its CLIENT_RANDOM line") != std::string::npos, said.c_str());
    }

    void tamperedRecordStopsItsDirection()
    {
        g_keylog.clear();
        Pair p;
        QVERIFY(p.start(*m_leaf, TLS1_3_VERSION, "TLS_AES_128_GCM_SHA256"));
        QVERIFY(p.send(p.client, "first"));
        QVERIFY(p.send(p.server, "reply"));
        QVERIFY(p.send(p.client, "second"));
        p.wire.back().second[p.wire.back().second.size() - 3] ^= 1; // in the last record's tag
        TlsKeyLog keys;
        std::string error;
        QVERIFY(keys.parse(g_keylog, &error));
        TlsDecryptor d(keys);
        const auto [c2s, s2c] = decrypt(d, p, 100000);
        QCOMPARE(c2s, std::string("first"));
        QCOMPARE(s2c, std::string("reply"));
        const std::string notes = joined(d.takeNotes());
        QVERIFY2(notes.find("from the client does not decrypt with the key log's keys") != std::string::npos,
                 notes.c_str());
    }

    // Every single-byte change of a real transcript (handshake included), fed in odd chunks: never more
    // plaintext than was sent, and whatever went wrong is a note.
    void damagedTranscripts()
    {
        g_keylog.clear();
        Pair p;
        QVERIFY(p.start(*m_leaf, TLS1_3_VERSION, "TLS_AES_128_GCM_SHA256"));
        QVERIFY(p.send(p.client, std::string(20000, 'c')));
        QVERIFY(p.send(p.server, std::string(3000, 's')));
        TlsKeyLog keys;
        std::string error;
        QVERIFY(keys.parse(g_keylog, &error));
        size_t total = 0;
        for (const auto &w : p.wire)
            total += w.second.size();
        std::uint32_t seed = 12345;
        for (int i = 0; i < 400; ++i) {
            Pair damaged;
            damaged.wire = p.wire;
            seed = seed * 1103515245 + 12345;
            size_t at = (seed >> 8) % total;
            for (auto &w : damaged.wire) {
                if (at < w.second.size()) {
                    w.second[at] = char(w.second[at] ^ (1 + (seed & 0x7f)));
                    break;
                }
                at -= w.second.size();
            }
            TlsDecryptor d(keys);
            const auto [c2s, s2c] = decrypt(d, damaged, 1 + seed % 3000);
            QVERIFY(c2s.size() <= 20000 && s2c.size() <= 3000);
            const std::vector<TlsDecryptor::Note> notes = d.takeNotes();
            if (c2s.size() < 20000 || s2c.size() < 3000)
                QVERIFY2(std::any_of(notes.begin(), notes.end(), [](auto &n) { return n.problem; }),
                         joined(notes).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TstTlsDecrypt)
#include "tst_tlsdecrypt.moc"
