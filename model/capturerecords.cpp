#include "capturerecords.h"

#include "capture.pb.h"
#include "clock.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>
#include <zlib.h>

namespace rpcscope {

namespace records {

namespace {

void putLe32(QByteArray &out, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.append(char((v >> (8 * i)) & 0xFF));
}

void putVarint(QByteArray &out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.append(char((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.append(char(v));
}

void appendRecord(QByteArray &out, const capture::Record &record)
{
    const std::string bytes = record.SerializeAsString();
    putVarint(out, bytes.size());
    out.append(bytes.data(), qsizetype(bytes.size()));
    putLe32(out, crc32(bytes.data(), bytes.size()));
}

} // namespace

// zlib's CRC-32 (the same IEEE polynomial as a byte-at-a-time table) several times faster: every batch a
// capture records is summed on its relay's decoder thread, where the table loop was 7% of that thread's time
// under sequential unary calls.
std::uint32_t crc32(const char *data, size_t len)
{
    uLong c = ::crc32(0L, Z_NULL, 0);
    const auto *p = reinterpret_cast<const Bytef *>(data);
    while (len > 0) {
        const uInt n = uInt(std::min<size_t>(len, 1u << 30));
        c = ::crc32(c, p, n);
        p += n;
        len -= n;
    }
    return std::uint32_t(c);
}

std::uint32_t le32(const char *p)
{
    return std::uint32_t(std::uint8_t(p[0])) | std::uint32_t(std::uint8_t(p[1])) << 8 |
           std::uint32_t(std::uint8_t(p[2])) << 16 | std::uint32_t(std::uint8_t(p[3])) << 24;
}

void appendFileHeader(QByteArray &out, const CaptureInfo &info, const Redaction &redaction)
{
    out.append(kMagic, sizeof kMagic);
    putLe32(out, kCaptureFormatVersion);

    capture::Record record;
    capture::FileHeader *h = record.mutable_header();
    h->set_has_origin(info.hasOrigin);
    h->set_origin_ns(info.originNs);
    h->set_origin_wall_ns(info.originWallNs);
    h->set_record_frames(info.recordFrames);
    h->set_writer(info.writer.empty() ? std::string("rpcscope") : info.writer);
    h->set_written_wall_ns(wallNowNs());
    // Masked now, or masked by whoever wrote the capture this one was converted from.
    std::vector<std::string> redacted = info.redactedHeaders;
    for (const std::string &n : redaction.names())
        if (std::find(redacted.begin(), redacted.end(), n) == redacted.end()) redacted.push_back(n);
    for (const std::string &n : redacted)
        h->add_redacted_headers(n);
    appendRecord(out, record);
}

// Field 2 (batch), length-delimited, is the whole record: the batch is not decoded to be framed.
void appendBatchRecord(QByteArray &out, const std::string &encodedBatch)
{
    // Framed in place, in one block: a record built apart and then appended held the batch three times over
    // (the record, and `out` grown by doubling), the capture's largest transient under a flood of big
    // headers.
    QByteArray head;
    head.append(char(0x12));
    putVarint(head, encodedBatch.size());
    const std::uint64_t recordSize = std::uint64_t(head.size()) + encodedBatch.size();
    out.reserve(out.size() + 10 + qsizetype(recordSize) + 4);
    putVarint(out, recordSize);
    const qsizetype start = out.size();
    out.append(head);
    out.append(encodedBatch.data(), qsizetype(encodedBatch.size()));
    putLe32(out, crc32(out.constData() + start, size_t(recordSize)));
}

void appendFooter(QByteArray &out, std::uint64_t batches, std::uint64_t events)
{
    capture::Record footer;
    footer.mutable_footer()->set_batches(batches);
    footer.mutable_footer()->set_events(events);
    appendRecord(out, footer);
}

} // namespace records

bool looksLikeCaptureFile(const QByteArray &head)
{
    return head.size() >= qsizetype(sizeof records::kMagic) &&
           std::memcmp(head.constData(), records::kMagic, sizeof records::kMagic) == 0;
}

} // namespace rpcscope
