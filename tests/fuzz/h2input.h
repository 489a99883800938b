#pragma once

// The input format of fuzz_h2decoder, shared by the fuzz target and the seed generator.
//
// An input is one TCP connection as the capture saw it: a sequence of reads, each from one direction, fed to
// one ConnectionDecoder in order. So libFuzzer explores both the bytes and how they are split and
// interleaved between the two directions.
//
//   byte 0    mode bits
//               0x01  feed the client connection preface (c2s) before the first record
//               0x02  feed an empty server SETTINGS frame (s2c) before the first record
//               0x04  attach mid-stream (ConnectionDecoder::attachMidStream, where the decoder has it)
//   then records until the input ends; h is the record's first byte, dir = (h & 0x80) ? s2c : c2s
//     h & 0x40 == 0      literal: n = h & 0x3f, then n bytes
//     h & 0x60 == 0x40   literal: n = (h & 0x1f) << 16 | next 2 bytes (big-endian), then n bytes
//     h & 0x60 == 0x60   fill:    n = (h & 0x1f) << 16 | next 2 bytes, then one byte b: n copies of b
//   A record cut short by the end of the input keeps what is there.
//
// Fill records let a small input carry large frames (300 KiB of gRPC payload is mostly one repeated byte),
// so the seeds from real captures stay small and the fuzzer reaches the big-frame paths cheaply.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rpcscope::fuzz {

constexpr std::uint8_t kModeClientPreface = 0x01;
constexpr std::uint8_t kModeServerSettings = 0x02;
constexpr std::uint8_t kModeMidStream = 0x04;

constexpr std::uint8_t kDirS2C = 0x80;
constexpr size_t kMaxShortLiteral = 0x3f;
constexpr size_t kMaxRecordLength = (size_t(0x1f) << 16) | 0xffff;

// Appends one read of `len` bytes in direction s2c (or c2s) to `out`, using fill records for runs of at least
// `minRun` equal bytes. The read may become several records; the decoder must not care how reads are split.
inline void appendRead(std::string &out, bool s2c, const std::uint8_t *data, size_t len, size_t minRun = 64)
{
    const std::uint8_t dir = s2c ? kDirS2C : 0;
    auto literal = [&](const std::uint8_t *p, size_t n) {
        while (n > 0) {
            const size_t k = std::min(n, kMaxRecordLength);
            if (k <= kMaxShortLiteral) {
                out.push_back(char(dir | k));
            } else {
                out.push_back(char(dir | 0x40 | (k >> 16)));
                out.push_back(char((k >> 8) & 0xff));
                out.push_back(char(k & 0xff));
            }
            out.append(reinterpret_cast<const char *>(p), k);
            p += k;
            n -= k;
        }
    };
    size_t litStart = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i + 1;
        while (j < len && data[j] == data[i])
            ++j;
        if (j - i >= minRun) {
            literal(data + litStart, i - litStart);
            size_t n = j - i;
            while (n > 0) {
                const size_t k = std::min(n, kMaxRecordLength);
                out.push_back(char(dir | 0x60 | (k >> 16)));
                out.push_back(char((k >> 8) & 0xff));
                out.push_back(char(k & 0xff));
                out.push_back(char(data[i]));
                n -= k;
            }
            litStart = j;
        }
        i = j;
    }
    literal(data + litStart, len - litStart);
}

} // namespace rpcscope::fuzz
