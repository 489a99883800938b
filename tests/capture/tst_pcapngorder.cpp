// The pcapng export's TCP is one a dissector can follow: whatever order the events came in, each direction's
// sequence numbers only grow in file order, and no segment acknowledges bytes the file has not shown yet.
// Kernel receive times make the second case common: the relay may read the client's bytes before the
// server's that reached the stack earlier, so events come out of time order across the two directions.

#include "pcapngwriter.h"

#include <QtTest>
#include <cstring>
#include <map>

using namespace rpcscope;

namespace {

std::uint32_t get32be(const std::string &s, size_t at)
{
    return std::uint32_t(std::uint8_t(s[at])) << 24 | std::uint32_t(std::uint8_t(s[at + 1])) << 16 |
           std::uint32_t(std::uint8_t(s[at + 2])) << 8 | std::uint8_t(s[at + 3]);
}

std::uint32_t getHost32(const std::string &s, size_t at)
{
    std::uint32_t v;
    std::memcpy(&v, s.data() + at, sizeof v);
    return v;
}

struct Tcp
{
    std::uint64_t ts;
    bool fromClient;
    std::uint32_t seq, ack;
    std::uint8_t flags;
    std::string payload;
};

// The writer's own layout: SHB, IDB, then enhanced packet blocks of Ethernet + IPv4 (20 bytes) + TCP (20).
std::vector<Tcp> packets(const std::string &file, std::uint16_t serverPort)
{
    std::vector<Tcp> out;
    size_t at = 0;
    while (at + 12 <= file.size()) {
        const std::uint32_t type = getHost32(file, at), len = getHost32(file, at + 4);
        if (len < 12 || at + len > file.size()) break;
        if (type == 6) {
            const size_t body = at + 8;
            const std::uint64_t ts =
                std::uint64_t(getHost32(file, body + 4)) << 32 | getHost32(file, body + 8);
            const std::uint32_t caplen = getHost32(file, body + 12);
            const std::string p = file.substr(body + 20, caplen);
            const size_t tcp = 14 + 20;
            Tcp t;
            t.ts = ts;
            t.fromClient = ((std::uint8_t(p[tcp + 2]) << 8) | std::uint8_t(p[tcp + 3])) == serverPort;
            t.seq = get32be(p, tcp + 4);
            t.ack = get32be(p, tcp + 8);
            t.flags = std::uint8_t(p[tcp + 13]);
            t.payload = p.substr(tcp + 20);
            out.push_back(std::move(t));
        }
        at += len;
    }
    return out;
}

WireEvent frame(Direction dir, std::int64_t t, std::uint8_t type, std::uint8_t flags, std::uint64_t ping = 0)
{
    WireEvent e;
    e.kind = EventKind::Frame;
    e.connection = 1;
    e.dir = dir;
    e.tNs = t;
    e.frameType = type;
    e.flags = flags;
    e.pingData = ping;
    e.length = type == FramePing ? 8 : 0;
    return e;
}

} // namespace

class TestPcapngOrder : public QObject
{
    Q_OBJECT
private slots:
    void eventsOutOfTimeOrder_data()
    {
        QTest::addColumn<bool>("sideGoesBack");
        // The reads of the two directions out of time order only: the old numbering had the server's segment
        // acknowledge the client's PING before the file showed it, and tshark took the PING for a spurious
        // retransmission and left it undissected.
        QTest::newRow("across directions") << false;
        // Also a side's own later read timed earlier (a spliced read's time against a kernel time).
        QTest::newRow("and a side going back") << true;
    }

