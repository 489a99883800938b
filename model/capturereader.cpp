#include "capturereader.h"

#include "capture.pb.h"
#include "capturecodec.h"

#include <QFile>
#include <QFileInfo>
#include <QStringDecoder>
#include <algorithm>
#include <cstring>
#include <optional>

namespace rpcscope {

using records::crc32;
using records::kFileHeaderBytes;
using records::kMagic;
using records::kMaxRecordBytes;
using records::kProgressStep;
using records::le32;

namespace {

bool validUtf8(const std::string &s)
{
    QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    [[maybe_unused]] const QString decoded = utf8(QByteArrayView(s.data(), qsizetype(s.size())));
    return !utf8.hasError();
}

// What the first bytes of a file that is not ours are, to say more than "not a capture file".
QString whatItIs(const QByteArray &head)
{
    auto starts = [&](std::initializer_list<std::uint8_t> bytes) {
        if (head.size() < qsizetype(bytes.size())) return false;
        size_t i = 0;
        for (std::uint8_t b : bytes)
            if (std::uint8_t(head[qsizetype(i++)]) != b) return false;
        return true;
    };
    if (starts({0x0A, 0x0D, 0x0D, 0x0A})) return QStringLiteral(" (it is a pcapng file)");
    if (starts({0xD4, 0xC3, 0xB2, 0xA1}) || starts({0xA1, 0xB2, 0xC3, 0xD4}) ||
        starts({0x4D, 0x3C, 0xB2, 0xA1}) || starts({0xA1, 0xB2, 0x3C, 0x4D}))
        return QStringLiteral(" (it is a pcap file)");
    if (starts({0x1F, 0x8B})) return QStringLiteral(" (it is gzip-compressed)");
    const QByteArray t = head.trimmed();
    if (t.startsWith('{') || t.startsWith('[')) return QStringLiteral(" (it looks like JSON)");
    return {};
}

} // namespace

CaptureReadResult readCaptureFile(const QString &path, CaptureData *out, const CaptureProgress &progress)
{
    return readCaptureFileTo(path, out, {}, progress);
}

CaptureReadResult readCaptureFile(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                  const CaptureProgress &progress)
{
    CaptureData data;
    bool told = false;
    // The header is read before any batch: `info` is complete when the sink gets the first one.
    auto withInfo = [&](EventBatch &&batch) {
        if (!told) *info = data.info;
        told = true;
        sink(std::move(batch));
    };
    CaptureReadResult r = readCaptureFileTo(path, &data, sink ? CaptureBatchSink(withInfo) : sink, progress);
    *info = std::move(data.info);
    return r;
}

CaptureReadResult readCaptureFileTo(const QString &path, CaptureData *out, const CaptureBatchSink &sink,
                                    const CaptureProgress &progress)
{
    // Before opening: opening a FIFO waits for a writer, and a device has no size to read up to (/dev/zero
    // never ends).
    const QFileInfo info(path);
    if (info.exists() && !info.isDir() && !info.isFile())
        return {CaptureReadResult::Failed, "cannot read " + path.toStdString() +
                                               ": it is not a regular file (a device, pipe or socket)"};
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {CaptureReadResult::Failed,
                "cannot open " + path.toStdString() + ": " + f.errorString().toStdString()};
    if (info.isDir())
        return {CaptureReadResult::Failed, "cannot open " + path.toStdString() + ": it is a directory"};
    const qint64 size = f.size();
    if (size == 0)
        return {CaptureReadResult::Failed,
                path.toStdString() + " is empty (0 bytes): not an rpcscope capture"};
    // Mapped rather than read so a large capture is not held twice while it is decoded.
    if (uchar *p = f.map(0, size)) {
        const QByteArray view = QByteArray::fromRawData(reinterpret_cast<const char *>(p), qsizetype(size));
        CaptureReadResult r = readCaptureBytesTo(view, path, out, sink, progress);
        f.unmap(p);
        return r;
    }
    return readCaptureBytesTo(f.readAll(), path, out, sink, progress);
}

CaptureReadResult readCaptureBytes(const QByteArray &bytes, const QString &nameQ, CaptureData *out,
                                   const CaptureProgress &progress)
{
    return readCaptureBytesTo(bytes, nameQ, out, {}, progress);
}

CaptureReadResult readCaptureBytesTo(const QByteArray &bytes, const QString &nameQ, CaptureData *out,
                                     const CaptureBatchSink &sink, const CaptureProgress &progress)
{
    const std::string name = nameQ.toStdString();
    *out = CaptureData{};
    const char *data = bytes.constData();
    const std::int64_t size = bytes.size();
    if (size == 0) return {CaptureReadResult::Failed, name + " is empty (0 bytes): not an rpcscope capture"};
    const qsizetype prefix = std::min<qsizetype>(bytes.size(), sizeof kMagic);
    if (std::memcmp(data, kMagic, size_t(prefix)) != 0)
        return {CaptureReadResult::Failed,
                name + " is not an rpcscope capture file" + whatItIs(bytes.left(16)).toStdString()};
    if (size < std::int64_t(kFileHeaderBytes))
        return {CaptureReadResult::Failed, name + " is truncated: it ends inside the file header (" +
                                               std::to_string(size) + " bytes), nothing to load"};
    const std::uint32_t version = le32(data + sizeof kMagic);
    if (version > kCaptureFormatVersion)
        return {CaptureReadResult::Failed,
                name + " was written by a newer rpcscope (capture format version " + std::to_string(version) +
                    "; this build reads version " + std::to_string(kCaptureFormatVersion) + " and older)"};
    if (version == 0)
        return {CaptureReadResult::Failed, name + " is corrupt: capture format version 0 does not exist"};

    std::int64_t pos = kFileHeaderBytes;
    std::int64_t nextProgress = kProgressStep;
    size_t recordIndex = 0;
    size_t events = 0;
    size_t batchRecords = 0;
    size_t batchesLoaded = 0;
    std::optional<std::int64_t> timeBase; // what event times count from
    bool haveHeader = false;
    auto loaded = [&] {
        return std::to_string(batchesLoaded) + (batchesLoaded == 1 ? " batch" : " batches") + " (" +
               std::to_string(events) + " events)";
    };
    auto truncated = [&](const std::string &where) -> CaptureReadResult {
        if (!haveHeader)
            return {CaptureReadResult::Failed,
                    name + " is truncated " + where + ", before its header record"};
        return {CaptureReadResult::Truncated, name + " is truncated " + where + " (at byte " +
                                                  std::to_string(pos) + " of " + std::to_string(size) +
                                                  "); loaded the intact " + loaded()};
    };
    auto corrupt = [&](const std::string &what) -> CaptureReadResult {
        return {haveHeader ? CaptureReadResult::Corrupt : CaptureReadResult::Failed,
                name + " is corrupt: record " + std::to_string(recordIndex) + " at byte " +
                    std::to_string(pos) + " " + what +
                    (haveHeader ? "; the " + loaded() + " before it are intact" : std::string())};
    };

    capture::Record record;
    while (true) {
        if (pos == size)
            return truncated(recordIndex == 0 ? std::string("right after the file header")
                                              : "after record " + std::to_string(recordIndex - 1) +
                                                    ": its end record is missing");
        // varint length
        std::uint64_t len = 0;
        int shift = 0;
        std::int64_t p = pos;
        bool complete = false;
        while (p < size && shift < 64) {
            const std::uint8_t b = std::uint8_t(data[p++]);
            len |= std::uint64_t(b & 0x7F) << shift;
            shift += 7;
            if (!(b & 0x80)) {
                complete = true;
                break;
            }
        }
        if (!complete && shift >= 64) return corrupt("has an invalid length");
        if (!complete) return truncated("inside the length of record " + std::to_string(recordIndex));
        if (len > kMaxRecordBytes)
            return corrupt("claims " + std::to_string(len) + " bytes, more than any record can hold");
        if (std::uint64_t(size - p) < len + 4)
            return truncated("inside record " + std::to_string(recordIndex));
        const char *body = data + p;
        if (crc32(body, size_t(len)) != le32(body + len)) return corrupt("fails its checksum");
        if (!record.ParseFromArray(body, int(len))) return corrupt("is not a valid record");

        if (!haveHeader) {
            if (!record.has_header()) return corrupt("should be the file header");
            const capture::FileHeader &h = record.header();
            if (!validUtf8(h.writer()))
                return corrupt("(the file header) names its writer in bytes that are not UTF-8");
            for (const std::string &name : h.redacted_headers())
                if (!validUtf8(name))
                    return corrupt("(the file header) lists a redacted header name that is not UTF-8");
            // Beyond these the model's arithmetic would overflow (events.h); no clock gives them.
            if (h.origin_ns() < -kMaxOriginNs || h.origin_ns() > kMaxOriginNs ||
                h.origin_wall_ns() < -kMaxOriginNs || h.origin_wall_ns() > kMaxOriginNs)
                return corrupt("has an origin out of range");
            out->info.hasOrigin = h.has_origin();
            out->info.originNs = h.origin_ns();
            out->info.originWallNs = h.origin_wall_ns();
            out->info.recordFrames = h.record_frames();
            out->info.writer = h.writer();
            out->info.writtenWallNs = h.written_wall_ns();
            out->info.redactedHeaders.assign(h.redacted_headers().begin(), h.redacted_headers().end());
            haveHeader = true;
        } else if (record.has_batch()) {
            EventBatch batch;
            batch.reserve(size_t(record.batch().events_size()));
            for (const capture::Event &pe : record.batch().events()) {
                WireEvent e;
                if (!decodeEvent(pe, &e)) return corrupt("holds an event this version does not know");
                // Without an origin in the header the timeline counts from the first event, as the store
                // does.
                if (!timeBase) timeBase = out->info.hasOrigin ? out->info.originNs : e.tNs;
                if (__int128(e.tNs) - *timeBase < -kMaxSpanNs || __int128(e.tNs) - *timeBase > kMaxSpanNs ||
                    *timeBase < -kMaxOriginNs || *timeBase > kMaxOriginNs)
                    return corrupt("holds an event time (" + std::to_string(e.tNs) +
                                   " ns) more than 9.5 years from the capture's origin");
                batch.push_back(std::move(e));
            }
            events += batch.size();
            ++batchRecords;
            // An empty batch changes nothing, and is never written (the footer counts it all the same).
            if (!batch.empty()) {
                ++batchesLoaded;
                if (sink)
                    sink(std::move(batch));
                else
                    out->batches.push_back(std::move(batch));
            }
        } else if (record.has_footer()) {
            const capture::FileFooter &footer = record.footer();
            if (footer.batches() != batchRecords || footer.events() != events)
                return corrupt("(the end record) counts " + std::to_string(footer.batches()) +
                               " batches and " + std::to_string(footer.events()) +
                               " events, but the file holds " + loaded());
            pos = p + std::int64_t(len) + 4;
            if (pos != size)
                return {CaptureReadResult::Corrupt, name + " is corrupt: " + std::to_string(size - pos) +
                                                        " unexpected bytes after its end record; the " +
                                                        loaded() + " before them are intact"};
            if (progress) progress(size, size);
            return {};
        } else {
            return corrupt("is of a kind this version does not know");
        }
        pos = p + std::int64_t(len) + 4;
        ++recordIndex;
        if (progress && pos >= nextProgress) {
            nextProgress = pos + kProgressStep;
            if (!progress(pos, size))
                return {CaptureReadResult::Cancelled, "loading " + name + " was cancelled"};
        }
    }
}

} // namespace rpcscope
