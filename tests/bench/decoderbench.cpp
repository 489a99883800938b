#include "decoderbench.h"

#include "clock.h"
#include "connectiondecoder.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <nghttp2/nghttp2.h>
#include <string>

namespace rpcscope::bench {

namespace {
constexpr size_t kPrefaceLen = 24;
constexpr size_t kFlushEvents = 4096; // rpcscope::Relay's batch size

std::uint32_t be24(const std::uint8_t *p)
{
    return (std::uint32_t(p[0]) << 16) | (std::uint32_t(p[1]) << 8) | p[2];
}

const std::uint8_t *bytesOf(const std::string &s)
{
    return reinterpret_cast<const std::uint8_t *>(s.data());
}

// Frame delimiting for one direction as H2Decoder does it: a frame split across reads is carried over in a
// buffer, except a DATA frame, whose payload is passed over as it arrives (skipLeft) instead of copied.
struct Walker
{
    size_t prefaceLeft = 0;
    std::string partial;
    size_t skipLeft = 0;
    std::uint64_t frames = 0;

    void feed(const std::uint8_t *p, size_t n)
    {
        if (prefaceLeft) {
            const size_t k = std::min(n, prefaceLeft);
            prefaceLeft -= k;
            p += k;
            n -= k;
        }
        if (skipLeft) {
            const size_t k = std::min(n, skipLeft);
            skipLeft -= k;
            p += k;
            n -= k;
            if (skipLeft) return;
            ++frames;
        }
        if (!partial.empty()) {
            if (partial.size() < 9) {
                const size_t k = std::min(n, 9 - partial.size());
                partial.append(reinterpret_cast<const char *>(p), k);
                p += k;
                n -= k;
                if (partial.size() < 9) return;
                if (bytesOf(partial)[3] == 0 && n < be24(bytesOf(partial))) { // DATA: pass over its payload
                    skipLeft = be24(bytesOf(partial)) - n;
                    partial.clear();
                    return;
                }
            }
            const size_t total = 9 + be24(bytesOf(partial));
            const size_t k = std::min(n, total - partial.size());
            partial.append(reinterpret_cast<const char *>(p), k);
            p += k;
            n -= k;
            if (partial.size() < total) return;
            ++frames;
            partial.clear();
        }
        while (n >= 9) {
            const size_t total = 9 + be24(p);
            if (n < total) break;
            ++frames;
            p += total;
            n -= total;
        }
        if (n >= 9 && p[3] == 0) {
            skipLeft = 9 + be24(p) - n;
            return;
        }
        if (n) partial.assign(reinterpret_cast<const char *>(p), n);
    }
};

// The header blocks of one direction, HEADERS + CONTINUATION joined, padding and priority stripped.
struct HeaderBlocks
{
    std::vector<std::string> blocks;
    std::uint32_t peerTableSize = 4096; // SETTINGS_HEADER_TABLE_SIZE the receiving side announced
};

void extractBlocks(const std::vector<Chunk> &chunks, HeaderBlocks out[2])
{
    std::string stream[2];
    for (const Chunk &c : chunks)
        stream[int(c.dir)] += c.bytes;
    for (int d = 0; d < 2; ++d) {
        const std::uint8_t *p = bytesOf(stream[d]);
        size_t n = stream[d].size();
        if (d == int(Direction::ClientToServer)) {
            p += std::min(n, kPrefaceLen);
            n -= std::min(n, kPrefaceLen);
        }
        std::string block;
        while (n >= 9) {
            const size_t len = be24(p);
            if (n < 9 + len) break;
            const std::uint8_t type = p[3], flags = p[4];
            const std::uint8_t *pl = p + 9;
            size_t pn = len;
            if (type == FrameSettings && !(flags & FlagAck)) {
                for (size_t off = 0; off + 6 <= len; off += 6)
                    if (((pl[off] << 8) | pl[off + 1]) == NGHTTP2_SETTINGS_HEADER_TABLE_SIZE)
                        out[1 - d].peerTableSize = (std::uint32_t(pl[off + 2]) << 24) | (pl[off + 3] << 16) |
                                                   (pl[off + 4] << 8) | pl[off + 5];
            } else if (type == FrameHeaders || type == FrameContinuation) {
                if (type == FrameHeaders) {
                    if (flags & FlagPadded) {
                        pn -= 1 + pl[0];
                        pl += 1;
                    }
                    if (flags & FlagPriority) {
                        pl += 5;
                        pn -= 5;
                    }
                }
                block.append(reinterpret_cast<const char *>(pl), pn);
                if (flags & FlagEndHeaders) {
                    out[d].blocks.push_back(std::move(block));
                    block.clear();
                }
            }
            p += 9 + len;
            n -= 9 + len;
        }
    }
}
} // namespace

DecodeCounts countEvents(const std::vector<Chunk> &chunks)
{
    DecodeCounts counts;
    ConnectionDecoder decoder(1);
    EventBatch out;
    auto tally = [&] {
        for (const WireEvent &e : out) {
            counts.frames += e.kind == EventKind::Frame;
            counts.headerBlocks += e.kind == EventKind::Headers;
            counts.messages += e.kind == EventKind::Message;
            counts.decodeErrors += e.kind == EventKind::DecodeError;
        }
        out.clear();
    };
    for (const Chunk &c : chunks) {
        counts.bytes += c.bytes.size();
        decoder.feed(c.dir, bytesOf(c.bytes), c.bytes.size(), 0, out);
        tally();
    }
    decoder.finish(0, out);
    tally();
    return counts;
}

EventBatch decodeAll(const std::vector<Chunk> &chunks, std::uint32_t connection)
{
    EventBatch out;
    WireEvent open;
    open.kind = EventKind::ConnectionOpened;
    open.connection = connection;
    open.about = PeerNames{"127.0.0.1:40000", "127.0.0.1:50051"};
    out.push_back(open);
    ConnectionDecoder decoder(connection);
    std::int64_t t = 1;
    for (const Chunk &c : chunks)
        decoder.feed(c.dir, bytesOf(c.bytes), c.bytes.size(), t += 1000, out);
    decoder.finish(t, out);
    WireEvent close;
    close.kind = EventKind::ConnectionClosed;
    close.connection = connection;
    close.tNs = t + 1000;
    out.push_back(close);
    return out;
}

std::vector<double> bestSecondsPerPass(const std::vector<std::function<void()>> &passes, double minSeconds,
                                       int rounds)
{
    std::vector<double> best(passes.size(), 1e300);
    for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < passes.size(); ++i) {
            const std::int64_t start = steadyNowNs();
            std::int64_t now = start;
            int n = 0;
            do {
                passes[i]();
                ++n;
                now = steadyNowNs();
            } while (double(now - start) < minSeconds * 1e9);
            best[i] = std::min(best[i], double(now - start) / 1e9 / n);
        }
    return best;
}

