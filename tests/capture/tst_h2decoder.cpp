#include "connectiondecoder.h"

#include <QtTest>
#include <algorithm>
#include <cstring>
#include <list>
#include <nghttp2/nghttp2.h>
#include <random>

using namespace rpcscope;

// Every byte the decoder sees here was produced by a real nghttp2 client talking to a real nghttp2 server, so
// the expectations come from nghttp2 (what was submitted, what the receiving session saw), never from frames
// written by hand to match the decoder's own idea of HTTP/2.

namespace {

constexpr Direction C2S = Direction::ClientToServer;
constexpr Direction S2C = Direction::ServerToClient;
constexpr std::uint32_t kConnection = 7;

int index(Direction d)
{
    return d == C2S ? 0 : 1;
}

struct FrameInfo
{
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::uint32_t stream = 0;
    std::uint32_t length = 0;
    bool operator==(const FrameInfo &) const = default;
};

struct Block
{
    std::uint32_t stream = 0;
    std::vector<Header> headers;
    bool operator==(const Block &) const = default;
};

struct Msg
{
    std::uint32_t stream = 0;
    std::uint32_t length = 0;
    bool compressed = false;
    bool operator==(const Msg &) const = default;
};

// --- failure descriptions: a 40 KiB header value must not flood the log ------------------------------------

std::string clip(const std::string &s)
{
    if (s.size() <= 60) return s;
    return s.substr(0, 40) + "...(" + std::to_string(s.size()) + " bytes)";
}

std::string describe(const Header &h)
{
    return h.name + ": " + clip(h.value);
}

std::string describe(const std::vector<Header> &hs)
{
    std::string s = "{";
    for (const Header &h : hs)
        s += (s.size() > 1 ? ", " : "") + describe(h);
    return s + "}";
}

std::string describe(const Block &b)
{
    return "stream " + std::to_string(b.stream) + " " + describe(b.headers);
}

std::string describe(const FrameInfo &f)
{
    return std::string(frameTypeName(f.type)) + " stream " + std::to_string(f.stream) + " flags 0x" +
           QByteArray::number(f.flags, 16).toStdString() + " len " + std::to_string(f.length);
}

std::string describe(const Msg &m)
{
    return "stream " + std::to_string(m.stream) + " len " + std::to_string(m.length) +
           (m.compressed ? " compressed" : "");
}

std::string describe(const WireEvent &e)
{
    static const char *const kinds[] = {"Opened", "Closed", "Frame", "Headers", "Message", "DecodeError"};
    std::string s = std::string(kinds[int(e.kind)]) + (e.dir == C2S ? " c2s" : " s2c") + " conn " +
                    std::to_string(e.connection) + " stream " + std::to_string(e.stream);
    switch (e.kind) {
    case EventKind::Frame:
        s += " " + describe(FrameInfo{e.frameType, e.flags, e.stream, e.length}) + " err " +
             std::to_string(e.errorCode);
        break;
    case EventKind::Headers:
        s += (e.endStream ? " END_STREAM " : " ") + describe(e.headers);
        break;
    case EventKind::Message:
        s += " len " + std::to_string(e.length) + (e.compressed ? " compressed" : "");
        break;
    default:
        s += " " + e.reason;
        break;
    }
    return s;
}

template <typename T> QByteArray mismatch(const std::vector<T> &actual, const std::vector<T> &expected)
{
    std::string s =
        "sizes " + std::to_string(actual.size()) + " vs expected " + std::to_string(expected.size());
    const size_t n = std::min(actual.size(), expected.size());
    size_t i = 0;
    while (i < n && actual[i] == expected[i])
        ++i;
    s += "; first difference at " + std::to_string(i);
    s += "\n   actual:   " + (i < actual.size() ? describe(actual[i]) : std::string("<none>"));
    s += "\n   expected: " + (i < expected.size() ? describe(expected[i]) : std::string("<none>"));
    return QByteArray::fromStdString(s);
}

// QCOMPARE cannot print std::vector; this names the first differing element instead.
#define COMPARE_SEQ(actual, expected)                                                                        \
    do {                                                                                                     \
        const auto &a_ = (actual);                                                                           \
        const auto &e_ = (expected);                                                                         \
        if (!(a_ == e_)) QFAIL(mismatch(a_, e_).constData());                                                \
    } while (false)

// --- gRPC building blocks ----------------------------------------------------------------------------------

std::string grpcMessage(std::uint32_t len, bool compressed = false, char fill = 'm')
{
    std::string s(5 + size_t(len), fill);
    s[0] = compressed ? 1 : 0;
    s[1] = char(len >> 24);
    s[2] = char(len >> 16);
    s[3] = char(len >> 8);
    s[4] = char(len);
    return s;
}

std::vector<Header> requestHeaders(const std::string &callId, int attempts = 0,
                                   const std::string &path = "/pkg.Svc/Method")
{
    return {{":method", "POST"},
            {":scheme", "http"},
            {":path", path},
            {":authority", "backend.test:50051"},
            {"content-type", "application/grpc"},
            {"te", "trailers"},
            {"grpc-timeout", "250m"},
            {"grpc-previous-rpc-attempts", std::to_string(attempts)},
            {"grpc-accept-encoding", "identity,deflate,gzip"},
            {"user-agent", "grpc-c++/1.60.0 grpc-c/37.0.0 (linux; chttp2)"},
            {"rpcscope-call-id", callId}};
}

std::vector<Header> responseHeaders()
{
    return {{":status", "200"},
            {"content-type", "application/grpc"},
            {"grpc-accept-encoding", "identity,deflate,gzip"},
            {"server", "rpcscope-test-server/1.0"}};
}

std::vector<Header> okTrailers()
{
    return {{"grpc-status", "0"}, {"grpc-message", "done"}};
}

std::vector<nghttp2_nv> toNv(const std::vector<Header> &headers)
{
    std::vector<nghttp2_nv> nv;
    for (const Header &h : headers)
        nv.push_back({reinterpret_cast<std::uint8_t *>(const_cast<char *>(h.name.data())),
                      reinterpret_cast<std::uint8_t *>(const_cast<char *>(h.value.data())), h.name.size(),
                      h.value.size(), NGHTTP2_NV_FLAG_NONE});
    return nv;
}

// --- the in-memory connection ------------------------------------------------------------------------------

// A client and a server nghttp2 session wired back to back. Everything either one sends is recorded as a
// chunk (one chunk per nghttp2_session_send round, the way a relay would read it) and then delivered to the
// other, so SETTINGS, ACKs and WINDOW_UPDATEs all happen as on a real socket.
struct Conversation
{
    struct Chunk
    {
        Direction dir;
        std::string bytes;
    };
    struct Options
    {
        std::vector<nghttp2_settings_entry> clientSettings = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
        std::vector<nghttp2_settings_entry> serverSettings = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
        size_t serverDeflateTableSize = 0; // 0: nghttp2's default (4096)
    };

    Conversation() : Conversation(Options()) {}
    explicit Conversation(const Options &options)
    {
        nghttp2_session_callbacks *cb = nullptr;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_send_callback(cb, &Conversation::onSend);
        nghttp2_session_callbacks_set_on_begin_frame_callback(cb, &Conversation::onBeginFrame);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &Conversation::onBeginHeaders);
        nghttp2_session_callbacks_set_on_header_callback(cb, &Conversation::onHeader);
        nghttp2_session_callbacks_set_select_padding_callback(cb, &Conversation::selectPadding);
        nghttp2_session_callbacks_set_data_source_read_length_callback(cb, &Conversation::readLength);

        nghttp2_option *serverOption = nullptr;
        nghttp2_option_new(&serverOption);
        if (options.serverDeflateTableSize)
            nghttp2_option_set_max_deflate_dynamic_table_size(serverOption, options.serverDeflateTableSize);

        m_client.conv = m_server.conv = this;
        m_client.sends = C2S;
        m_server.sends = S2C;
        if (nghttp2_session_client_new(&m_client.session, cb, &m_client) != 0 ||
            nghttp2_session_server_new2(&m_server.session, cb, &m_server, serverOption) != 0)
            fail("session creation failed");
        nghttp2_option_del(serverOption);
        nghttp2_session_callbacks_del(cb);
        if (!m_error.empty()) return;

        // nghttp2 sends the client magic by itself, but each side's SETTINGS is the application's job.
        check(nghttp2_submit_settings(m_client.session, NGHTTP2_FLAG_NONE, options.clientSettings.data(),
                                      options.clientSettings.size()),
              "client settings");
        check(nghttp2_submit_settings(m_server.session, NGHTTP2_FLAG_NONE, options.serverSettings.data(),
                                      options.serverSettings.size()),
              "server settings");
    }

    ~Conversation()
    {
        nghttp2_session_del(m_client.session);
        nghttp2_session_del(m_server.session);
    }
    Conversation(const Conversation &) = delete;
    Conversation &operator=(const Conversation &) = delete;

    std::int32_t request(const std::vector<Header> &headers, std::string body)
    {
        Body &b = m_bodies.emplace_back();
        b.data = std::move(body);
        nghttp2_data_provider provider;
        provider.source.ptr = &b;
        provider.read_callback = &Conversation::readBody;
        const auto nv = toNv(headers);
        const std::int32_t id =
            nghttp2_submit_request(m_client.session, nullptr, nv.data(), nv.size(), &provider, nullptr);
        check(id < 0 ? id : 0, "submit_request");
        return id;
    }

