#pragma once

// The fixed parts of the HTTP/2 wire format (RFC 9113 section 4.1) that the decoder's rooms share. Inline:
// they run for every frame.

#include <cstddef>
#include <cstdint>

namespace rpcscope {

constexpr size_t kFrameHeaderLen = 9;
// RFC 9113: SETTINGS_MAX_FRAME_SIZE may not exceed 2^24-1, so no frame needs more buffering than this.
constexpr std::uint32_t kMaxFrameSizeLimit = (1u << 24) - 1;

inline std::uint32_t be24(const std::uint8_t *p)
{
    return (std::uint32_t(p[0]) << 16) | (p[1] << 8) | p[2];
}

inline std::uint32_t be32(const std::uint8_t *p)
{
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

// A frame header's stream identifier, without the reserved bit.
inline std::uint32_t frameStream(const std::uint8_t *hdr)
{
    return be32(hdr + 5) & 0x7fffffffu;
}

} // namespace rpcscope
