#include "headerblock.h"

#include "grpcfields.h"
#include "heapbytes.h"

#include <nghttp2/nghttp2.h>

namespace rpcscope {

namespace {
// Placeholder entries for an unknown HPACK context (see resetContext). 64 KiB covers the table sizes gRPC
// implementations advertise (C-core and grpc-go: 4096).
constexpr char kPlaceholderName[] = "\x01";
constexpr std::uint32_t kPlaceholderEntrySize = 32 + 1; // RFC 7541 4.1: 32 + name + value
constexpr std::uint32_t kPrimedTableSize = 64 * 1024;
// What the timeline's own headers may add past the list limit, in all and each.
constexpr size_t kMaxTimelineExtraBytes = 8 * 1024;
constexpr size_t kMaxTimelineValueBytes = 2 * 1024;
} // namespace

HeaderBlock::HeaderBlock(const DecoderLimits &limits)
    : m_maxListBytes(limits.maxHeaderListBytes), m_maxBlockBytes(limits.maxHeaderBlockBytes)
{
    nghttp2_hd_inflate_new(&m_inflater);
}

HeaderBlock::~HeaderBlock()
{
    nghttp2_hd_inflate_del(m_inflater);
}

void HeaderBlock::finish(const EventStamp &stamp, bool contextUnknown, EventBatch &out)
{
    m_open = false;
    WireEvent e = stamp.make(EventKind::Headers);
    e.stream = m_stream;
    e.frameType = m_isPush ? FramePushPromise : FrameHeaders;
    e.endStream = m_endStream;
    inflate(e, stamp, contextUnknown, out);
    m_block.clear();
    out.push_back(std::move(e));
}

// The HPACK context is unknown (we attached mid-connection, or a block failed to decode). Start a fresh
// inflater whose dynamic table is filled with placeholder entries: the sender's entries we never saw then
// sit at the same indices as placeholders, so a reference to one decodes as "unknown" instead of failing the
// whole block, while entries inserted from now on are real and at their true indices. Placeholders are
// smaller than any real entry (33 bytes), so they are evicted no sooner than the entries they stand for,
// and our newest real entries are never evicted before the sender's.
void HeaderBlock::resetContext()
{
    nghttp2_hd_inflate_del(m_inflater);
    nghttp2_hd_inflate_new(&m_inflater);
    nghttp2_hd_inflate_change_table_size(m_inflater, kPrimedTableSize);
    m_primed = true;

    std::string block;
    auto varint = [&block](std::uint8_t first, int prefixBits, std::uint32_t v) {
        const std::uint32_t max = (1u << prefixBits) - 1;
        if (v < max) {
            block += char(first | v);
            return;
        }
        block += char(first | max);
        for (v -= max; v >= 128; v >>= 7)
            block += char((v & 127) | 128);
        block += char(v);
    };
    varint(0x20, 5, kPrimedTableSize); // dynamic table size update
    for (std::uint32_t i = 0; i < kPrimedTableSize / kPlaceholderEntrySize; ++i) {
        block += char(0x40); // literal with incremental indexing, new name
        varint(0, 7, std::uint32_t(sizeof(kPlaceholderName) - 1));
        block += kPlaceholderName;
        varint(0, 7, 0);
    }
    auto *in = reinterpret_cast<std::uint8_t *>(block.data());
    size_t inlen = block.size();
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(m_inflater, &nv, &flags, in, inlen, 1);
        if (rv < 0 || (flags & NGHTTP2_HD_INFLATE_FINAL) || (rv == 0 && inlen == 0)) break;
        in += rv;
        inlen -= size_t(rv);
    }
    nghttp2_hd_inflate_end_headers(m_inflater);
}

size_t HeaderBlock::memoryBytes() const
{
    // The table's HPACK size counts each entry's name and value plus 32 bytes, about what nghttp2 allocates
    // for an entry; the inflater itself and its buffers are a few hundred bytes.
    constexpr size_t kInflater = 512;
    return heapbytes::string(m_block) + kInflater +
           (m_inflater ? nghttp2_hd_inflate_get_dynamic_table_size(m_inflater) : 0);
}

void HeaderBlock::setTableSize(std::uint32_t size)
{
    // A primed inflater keeps its large table: shrinking it would demand a size update the sender never
    // sends.
    if (!m_primed) nghttp2_hd_inflate_change_table_size(m_inflater, size);
}

void HeaderBlock::inflate(WireEvent &e, const EventStamp &stamp, bool contextUnknown, EventBatch &out)
{
    auto *in = reinterpret_cast<std::uint8_t *>(m_block.data());
    size_t inlen = m_block.size();
    size_t kept = 0, extra = 0;
    for (;;) {
        nghttp2_nv nv;
        int inflateFlags = 0;
        const ssize_t rv = nghttp2_hd_inflate_hd2(m_inflater, &nv, &inflateFlags, in, inlen, 1);
        if (rv < 0) {
            // The block refers to context we do not have (attached mid-connection) or is corrupt. The entries
            // we hold are the sender's newest ones at their true indices, so a fresh context is right again
            // as soon as the sender's references stay within what we have seen since.
            e.hpackUnknown = true;
            resetContext();
            if (!contextUnknown)
                stamp.notice(std::string("HPACK error on stream ") + std::to_string(e.stream) + ": " +
                                 nghttp2_strerror(int(rv)) + "; header context reset",
                             e.stream, out);
            break;
        }
        in += rv;
        inlen -= size_t(rv);
        if ((inflateFlags & NGHTTP2_HD_INFLATE_EMIT) && nv.namelen == 1 && nv.name[0] == 1) {
            e.hpackUnknown = true; // a reference to an entry from before we had the context
            inflateFlags &= ~NGHTTP2_HD_INFLATE_EMIT;
        }
        if (inflateFlags & NGHTTP2_HD_INFLATE_EMIT) {
            // Inflate everything to keep the HPACK context in step, but keep only up to the limit.
            // Past the limit the headers the timeline reads still count: a status after a long custom header
            // must not be lost. Their values are short in any real call; a hostile one is cut too.
            const std::string_view name(reinterpret_cast<const char *>(nv.name), nv.namelen);
            const bool fits = kept + nv.namelen + nv.valuelen <= m_maxListBytes;
            if (fits || (isTimelineHeader(name) && nv.valuelen <= kMaxTimelineValueBytes &&
                         extra + nv.namelen + nv.valuelen <= kMaxTimelineExtraBytes)) {
                (fits ? kept : extra) += nv.namelen + nv.valuelen;
                e.headers.push_back({std::string(reinterpret_cast<const char *>(nv.name), nv.namelen),
                                     std::string(reinterpret_cast<const char *>(nv.value), nv.valuelen)});
            } else {
                e.truncated = true;
            }
        }
        if (inflateFlags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(m_inflater);
            break;
        }
        if (rv == 0 && inlen == 0) break;
    }
    if (e.truncated)
        stamp.notice("header list on stream " + std::to_string(e.stream) + " exceeds the " +
                         std::to_string(m_maxListBytes) + "-byte limit; the rest is not kept",
                     e.stream, out);
    e.grpc = extractGrpcFields(e.headers);
}

} // namespace rpcscope