    // Response headers, a body of gRPC messages, then trailers sent from the data source once the body is
    // out, which is how nghttp2 wants trailers to follow DATA.
    void respond(std::int32_t stream, const std::vector<Header> &headers, std::string body,
                 std::vector<Header> trailers)
    {
        Body &b = m_bodies.emplace_back();
        b.data = std::move(body);
        b.trailers = std::move(trailers);
        nghttp2_data_provider provider;
        provider.source.ptr = &b;
        provider.read_callback = &Conversation::readBody;
        const auto nv = toNv(headers);
        check(nghttp2_submit_response(m_server.session, stream, nv.data(), nv.size(), &provider),
              "submit_response");
    }

    // gRPC Trailers-Only: one HEADERS with END_STREAM carrying :status and grpc-status together.
    void respondTrailersOnly(std::int32_t stream, const std::vector<Header> &headers)
    {
        const auto nv = toNv(headers);
        check(nghttp2_submit_response(m_server.session, stream, nv.data(), nv.size(), nullptr),
              "trailers-only");
    }

    void cancel(std::int32_t stream)
    {
        check(nghttp2_submit_rst_stream(m_client.session, NGHTTP2_FLAG_NONE, stream, NGHTTP2_CANCEL), "rst");
    }

    void ping() { check(nghttp2_submit_ping(m_client.session, NGHTTP2_FLAG_NONE, nullptr), "ping"); }

    // The client lets the server send more on a stream (0: the connection) before the server has sent
    // anything.
    void raiseWindow(std::int32_t stream, std::int32_t increment)
    {
        check(nghttp2_submit_window_update(m_client.session, NGHTTP2_FLAG_NONE, stream, increment),
              "window_update");
    }

    void goaway(std::uint32_t errorCode, const std::string &debug)
    {
        check(nghttp2_submit_goaway(m_server.session, NGHTTP2_FLAG_NONE,
                                    nghttp2_session_get_last_proc_stream_id(m_server.session), errorCode,
                                    reinterpret_cast<const std::uint8_t *>(debug.data()), debug.size()),
              "goaway");
    }

    // Runs both sessions until neither has anything left to say.
    void pump()
    {
        for (int round = 0; round < 64 && m_error.empty(); ++round) {
            const bool clientSent = transfer(m_client, m_server);
            const bool serverSent = transfer(m_server, m_client);
            if (!clientSent && !serverSent) return;
        }
        fail("conversation did not settle");
    }

    size_t totalBytes() const
    {
        size_t n = 0;
        for (const Chunk &c : m_chunks)
            n += c.bytes.size();
        return n;
    }

    std::vector<Chunk> m_chunks;        // production order, both directions interleaved
    std::vector<FrameInfo> m_frames[2]; // frame headers as the receiving session parsed them
    std::vector<Block> m_blocks[2];     // header blocks as the receiving session inflated them
    bool m_padding = false;             // pad every HEADERS and DATA frame while set
    std::string m_error;                // first nghttp2 failure; nothing recorded after it is trustworthy

private:
    struct Side
    {
        Conversation *conv = nullptr;
        Direction sends = C2S;
        nghttp2_session *session = nullptr;
        std::string out;
    };
    struct Body
    {
        std::string data;
        size_t offset = 0;
        std::vector<Header> trailers;
    };

    void fail(const std::string &what)
    {
        if (m_error.empty()) m_error = what;
    }
    void check(int rv, const char *what)
    {
        if (rv != 0) fail(std::string(what) + ": " + nghttp2_strerror(rv));
    }

    bool transfer(Side &from, Side &to)
    {
        from.out.clear();
        check(nghttp2_session_send(from.session), "session_send");
        if (from.out.empty() || !m_error.empty()) return false;
        m_chunks.push_back({from.sends, from.out});
        const auto *p = reinterpret_cast<const std::uint8_t *>(from.out.data());
        const ssize_t used = nghttp2_session_mem_recv(to.session, p, from.out.size());
        if (used != ssize_t(from.out.size()))
            fail(std::string("mem_recv: ") + (used < 0 ? nghttp2_strerror(int(used)) : "short"));
        return true;
    }

    static Side &side(void *userData) { return *static_cast<Side *>(userData); }
    static int received(const Side &s) { return index(s.sends == C2S ? S2C : C2S); }

    static ssize_t onSend(nghttp2_session *, const std::uint8_t *data, size_t length, int, void *userData)
    {
        side(userData).out.append(reinterpret_cast<const char *>(data), length);
        return ssize_t(length);
    }

    // Unlike on_frame_recv, this also fires for each CONTINUATION: it is the exact frame list on the wire.
    static int onBeginFrame(nghttp2_session *, const nghttp2_frame_hd *hd, void *userData)
    {
        Side &s = side(userData);
        s.conv->m_frames[received(s)].push_back(
            {hd->type, hd->flags, std::uint32_t(hd->stream_id), std::uint32_t(hd->length)});
        return 0;
    }

    static int onBeginHeaders(nghttp2_session *, const nghttp2_frame *frame, void *userData)
    {
        Side &s = side(userData);
        s.conv->m_blocks[received(s)].push_back({std::uint32_t(frame->hd.stream_id), {}});
        return 0;
    }

    static int onHeader(nghttp2_session *, const nghttp2_frame *, const std::uint8_t *name, size_t namelen,
                        const std::uint8_t *value, size_t valuelen, std::uint8_t, void *userData)
    {
        Side &s = side(userData);
        s.conv->m_blocks[received(s)].back().headers.push_back(
            {std::string(reinterpret_cast<const char *>(name), namelen),
             std::string(reinterpret_cast<const char *>(value), valuelen)});
        return 0;
    }

    // Varies the pad length, including zero (only the Pad Length octet), so no amount is special-cased.
    static ssize_t selectPadding(nghttp2_session *, const nghttp2_frame *frame, size_t maxPayload,
                                 void *userData)
    {
        Side &s = side(userData);
        if (!s.conv->m_padding) return ssize_t(frame->hd.length);
        const size_t pad = (s.conv->m_padSeq++ * 37) % 256;
        return ssize_t(std::min(maxPayload, frame->hd.length + 1 + pad));
    }

    // nghttp2 caps DATA at 16 KiB unless told otherwise; let it use whatever the peer's SETTINGS allow.
    static ssize_t readLength(nghttp2_session *, std::uint8_t, std::int32_t, std::int32_t connWindow,
                              std::int32_t streamWindow, std::uint32_t maxFrame, void *)
    {
        return std::max<ssize_t>(1, std::min<ssize_t>({connWindow, streamWindow, ssize_t(maxFrame)}));
    }

    static ssize_t readBody(nghttp2_session *session, std::int32_t stream, std::uint8_t *buf, size_t length,
                            std::uint32_t *flags, nghttp2_data_source *source, void *)
    {
        Body &b = *static_cast<Body *>(source->ptr);
        const size_t n = std::min(length, b.data.size() - b.offset);
        std::memcpy(buf, b.data.data() + b.offset, n);
        b.offset += n;
        if (b.offset == b.data.size()) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            if (!b.trailers.empty()) {
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
                const auto nv = toNv(b.trailers);
                if (nghttp2_submit_trailer(session, stream, nv.data(), nv.size()) != 0)
                    return NGHTTP2_ERR_CALLBACK_FAILURE;
            }
        }
        return ssize_t(n);
    }

    Side m_client;
    Side m_server;
    std::list<Body> m_bodies; // data sources point into this, so elements must not move
    unsigned m_padSeq = 0;
};

// --- feeding the decoder -----------------------------------------------------------------------------------

using Chunks = std::vector<Conversation::Chunk>;

const std::uint8_t *bytes(const std::string &s)
{
    return reinterpret_cast<const std::uint8_t *>(s.data());
}

// The conversations below carry header lists up to 40 KiB and compare them whole against nghttp2's: decode
// them under a limit above that (the cut is tested in limits()).
DecoderLimits wholeLists()
{
    DecoderLimits l;
    l.maxHeaderListBytes = 64 * 1024;
    return l;
}

// Every chunk in one feed() call, as a relay reading whole sends would.
EventBatch decodeWhole(const Chunks &chunks)
{
    ConnectionDecoder d(kConnection, wholeLists());
    EventBatch out;
    for (const auto &c : chunks)
        d.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, out);
    return out;
}

// Like decodeWhole, but chunk i is read at i microseconds, so times tell reads apart.
EventBatch decodeWholeTimed(const Chunks &chunks)
{
    ConnectionDecoder d(kConnection, wholeLists());
    EventBatch out;
    for (size_t i = 0; i < chunks.size(); ++i)
        d.feed(chunks[i].dir, bytes(chunks[i].bytes), chunks[i].bytes.size(), std::int64_t(i) * 1000, out);
    return out;
}

// Chunk `which` arrives in two reads split at `at`; every other chunk in one.
EventBatch decodeSplit(const Chunks &chunks, size_t which, size_t at)
{
    ConnectionDecoder d(kConnection, wholeLists());
    EventBatch out;
    for (size_t i = 0; i < chunks.size(); ++i) {
        const auto &c = chunks[i];
        if (i == which) {
            d.feed(c.dir, bytes(c.bytes), at, 0, out);
            d.feed(c.dir, bytes(c.bytes) + at, c.bytes.size() - at, 0, out);
        } else {
            d.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, out);
        }
    }
    return out;
}

EventBatch decodeBytewise(const Chunks &chunks)
{
    ConnectionDecoder d(kConnection, wholeLists());
    EventBatch out;
    for (const auto &c : chunks)
        for (size_t i = 0; i < c.bytes.size(); ++i)
            d.feed(c.dir, bytes(c.bytes) + i, 1, 0, out);
    return out;
}

