#pragma once

// The input format of fuzz_capturefile, shared by the fuzz target and the seed generator.
//
//   byte 0    mode bits
//               0x01  before reading, set every record's CRC-32 to the right value, so that mutated
//                     record bodies reach the protobuf parser and the model instead of all failing the
//                     checksum (without it the checksum paths are fuzzed)
//               0x02  also merge the capture with itself (capturemerge.h), the second copy shifted by
//                     kMergeOffsets[(byte 0 >> 2) & 7]
//               0x20  also write the JSON, Chrome trace and OTLP exports of what was read
//   then the bytes of an .rpcscope file, as the reader gets them.
//
// The framing is walked here independently of model/capturereader.cpp (magic, version, then varint length,
// body, CRC-32 per record), so a reader that misframes records is not excused by the same mistake.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace rpcscope::fuzz {

constexpr std::uint8_t kModeFixChecksums = 0x01;
constexpr std::uint8_t kModeMergeWithItself = 0x02;
constexpr std::uint8_t kModeExports = 0x20;
constexpr size_t kFileHeaderBytes = 12; // "RPCSCOPE" + uint32 version

inline constexpr std::int64_t kMergeOffsets[8] = {0,
                                                  1'000'000,
                                                  -12'500'000,
                                                  86'400'000'000'000,
                                                  -86'400'000'000'000,
                                                  std::numeric_limits<std::int64_t>::max() / 2,
                                                  std::numeric_limits<std::int64_t>::min() / 2,
                                                  1};

inline std::uint32_t crc32(const std::uint8_t *p, size_t n)
{
    std::uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

struct RecordSpan
{
    size_t lengthAt; // the varint
    size_t bodyAt;
    size_t bodyLength; // the CRC follows the body
};

// The records whose length, body and CRC lie wholly inside `file`, in order, up to the first that does not.
inline std::vector<RecordSpan> records(const std::uint8_t *file, size_t size)
{
    std::vector<RecordSpan> out;
    if (size < kFileHeaderBytes || std::memcmp(file, "RPCSCOPE", 8) != 0) return out;
    size_t pos = kFileHeaderBytes;
    while (pos < size) {
        std::uint64_t len = 0;
        size_t p = pos;
        int shift = 0;
        bool complete = false;
        while (p < size && shift < 64) {
            const std::uint8_t b = file[p++];
            len |= std::uint64_t(b & 0x7F) << shift;
            shift += 7;
            if (!(b & 0x80)) {
                complete = true;
                break;
            }
        }
        if (!complete || len > size - p || size - p - len < 4) break;
        out.push_back({pos, p, size_t(len)});
        pos = p + size_t(len) + 4;
    }
    return out;
}

inline void fixChecksums(std::uint8_t *file, size_t size)
{
    for (const RecordSpan &r : records(file, size)) {
        const std::uint32_t c = crc32(file + r.bodyAt, r.bodyLength);
        for (int i = 0; i < 4; ++i)
            file[r.bodyAt + r.bodyLength + size_t(i)] = std::uint8_t(c >> (8 * i));
    }
}

inline void appendVarint(std::vector<std::uint8_t> &out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(std::uint8_t(v | 0x80));
        v >>= 7;
    }
    out.push_back(std::uint8_t(v));
}

// Appends one record (length, body, CRC) to `out`.
inline void appendRecord(std::vector<std::uint8_t> &out, const std::uint8_t *body, size_t n)
{
    appendVarint(out, n);
    out.insert(out.end(), body, body + n);
    const std::uint32_t c = crc32(body, n);
    for (int i = 0; i < 4; ++i)
        out.push_back(std::uint8_t(c >> (8 * i)));
}

} // namespace rpcscope::fuzz
