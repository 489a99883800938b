#pragma once

#include "h2decoder.h"

namespace rpcscope {

// Both directions of one connection; SETTINGS, WINDOW_UPDATE, PING ACK and RST_STREAM seen in one
// direction inform the other's decoder.
class ConnectionDecoder
{
public:
    explicit ConnectionDecoder(std::uint32_t connection, const DecoderLimits &limits = {})
        : m_connection(connection), m_c2s(Direction::ClientToServer, limits),
          m_s2c(Direction::ServerToClient, limits)
    {
        m_c2s.setPeer(&m_s2c);
        m_s2c.setPeer(&m_c2s);
    }

    // The capture starts inside an established connection (no preface will be seen).
    void attachMidStream()
    {
        m_c2s.attachMidStream();
        m_s2c.attachMidStream();
    }

    void feed(Direction dir, const std::uint8_t *data, size_t len, std::int64_t tNs, EventBatch &out)
    {
        (dir == Direction::ClientToServer ? m_c2s : m_s2c).feed(data, len, tNs, m_connection, out);
    }
    size_t skippable(Direction dir) const { return decoder(dir).skippable(); }
    void skip(Direction dir, size_t n, std::int64_t tNs, EventBatch &out)
    {
        (dir == Direction::ClientToServer ? m_c2s : m_s2c).skip(n, tNs, m_connection, out);
    }
    void finish(std::int64_t tNs, EventBatch &out)
    {
        m_c2s.finish(tNs, out);
        m_s2c.finish(tNs, out);
    }
    size_t memoryBytes() const { return sizeof(*this) + m_c2s.memoryBytes() + m_s2c.memoryBytes(); }
    const H2Decoder &decoder(Direction dir) const { return dir == Direction::ClientToServer ? m_c2s : m_s2c; }

private:
    std::uint32_t m_connection;
    H2Decoder m_c2s;
    H2Decoder m_s2c;
};

} // namespace rpcscope