// Every chunk cut into pieces of random length (1..maxPiece), as a congested socket might deliver it.
EventBatch decodeRandomPieces(const Chunks &chunks, std::mt19937 &rng, size_t maxPiece)
{
    ConnectionDecoder d(kConnection, wholeLists());
    EventBatch out;
    std::uniform_int_distribution<size_t> pieceLen(1, maxPiece);
    for (const auto &c : chunks)
        for (size_t off = 0; off < c.bytes.size();) {
            const size_t n = std::min(pieceLen(rng), c.bytes.size() - off);
            d.feed(c.dir, bytes(c.bytes) + off, n, 0, out);
            off += n;
        }
    return out;
}

// --- projections of an event list --------------------------------------------------------------------------

std::vector<FrameInfo> framesOf(const EventBatch &events, Direction dir)
{
    std::vector<FrameInfo> v;
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Frame && e.dir == dir)
            v.push_back({e.frameType, e.flags, e.stream, e.length});
    return v;
}

std::vector<const WireEvent *> headersEventsOf(const EventBatch &events, Direction dir)
{
    std::vector<const WireEvent *> v;
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Headers && e.dir == dir) v.push_back(&e);
    return v;
}

std::vector<Block> blocksOf(const EventBatch &events, Direction dir)
{
    std::vector<Block> v;
    for (const WireEvent *e : headersEventsOf(events, dir))
        v.push_back({e->stream, e->headers});
    return v;
}

std::vector<Msg> messagesOf(const EventBatch &events, Direction dir)
{
    std::vector<Msg> v;
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Message && e.dir == dir) v.push_back({e.stream, e.length, e.compressed});
    return v;
}

int count(const EventBatch &events, EventKind kind)
{
    return int(
        std::count_if(events.begin(), events.end(), [kind](const WireEvent &e) { return e.kind == kind; }));
}

std::vector<std::uint32_t> headersFrameLengths(const EventBatch &events, Direction dir, bool endStream)
{
    std::vector<std::uint32_t> v;
    for (const FrameInfo &f : framesOf(events, dir))
        if (f.type == FrameHeaders && bool(f.flags & FlagEndStream) == endStream) v.push_back(f.length);
    return v;
}

QByteArray joined(const std::vector<std::uint32_t> &v)
{
    QByteArrayList parts;
    for (std::uint32_t x : v)
        parts << QByteArray::number(x);
    return parts.join(' ');
}

std::string randomText(size_t n, unsigned seed)
{
    // Random alphanumerics: Huffman cannot shrink them much, so the block really exceeds one frame.
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(0, int(sizeof(alphabet)) - 2);
    std::string s(n, ' ');
    for (char &c : s)
        c = alphabet[pick(rng)];
    return s;
}

} // namespace

class TestH2Decoder : public QObject
{
    Q_OBJECT

    // Checks that hold for any legitimate conversation: the decoder saw exactly the frames and header blocks
    // the receiving nghttp2 sessions saw, and reported no error.
    void verifyAgainstNghttp2(const Conversation &conv, const EventBatch &events)
    {
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        for (const WireEvent &e : events)
            if (e.kind == EventKind::DecodeError ||
                (e.kind == EventKind::Notice && e.reason.find("protocol error") != std::string::npos))
                QFAIL(("unexpected " + describe(e)).c_str());
        for (const WireEvent &e : events)
            QCOMPARE(e.connection, kConnection);
        for (Direction dir : {C2S, S2C}) {
            COMPARE_SEQ(framesOf(events, dir), conv.m_frames[index(dir)]);
            COMPARE_SEQ(blocksOf(events, dir), conv.m_blocks[index(dir)]);
        }
    }

private slots:
    // Repeated headers are indexed by nghttp2's encoder, so later blocks only decode if the decoder keeps the
    // dynamic table across blocks exactly as the encoder does.
    void hpackDynamicTable()
    {
        Conversation conv;
        conv.pump();
        std::vector<Block> sentRequests, sentResponses;
        for (int i = 0; i < 5; ++i) {
            const auto req = requestHeaders("call-" + std::to_string(i), i);
            const std::int32_t id = conv.request(req, grpcMessage(10 + i));
            conv.pump();
            conv.respond(id, responseHeaders(), grpcMessage(3), okTrailers());
            conv.pump();
            sentRequests.push_back({std::uint32_t(id), req});
            sentResponses.push_back({std::uint32_t(id), responseHeaders()});
            sentResponses.push_back({std::uint32_t(id), okTrailers()});
        }
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;
        COMPARE_SEQ(blocksOf(events, C2S), sentRequests);
        COMPARE_SEQ(blocksOf(events, S2C), sentResponses);

        const auto requestLens = headersFrameLengths(events, C2S, false);
        const auto responseLens = headersFrameLengths(events, S2C, false);
        const auto trailerLens = headersFrameLengths(events, S2C, true);
        QCOMPARE(requestLens.size(), size_t(5));
        QCOMPARE(responseLens.size(), size_t(5));
        QCOMPARE(trailerLens.size(), size_t(5));
        // Less than half proves indexing rather than a lucky Huffman difference.
        for (size_t i = 1; i < 5; ++i) {
            QVERIFY2(requestLens[i] < requestLens[0] / 2, joined(requestLens).constData());
            QVERIFY2(responseLens[i] < responseLens[0] / 2, joined(responseLens).constData());
            QVERIFY2(trailerLens[i] < trailerLens[0], joined(trailerLens).constData());
        }
    }

