#pragma once

// The layout of an .rpcscope capture file (resources/proto/capture.proto): the magic and a format version,
// then records, each a varint length, a protobuf Record and the CRC-32 of that Record; a header record
// first, batch records, and an end record (the footer) with the totals. The reader, the writer and the
// stream share these; everything else goes through capturefile.h.

#include "capturedata.h"
#include "redaction.h"

#include <QByteArray>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace rpcscope {

inline constexpr std::uint32_t kCaptureFormatVersion = 1;

// Called now and then with the work done so far and the total (bytes when reading, events when writing);
// returning false cancels.
using CaptureProgress = std::function<bool(std::int64_t done, std::int64_t total)>;

// Does this look like the start of a capture file (the magic)?
bool looksLikeCaptureFile(const QByteArray &head);

namespace records {

inline constexpr char kMagic[8] = {'R', 'P', 'C', 'S', 'C', 'O', 'P', 'E'};
inline constexpr size_t kFileHeaderBytes = sizeof kMagic + 4;
// A record is one batch; the relay flushes every 16 ms, so even a flood stays far below this. A larger
// length can only come from damage, and must not make the reader allocate it.
inline constexpr std::uint64_t kMaxRecordBytes = std::uint64_t(256) << 20;
// Progress is reported about this often (bytes), so a callback costs nothing measurable.
inline constexpr std::int64_t kProgressStep = 1 << 20;

std::uint32_t crc32(const char *data, size_t len);
std::uint32_t le32(const char *p);

// The magic, the version and the header record.
void appendFileHeader(QByteArray &out, const CaptureInfo &info, const Redaction &redaction);
// A Record holding a batch that is already encoded (capturecodec.h).
void appendBatchRecord(QByteArray &out, const std::string &encodedBatch);
// The end record, with the totals the reader checks.
void appendFooter(QByteArray &out, std::uint64_t batches, std::uint64_t events);

} // namespace records

} // namespace rpcscope