namespace {
void hpackPass(const std::array<HeaderBlocks, 2> &blocks, bool copyStrings)
{
    static volatile std::uint64_t sink = 0;
    std::uint64_t total = 0;
    for (const HeaderBlocks &dir : blocks) {
        nghttp2_hd_inflater *inflater = nullptr;
        nghttp2_hd_inflate_new(&inflater);
        nghttp2_hd_inflate_change_table_size(inflater, dir.peerTableSize);
        for (const std::string &block : dir.blocks) {
            std::vector<Header> headers;
            auto *in = const_cast<std::uint8_t *>(bytesOf(block));
            size_t inlen = block.size();
            for (;;) {
                nghttp2_nv nv;
                int flags = 0;
                const ssize_t rv = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, inlen, 1);
                if (rv < 0) break;
                in += rv;
                inlen -= size_t(rv);
                if (flags & NGHTTP2_HD_INFLATE_EMIT) {
                    total += nv.namelen + nv.valuelen;
                    if (copyStrings)
                        headers.push_back(
                            {std::string(reinterpret_cast<const char *>(nv.name), nv.namelen),
                             std::string(reinterpret_cast<const char *>(nv.value), nv.valuelen)});
                }
                if (flags & NGHTTP2_HD_INFLATE_FINAL) {
                    nghttp2_hd_inflate_end_headers(inflater);
                    break;
                }
                if (rv == 0 && inlen == 0) break;
            }
            total += headers.size();
        }
        nghttp2_hd_inflate_del(inflater);
    }
    sink = sink + total;
}
} // namespace

DecoderPasses decoderPasses(const std::vector<Chunk> &chunks)
{
    auto blocks = std::make_shared<std::array<HeaderBlocks, 2>>();
    extractBlocks(chunks, blocks->data());
    auto out = std::make_shared<EventBatch>();
    out->reserve(kFlushEvents * 2);

    DecoderPasses p;
    p.decode = [&chunks, out] {
        ConnectionDecoder decoder(1);
        std::int64_t t = 0;
        for (const Chunk &c : chunks) {
            decoder.feed(c.dir, bytesOf(c.bytes), c.bytes.size(), ++t, *out);
            if (out->size() >= kFlushEvents) out->clear();
        }
        decoder.finish(t, *out);
        out->clear();
    };
    p.frameWalk = [&chunks] {
        static volatile std::uint64_t sink = 0;
        Walker w[2];
        w[int(Direction::ClientToServer)].prefaceLeft = kPrefaceLen;
        for (const Chunk &c : chunks)
            w[int(c.dir)].feed(bytesOf(c.bytes), c.bytes.size());
        sink = sink + w[0].frames + w[1].frames;
    };
    p.hpack = [blocks] { hpackPass(*blocks, false); };
    p.hpackStrings = [blocks] { hpackPass(*blocks, true); };
    return p;
}

} // namespace rpcscope::bench