    void continuation()
    {
        Conversation conv;
        conv.pump();
        auto big = requestHeaders("call-big");
        big.push_back({"rpcscope-blob", randomText(40 * 1024, 1)});
        const std::int32_t bigId = conv.request(big, grpcMessage(4));
        // A request after the huge block: its indexed headers only decode if the CONTINUATION block kept the
        // HPACK state in step.
        const auto next = requestHeaders("call-next");
        const std::int32_t nextId = conv.request(next, grpcMessage(5));
        conv.pump();
        conv.respond(bigId, responseHeaders(), grpcMessage(1), okTrailers());
        conv.respond(nextId, responseHeaders(), grpcMessage(2), okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;

        // The wire shape nghttp2 chose: HEADERS without END_HEADERS, then CONTINUATIONs, the last ends it.
        std::vector<FrameInfo> bigFrames;
        for (const FrameInfo &f : framesOf(events, C2S))
            if (f.stream == std::uint32_t(bigId) && f.type != FrameData) bigFrames.push_back(f);
        QVERIFY(bigFrames.size() >= 3);
        QCOMPARE(bigFrames.front().type, std::uint8_t(FrameHeaders));
        QCOMPARE(bigFrames.front().flags & FlagEndHeaders, 0);
        for (size_t i = 1; i < bigFrames.size(); ++i) {
            QCOMPARE(bigFrames[i].type, std::uint8_t(FrameContinuation));
            QCOMPARE(bool(bigFrames[i].flags & FlagEndHeaders), i + 1 == bigFrames.size());
        }
        int continuations = 0;
        for (const WireEvent &e : events)
            continuations += e.kind == EventKind::Frame && e.frameType == FrameContinuation;
        QCOMPARE(continuations, int(bigFrames.size()) - 1);

        // One Headers event per block, emitted only once the last CONTINUATION arrived.
        const auto requests = headersEventsOf(events, C2S);
        QCOMPARE(requests.size(), size_t(2));
        QCOMPARE(requests[0]->stream, std::uint32_t(bigId));
        COMPARE_SEQ(requests[0]->headers, big);
        QCOMPARE(requests[0]->frameType, std::uint8_t(FrameHeaders));
        QVERIFY(!requests[0]->endStream);
        QCOMPARE(requests[0]->grpc.callId, std::string("call-big"));
        COMPARE_SEQ(requests[1]->headers, next);
        const auto lastContinuation = std::find_if(events.rbegin(), events.rend(), [](const WireEvent &e) {
            return e.kind == EventKind::Frame && e.frameType == FrameContinuation;
        });
        QVERIFY(lastContinuation != events.rend());
        QCOMPARE(&*(lastContinuation.base()), requests[0]); // the very next event
    }

    void padding()
    {
        Conversation conv;
        conv.m_padding = true;
        conv.pump();
        std::vector<Block> sentRequests, sentResponses;
        std::vector<Msg> sentC2S, sentS2C;
        std::int32_t ids[3];
        for (int i = 0; i < 3; ++i) {
            const auto req = requestHeaders("call-pad-" + std::to_string(i), i);
            ids[i] = conv.request(req, grpcMessage(7 + i) + grpcMessage(0) + grpcMessage(300, true));
            sentRequests.push_back({std::uint32_t(ids[i]), req});
            sentC2S.push_back({std::uint32_t(ids[i]), std::uint32_t(7 + i), false});
            sentC2S.push_back({std::uint32_t(ids[i]), 0, false});
            sentC2S.push_back({std::uint32_t(ids[i]), 300, true});
        }
        conv.pump();
        conv.respond(ids[0], responseHeaders(), grpcMessage(42) + grpcMessage(5, true), okTrailers());
        conv.pump();
        conv.respond(ids[1], responseHeaders(), grpcMessage(1000), okTrailers());
        conv.pump();
        const std::vector<Header> unavailable = {
            {":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", "14"}};
        conv.respondTrailersOnly(ids[2], unavailable);
        conv.pump();
        sentResponses = {{std::uint32_t(ids[0]), responseHeaders()},
                         {std::uint32_t(ids[0]), okTrailers()},
                         {std::uint32_t(ids[1]), responseHeaders()},
                         {std::uint32_t(ids[1]), okTrailers()},
                         {std::uint32_t(ids[2]), unavailable}};
        sentS2C = {{std::uint32_t(ids[0]), 42, false},
                   {std::uint32_t(ids[0]), 5, true},
                   {std::uint32_t(ids[1]), 1000, false}};
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;

        int headersFrames = 0, dataFrames = 0;
        for (const WireEvent &e : events) {
            if (e.kind != EventKind::Frame || (e.frameType != FrameHeaders && e.frameType != FrameData))
                continue;
            QVERIFY2(e.flags & FlagPadded, describe(e).c_str());
            (e.frameType == FrameHeaders ? headersFrames : dataFrames)++;
        }
        QCOMPARE(headersFrames, 3 + 5);
        QCOMPARE(dataFrames, 3 + 2);
        COMPARE_SEQ(blocksOf(events, C2S), sentRequests);
        COMPARE_SEQ(blocksOf(events, S2C), sentResponses);
        COMPARE_SEQ(messagesOf(events, C2S), sentC2S);
        COMPARE_SEQ(messagesOf(events, S2C), sentS2C);
    }

    void messageBoundaries()
    {
        Conversation conv;
        conv.pump();
        // 16377 + 5 leaves 2 bytes in the first 16 KiB frame, so the next prefix straddles two DATA frames;
        // the 40000-byte message then spans three frames and the small ones share the last one with its tail.
        const std::string body = grpcMessage(16377) + grpcMessage(40000, false, 'b') + grpcMessage(3) +
                                 grpcMessage(0) + grpcMessage(17, true) + grpcMessage(100);
        const std::int32_t id = conv.request(requestHeaders("call-msgs"), body);
        conv.pump();
        // Three small messages that fit one DATA frame together.
        conv.respond(id, responseHeaders(), grpcMessage(1) + grpcMessage(250, true) + grpcMessage(0),
                     okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;

        const auto s = std::uint32_t(id);
        std::vector<std::uint32_t> dataLens;
        for (const FrameInfo &f : framesOf(events, C2S))
            if (f.type == FrameData) dataLens.push_back(f.length);
        QCOMPARE(joined(dataLens), QByteArray("16384 16384 16384 7375"));

        COMPARE_SEQ(messagesOf(events, C2S), (std::vector<Msg>{{s, 16377, false},
                                                               {s, 40000, false},
                                                               {s, 3, false},
                                                               {s, 0, false},
                                                               {s, 17, true},
                                                               {s, 100, false}}));
        COMPARE_SEQ(messagesOf(events, S2C),
                    (std::vector<Msg>{{s, 1, false}, {s, 250, true}, {s, 0, false}}));

        // Which DATA frame completed each message: a message is reported by the frame holding its last byte.
        auto completedIn = [&](Direction dir) {
            std::vector<std::uint32_t> v;
            std::uint32_t data = 0;
            for (const WireEvent &e : events) {
                if (e.dir != dir) continue;
                if (e.kind == EventKind::Frame && e.frameType == FrameData)
                    ++data;
                else if (e.kind == EventKind::Message)
                    v.push_back(data);
            }
            return joined(v);
        };
        QCOMPARE(completedIn(C2S), QByteArray("1 4 4 4 4 4"));
        QCOMPARE(completedIn(S2C), QByteArray("1 1 1"));
    }

    // The decoder's output may not depend on how reads cut the byte stream.
    void splitPoints()
    {
        Conversation conv;
        conv.pump();
        const std::int32_t a = conv.request(requestHeaders("call-a"), grpcMessage(20) + grpcMessage(7, true));
        conv.pump();
        conv.respond(a, responseHeaders(), grpcMessage(9), okTrailers());
        conv.pump();
        conv.m_padding = true;
        const std::int32_t b = conv.request(requestHeaders("call-b", 1), grpcMessage(33));
        conv.pump();
        conv.respondTrailersOnly(b, {{":status", "200"},
                                     {"content-type", "application/grpc"},
                                     {"grpc-status", "14"},
                                     {"grpc-message", "backend%20down"}});
        conv.pump();
        conv.m_padding = false;
        const std::int32_t d = conv.request(
            requestHeaders("call-d"), grpcMessage(600, false, 'd') + grpcMessage(0) + grpcMessage(45, true));
        conv.pump();
        conv.m_padding = true;
        conv.respond(
            d, responseHeaders(), grpcMessage(1500, true, 'r'),
            {{"grpc-status", "8"}, {"grpc-message", "quota%20exceeded"}, {"grpc-retry-pushback-ms", "20"}});
        conv.pump();
        conv.m_padding = false;
        const std::int32_t c = conv.request(requestHeaders("call-c", 2), grpcMessage(12));
        conv.pump();
        conv.cancel(c);
        conv.ping();
        conv.pump();
        conv.goaway(NGHTTP2_ENHANCE_YOUR_CALM, "too_many_pings");
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        // Every split of every chunk replays the whole conversation: quadratic, so it must stay small.
        QVERIFY2(conv.totalBytes() > 2000 && conv.totalBytes() < 8000,
                 QByteArray::number(qulonglong(conv.totalBytes())).constData());

        const EventBatch reference = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, reference);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(count(reference, EventKind::Headers), 3 + 2 + 3 + 1);
        QCOMPARE(count(reference, EventKind::Message), 3 + 1 + 3 + 1 + 1);
        const auto hasFrame = [&](std::uint8_t type, std::uint32_t err) {
            return std::any_of(reference.begin(), reference.end(), [&](const WireEvent &e) {
                return e.kind == EventKind::Frame && e.frameType == type && e.errorCode == err;
            });
        };
        QVERIFY(hasFrame(FrameRstStream, NGHTTP2_CANCEL));
        QVERIFY(hasFrame(FrameGoaway, NGHTTP2_ENHANCE_YOUR_CALM));
        QVERIFY(hasFrame(FramePing, 0));

        int runs = 0;
        for (size_t i = 0; i < conv.m_chunks.size(); ++i) {
            for (size_t k = 0; k <= conv.m_chunks[i].bytes.size(); ++k, ++runs) {
                const EventBatch split = decodeSplit(conv.m_chunks, i, k);
                if (split != reference)
                    QFAIL(QByteArray("chunk " + QByteArray::number(qulonglong(i)) + " split at " +
                                     QByteArray::number(qulonglong(k)) + ": " + mismatch(split, reference))
                              .constData());
            }
        }
        QCOMPARE(size_t(runs), conv.totalBytes() + conv.m_chunks.size());

        const EventBatch bytewise = decodeBytewise(conv.m_chunks);
        COMPARE_SEQ(bytewise, reference);
    }

    // The same property on a conversation too large for exhaustive splitting: CONTINUATION, padding, DATA
    // frames full to the limit and a message prefix straddling two frames.
    void splitPointsLargeFrames()
    {
        Conversation conv;
        conv.pump();
        auto big = requestHeaders("call-big");
        big.push_back({"rpcscope-blob", randomText(40 * 1024, 2)});
        const std::int32_t a = conv.request(big, grpcMessage(16377) + grpcMessage(30000) + grpcMessage(1));
        conv.pump();
        conv.m_padding = true;
        conv.respond(a, responseHeaders(), grpcMessage(20000, true) + grpcMessage(2), okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch reference = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, reference);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(count(reference, EventKind::Message), 5);

        COMPARE_SEQ(decodeBytewise(conv.m_chunks), reference);
        std::mt19937 rng(12345);
        for (size_t maxPiece : {2, 7, 10, 64, 4096, 20000}) {
            for (int round = 0; round < 5; ++round) {
                const EventBatch pieces = decodeRandomPieces(conv.m_chunks, rng, maxPiece);
                if (pieces != reference)
                    QFAIL(QByteArray("pieces up to " + QByteArray::number(qulonglong(maxPiece)) + ": " +
                                     mismatch(pieces, reference))
                              .constData());
            }
        }
    }

    // A relay may leave unread the bytes the decoder says it will not look at (skippable(): message bodies
    // past the kept bytes, padding, in DATA frames that span reads) and skip() them instead: the events must
    // be exactly those of feeding everything. Skipping more than that is a DecodeError, not silent garbage.
    void skippingUnkeptBytesChangesNothing()
    {
        Conversation conv;
        conv.pump();
        const std::int32_t a = conv.request(requestHeaders("call-skip"),
                                            grpcMessage(16377) + grpcMessage(30000) + grpcMessage(1));
        conv.pump();
        conv.m_padding = true;
        conv.respond(a, responseHeaders(), grpcMessage(20000, true) + grpcMessage(2), okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        DecoderLimits limits;
        limits.maxMessageKeepBytes = 100;
        auto decode = [&](std::mt19937 *rng, size_t *skipped) {
            ConnectionDecoder d(kConnection, limits);
            EventBatch out;
            std::uniform_int_distribution<size_t> pieceLen(1, 3000);
            for (const auto &c : conv.m_chunks)
                for (size_t off = 0; off < c.bytes.size();) {
                    if (rng) {
                        if (const size_t k = std::min(d.skippable(c.dir), c.bytes.size() - off)) {
                            d.skip(c.dir, k, 0, out);
                            *skipped += k;
                            off += k;
                            continue;
                        }
                    }
                    const size_t n = rng ? std::min(pieceLen(*rng), c.bytes.size() - off) : c.bytes.size();
                    d.feed(c.dir, bytes(c.bytes) + off, n, 0, out);
                    off += n;
                }
            return out;
        };
        const EventBatch reference = decode(nullptr, nullptr);
        QCOMPARE(count(reference, EventKind::Message), 5);
        QCOMPARE(count(reference, EventKind::DecodeError), 0);
        std::mt19937 rng(777);
        for (int round = 0; round < 20; ++round) {
            size_t skipped = 0;
            const EventBatch events = decode(&rng, &skipped);
            if (events != reference)
                QFAIL(QByteArray("round " + QByteArray::number(round) + ": " + mismatch(events, reference))
                          .constData());
            // Most of the 66 KB of message bodies lie past the 100 kept bytes of each.
            QVERIFY2(skipped > 40'000, std::to_string(skipped).c_str());
        }

        // One byte more than skippable() is refused.
        ConnectionDecoder d(kConnection, limits);
        EventBatch out;
        bool refused = false;
        for (const auto &c : conv.m_chunks) {
            for (size_t off = 0; off < c.bytes.size() && !refused;) {
                if (d.skippable(c.dir) > 0) {
                    d.skip(c.dir, d.skippable(c.dir) + 1, 0, out);
                    refused = true;
                    break;
                }
                const size_t n = std::min<size_t>(1000, c.bytes.size() - off);
                d.feed(c.dir, bytes(c.bytes) + off, n, 0, out);
                off += n;
            }
            if (refused) break;
        }
        QVERIFY(refused);
        QCOMPARE(count(out, EventKind::DecodeError), 1);
        const auto err = std::find_if(out.begin(), out.end(),
                                      [](const WireEvent &e) { return e.kind == EventKind::DecodeError; });
        QVERIFY2(err->reason.find("needed") != std::string::npos, err->reason.c_str());
    }

    void garbage_data()
    {
        QTest::addColumn<bool>("clientToServer");
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("mentions"); // empty: any reason will do

        QTest::newRow("HTTP/1.1 request")
            << true << QByteArray("GET / HTTP/1.1\r\nHost: backend.test\r\nAccept: */*\r\n\r\n") << "HTTP/1";
        QTest::newRow("HTTP/1.1 response")
            << false << QByteArray("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n") << "HTTP/1";
        // A whole TLS handshake record whose ClientHello ends inside its random. (A ClientHello that is only
        // cut by the read waits for the rest: tst_tlsclienthello.)
        QTest::newRow("TLS ClientHello") << true << QByteArray::fromHex("16030100050100000100") << "TLS";
        QTest::newRow("TLS ServerHello")
            << false << QByteArray::fromHex("160303005a0200005603031122334455667788990011223344556677889900")
            << "TLS";
        std::mt19937 rng(99);
        QByteArray random;
        for (int i = 0; i < 64; ++i)
            random.append(char(rng()));
        QTest::newRow("random c2s") << true << random << "";
        QTest::newRow("random s2c") << false << random << "";
    }
    void garbage()
    {
        QFETCH(bool, clientToServer);
        QFETCH(QByteArray, bytes);
        QFETCH(QString, mentions);
        const Direction dir = clientToServer ? C2S : S2C;

        ConnectionDecoder d(kConnection);
        EventBatch events;
        d.feed(dir, reinterpret_cast<const std::uint8_t *>(bytes.constData()), size_t(bytes.size()), 5,
               events);
        QCOMPARE(events.size(), size_t(1));
        const WireEvent &e = events[0];
        QCOMPARE(e.kind, EventKind::DecodeError);
        QCOMPARE(e.dir, dir);
        QCOMPARE(e.connection, kConnection);
        QCOMPARE(e.tNs, std::int64_t(5));
        QVERIFY(!e.reason.empty());
        QVERIFY2(QString::fromStdString(e.reason).contains(mentions), e.reason.c_str());
        QVERIFY(d.decoder(dir).failed());
        QCOMPARE(d.decoder(dir).error(), e.reason);

        // Undecodable from here on: more garbage, and even a valid preface, must not produce anything.
        d.feed(dir, reinterpret_cast<const std::uint8_t *>(bytes.constData()), size_t(bytes.size()), 6,
               events);
        Conversation conv;
        conv.pump();
        for (const auto &c : conv.m_chunks)
            if (c.dir == dir) d.feed(dir, ::bytes(c.bytes), c.bytes.size(), 7, events);
        QByteArray huge(1 << 20, '\xff');
        d.feed(dir, reinterpret_cast<const std::uint8_t *>(huge.constData()), size_t(huge.size()), 8, events);
        QCOMPARE(events.size(), size_t(1));
        QVERIFY(d.decoder(dir).failed());
    }

    // A PING and its ACK are paired into a round-trip time measured between the two reads.
    void pingRtt()
    {
        Conversation conv;
        conv.pump();
        conv.ping();
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        ConnectionDecoder d(kConnection);
        EventBatch out;
        std::int64_t pingAt = -1, ackAt = -1;
        for (size_t i = 0; i < conv.m_chunks.size(); ++i) {
            const auto &c = conv.m_chunks[i];
            const size_t before = out.size();
            d.feed(c.dir, bytes(c.bytes), c.bytes.size(), std::int64_t(i) * 1000, out);
            for (size_t k = before; k < out.size(); ++k)
                if (out[k].kind == EventKind::Frame && out[k].frameType == FramePing)
                    (out[k].flags & FlagAck ? ackAt : pingAt) = out[k].tNs;
        }
        QVERIFY(pingAt >= 0 && ackAt > pingAt);
        int acks = 0;
        for (const WireEvent &e : out)
            if (e.kind == EventKind::Frame && e.frameType == FramePing && (e.flags & FlagAck)) {
                ++acks;
                QCOMPARE(e.dir, S2C);
                QCOMPARE(e.rttNs, ackAt - pingAt);
            } else if (e.kind == EventKind::Frame && e.frameType == FramePing) {
                QCOMPARE(e.rttNs, std::int64_t(-1));
            }
        QCOMPARE(acks, 1);
    }

    // A stream window of 1000 bytes against a 6000-byte reply: the server stalls until the client's
    // WINDOW_UPDATE, and each stall has a begin and an end, in that order.
    void streamFlowControlStall()
    {
        Conversation::Options o;
        o.clientSettings = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1000}};
        Conversation conv(o);
        const auto id = conv.request(requestHeaders("fc"), grpcMessage(10));
        conv.pump();
        conv.respond(id, responseHeaders(), grpcMessage(6000), okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        const EventBatch out = decodeWholeTimed(conv.m_chunks);
        verifyAgainstNghttp2(conv, out);
        int begins = 0, ends = 0;
        bool open = false;
        for (const WireEvent &e : out) {
            if (e.kind == EventKind::FlowStallBegin) {
                QCOMPARE(e.dir, S2C);
                QCOMPARE(e.stream, std::uint32_t(id));
                QVERIFY(!open);
                open = true;
                ++begins;
            } else if (e.kind == EventKind::FlowStallEnd) {
                QCOMPARE(e.stream, std::uint32_t(id));
                QVERIFY(open);
                open = false;
                ++ends;
            }
        }
        // 6005 bytes through a 1000-byte window: at least five refills.
        QVERIFY2(begins >= 5, qPrintable(QString::number(begins)));
        QCOMPARE(ends, begins);
        QVERIFY(!open);
    }

    // A WINDOW_UPDATE for a stream that comes before the stream's first DATA counts (grpc++ raises a response
    // stream's window as soon as it asks): 6,005 bytes through a 1,000-byte window raised by 100,000 first
    // are neither a stall nor an overrun.
    void windowRaisedBeforeTheFirstData()
    {
        Conversation::Options o;
        o.clientSettings = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1000}};
        Conversation conv(o);
        const auto id = conv.request(requestHeaders("raised"), grpcMessage(10));
        conv.pump();
        conv.raiseWindow(id, 100000);
        conv.pump();
        conv.respond(id, responseHeaders(), grpcMessage(6000), okTrailers());
        conv.pump();
        const EventBatch out = decodeWholeTimed(conv.m_chunks);
        verifyAgainstNghttp2(conv, out); // no protocol error either
        QCOMPARE(count(out, EventKind::FlowStallBegin), 0);
        int updates = 0;
        for (const WireEvent &e : out)
            updates += e.kind == EventKind::Frame && e.frameType == FrameWindowUpdate &&
                       e.stream == std::uint32_t(id);
        QVERIFY(updates >= 1);
    }

