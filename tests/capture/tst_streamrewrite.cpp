// StreamFaults on made-up HTTP/2 bytes: unchanged when no rule acts, and HPACK in step on both sides when one
// swallows a header block (every block the server gets still decodes, with the right fields).

#include "faultrule.h"
#include "faultset.h"
#include "streamfaults.h"

#include <QtTest>
#include <nghttp2/nghttp2.h>
#include <random>

using namespace rpcscope;

namespace {
using Fields = std::vector<std::pair<std::string, std::string>>;

void frame(std::string &out, size_t len, std::uint8_t type, std::uint8_t flags, std::uint32_t stream)
{
    const char h[9] = {char(len >> 16),    char(len >> 8),     char(len),         char(type),  char(flags),
                       char(stream >> 24), char(stream >> 16), char(stream >> 8), char(stream)};
    out.append(h, 9);
}

// A client's side of a connection: its own HPACK encoder, indexing everything (so later blocks refer to
// entries earlier blocks added). With `split`, a block goes as HEADERS plus a CONTINUATION.
struct Sender
{
    nghttp2_hd_deflater *d = nullptr;
    Sender() { nghttp2_hd_deflate_new(&d, 4096); }
    ~Sender() { nghttp2_hd_deflate_del(d); }
    void headers(std::string &out, std::uint32_t stream, const Fields &fields, bool endStream,
                 bool split = false)
    {
        std::vector<nghttp2_nv> nva;
        for (const auto &[n, v] : fields)
            nva.push_back({(std::uint8_t *)n.data(), (std::uint8_t *)v.data(), n.size(), v.size(), 0});
        std::string block(nghttp2_hd_deflate_bound(d, nva.data(), nva.size()), '\0');
        const auto n =
            nghttp2_hd_deflate_hd(d, (std::uint8_t *)block.data(), block.size(), nva.data(), nva.size());
        block.resize(size_t(n));
        if (split && block.size() > 1) {
            const size_t half = block.size() / 2;
            frame(out, half, 1, endStream ? 1 : 0, stream);
            out.append(block, 0, half);
            frame(out, block.size() - half, 9, 0x4, stream);
            out.append(block, half);
            return;
        }
        frame(out, block.size(), 1, 0x4 | (endStream ? 1 : 0), stream);
        out += block;
    }
};

Fields request(const std::string &method, int n)
{
    return {{":method", "POST"},
            {":scheme", "http"},
            {":path", method},
            {":authority", "svc"},
            {"content-type", "application/grpc"},
            {"te", "trailers"},
            {"rpcscope-call-id", "call-" + std::to_string(n)}};
}

void data(std::string &out, std::uint32_t stream, size_t len)
{
    frame(out, len, 0, 1, stream);
    out.append(len, 'x');
}

// Every header block of `bytes` (frames after `skip` bytes), decoded in order with one inflater.
bool decodeAll(const std::string &bytes, size_t skip, std::vector<std::pair<std::uint32_t, Fields>> *blocks)
{
    nghttp2_hd_inflater *inf = nullptr;
    nghttp2_hd_inflate_new(&inf);
    size_t off = skip;
    bool ok = true;
    while (ok && off + 9 <= bytes.size()) {
        const auto *p = (const std::uint8_t *)bytes.data() + off;
        size_t len = (size_t(p[0]) << 16) | (p[1] << 8) | p[2];
        const std::uint32_t stream = ((p[5] & 0x7f) << 24) | (p[6] << 16) | (p[7] << 8) | p[8];
        if (p[3] == 1) {
            Fields f;
            // A block cut into HEADERS and CONTINUATIONs is decoded whole.
            std::string block((const char *)p + 9, len);
            while (ok && !(p[4] & 0x4)) {
                off += 9 + len;
                ok = off + 9 <= bytes.size();
                if (!ok) break;
                p = (const std::uint8_t *)bytes.data() + off;
                len = (size_t(p[0]) << 16) | (p[1] << 8) | p[2];
                ok = p[3] == 9 && off + 9 + len <= bytes.size();
                if (ok) block.append((const char *)p + 9, len);
            }
            const std::uint8_t *in = (const std::uint8_t *)block.data();
            size_t inlen = block.size();
            for (;;) {
                nghttp2_nv nv;
                int flags = 0;
                const auto rv = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, inlen, 1);
                if (rv < 0) {
                    ok = false;
                    break;
                }
                in += rv;
                inlen -= size_t(rv);
                if (flags & NGHTTP2_HD_INFLATE_EMIT)
                    f.emplace_back(std::string((char *)nv.name, nv.namelen),
                                   std::string((char *)nv.value, nv.valuelen));
                if (flags & NGHTTP2_HD_INFLATE_FINAL) {
                    nghttp2_hd_inflate_end_headers(inf);
                    break;
                }
                if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && inlen == 0) {
                    ok = false;
                    break;
                }
            }
            blocks->emplace_back(stream, std::move(f));
        }
        off += 9 + len;
    }
    nghttp2_hd_inflate_del(inf);
    return ok && off == bytes.size();
}

