#pragma once

#include "decoderlimits.h"
#include "eventstamp.h"

#include <cstdint>
#include <string>

struct nghttp2_hd_inflater;

namespace rpcscope {

// The header blocks one direction sends: a HEADERS or PUSH_PROMISE and its CONTINUATIONs collected into one
// block, then inflated with nghttp2's HPACK inflater into a Headers event. The inflater's context (its
// dynamic table) spans the whole connection, so every block of the direction passes through here in order.
class HeaderBlock
{
public:
    explicit HeaderBlock(const DecoderLimits &limits);
    ~HeaderBlock();
    HeaderBlock(const HeaderBlock &) = delete;
    HeaderBlock &operator=(const HeaderBlock &) = delete;

    // A block has begun and its END_HEADERS has not come yet: only its CONTINUATIONs may follow.
    bool open() const { return m_open; }
    std::uint32_t stream() const { return m_stream; }
    bool endStream() const { return m_endStream; }

    // Inline, as the two run for every HEADERS frame.
    void begin(std::uint32_t stream, bool endStream, bool isPush)
    {
        m_open = true;
        m_stream = stream;
        m_endStream = endStream;
        m_isPush = isPush;
        m_block.clear();
    }
    // A fragment of the open block; false (nothing kept) when the block would exceed maxHeaderBlockBytes.
    bool append(const std::uint8_t *p, size_t len)
    {
        if (m_block.size() + len > m_maxBlockBytes) return false;
        m_block.append(reinterpret_cast<const char *>(p), len);
        return true;
    }
    // END_HEADERS: inflates the block and appends its Headers event, after any notice it gives. An HPACK
    // error is noticed unless `contextUnknown` (attached mid-connection, where one is expected).
    void finish(const EventStamp &stamp, bool contextUnknown, EventBatch &out);

    // The HPACK context is unknown from here on (see the definition).
    void resetContext();
    // The receiver's SETTINGS_HEADER_TABLE_SIZE.
    void setTableSize(std::uint32_t size);
    // The block being collected and the inflater's dynamic table, as the allocator counts them.
    size_t memoryBytes() const;

private:
    void inflate(WireEvent &e, const EventStamp &stamp, bool contextUnknown, EventBatch &out);

    size_t m_maxListBytes;
    size_t m_maxBlockBytes;
    nghttp2_hd_inflater *m_inflater = nullptr;
    bool m_primed = false; // the inflater holds placeholders for an unknown context (see resetContext)

    bool m_open = false;
    std::uint32_t m_stream = 0;
    bool m_endStream = false;
    bool m_isPush = false;
    std::string m_block;
};

} // namespace rpcscope
