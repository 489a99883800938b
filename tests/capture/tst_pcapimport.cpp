// pcap/pcapng import: TCP reassembly (order, retransmissions, out-of-order segments, a capture that starts
// mid-connection, a file cut short) of real grpc++ bytes, and a capture taken by Debian's tshark on loopback
// while a lab scenario runs, compared with rpcscope's own live capture of the same calls.

#include "capturecodec.h"
#include "clock.h"
#include "connectiondecoder.h"
#include "labclient.h"
#include "labserver.h"
#include "labsession.h"
#include "pcapimport.h"
#include "testnet.h"
#include "timelinestore.h"

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

using namespace rpcscope;

namespace {

constexpr std::int64_t ms = 1'000'000;

// tshark stamps packets on the wall clock and the relay's events are on the steady clock. A machine whose
// wall clock is stepped while the test runs (a virtual machine's time sync, say) moves one against the other,
// so the recording's times go back to the steady clock through the offset in effect when each packet was
// seen, sampled every millisecond while the scenario runs.
class WallClockTrack
{
public:
    WallClockTrack()
    {
        sample();
        m_thread = std::thread([this] {
            std::unique_lock lk(m_mu);
            while (!m_cv.wait_for(lk, std::chrono::milliseconds(1), [this] { return m_stop; })) {
                lk.unlock();
                sample();
                lk.lock();
            }
        });
    }
    ~WallClockTrack() { stop(); }
    void stop()
    {
        {
            std::lock_guard lk(m_mu);
            m_stop = true;
        }
        m_cv.notify_all();
        if (m_thread.joinable()) m_thread.join();
        sample();
    }
    // How far the wall clock moved against the steady clock, ns, between the first and the last sample.
    std::int64_t drift() const
    {
        std::lock_guard lk(m_mu);
        std::int64_t lo = m_samples.front().offset, hi = lo;
        for (const Sample &s : m_samples) {
            lo = std::min(lo, s.offset);
            hi = std::max(hi, s.offset);
        }
        return hi - lo;
    }
    // A wall-clock time on the steady clock.
    std::int64_t toSteady(std::int64_t wallNs) const
    {
        std::lock_guard lk(m_mu);
        const auto it = std::upper_bound(m_samples.begin(), m_samples.end(), wallNs,
                                         [](std::int64_t t, const Sample &s) { return t < s.wallNs; });
        return wallNs - (it == m_samples.begin() ? it : std::prev(it))->offset;
    }

private:
    struct Sample
    {
        std::int64_t wallNs, offset; // offset: wall - steady
    };
    void sample()
    {
        // The narrowest of three windows around one wall-clock reading.
        Sample best{0, 0};
        std::int64_t window = -1;
        for (int i = 0; i < 3; ++i) {
            const std::int64_t a = steadyNowNs(), w = wallNowNs(), b = steadyNowNs();
            if (window < 0 || b - a < window) {
                window = b - a;
                best = {w, w - (a + b) / 2};
            }
        }
        std::lock_guard lk(m_mu);
        if (m_samples.empty() || best.wallNs > m_samples.back().wallNs) m_samples.push_back(best);
    }

    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_stop = false;
    std::vector<Sample> m_samples;
    std::thread m_thread;
};

// A classic pcap file (nanosecond timestamps, Ethernet) written segment by segment.
class PcapWriter
{
public:
    explicit PcapWriter(const std::string &path) : m_out(path, std::ios::binary)
    {
        put32(0xa1b23c4d); // nanosecond-resolution pcap
        put16(2);
        put16(4);
        put32(0);
        put32(0);
        put32(262144);
        put32(1); // LINKTYPE_ETHERNET
    }
    // One TCP segment from port `src` to port `dst` on 127.0.0.1.
    void segment(std::int64_t tNs, std::uint16_t src, std::uint16_t dst, std::uint32_t seq,
                 std::uint8_t flags, const std::string &payload)
    {
        std::string f(14, '\0');
        f[12] = 0x08; // IPv4
        std::string ip(20, '\0');
        ip[0] = 0x45;
        const std::uint16_t total = std::uint16_t(20 + 20 + payload.size());
        ip[2] = char(total >> 8);
        ip[3] = char(total);
        ip[8] = 64;
        ip[9] = 6;
        for (int i : {12, 16}) {
            ip[size_t(i)] = 127;
            ip[size_t(i) + 3] = 1;
        }
        std::string tcp(20, '\0');
        tcp[0] = char(src >> 8);
        tcp[1] = char(src);
        tcp[2] = char(dst >> 8);
        tcp[3] = char(dst);
        for (int i = 0; i < 4; ++i)
            tcp[size_t(4 + i)] = char(seq >> (24 - 8 * i));
        tcp[12] = 0x50;
        tcp[13] = char(flags);
        f += ip + tcp + payload;
        put32(std::uint32_t(tNs / 1'000'000'000));
        put32(std::uint32_t(tNs % 1'000'000'000));
        put32(std::uint32_t(f.size()));
        put32(std::uint32_t(f.size()));
        m_out.write(f.data(), std::streamsize(f.size()));
    }

private:
    void put16(std::uint16_t v) { m_out.write(reinterpret_cast<const char *>(&v), 2); }
    void put32(std::uint32_t v) { m_out.write(reinterpret_cast<const char *>(&v), 4); }
    std::ofstream m_out;
};

struct Seg
{
    std::int64_t t;
    bool c2s;
    std::uint32_t offset; // in that direction's byte stream
    std::string bytes;
};

// The tap's reads of one connection, cut into segments of at most `mss` bytes, in read order.
std::vector<Seg> segments(const testnet::Tap::Conn &c, size_t mss)
{
    std::vector<Seg> out;
    auto cut = [&](const std::string &all, const std::vector<std::pair<std::int64_t, size_t>> &reads,
                   bool c2s) {
        size_t from = 0;
        for (const auto &[t, end] : reads) {
            for (size_t o = from; o < end; o += mss)
                out.push_back({t, c2s, std::uint32_t(o), all.substr(o, std::min(mss, end - o))});
            from = end;
        }
    };
    cut(c.c2s, c.c2sReads, true);
    cut(c.s2c, c.s2cReads, false);
    std::stable_sort(out.begin(), out.end(), [](const Seg &a, const Seg &b) { return a.t < b.t; });
    return out;
}

constexpr std::uint16_t kClientPort = 40000, kServerPort = 50051;
constexpr std::uint32_t kIsnC = 0xFFFFF000, kIsnS = 1000; // the client's numbers wrap around 2^32

enum class Damage
{
    None,
    Retransmit,
    Reorder,
    MidStream,
    CutShort
};

// One connection's segments (a client on `clientPort`) in `w`, its times moved by `shift`.
void writeConnection(PcapWriter &w, const std::vector<Seg> &segs, Damage damage, std::int64_t t0,
                     std::uint16_t clientPort = kClientPort, std::int64_t shift = 0)
{
    t0 += shift;
    if (damage != Damage::MidStream) {
        w.segment(t0, clientPort, kServerPort, kIsnC, 0x02, {});
        w.segment(t0, kServerPort, clientPort, kIsnS, 0x12, {});
    }
    std::mt19937 rng(7);
    std::vector<Seg> order = segs;
    if (damage == Damage::Reorder)
        for (size_t i = 2; i + 1 < order.size(); i += 3)
            std::swap(order[i], order[i + 1]);
    std::int64_t last = t0;
    for (size_t i = 0; i < order.size(); ++i) {
        Seg s = order[i];
        s.t += shift;
        if (damage == Damage::MidStream && s.offset < 1200)
            continue; // the capture began after the preface, the SETTINGS and the first call's headers
        const std::uint32_t seq = (s.c2s ? kIsnC : kIsnS) + 1 + s.offset;
        w.segment(s.t, s.c2s ? clientPort : kServerPort, s.c2s ? kServerPort : clientPort, seq, 0x18,
                  s.bytes);
        if (damage == Damage::Retransmit && rng() % 4 == 0) {
            // A full retransmission, then one overlapping the next segment's start.
            w.segment(s.t, s.c2s ? clientPort : kServerPort, s.c2s ? kServerPort : clientPort, seq, 0x18,
                      s.bytes);
            if (s.bytes.size() > 3)
                w.segment(s.t, s.c2s ? clientPort : kServerPort, s.c2s ? kServerPort : clientPort,
                          seq + std::uint32_t(s.bytes.size()) - 3, 0x18, s.bytes.substr(s.bytes.size() - 3));
        }
        last = std::max(last, s.t);
    }
    if (damage != Damage::CutShort) {
        w.segment(last, clientPort, kServerPort, 0, 0x11, {});
        w.segment(last, kServerPort, clientPort, 0, 0x11, {});
    }
}

void writeCapture(const std::string &path, const std::vector<Seg> &segs, Damage damage, std::int64_t t0)
{
    PcapWriter w(path);
    writeConnection(w, segs, damage, t0);
}

// The same bytes decoded in order by the relay's decoder: what an import must reproduce.
TimelineStore decodeInOrder(const std::vector<Seg> &segs)
{
    ConnectionDecoder dec(1);
    EventBatch events;
    for (const Seg &s : segs)
        dec.feed(s.c2s ? Direction::ClientToServer : Direction::ServerToClient,
                 reinterpret_cast<const std::uint8_t *>(s.bytes.data()), s.bytes.size(), s.t, events);
    TimelineStore store;
    store.apply(events);
    return store;
}

struct CallShape
{
    std::string key;
    std::vector<int> statuses;
    std::vector<std::int64_t> startsNs; // relative to the call's first attempt
    bool operator==(const CallShape &) const = default;
};

std::vector<CallShape> shapes(const TimelineStore &s)
{
    std::vector<CallShape> out;
    for (const Call &c : s.calls()) {
        CallShape sh{c.key, {}, {}};
        for (const Attempt &a : c.attempts) {
            sh.statuses.push_back(a.status.value_or(-1));
            sh.startsNs.push_back(a.startNs - c.attempts.front().startNs);
        }
        out.push_back(std::move(sh));
    }
    return out;
}

QString describe(const std::vector<CallShape> &v)
{
    QStringList parts;
    for (const CallShape &s : v) {
        QStringList st;
        for (int x : s.statuses)
            st << QString::number(x);
        parts << QStringLiteral("%1[%2]").arg(QString::fromStdString(s.key), st.join(','));
    }
    return parts.join(' ');
}

} // namespace

class TestPcapImport : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        // Real grpc++ traffic through an independent tap: three calls, one of them retried twice.
        lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        testnet::Tap tap(std::uint16_t(server.port()));
        QVERIFY(tap.start());
        {
            lab::LabClient client(
                "127.0.0.1:" + std::to_string(tap.port()),
                "{\"methodConfig\":[{\"name\":[{\"service\":\"rpcscope.lab.Lab\"}],\"retryPolicy\":{"
                "\"maxAttempts\":3,"
                "\"initialBackoff\":\"0.02s\",\"maxBackoff\":\"1s\",\"backoffMultiplier\":2,"
                "\"retryableStatusCodes\":[\"UNAVAILABLE\"]}}]}");
            for (int i = 0; i < 3; ++i) {
                lab::CallRequest r;
                r.set_call_id("pcap-" + std::to_string(i));
                r.set_fail_first_n(i == 1 ? 2 : 0);
                r.set_fail_code(14);
                r.set_payload(std::string(3000, 'p')); // spans several segments
                r.set_response_size(5000);
                QCOMPARE(client.call(r, std::chrono::seconds(5)).code, 0);
            }
        }
        QTRY_VERIFY_WITH_TIMEOUT(tap.allDone(), 5000);
        QCOMPARE(tap.connections().size(), size_t(1));
        m_segments = segments(tap.connections()[0], 700);
        m_expected = shapes(decodeInOrder(m_segments));
        QCOMPARE(m_expected.size(), size_t(3));
        QCOMPARE(m_expected[1].statuses, (std::vector<int>{14, 14, 0}));
        QVERIFY(m_dir.isValid());
    }

    void reassembly_data()
    {
        QTest::addColumn<int>("damage");
        QTest::newRow("in order") << int(Damage::None);
        QTest::newRow("retransmissions and overlaps") << int(Damage::Retransmit);
        QTest::newRow("out of order") << int(Damage::Reorder);
    }

    // Whatever TCP did on the way, the import decodes the same calls as decoding the bytes in order.
    void reassembly()
    {
        QFETCH(int, damage);
        const std::string path = m_dir.filePath(QStringLiteral("r%1.pcap").arg(damage)).toStdString();
        writeCapture(path, m_segments, Damage(damage), m_segments.front().t);
        PcapImportResult r;
        std::string error;
        QVERIFY2(importPcap(path, {}, &r, &error), error.c_str());
        QCOMPARE(r.serverPort, kServerPort); // detected from the client preface
        QCOMPARE(r.connections, 1);
        TimelineStore store;
        store.apply(r.events);
        const auto got = shapes(store);
        if (Damage(damage) == Damage::Reorder) {
            QVERIFY(r.outOfOrder > 0);
            // Held segments are delivered when the gap fills, so times may move by a segment; the calls may
            // not.
            QCOMPARE(got.size(), m_expected.size());
            for (size_t i = 0; i < got.size(); ++i) {
                QCOMPARE(got[i].key, m_expected[i].key);
                QCOMPARE(got[i].statuses, m_expected[i].statuses);
            }
        } else {
            QVERIFY2(got == m_expected, qPrintable(describe(got) + " vs " + describe(m_expected)));
        }
        if (Damage(damage) == Damage::Retransmit) QVERIFY(r.retransmitted > 0);
        QVERIFY(store.connections()[0].decodeError.empty());
        QCOMPARE(QString::fromStdString(store.connections()[0].closeReason),
                 QStringLiteral("closed by client"));
    }

    void streamedInBatches_data()
    {
        QTest::addColumn<int>("damage");
        QTest::addColumn<int>("batchEvents");
        QTest::addColumn<int>("connections");
        for (int n : {1, 5, 64}) {
            QTest::addRow("in order, batches of %d", n) << int(Damage::None) << n << 1;
            QTest::addRow("out of order, batches of %d", n) << int(Damage::Reorder) << n << 1;
        }
        QTest::addRow("40 connections, ports used twice, batches of 64")
            << int(Damage::Retransmit) << 64 << 40;
    }

    // Streamed, the import hands its events over batch by batch while it reads, and they are the events of
    // the whole-file import, in the same order: the same calls.
    void streamedInBatches()
    {
        QFETCH(int, damage);
        QFETCH(int, batchEvents);
        QFETCH(int, connections);
        const std::string path =
            m_dir.filePath(QStringLiteral("s%1-%2.pcap").arg(damage).arg(connections)).toStdString();
        {
            PcapWriter w(path);
            for (int i = 0; i < connections; ++i) // one after the other, each 20 client ports used again
                writeConnection(w, m_segments, Damage(damage), m_segments.front().t,
                                std::uint16_t(kClientPort + i % 20), std::int64_t(i) * 1000 * ms);
        }
        PcapImportResult whole;
        std::string error;
        QVERIFY2(importPcap(path, {}, &whole, &error), error.c_str());
        QCOMPARE(whole.connections, connections);

        PcapImportOptions o;
        o.batchEvents = size_t(batchEvents);
        std::vector<EventBatch> batches;
        PcapImportResult streamed;
        std::int64_t originAtFirstBatch = 0;
        QVERIFY2(importPcap(
                     path, o,
                     [&](EventBatch &&b) {
                         if (batches.empty()) originAtFirstBatch = streamed.firstPacketWallNs;
                         batches.push_back(std::move(b));
                     },
                     &streamed, &error),
                 error.c_str());
        QVERIFY(streamed.events.empty()); // nothing held back
        QCOMPARE(originAtFirstBatch, whole.firstPacketWallNs);
        QCOMPARE(streamed.packets, whole.packets);
        QCOMPARE(streamed.connections, whole.connections);
        QCOMPARE(streamed.retransmitted, whole.retransmitted);
        QCOMPARE(streamed.outOfOrder, whole.outOfOrder);
        // Handed over as it goes: a batch closes at the first packet that fills it.
        QVERIFY2(
            batches.size() >= whole.events.size() / size_t(batchEvents + 16),
            qPrintable(
                QStringLiteral("%1 batches for %2 events").arg(batches.size()).arg(whole.events.size())));
        EventBatch joined;
        size_t largest = 0;
        for (const EventBatch &b : batches) {
            QVERIFY(!b.empty());
            largest = std::max(largest, b.size());
            joined.insert(joined.end(), b.begin(), b.end());
        }
        QVERIFY2(largest < size_t(batchEvents) + 16, qPrintable(QString::number(largest)));
        QCOMPARE(joined.size(), whole.events.size());
        QVERIFY(encodeBatch(joined) == encodeBatch(whole.events)); // every field of every event
        TimelineStore a, b;
        a.apply(whole.events);
        for (const EventBatch &batch : batches)
            b.apply(batch);
        size_t attempts = 0; // the same call ids on every connection: the attempts add up under them
        for (const Call &c : b.calls())
            attempts += c.attempts.size();
        QCOMPARE(attempts, size_t(5 * connections));
        QVERIFY2(shapes(a) == shapes(b), qPrintable(describe(shapes(b)) + " vs " + describe(shapes(a))));
    }

    // Progress covers both passes (finding the server port, then importing) and only moves forward; a
    // cancel in the first pass stops before any event is handed over.
    void progressAndCancel()
    {
        const std::string path = m_dir.filePath(QStringLiteral("progress.pcap")).toStdString();
        {
            PcapWriter w(path);
            for (int i = 0; i < 250; ++i)
                writeConnection(w, m_segments, Damage::None, m_segments.front().t,
                                std::uint16_t(kClientPort + i % 20), std::int64_t(i) * 1000 * ms);
        }
        std::vector<double> seen;
        PcapImportOptions o;
        o.progress = [&](double f) {
            seen.push_back(f);
            return true;
        };
        PcapImportResult r;
        std::string error;
        size_t events = 0;
        QVERIFY2(importPcap(
                     path, o, [&](EventBatch &&b) { events += b.size(); }, &r, &error),
                 error.c_str());
        QVERIFY(!r.cancelled);
        QVERIFY(events > 0);
        QVERIFY2(r.packets > 8192, qPrintable(QString::number(r.packets)));
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QVERIFY2(!seen.empty() && seen.front() <= 0.2, qPrintable(QString::number(seen.front())));
        QVERIFY2(seen.back() > 0.5 && seen.back() <= 1.0, qPrintable(QString::number(seen.back())));

        o.progress = [](double) { return false; };
        events = 0;
        QVERIFY2(importPcap(
                     path, o, [&](EventBatch &&b) { events += b.size(); }, &r, &error),
                 error.c_str());
        QVERIFY(r.cancelled);
        QCOMPARE(events, size_t(0));
    }

    void midStream()
    {
        const std::string path = m_dir.filePath(QStringLiteral("mid.pcap")).toStdString();
        writeCapture(path, m_segments, Damage::MidStream, m_segments.front().t);
        PcapImportResult r;
        std::string error;
        QVERIFY(!importPcap(path, {}, &r, &error)); // no preface: the port cannot be guessed
        QVERIFY2(QString::fromStdString(error).contains("give the server port"), error.c_str());
        PcapImportOptions o;
        o.serverPort = kServerPort;
        QVERIFY2(importPcap(path, o, &r, &error), error.c_str());
        QVERIFY(!r.notes.empty());
        QVERIFY2(QString::fromStdString(r.notes[0]).contains("already open"), r.notes[0].c_str());
        TimelineStore store;
        store.apply(r.events);
        // Frames are still delimited, and header blocks decoded without the HPACK context are marked so.
        QVERIFY(!store.frames().empty());
        QVERIFY(std::any_of(r.events.begin(), r.events.end(), [](const WireEvent &e) {
            return e.kind == EventKind::Headers && e.hpackUnknown;
        }));
    }

    void cutShortKeepsWhatIsIntact()
    {
        const std::string path = m_dir.filePath(QStringLiteral("cut.pcap")).toStdString();
        writeCapture(path, m_segments, Damage::CutShort, m_segments.front().t);
        // Chop the file in the middle of a packet record.
        std::ifstream in(path, std::ios::binary);
        std::string all((std::istreambuf_iterator<char>(in)), {});
        all.resize(all.size() * 2 / 3);
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(all.data(), std::streamsize(all.size()));
        PcapImportResult r;
        std::string error;
        QVERIFY2(importPcap(path, {}, &r, &error), error.c_str());
        bool said = false;
        for (const auto &n : r.notes)
            said = said || n.find("ends early") != std::string::npos;
        QVERIFY2(said, "a cut file says so");
        TimelineStore store;
        store.apply(r.events);
        QVERIFY(!store.calls().empty());
        QVERIFY(shapes(store).front() == m_expected.front());
    }

    void notACapture()
    {
        const std::string path = m_dir.filePath(QStringLiteral("junk.pcap")).toStdString();
        std::ofstream(path) << "this is not a capture file at all\n";
        PcapImportResult r;
        std::string error;
        QVERIFY(!importPcap(path, {}, &r, &error));
        QVERIFY2(QString::fromStdString(error).startsWith("cannot read " + QString::fromStdString(path)),
                 error.c_str());
        QVERIFY(!importPcap(m_dir.filePath(QStringLiteral("missing.pcap")).toStdString(), {}, &r, &error));
    }

    // Debian's tshark captures loopback while a lab scenario runs through rpcscope's relay; importing its
    // file gives the same calls, attempts and gaps as the live capture, within 0.2 ms (the median; each
    // within 1 ms).
    void tsharkCaptureMatchesLive()
    {
        const QString tshark = QStandardPaths::findExecutable(QStringLiteral("tshark"));
        if (tshark.isEmpty()) QSKIP("tshark is not installed (scripts/setup.sh installs it)");
        std::mutex mu;
        EventBatch live;
        lab::LabSession session;
        std::string error;
        QVERIFY2(session.start(
                     [&](EventBatch &&b) {
                         std::lock_guard lk(mu);
                         live.insert(live.end(), b.begin(), b.end());
                     },
                     &error),
                 error.c_str());
        const int proxyPort = session.proxyAddress().port, serverPort = session.serverAddress().port;
        // A second port in the filter lets the test see that capturing has begun without touching the proxy.
        const int marker = testnet::listenLoopback();
        const std::uint16_t markerPort = testnet::localPort(marker);
        const QString file = m_dir.filePath(QStringLiteral("tshark.pcapng"));
        QProcess cap;
        cap.setProcessChannelMode(QProcess::MergedChannels);
        cap.start(tshark, {"-i", "lo", "-f",
                           QStringLiteral("tcp port %1 or tcp port %2 or tcp port %3")
                               .arg(proxyPort)
                               .arg(markerPort)
                               .arg(serverPort),
                           "-w", file, "-P", "-l"});
        if (!cap.waitForStarted(10000)) QSKIP("tshark could not start");
        QString output;
        bool capturing = false;
        for (int i = 0; i < 200 && !capturing; ++i) {
            const int fd = testnet::connectLoopback(markerPort);
            if (fd >= 0) ::close(fd);
            const int accepted = ::accept(marker, nullptr, nullptr); // keep the backlog from filling up
            if (accepted >= 0) ::close(accepted);
            cap.waitForReadyRead(100);
            output += QString::fromUtf8(cap.readAll());
            capturing = output.contains(QStringLiteral(" %1 ").arg(markerPort)) &&
                        output.contains(QLatin1String("TCP"));
            if (cap.state() == QProcess::NotRunning) break;
        }
        ::close(marker);
        if (!capturing) {
            cap.kill();
            cap.waitForFinished();
            if (output.contains(QLatin1String("ermission")) || output.contains(QLatin1String("privileges")))
                QSKIP(qPrintable("not allowed to capture on loopback here: " + output.left(200)));
            QFAIL(qPrintable("tshark never showed a packet: " + output.left(500)));
        }

        const lab::Scenario *scenario = lab::findScenario("retry-basic");
        QVERIFY(scenario);
        WallClockTrack wall;
        const lab::ScenarioResult result = session.run(*scenario);
        QVERIFY2(result.expectationHeld, result.summary.c_str());
        session.stop(); // closes the connection: its FIN is the last thing to capture
        const int liveClosed = [&] {
            std::lock_guard lk(mu);
            return int(std::count_if(live.begin(), live.end(), [](const WireEvent &e) {
                return e.kind == EventKind::ConnectionClosed;
            }));
        }();
        QVERIFY(liveClosed >= 1);
        // Let tshark print the closing segments, then stop it; it writes out what it holds.
        const std::int64_t until = steadyNowNs() + 3'000 * ms;
        auto sawProxyFin = [&] {
            for (const QString &line : output.split('\n'))
                if (line.contains(QStringLiteral(" %1 ").arg(proxyPort)) &&
                    line.contains(QLatin1String("FIN")))
                    return true;
            return false;
        };
        while (steadyNowNs() < until && !sawProxyFin()) {
            cap.waitForReadyRead(100);
            output += QString::fromUtf8(cap.readAll());
        }
        wall.stop();
        cap.terminate();
        QVERIFY(cap.waitForFinished(10000));
        qInfo("the wall clock moved %.3f ms against the steady clock during the run",
              double(wall.drift()) / ms);

        // Both legs: the client's (to the relay) and the server's (from it).
        PcapImportResult r, rs;
        PcapImportOptions clientLeg, serverLeg;
        clientLeg.serverPort = std::uint16_t(proxyPort);
        serverLeg.serverPort = std::uint16_t(serverPort);
        QVERIFY2(importPcap(file.toStdString(), clientLeg, &r, &error), error.c_str());
        QCOMPARE(int(r.serverPort), proxyPort);
        QVERIFY2(importPcap(file.toStdString(), serverLeg, &rs, &error), error.c_str());
        for (auto *events : {&r.events, &rs.events})
            for (WireEvent &e : *events)
                e.tNs = wall.toSteady(e.tNs);
        TimelineStore imported, upstream, liveStore;
        imported.apply(r.events);
        upstream.apply(rs.events);
        {
            std::lock_guard lk(mu);
            liveStore.apply(live);
        }
        const auto want = shapes(liveStore), got = shapes(imported);
        QCOMPARE(got.size(), want.size());
        QVERIFY(!got.empty());
        // The relay times what it reads by the kernel's receive time: a request when it came in from the
        // client (the client leg's time), a response when it came in from the server (the server leg's). So a
        // gap is the client leg's next start less the server leg's end. Against the client leg alone, a relay
        // late to forward a response (24.5 ms once, with both cores spinning and a build running) shortened
        // tshark's gap by that much. Compared so, starts and gaps agreed within 2 us in 28 runs, 18 of them
        // with a build or two spinning processes keeping both cores busy. The median of all five differences
        // must meet the 0.2 ms goal and every single one must stay within 1 ms: the kernel's one time for
        // writes it merged before a late relay read them can still move a frame.
        std::vector<std::int64_t> startDiffs, gapDiffs;
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].key, want[i].key);
            QCOMPARE(got[i].statuses, want[i].statuses);
            QCOMPARE(got[i].startsNs.size(), want[i].startsNs.size());
            for (size_t a = 0; a < got[i].startsNs.size(); ++a) {
                const std::int64_t diff = std::llabs(got[i].startsNs[a] - want[i].startsNs[a]);
                qInfo("%s attempt %zu: live start - tshark's %.3f ms", got[i].key.c_str(), a + 1,
                      double(want[i].startsNs[a] - got[i].startsNs[a]) / ms);
                QVERIFY2(diff <= ms, qPrintable(QStringLiteral("%1 attempt %2 starts %3 us apart")
                                                    .arg(QString::fromStdString(got[i].key))
                                                    .arg(a + 1)
                                                    .arg(diff / 1000)));
                startDiffs.push_back(diff);
            }
            const auto wantGaps = liveStore.calls()[i].gapsNs();
            QVERIFY(i < upstream.calls().size());
            const Call &clientCall = imported.calls()[i], &serverCall = upstream.calls()[i];
            QCOMPARE(serverCall.key, clientCall.key);
            QCOMPARE(serverCall.attempts.size(), clientCall.attempts.size());
            std::vector<std::optional<std::int64_t>> gotGaps;
            for (size_t a = 1; a < clientCall.attempts.size(); ++a) {
                const auto &end = serverCall.attempts[a - 1].endNs;
                gotGaps.push_back(end ? std::optional(clientCall.attempts[a].startNs - *end) : std::nullopt);
            }
            QCOMPARE(gotGaps.size(), wantGaps.size());
            for (size_t g = 0; g < gotGaps.size(); ++g) {
                QVERIFY(gotGaps[g] && wantGaps[g]);
                qInfo("%s gap %zu: live %.3f ms, tshark %.3f ms", got[i].key.c_str(), g + 1,
                      double(*wantGaps[g]) / ms, double(*gotGaps[g]) / ms);
                const std::int64_t diff = std::llabs(*gotGaps[g] - *wantGaps[g]);
                QVERIFY2(diff <= ms, qPrintable(QStringLiteral("%1 gap %2 differs by %3 us")
                                                    .arg(QString::fromStdString(got[i].key))
                                                    .arg(g + 1)
                                                    .arg(diff / 1000)));
                gapDiffs.push_back(diff);
            }
        }
        auto median = [](std::vector<std::int64_t> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        QVERIFY(!startDiffs.empty() && !gapDiffs.empty());
        qInfo("tshark vs live: median start difference %.3f ms over %zu attempts, median gap difference %.3f "
              "ms",
              double(median(startDiffs)) / ms, startDiffs.size(), double(median(gapDiffs)) / ms);
        std::vector<std::int64_t> all = startDiffs;
        all.insert(all.end(), gapDiffs.begin(), gapDiffs.end());
        QVERIFY2(median(all) <= ms / 5,
                 qPrintable(
                     QStringLiteral("median difference %1 us over starts and gaps").arg(median(all) / 1000)));
    }

private:
    QTemporaryDir m_dir;
    std::vector<Seg> m_segments;
    std::vector<CallShape> m_expected;
};

QTEST_GUILESS_MAIN(TestPcapImport)
#include "tst_pcapimport.moc"
