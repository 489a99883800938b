#pragma once

// Synthesized captures for the export tests: connections of gRPC calls with split header blocks, messages
// over several DATA frames (reported after the frame that completes them, as the decoder reports them), kept
// and cut payloads, HPACK table size changes, pings, resets and GOAWAYs, interleaved across connections,
// with the server's events out of time order against the client's (as kernel receive times make them).
// The same seed gives the same capture.

#include "capturedata.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace testsynth {

using namespace rpcscope;

struct Synth
{
    int connections = 4;
    int calls = 6;      // per connection
    int concurrent = 4; // connections open at once
    bool frames = true; // false: messages and header lists without their frames (a capture without frames)
    int maxBatch = 50;
};

class Generator
{
public:
    Generator(unsigned seed, Synth s) : m_rng(seed), m_s(s) {}

    CaptureData run()
    {
        CaptureData data;
        data.info.hasOrigin = true;
        data.info.originNs = 1'000'000;
        data.info.originWallNs = 1'700'000'000'000'000'000;
        data.info.recordFrames = m_s.frames;
        std::vector<std::vector<WireEvent>> open;
        std::vector<size_t> at;
        int started = 0;
        EventBatch batch;
        std::int64_t clock = 2'000'000;
        const size_t batchSize = 1 + pick(0, m_s.maxBatch);
        while (started < m_s.connections || !open.empty()) {
            while (started < m_s.connections && int(open.size()) < m_s.concurrent) {
                open.push_back(connection(std::uint32_t(++started)));
                at.push_back(0);
            }
            const size_t k = size_t(pick(0, int(open.size()) - 1));
            WireEvent e = std::move(open[k][at[k]++]);
            clock += pick(1, 2000);
            e.tNs = clock;
            // The server's bytes may reach the stack before the client's that were read first.
            if (e.dir == Direction::ServerToClient && pick(0, 3) == 0) e.tNs -= pick(0, 5000);
            batch.push_back(std::move(e));
            if (batch.size() >= batchSize) data.batches.push_back(std::exchange(batch, {}));
            if (at[k] == open[k].size()) {
                open.erase(open.begin() + std::ptrdiff_t(k));
                at.erase(at.begin() + std::ptrdiff_t(k));
            }
        }
        if (!batch.empty()) data.batches.push_back(std::move(batch));
        return data;
    }

private:
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(m_rng); }

    WireEvent event(std::uint32_t conn, EventKind kind, Direction dir)
    {
        WireEvent e;
        e.connection = conn;
        e.kind = kind;
        e.dir = dir;
        return e;
    }

    void frame(std::vector<WireEvent> &out, std::uint32_t conn, Direction dir, std::uint8_t type,
               std::uint8_t flags, std::uint32_t stream, std::uint32_t length)
    {
        if (!m_s.frames) return;
        WireEvent e = event(conn, EventKind::Frame, dir);
        e.frameType = type;
        e.flags = flags;
        e.stream = stream;
        e.length = length;
        if (type == FramePing) e.pingData = std::uint64_t(pick(0, 1 << 30)) << 20;
        if (type == FrameWindowUpdate) e.windowIncrement = std::uint32_t(pick(1, 1 << 20));
        if (type == FrameRstStream || type == FrameGoaway) e.errorCode = std::uint32_t(pick(0, 13));
        if (type == FrameGoaway) e.reason = std::string(size_t(pick(0, 20)), 'g');
        out.push_back(std::move(e));
    }

    void headers(std::vector<WireEvent> &out, std::uint32_t conn, Direction dir, std::uint32_t stream,
                 bool endStream, std::vector<Header> list)
    {
        const int continuations = pick(0, 4) == 0 ? pick(1, 3) : 0;
        std::uint8_t flags = endStream ? FlagEndStream : 0;
        if (pick(0, 5) == 0) flags |= FlagPriority;
        frame(out, conn, dir, FrameHeaders, continuations ? flags : std::uint8_t(flags | FlagEndHeaders),
              stream, std::uint32_t(pick(10, 200)));
        for (int k = 1; k <= continuations; ++k)
            frame(out, conn, dir, FrameContinuation, k == continuations ? FlagEndHeaders : 0, stream,
                  std::uint32_t(pick(1, 100)));
        WireEvent h = event(conn, EventKind::Headers, dir);
        h.stream = stream;
        h.headers = std::move(list);
        out.push_back(std::move(h));
    }

    void message(std::vector<WireEvent> &out, std::uint32_t conn, Direction dir, std::uint32_t stream,
                 bool endStream)
    {
        const std::uint32_t length = std::uint32_t(pick(0, 3) == 0 ? pick(20'000, 70'000) : pick(0, 900));
        // The prefix and the message over one to three frames; the message is reported after the last.
        std::uint32_t left = 5 + length;
        const int pieces = pick(1, 3);
        for (int k = 1; k <= pieces; ++k) {
            const std::uint32_t n = k == pieces ? left : std::uint32_t(pick(0, int(left)));
            left -= n;
            frame(out, conn, dir, FrameData, k == pieces && endStream ? FlagEndStream : 0, stream, n);
        }
        WireEvent m = event(conn, EventKind::Message, dir);
        m.stream = stream;
        m.length = length;
        m.compressed = pick(0, 9) == 0;
        std::string payload(std::min<size_t>(length, pick(0, 1) ? length : size_t(pick(0, 64))), '\0');
        for (char &c : payload)
            c = char(pick(0, 255));
        m.payload = std::move(payload);
        out.push_back(std::move(m));
    }

    std::vector<WireEvent> connection(std::uint32_t conn)
    {
        std::vector<WireEvent> out;
        const auto c2s = Direction::ClientToServer, s2c = Direction::ServerToClient;
        WireEvent opened = event(conn, EventKind::ConnectionOpened, c2s);
        if (pick(0, 3))
            opened.about = PeerNames{"127.0.0.1:" + std::to_string(30000 + conn), "127.0.0.1:50051"};
        out.push_back(std::move(opened));
        auto settings = [&](Direction dir) {
            if (!m_s.frames) return;
            WireEvent s = event(conn, EventKind::Frame, dir);
            s.frameType = FrameSettings;
            s.settings = {{3, 100}, {4, 65535}};
            if (pick(0, 2) == 0) s.settings.push_back({1, std::uint32_t(pick(0, 2) * 256)});
            s.length = std::uint32_t(6 * s.settings.size());
            out.push_back(std::move(s));
        };
        settings(c2s);
        settings(s2c);
        frame(out, conn, c2s, FrameSettings, FlagAck, 0, 0);
        frame(out, conn, s2c, FrameSettings, FlagAck, 0, 0);
        for (int call = 0; call < m_s.calls; ++call) {
            const std::uint32_t stream = std::uint32_t(1 + 2 * call);
            const std::string value(size_t(pick(1, 40)), char('a' + pick(0, 25)));
            headers(out, conn, c2s, stream, false,
                    {{":method", "POST"},
                     {":path", "/shop.Shop/M" + std::to_string(pick(0, 3))},
                     {"content-type", "application/grpc"},
                     {"x-id", value}});
            message(out, conn, c2s, stream, true);
            if (pick(0, 4) == 0) frame(out, conn, s2c, FrameWindowUpdate, 0, 0, 4);
            if (pick(0, 5) == 0) {
                frame(out, conn, c2s, FramePing, 0, 0, 8);
                frame(out, conn, s2c, FramePing, FlagAck, 0, 8);
            }
            if (pick(0, 7) == 0) { // reset instead of an answer
                frame(out, conn, s2c, FrameRstStream, 0, stream, 4);
                continue;
            }
            headers(out, conn, s2c, stream, false,
                    {{":status", "200"}, {"content-type", "application/grpc"}});
            const int messages = pick(0, 2);
            for (int k = 0; k < messages; ++k)
                message(out, conn, s2c, stream, false);
            headers(out, conn, s2c, stream, true,
                    {{"grpc-status", std::to_string(pick(0, 2) * 14)}, {"x-v", value}});
        }
        if (pick(0, 2) == 0) frame(out, conn, s2c, FrameGoaway, 0, 0, 8);
        WireEvent closed = event(conn, EventKind::ConnectionClosed, c2s);
        out.push_back(std::move(closed));
        return out;
    }

    std::mt19937 m_rng;
    Synth m_s;
};

} // namespace testsynth