    void eventsOutOfTimeOrder()
    {
        QFETCH(bool, sideGoesBack);
        constexpr std::int64_t ms = 1'000'000;
        CaptureData data;
        data.info.hasOrigin = true;
        data.info.originNs = 1'000 * ms;
        data.info.originWallNs = 1'700'000'000'000 * ms;
        WireEvent open;
        open.kind = EventKind::ConnectionOpened;
        open.connection = 1;
        open.tNs = 1'000 * ms;
        open.about = PeerNames{"127.0.0.1:40001", "127.0.0.1:50051"};
        EventBatch b{open};
        const auto c2s = Direction::ClientToServer, s2c = Direction::ServerToClient;
        b.push_back(frame(c2s, 1'001 * ms, FrameSettings, 0));
        b.push_back(frame(s2c, 1'002 * ms, FrameSettings, 0));
        // Read in this order, but the server's SETTINGS ACK reached the stack before the client's PING.
        b.push_back(frame(c2s, 1'005 * ms, FramePing, 0, 7));
        b.push_back(frame(s2c, 1'004 * ms, FrameSettings, FlagAck));
        b.push_back(frame(c2s, 1'006 * ms, FrameSettings, FlagAck));
        b.push_back(frame(s2c, 1'007 * ms, FramePing, FlagAck, 7));
        if (sideGoesBack) {
            b.push_back(frame(s2c, 1'003 * ms, FramePing, 0, 9));
            b.push_back(frame(c2s, 1'008 * ms, FramePing, FlagAck, 9));
        }
        WireEvent closed;
        closed.kind = EventKind::ConnectionClosed;
        closed.connection = 1;
        closed.tNs = 1'006 * ms; // before the last frames' times
        b.push_back(closed);
        data.batches.push_back(b);

        const std::vector<Tcp> all = packets(captureToPcapng(data), 50051);
        QVERIFY(all.size() >= 10);
        // Bytes seen so far per direction, as a dissector follows them: [client, server].
        std::uint32_t next[2] = {0, 0};
        bool started[2] = {false, false};
        std::uint64_t lastTs = 0;
        int fins = 0;
        std::map<int, int> frames; // HTTP/2 frame type -> count, from the payloads in file order
        for (size_t i = 0; i < all.size(); ++i) {
            const Tcp &p = all[i];
            const int side = p.fromClient ? 0 : 1;
            QVERIFY2(p.ts >= lastTs, qPrintable(QStringLiteral("packet %1 goes back in time").arg(i + 1)));
            lastTs = p.ts;
            if (started[side])
                QVERIFY2(p.seq == next[side],
                         qPrintable(QStringLiteral("packet %1: seq %2, the side's next byte is %3")
                                        .arg(i + 1)
                                        .arg(p.seq)
                                        .arg(next[side])));
            started[side] = true;
            if (p.flags & 0x10) {
                QVERIFY2(started[1 - side], "an ACK before the other side's SYN");
                QVERIFY2(std::int32_t(p.ack - next[1 - side]) <= 0,
                         qPrintable(QStringLiteral("packet %1 acknowledges %2 bytes the file has not shown")
                                        .arg(i + 1)
                                        .arg(std::int32_t(p.ack - next[1 - side]))));
            }
            QVERIFY2(fins == 0 || (p.payload.empty() && !(p.flags & 0x02)), "bytes after a FIN");
            fins += (p.flags & 0x01) ? 1 : 0;
            next[side] = p.seq + std::uint32_t(p.payload.size()) + ((p.flags & 0x03) ? 1 : 0);
            // Each test frame fits one segment; the preface is the client's first payload.
            size_t at = p.payload.rfind("PRI ", 0) == 0 ? 24 : 0;
            while (at + 9 <= p.payload.size()) {
                const size_t len = (std::uint8_t(p.payload[at]) << 16) |
                                   (std::uint8_t(p.payload[at + 1]) << 8) | std::uint8_t(p.payload[at + 2]);
                ++frames[std::uint8_t(p.payload[at + 3])];
                at += 9 + len;
            }
        }
        QCOMPARE(fins, 2);
        QCOMPARE(frames[FrameSettings], 4);
        QCOMPARE(frames[FramePing], sideGoesBack ? 4 : 2);
    }
};

QTEST_GUILESS_MAIN(TestPcapngOrder)
#include "tst_pcapngorder.moc"
