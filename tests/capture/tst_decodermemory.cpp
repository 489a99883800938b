// What a connection's decoder holds is counted (ConnectionDecoder::memoryBytes()): it grows with the streams
// a peer opens and with the HPACK table it fills, and falls when the streams are reset. A capture's memory
// budget counts this figure, so a flood of open streams cannot hide in the decoder.

#include "connectiondecoder.h"

#include <QtTest>
#include <nghttp2/nghttp2.h>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

// A real nghttp2 client session: what it sends is what the decoder sees.
class Client
{
public:
    Client()
    {
        nghttp2_session_callbacks *cb = nullptr;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_send_callback(
            cb, [](nghttp2_session *, const std::uint8_t *data, size_t len, int, void *user) -> ssize_t {
                static_cast<Client *>(user)->m_out.append(reinterpret_cast<const char *>(data), len);
                return ssize_t(len);
            });
        // Before the server's SETTINGS, nghttp2 assumes it allows 100 streams: this client opens more.
        nghttp2_option *option = nullptr;
        nghttp2_option_new(&option);
        nghttp2_option_set_peer_max_concurrent_streams(option, 100000);
        nghttp2_session_client_new2(&m_session, cb, this, option);
        nghttp2_option_del(option);
        nghttp2_session_callbacks_del(cb);
        nghttp2_settings_entry streams{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100000};
        nghttp2_submit_settings(m_session, NGHTTP2_FLAG_NONE, &streams, 1);
    }
    ~Client() { nghttp2_session_del(m_session); }

    // HEADERS without END_STREAM: the stream stays open. `extra` is indexed into the HPACK table.
    std::int32_t open(const std::string &extra = {})
    {
        auto nv = [](const char *n, const std::string &v) {
            return nghttp2_nv{(std::uint8_t *)n, (std::uint8_t *)v.data(), std::strlen(n), v.size(),
                              NGHTTP2_NV_FLAG_NONE};
        };
        const std::string post = "POST", scheme = "http", authority = "x", path = "/lab.Lab/Call",
                          te = "trailers";
        std::vector<nghttp2_nv> h{nv(":method", post), nv(":scheme", scheme), nv(":authority", authority),
                                  nv(":path", path), nv("te", te)};
        if (!extra.empty()) h.push_back(nv("x-extra", extra));
        return nghttp2_submit_headers(m_session, NGHTTP2_FLAG_NONE, -1, nullptr, h.data(), h.size(), nullptr);
    }
    void reset(std::int32_t stream) { nghttp2_submit_rst_stream(m_session, NGHTTP2_FLAG_NONE, stream, 8); }
    std::string take()
    {
        nghttp2_session_send(m_session);
        std::string out;
        out.swap(m_out);
        return out;
    }

private:
    nghttp2_session *m_session = nullptr;
    std::string m_out;
};

void feed(ConnectionDecoder &d, const std::string &bytes, EventBatch &out)
{
    d.feed(Direction::ClientToServer, reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size(), 1,
           out);
}

} // namespace

class TestDecoderMemory : public QObject
{
    Q_OBJECT
private slots:
    void openStreamsCountAndResetsFree()
    {
        Client client;
        ConnectionDecoder decoder(1, DecoderLimits{});
        EventBatch events;
        feed(decoder, client.take(), events);
        const size_t idle = decoder.memoryBytes();
        QVERIFY(idle > 0);

        constexpr int kStreams = 2000;
        std::vector<std::int32_t> ids;
        for (int i = 0; i < kStreams; ++i)
            ids.push_back(client.open());
        feed(decoder, client.take(), events);
        QVERIFY2(!decoder.decoder(Direction::ClientToServer).failed(),
                 decoder.decoder(Direction::ClientToServer).error().c_str());
        const size_t open = decoder.memoryBytes();
        // Each open stream has a flow window in both directions: a hash node of at least 32 bytes each.
        QVERIFY2(
            open >= idle + kStreams * 2 * 32,
            qPrintable(QStringLiteral("idle %1, with %2 open streams %3").arg(idle).arg(kStreams).arg(open)));

        for (std::int32_t id : ids)
            client.reset(id);
        feed(decoder, client.take(), events);
        const size_t reset = decoder.memoryBytes();
        // The nodes go; the hash tables keep their bucket arrays.
        QVERIFY2(reset < open - kStreams * 2 * 32,
                 qPrintable(QStringLiteral("open %1, after the resets %2").arg(open).arg(reset)));
    }

    void hpackTableCounts()
    {
        Client client;
        ConnectionDecoder decoder(1, DecoderLimits{});
        EventBatch events;
        feed(decoder, client.take(), events);
        // Each stream's HEADERS goes out before its reset (a reset of an unsent stream cancels it).
        auto openAndReset = [&](const std::string &extra) {
            const std::int32_t id = client.open(extra);
            feed(decoder, client.take(), events);
            client.reset(id);
            feed(decoder, client.take(), events);
        };
        openAndReset({});
        const size_t before = decoder.memoryBytes();
        // Distinct values, each added to the dynamic table (4096 bytes by default): it fills up.
        for (int i = 0; i < 8; ++i)
            openAndReset(std::string(400, char('a' + i)));
        const size_t after = decoder.memoryBytes();
        QVERIFY2(after >= before + 3000,
                 qPrintable(QStringLiteral("before %1, with a full HPACK table %2").arg(before).arg(after)));
    }
};

QTEST_GUILESS_MAIN(TestDecoderMemory)
#include "tst_decodermemory.moc"