    // The connection window (65,535) runs out before a 100 KB reply is through.
    void connectionFlowControlStall()
    {
        Conversation::Options o;
        o.clientSettings = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                            {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
        Conversation conv(o);
        const auto id = conv.request(requestHeaders("fc2"), grpcMessage(10));
        conv.pump();
        conv.respond(id, responseHeaders(), grpcMessage(100000), okTrailers());
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        const EventBatch out = decodeWholeTimed(conv.m_chunks);
        int connBegins = 0, connEnds = 0, streamStalls = 0;
        for (const WireEvent &e : out) {
            if (e.kind == EventKind::FlowStallBegin && e.stream == 0)
                ++connBegins;
            else if (e.kind == EventKind::FlowStallEnd && e.stream == 0)
                ++connEnds;
            else if (e.kind == EventKind::FlowStallBegin)
                ++streamStalls;
        }
        QVERIFY(connBegins >= 1);
        QCOMPARE(connEnds, connBegins);
        QCOMPARE(streamStalls, 0);
    }

    // Capture starting in the middle of a connection: frames from the first boundary on are recorded exactly,
    // and a header block is either decoded right or marked hpackUnknown, never decoded wrong.
    void attachMidStream()
    {
        Conversation conv;
        std::vector<std::int32_t> ids;
        for (int i = 0; i < 12; ++i) {
            ids.push_back(conv.request(
                requestHeaders("mid-" + std::to_string(i), i % 3, "/pkg.Svc/Method" + std::to_string(i)),
                grpcMessage(200 + i)));
            conv.pump();
            conv.respond(ids.back(), responseHeaders(), grpcMessage(300), okTrailers());
            conv.pump();
        }
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        for (Direction dir : {C2S, S2C}) {
            std::string all;
            for (const auto &c : conv.m_chunks)
                if (c.dir == dir) all += c.bytes;
            // Frame starts, walked independently of the decoder.
            std::vector<size_t> starts;
            for (size_t at = dir == C2S ? 24 : 0; at + 9 <= all.size();
                 at += 9 + ((std::uint8_t(all[at]) << 16) | (std::uint8_t(all[at + 1]) << 8) |
                            std::uint8_t(all[at + 2])))
                starts.push_back(at);
            QCOMPARE(starts.size(), conv.m_frames[index(dir)].size());
            for (size_t cut : {all.size() / 3, all.size() / 2 + 7, all.size() * 2 / 3 + 1}) {
                const size_t first =
                    size_t(std::lower_bound(starts.begin(), starts.end(), cut) - starts.begin());
                ConnectionDecoder d(kConnection);
                d.attachMidStream();
                EventBatch out;
                // In pieces, so resynchronisation must also work across reads.
                for (size_t at = cut; at < all.size(); at += 777)
                    d.feed(dir, bytes(all) + at, std::min<size_t>(777, all.size() - at), 1, out);
                QCOMPARE(count(out, EventKind::DecodeError), 0);
                QCOMPARE(count(out, EventKind::Notice), 1);
                const std::vector<FrameInfo> expected(conv.m_frames[index(dir)].begin() + long(first),
                                                      conv.m_frames[index(dir)].end());
                const auto got = framesOf(out, dir);
                QVERIFY2(got == expected, mismatch(got, expected).constData());
                // Every header shown is one the block really had; references to entries from before the
                // attach are left out and the block is marked. A new :path value is a literal with a static
                // name, so it is recovered in every request block, context or not.
                int blocks = 0;
                for (const WireEvent *e : headersEventsOf(out, dir)) {
                    auto within = [&](const Block &b) {
                        if (b.stream != e->stream) return false;
                        if (!e->hpackUnknown) return b.headers == e->headers;
                        for (const Header &h : e->headers)
                            if (std::find(b.headers.begin(), b.headers.end(), h) == b.headers.end())
                                return false;
                        return true;
                    };
                    const auto &truth = conv.m_blocks[index(dir)];
                    QVERIFY2(std::any_of(truth.begin(), truth.end(), within), describe(*e).c_str());
                    if (dir == C2S)
                        QCOMPARE(e->grpc.path, "/pkg.Svc/Method" + std::to_string((e->stream - 1) / 2));
                    ++blocks;
                }
                QVERIFY(blocks >= 3);
            }
        }
    }

    // Limits: an oversized header list is cut (and HPACK stays in step); an oversized block stops decoding.
    void limits()
    {
        Conversation conv;
        auto big = requestHeaders("big");
        big.push_back({"x-big", std::string(5000, 'b')});
        conv.request(big, grpcMessage(1));
        conv.request(requestHeaders("after"), grpcMessage(1));
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        DecoderLimits small;
        small.maxHeaderListBytes = 1000;
        ConnectionDecoder d(kConnection, small);
        EventBatch out;
        for (const auto &c : conv.m_chunks)
            d.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, out);
        const auto blocks = headersEventsOf(out, C2S);
        QCOMPARE(int(blocks.size()), 2);
        QVERIFY(blocks[0]->truncated);
        size_t kept = 0;
        for (const Header &h : blocks[0]->headers)
            kept += h.name.size() + h.value.size();
        QVERIFY(kept <= 1000);
        QCOMPARE(blocks[0]->grpc.callId, std::string("big")); // fields before the cut survive
        // The timeline's headers after the cut stay; other headers after it do not.
        {
            Conversation late;
            std::vector<Header> h = {{":method", "POST"},
                                     {":path", "/pkg.Svc/Late"},
                                     {"x-fill", std::string(950, 'f')},
                                     {"x-big", std::string(5000, 'b')},
                                     {"x-after", std::string(1000, 'a')},
                                     {"grpc-timeout", "250m"},
                                     {"rpcscope-call-id", "late"},
                                     {"grpc-huge", std::string(3000, 'h')}};
            late.request(h, grpcMessage(1));
            late.pump();
            ConnectionDecoder dl(kConnection, small);
            EventBatch lateOut;
            for (const auto &c : late.m_chunks)
                dl.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, lateOut);
            const auto lateBlocks = headersEventsOf(lateOut, C2S);
            QCOMPARE(int(lateBlocks.size()), 1);
            QVERIFY(lateBlocks[0]->truncated);
            QCOMPARE(lateBlocks[0]->grpc.callId, std::string("late"));
            QCOMPARE(lateBlocks[0]->grpc.path, std::string("/pkg.Svc/Late"));
            QVERIFY(lateBlocks[0]->grpc.timeoutNs.has_value());
            for (const Header &kept : lateBlocks[0]->headers) {
                QVERIFY(kept.name != "x-after" && kept.name != "x-big");
                QVERIFY(kept.name != "grpc-huge"); // a timeline header too long to be real is cut too
            }
        }
        QVERIFY(!blocks[1]->truncated);
        QVERIFY(blocks[1]->headers == conv.m_blocks[0][1].headers);
        QCOMPARE(count(out, EventKind::Notice), 1);
        QCOMPARE(count(out, EventKind::DecodeError), 0);