std::shared_ptr<FaultSet> rules(const std::vector<std::string> &texts)
{
    std::vector<FaultRule> out;
    for (const std::string &t : texts) {
        FaultRule r;
        std::string error;
        if (!parseFaultRule(t, &r, &error)) qFatal("%s", error.c_str());
        out.push_back(r);
    }
    return std::make_shared<FaultSet>(std::move(out));
}

// The client's bytes: the preface, SETTINGS, then `calls` unary requests on streams 1, 3, 5, ...; every
// third request's header block is cut into HEADERS and CONTINUATION.
std::string clientBytes(int calls)
{
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    frame(out, 0, 4, 0, 0);
    Sender s;
    for (int i = 0; i < calls; ++i) {
        const std::uint32_t stream = std::uint32_t(2 * i + 1);
        s.headers(out, stream, request(i % 2 ? "/shop.Cart/Add" : "/shop.Cart/Get", i), false, i % 3 == 2);
        data(out, stream, 20);
    }
    return out;
}

// Feeds `bytes` in pieces of random sizes up to `most`, as reads would come: small pieces cut frames (the
// rest waits for the next read), large ones hold many whole frames (handled where they were read).
std::string feed(StreamFaults &f, const std::string &bytes, int most)
{
    std::mt19937 random(7);
    std::string out;
    for (size_t off = 0; off < bytes.size();) {
        const size_t n =
            std::min(bytes.size() - off, size_t(std::uniform_int_distribution<int>(1, most)(random)));
        f.fromClient((const std::uint8_t *)bytes.data() + off, n, 0);
        off += n;
        out += f.toServer;
        f.toServer.clear();
    }
    return out;
}
void piecesData()
{
    QTest::addColumn<int>("most");
    QTest::newRow("cut frames (reads of 1-40 bytes)") << 40;
    QTest::newRow("whole frames (reads up to 3000 bytes)") << 3000;
    QTest::newRow("one read") << (1 << 20);
}
} // namespace

class TestStreamRewrite : public QObject
{
    Q_OBJECT

private slots:
    void unchangedWhenNoRuleActs_data() { piecesData(); }
    void unchangedWhenNoRuleActs()
    {
        QFETCH(int, most);
        StreamFaults f(rules({"abort method=/nowhere/*", "blackhole"}), "", 0, 1);
        const std::string in = clientBytes(20);
        QCOMPARE(feed(f, in, most), in);
        QVERIFY(f.toClient.empty());
        QVERIFY(f.injections.empty());
        QVERIFY(f.failure.empty());
    }

    void swallowedBlocksKeepTheServersTableInStep_data() { piecesData(); }
    void swallowedBlocksKeepTheServersTableInStep()
    {
        QFETCH(int, most);
        // Every other Add is aborted before the server: its block (which added entries to the client's
        // table) never reaches the server, yet every later block must decode there to the same fields.
        auto set = rules({"abort method=/shop.Cart/Add nth=1-3"});
        StreamFaults f(set, "", 0, 1);
        const int calls = 20;
        const std::string out = feed(f, clientBytes(calls), most);
        QVERIFY2(f.failure.empty(), f.failure.c_str());
        QCOMPARE(set->hits(0), std::uint64_t(3));
        QCOMPARE(f.injections.size(), size_t(3));
        std::vector<std::pair<std::uint32_t, Fields>> blocks;
        QVERIFY(decodeAll(out, 24, &blocks));
        QCOMPARE(int(blocks.size()), calls - 3);
        int next = 0;
        for (const auto &[stream, fields] : blocks) {
            while (next < 6 && next % 2 == 1 && (next == 1 || next == 3 || next == 5)) // the swallowed ones
                ++next;
            QCOMPARE(stream, std::uint32_t(2 * next + 1));
            QVERIFY(fields == request(next % 2 ? "/shop.Cart/Add" : "/shop.Cart/Get", next));
            ++next;
        }
        // The client got one Trailers-Only per aborted stream, and every byte of it decodes.
        std::vector<std::pair<std::uint32_t, Fields>> answers;
        QVERIFY(decodeAll(f.toClient, 0, &answers));
        QCOMPARE(answers.size(), size_t(3));
        QCOMPARE(answers[0].first, 3u);
        QVERIFY(std::find(answers[0].second.begin(), answers[0].second.end(),
                          std::pair<std::string, std::string>("grpc-status", "14")) !=
                answers[0].second.end());
    }
};

QTEST_GUILESS_MAIN(TestStreamRewrite)
#include "tst_streamrewrite.moc"