        DecoderLimits tiny;
        tiny.maxHeaderBlockBytes = 2000;
        ConnectionDecoder d2(kConnection, tiny);
        EventBatch out2;
        for (const auto &c : conv.m_chunks)
            d2.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, out2);
        QCOMPARE(count(out2, EventKind::DecodeError), 1);
        QVERIFY(d2.decoder(C2S).failed());
        QVERIFY(QString::fromStdString(d2.decoder(C2S).error()).contains("limit"));
        QVERIFY(!d2.decoder(S2C).failed());
    }

    // Each message's first bytes are kept for inspection, up to the limit; longer ones are marked truncated.
    void messageKeepLimit()
    {
        Conversation conv;
        std::string body = grpcMessage(50, false, 'a') + grpcMessage(30000, false, 'b');
        conv.request(requestHeaders("keep"), body);
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        DecoderLimits limits;
        limits.maxMessageKeepBytes = 100;
        ConnectionDecoder d(kConnection, limits);
        EventBatch out;
        for (const auto &c : conv.m_chunks)
            d.feed(c.dir, bytes(c.bytes), c.bytes.size(), 0, out);
        std::vector<const WireEvent *> msgs;
        for (const WireEvent &e : out)
            if (e.kind == EventKind::Message) msgs.push_back(&e);
        QCOMPARE(int(msgs.size()), 2);
        QCOMPARE(msgs[0]->payload, std::string(50, 'a'));
        QVERIFY(!msgs[0]->truncated);
        QCOMPARE(msgs[1]->payload, std::string(100, 'b'));
        QVERIFY(msgs[1]->truncated);
        QCOMPARE(msgs[1]->length, std::uint32_t(30000));
        QCOMPARE(count(out, EventKind::Notice), 1);
    }

    // PRIORITY, PUSH_PROMISE and an extension frame type: recorded, and decoding goes on past them.
    void otherFrameTypes()
    {
        auto frame = [](std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                        const std::string &payload) {
            const auto n = std::uint32_t(payload.size());
            std::string f{char(n >> 16),      char(n >> 8),       char(n),           char(type),  char(flags),
                          char(stream >> 24), char(stream >> 16), char(stream >> 8), char(stream)};
            return f + payload;
        };
        ConnectionDecoder d(kConnection);
        EventBatch out;
        const std::string c2s = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                                frame(FrameSettings, 0, 0, {}) +
                                frame(FramePriority, 0, 3, std::string("\0\0\0\1\x10", 5)) +
                                frame(0x0a, 0, 0, std::string("\0\0ab\0\0", 6)) + // ALTSVC, unknown to us
                                frame(FrameHeaders, FlagEndHeaders | FlagEndStream, 1, "\x83\x84\x86");
        // :method GET (2), :path / (4), :scheme http (6) from the static table; promised stream 2.
        const std::string s2c =
            frame(FrameSettings, 0, 0, {}) +
            frame(FramePushPromise, FlagEndHeaders, 1, std::string("\0\0\0\2\x82\x84\x86", 7));
        d.feed(C2S, bytes(c2s), c2s.size(), 1, out);
        d.feed(S2C, bytes(s2c), s2c.size(), 2, out);
        QCOMPARE(count(out, EventKind::DecodeError), 0);
        const auto c2sFrames = framesOf(out, C2S);
        QCOMPARE(int(c2sFrames.size()), 4);
        QCOMPARE(c2sFrames[1].type, std::uint8_t(FramePriority));
        QCOMPARE(c2sFrames[2].type, std::uint8_t(0x0a));
        QCOMPARE(frameTypeName(0x0a), "UNKNOWN");
        const auto req = headersEventsOf(out, C2S);
        QCOMPARE(int(req.size()), 1);
        QCOMPARE(req[0]->headers,
                 (std::vector<Header>{{":method", "POST"}, {":path", "/"}, {":scheme", "http"}}));
        const auto push = headersEventsOf(out, S2C);
        QCOMPARE(int(push.size()), 1);
        QCOMPARE(push[0]->frameType, std::uint8_t(FramePushPromise));
        QCOMPARE(push[0]->headers,
                 (std::vector<Header>{{":method", "GET"}, {":path", "/"}, {":scheme", "http"}}));
    }

    // A rule the sender broke that framing survives is a notice naming the rule and the sender; decoding goes
    // on with the next frame. The first four of a side's errors are recorded, then one line that there are
    // more.
    void protocolErrorsAreNoted_data()
    {
        QTest::addColumn<std::string>("frames"); // the client's frames after its preface and SETTINGS
        QTest::addColumn<std::string>("expected");
        QTest::addColumn<int>("notices"); // how many the frames give
        auto f = [](std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string &payload) {
            const auto n = std::uint32_t(payload.size());
            std::string h{char(n >> 16),      char(n >> 8),       char(n),           char(type),  char(flags),
                          char(stream >> 24), char(stream >> 16), char(stream >> 8), char(stream)};
            return h + payload;
        };
        const std::string u32zero("\0\0\0\0", 4);
        QTest::newRow("short SETTINGS")
            << f(FrameSettings, 0, 0, std::string("\0\4\0\0\1", 5))
            << std::string("SETTINGS of 5 bytes, not a multiple of 6 (FRAME_SIZE_ERROR)") << 1;
        QTest::newRow("SETTINGS ACK with payload")
            << f(FrameSettings, FlagAck, 0, std::string("\0\4\0\0\1\0", 6))
            << std::string("SETTINGS ACK with 6 bytes of payload (FRAME_SIZE_ERROR)") << 1;
        QTest::newRow("SETTINGS on a stream")
            << f(FrameSettings, 0, 3, {})
            << std::string("SETTINGS on stream 3, not on stream 0 (PROTOCOL_ERROR)") << 1;
        QTest::newRow("ENABLE_PUSH 2")
            << f(FrameSettings, 0, 0, std::string("\0\2\0\0\0\2", 6))
            << std::string("SETTINGS_ENABLE_PUSH 2, not 0 or 1 (PROTOCOL_ERROR)") << 1;
        QTest::newRow("window above 2^31-1") << f(FrameSettings, 0, 0, std::string("\0\4\x80\0\0\0", 6))
                                             << std::string("above 2^31-1 (FLOW_CONTROL_ERROR)") << 1;
        QTest::newRow("max frame size 100") << f(FrameSettings, 0, 0, std::string("\0\5\0\0\0\x64", 6))
                                            << std::string("SETTINGS_MAX_FRAME_SIZE 100 outside") << 1;
        QTest::newRow("PING of 4 bytes")
            << f(FramePing, 0, 0, u32zero) << std::string("PING of 4 bytes, not 8 (FRAME_SIZE_ERROR)") << 1;
        QTest::newRow("PING on a stream")
            << f(FramePing, 0, 1, u32zero + u32zero) << std::string("PING on stream 1, not on stream 0") << 1;
        QTest::newRow("short GOAWAY")
            << f(FrameGoaway, 0, 0, u32zero) << std::string("GOAWAY of 4 bytes, under 8") << 1;
        QTest::newRow("RST_STREAM of 2 bytes") << f(FrameRstStream, 0, 1, std::string("\0\0", 2))
                                               << std::string("RST_STREAM of 2 bytes, not 4") << 1;
        QTest::newRow("PRIORITY on itself") << f(FramePriority, 0, 5, std::string("\0\0\0\5\x10", 5))
                                            << std::string("PRIORITY makes stream 5 depend on itself") << 1;
        QTest::newRow("HEADERS on itself")
            << f(FrameHeaders, FlagEndHeaders | FlagPriority, 5, std::string("\0\0\0\5\x10\x83\x84\x86", 8))
            << std::string("HEADERS makes stream 5 depend on itself") << 1;
        QTest::newRow("WINDOW_UPDATE of 0")
            << f(FrameWindowUpdate, 0, 0, u32zero)
            << std::string("WINDOW_UPDATE of 0 on the connection (PROTOCOL_ERROR)") << 1;
        QTest::newRow("WINDOW_UPDATE overflow")
            << f(FrameWindowUpdate, 0, 0, std::string("\x7f\xff\xff\xff", 4))
            << std::string(
                   "WINDOW_UPDATE takes the connection's window 65535 bytes past 2^31-1 (FLOW_CONTROL_ERROR)")
            << 1;
        // 70,000 bytes of DATA against the connection's and the stream's 65,535 (no WINDOW_UPDATE came).
        QTest::newRow("DATA past the window")
            << f(FrameHeaders, FlagEndHeaders, 1, "\x83\x84\x86") +
                   f(FrameData, 0, 1, std::string(16000, '\0')) +
                   f(FrameData, 0, 1, std::string(16000, '\0')) +
                   f(FrameData, 0, 1, std::string(16000, '\0')) +
                   f(FrameData, 0, 1, std::string(16000, '\0')) + f(FrameData, 0, 1, std::string(6000, '\0'))
            << std::string("DATA on stream 1 overran the connection's flow-control window by 4465 bytes "
                           "(FLOW_CONTROL_ERROR)")
            << 2;
    }
    void protocolErrorsAreNoted()
    {
        QFETCH(std::string, frames);
        QFETCH(std::string, expected);
        QFETCH(int, notices);
        const std::string preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        const std::string settings("\0\0\0\4\0\0\0\0\0", 9);
        const std::string ping(std::string("\0\0\x08\6\0\0\0\0\0", 9) + "12345678");
        ConnectionDecoder d(kConnection);
        EventBatch out;
        const std::string c2s = preface + settings + frames + ping;
        d.feed(S2C, bytes(settings), settings.size(), 1, out);
        d.feed(C2S, bytes(c2s), c2s.size(), 2, out);
        QCOMPARE(count(out, EventKind::DecodeError), 0);
        std::vector<std::string> texts;
        for (const WireEvent &e : out)
            if (e.kind == EventKind::Notice) texts.push_back(e.reason);
        QCOMPARE(int(texts.size()), notices);
        for (const std::string &text : texts)
            QVERIFY2(text.rfind("protocol error by the client: ", 0) == 0, text.c_str());
        QVERIFY2(texts[0].find(expected) != std::string::npos, texts[0].c_str());
        // Each carries the rule as a value too: who broke it, what, and the code; its sentence is made from
        // it.
        for (const WireEvent &e : out) {
            if (e.kind != EventKind::Notice) continue;
            QVERIFY(e.violation());
            QCOMPARE(e.violation()->by, Direction::ClientToServer);
            QVERIFY(!e.violation()->rule.empty());
            QCOMPARE(describe(*e.violation()), e.reason);
        }
        // Decoding went on: the PING after the bad frame is recorded.
        const auto recorded = framesOf(out, C2S);
        QCOMPARE(recorded.back().type, std::uint8_t(FramePing));

        // The same frames ten times over: four errors recorded, then one line that there are more.
        std::string many;
        for (int i = 0; i < 10; ++i)
            many += frames;
        ConnectionDecoder d2(kConnection);
        EventBatch out2;
        const std::string c2s2 = preface + settings + many;
        d2.feed(S2C, bytes(settings), settings.size(), 1, out2);
        d2.feed(C2S, bytes(c2s2), c2s2.size(), 2, out2);
        QCOMPARE(count(out2, EventKind::DecodeError), 0);
        if (std::string(QTest::currentDataTag()) == "DATA past the window") {
            QCOMPARE(count(out2, EventKind::Notice), 2); // a window already overrun is not overrun again
        } else {
            QCOMPARE(count(out2, EventKind::Notice), 5);
            const auto last = std::find_if(out2.rbegin(), out2.rend(),
                                           [](const WireEvent &e) { return e.kind == EventKind::Notice; });
            QCOMPARE(last->reason, std::string("further protocol errors by the client are not recorded"));
        }
    }

    // HTTP/1.x arriving a byte at a time is still named HTTP/1.x, not just "no preface".
    void garbageOneByteAtATime()
    {
        ConnectionDecoder d(kConnection);
        EventBatch events;
        const std::string req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        for (char c : req)
            d.feed(C2S, reinterpret_cast<const std::uint8_t *>(&c), 1, 1, events);
        QCOMPARE(events.size(), size_t(1));
        QVERIFY2(QString::fromStdString(events[0].reason).contains("HTTP/1"), events[0].reason.c_str());
    }

    // Too few bytes to classify are held back, and reported when the connection closes.
    void shortGarbageReportedOnClose()
    {
        ConnectionDecoder d(kConnection);
        EventBatch events;
        d.feed(C2S, reinterpret_cast<const std::uint8_t *>("xyz"), 3, 1, events);
        d.feed(S2C, reinterpret_cast<const std::uint8_t *>("HTTP/1"), 6, 1, events);
        QCOMPARE(events.size(), size_t(0));
        d.finish(9, events);
        QCOMPARE(events.size(), size_t(2));
        for (const WireEvent &e : events) {
            QCOMPARE(e.kind, EventKind::DecodeError);
            QCOMPARE(e.tNs, std::int64_t(9));
        }
        QVERIFY(QString::fromStdString(events[1].reason).contains("HTTP/1"));
    }

    void cutFirstFrameNamedAsSuch_data()
    {
        QTest::addColumn<bool>("client");
        QTest::addColumn<std::string>("bytes");
        QTest::addColumn<QString>("reason");
        const std::string preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        const std::string settingsHeader("\0\0\x06\x04\0\0\0\0\0", 9);
        QTest::newRow("preface, 3 header bytes")
            << true << preface + std::string("\0\0\x06", 3)
            << "HTTP/2 preface, then a frame cut short after 3 of its 9 header bytes";
        QTest::newRow("preface, SETTINGS header cut")
            << true << preface + settingsHeader.substr(0, 5)
            << "HTTP/2 preface, then a SETTINGS frame cut short after 5 of its 9 header bytes";
        QTest::newRow("preface, SETTINGS payload cut")
            << true << preface + settingsHeader + std::string("\0\x03", 2)
            << "HTTP/2 preface, then a SETTINGS frame cut short after 11 of its 15 bytes";
        QTest::newRow("server SETTINGS header cut")
            << false << settingsHeader.substr(0, 4)
            << "HTTP/2 SETTINGS frame from the server cut short after 4 of its 9 header bytes";
        QTest::newRow("server SETTINGS payload cut")
            << false << settingsHeader + std::string("\0", 1)
            << "HTTP/2 SETTINGS frame from the server cut short after 10 of its 15 bytes";
        QTest::newRow("preface itself cut")
            << true << preface.substr(0, 10) << "connection closed inside the HTTP/2 connection preface";
    }

    // A valid preface, then a connection that closes inside its first frame, is called that, not "not
    // HTTP/2"; in one read or a byte at a time.
    void cutFirstFrameNamedAsSuch()
    {
        QFETCH(bool, client);
        QFETCH(std::string, bytes);
        QFETCH(QString, reason);
        for (const size_t piece : {bytes.size(), size_t(1)}) {
            ConnectionDecoder d(kConnection);
            EventBatch events;
            for (size_t at = 0; at < bytes.size(); at += piece)
                d.feed(client ? C2S : S2C, reinterpret_cast<const std::uint8_t *>(bytes.data()) + at,
                       std::min(piece, bytes.size() - at), 1, events);
            QCOMPARE(events.size(), size_t(0));
            d.finish(9, events);
            QCOMPARE(events.size(), size_t(1));
            QCOMPARE(events[0].kind, EventKind::DecodeError);
            QCOMPARE(QString::fromStdString(events[0].reason), reason);
        }
    }

    // The client cancels while the server's reply is partly on the wire: the server's DATA that was already
    // in flight must still be read as the rest of that message, not as new 5-byte prefixes.
    void resetWhilePeerMidMessage()
    {
        auto frame = [](std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                        const std::string &payload) {
            std::string f;
            const auto n = std::uint32_t(payload.size());
            f += char(n >> 16);
            f += char(n >> 8);
            f += char(n);
            f += char(type);
            f += char(flags);
            f += char(stream >> 24);
            f += char(stream >> 16);
            f += char(stream >> 8);
            f += char(stream);
            return f + payload;
        };
        ConnectionDecoder d(kConnection);
        EventBatch events;
        auto feed = [&](Direction dir, const std::string &b) {
            d.feed(dir, reinterpret_cast<const std::uint8_t *>(b.data()), b.size(), 1, events);
        };
        feed(C2S, std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(FrameSettings, 0, 0, {}));
        feed(S2C, frame(FrameSettings, 0, 0, {}));
        const std::uint32_t len = 30000;
        std::string prefix{'\0', char(len >> 24), char(len >> 16), char(len >> 8), char(len)};
        feed(S2C, frame(FrameData, 0, 1, prefix + std::string(10000, '\0')));
        feed(C2S, frame(FrameRstStream, 0, 1, std::string("\0\0\0\x08", 4)));
        feed(S2C, frame(FrameData, 0, 1, std::string(16384, '\0')));
        feed(S2C, frame(FrameData, FlagEndStream, 1, std::string(len - 10000 - 16384, '\0')));
        int messages = 0;
        for (const WireEvent &e : events) {
            QVERIFY(e.kind != EventKind::DecodeError);
            if (e.kind == EventKind::Message) {
                ++messages;
                QCOMPARE(e.length, len);
                QCOMPARE(e.dir, S2C);
            }
        }
        QCOMPARE(messages, 1);
    }

    // The preface matcher must not lose the bytes it already accepted when classifying what followed.
    void garbageSplitInsidePrefaceMatch()
    {
        ConnectionDecoder d(kConnection);
        EventBatch events;
        const std::string first = "P"; // also the first byte of "PRI * HTTP/2.0"
        const std::string rest = "OST /pkg.Svc/Method HTTP/1.1\r\nHost: x\r\n\r\n";
        d.feed(C2S, bytes(first), first.size(), 0, events);
        QCOMPARE(events.size(), size_t(0));
        d.feed(C2S, bytes(rest), rest.size(), 0, events);
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].kind, EventKind::DecodeError);
        QVERIFY2(QString::fromStdString(events[0].reason).contains("HTTP/1"), events[0].reason.c_str());
    }

    // Valid start, then a frame header no peer may send: the error comes after the good frames, exactly once.
    void garbageAfterPreface()
    {
        Conversation conv;
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());
        ConnectionDecoder d(kConnection);
        EventBatch events;
        const std::string &hello = conv.m_chunks.front().bytes; // client magic + SETTINGS
        QCOMPARE(conv.m_chunks.front().dir, C2S);
        d.feed(C2S, bytes(hello), hello.size(), 0, events);
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].frameType, std::uint8_t(FrameSettings));
        const std::string oversized("\xff\xff\xff\x00\x00\x00\x00\x00\x01", 9);
        d.feed(C2S, bytes(oversized), oversized.size(), 0, events);
        QCOMPARE(events.size(), size_t(2));
        QCOMPARE(events[1].kind, EventKind::DecodeError);
        QVERIFY2(QString::fromStdString(events[1].reason).contains("SETTINGS_MAX_FRAME_SIZE"),
                 events[1].reason.c_str());
        d.feed(C2S, bytes(hello), hello.size(), 0, events);
        QCOMPARE(events.size(), size_t(2));
    }

    void grpcFields()
    {
        Conversation conv;
        conv.pump();
        const auto req1 = requestHeaders("call-42", 2, "/pkg.Svc/Method");
        const std::int32_t first = conv.request(req1, grpcMessage(8));
        const auto req2 = requestHeaders("call-43", 3, "/pkg.Svc/Other");
        const std::int32_t second = conv.request(req2, grpcMessage(8));
        conv.pump();
        conv.respond(first, responseHeaders(), grpcMessage(4),
                     {{"grpc-status", "14"}, {"grpc-message", "a%20b"}, {"grpc-retry-pushback-ms", "1500"}});
        conv.pump();
        conv.respondTrailersOnly(second, {{":status", "200"},
                                          {"content-type", "application/grpc"},
                                          {"grpc-status", "14"},
                                          {"grpc-message", "backend%20unavailable%3A%20retry%20later"},
                                          {"grpc-retry-pushback-ms", "-1"}});
        conv.pump();
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;

        const auto requests = headersEventsOf(events, C2S);
        QCOMPARE(requests.size(), size_t(2));
        GrpcFields r1;
        r1.path = "/pkg.Svc/Method";
        r1.timeoutNs = 250'000'000;
        r1.previousAttempts = 2;
        r1.callId = "call-42";
        QVERIFY(requests[0]->grpc == r1);
        QVERIFY(!requests[0]->endStream);
        GrpcFields r2 = r1;
        r2.path = "/pkg.Svc/Other";
        r2.previousAttempts = 3;
        r2.callId = "call-43";
        QVERIFY(requests[1]->grpc == r2);

        const auto responses = headersEventsOf(events, S2C);
        QCOMPARE(responses.size(), size_t(3));
        QCOMPARE(responses[0]->stream, std::uint32_t(first));
        GrpcFields head;
        head.httpStatus = 200;
        QVERIFY(responses[0]->grpc == head);
        QVERIFY(!responses[0]->endStream);

        QCOMPARE(responses[1]->stream, std::uint32_t(first));
        QVERIFY(responses[1]->endStream);
        QVERIFY(!responses[1]->grpc.httpStatus); // trailers carry no :status
        QCOMPARE(responses[1]->grpc.status.value_or(-1), 14);
        QCOMPARE(responses[1]->grpc.message.value_or("<none>"), std::string("a b"));
        QCOMPARE(responses[1]->grpc.pushbackMs.value_or(0), std::int64_t(1500));

        QCOMPARE(responses[2]->stream, std::uint32_t(second));
        QVERIFY(responses[2]->endStream);
        GrpcFields only;
        only.httpStatus = 200;
        only.status = 14;
        only.message = "backend unavailable: retry later";
        only.pushbackMs = -1;
        QVERIFY(responses[2]->grpc == only);
    }

    // Each side's SETTINGS bound what the other may send; the decoder must apply them to the opposite
    // direction or it rejects frames nghttp2 legitimately sent.
    void peerSettings()
    {
        Conversation::Options options;
        options.clientSettings = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                  {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 8192},
                                  {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 65536}};
        // The server's encoder grows its table to the 8192 the client allows and says so with a size update,
        // which an inflater still at 4096 would reject.
        options.serverDeflateTableSize = 8192;
        Conversation conv(options);
        conv.pump();
        // 5000 bytes exceed 3/4 of a 4096 table, so nghttp2 indexes this only in the 8192 table.
        auto resp = responseHeaders();
        resp.push_back({"rpcscope-server-blob", randomText(5000, 3)});
        std::int32_t ids[2];
        for (std::int32_t &id : ids) {
            id = conv.request(requestHeaders("call-settings"), grpcMessage(1));
            conv.pump();
            conv.respond(id, resp, grpcMessage(50000), okTrailers());
            conv.pump();
        }
        QVERIFY2(conv.m_error.empty(), conv.m_error.c_str());

        const EventBatch events = decodeWhole(conv.m_chunks);
        verifyAgainstNghttp2(conv, events);
        if (QTest::currentTestFailed()) return;
        const auto lens = headersFrameLengths(events, S2C, false);
        QCOMPARE(lens.size(), size_t(2));
        QVERIFY2(lens[0] > 3000 && lens[1] < 100, joined(lens).constData());
        std::vector<std::uint32_t> dataLens;
        for (const FrameInfo &f : framesOf(events, S2C))
            if (f.type == FrameData) dataLens.push_back(f.length);
        QCOMPARE(joined(dataLens), QByteArray("50005 50005"));
        COMPARE_SEQ(messagesOf(events, S2C), (std::vector<Msg>{{std::uint32_t(ids[0]), 50000, false},
                                                               {std::uint32_t(ids[1]), 50000, false}}));
    }
};

QTEST_GUILESS_MAIN(TestH2Decoder)
#include "tst_h2decoder.moc"
