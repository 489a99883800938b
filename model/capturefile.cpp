#include "capturefile.h"

#include "capture.pb.h"
#include "capturecodec.h"
#include "clock.h"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

namespace rpcscope {

namespace {

constexpr char kMagic[8] = {'R', 'P', 'C', 'S', 'C', 'O', 'P', 'E'};
constexpr size_t kFileHeaderBytes = sizeof kMagic + 4;
// A record is one batch; the relay flushes every 16 ms, so even a flood stays far below this. A larger
// length can only come from damage, and must not make the reader allocate it.
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t(256) << 20;
// Progress is reported about this often (bytes), so a callback costs nothing measurable.
constexpr std::int64_t kProgressStep = 1 << 20;

const std::array<std::uint32_t, 256> &crcTable()
{
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    return table;
}

std::uint32_t crc32(const char *data, size_t len)
{
    const auto &t = crcTable();
    std::uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; ++i)
        c = t[(c ^ std::uint8_t(data[i])) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

void putLe32(QByteArray &out, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.append(char((v >> (8 * i)) & 0xFF));
}

std::uint32_t le32(const char *p)
{
    return std::uint32_t(std::uint8_t(p[0])) | std::uint32_t(std::uint8_t(p[1])) << 8 |
           std::uint32_t(std::uint8_t(p[2])) << 16 | std::uint32_t(std::uint8_t(p[3])) << 24;
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

// A Record holding a batch that is already encoded: field 2 (batch), length-delimited, is the whole record.
void appendBatchRecord(QByteArray &out, const std::string &encodedBatch)
{
    QByteArray record;
    record.append(char(0x12));
    putVarint(record, encodedBatch.size());
    record.append(encodedBatch.data(), qsizetype(encodedBatch.size()));
    putVarint(out, std::uint64_t(record.size()));
    out.append(record);
    putLe32(out, crc32(record.constData(), size_t(record.size())));
}

void toProto(const WireEvent &e, const Redaction *redaction, capture::Event *p)
{
    p->set_kind(std::uint32_t(e.kind));
    p->set_connection(e.connection);
    p->set_dir(std::uint32_t(e.dir));
    p->set_t_ns(e.tNs);
    p->set_stream(e.stream);
    p->set_frame_type(e.frameType);
    p->set_flags(e.flags);
    p->set_length(e.length);
    p->set_error_code(e.errorCode);
    p->set_end_stream(e.endStream);
    p->set_compressed(e.compressed);
    for (const Header &h : e.headers) {
        capture::Header *ph = p->add_headers();
        ph->set_name(h.name);
        ph->set_value(redaction && redaction->masks(h.name) ? std::string(kRedactedValue) : h.value);
    }
    if (e.kind == EventKind::Headers || e.kind == EventKind::LabEvent || e.grpc != GrpcFields{}) {
        capture::GrpcFields *g = p->mutable_grpc();
        const GrpcFields &f = e.grpc;
        g->set_path(f.path);
        if (f.timeoutNs)
            g->set_timeout_ns(*f.timeoutNs);
        if (f.previousAttempts)
            g->set_previous_attempts(*f.previousAttempts);
        if (f.httpStatus)
            g->set_http_status(*f.httpStatus);
        if (f.status)
            g->set_status(*f.status);
        if (f.message)
            g->set_message(*f.message);
        if (f.pushbackMs)
            g->set_pushback_ms(*f.pushbackMs);
        g->set_call_id(f.callId);
        g->set_encoding(f.encoding);
        g->set_retry_initial_ms(f.retryInitialMs);
        g->set_retry_multiplier(f.retryMultiplier);
        g->set_retry_max_ms(f.retryMaxMs);
        g->set_trace_id(f.traceId);
        g->set_parent_span_id(f.parentSpanId);
    }
    p->set_hpack_unknown(e.hpackUnknown);
    p->set_truncated(e.truncated);
    p->set_payload(e.payload);
    p->set_last_stream_id(e.lastStreamId);
    p->set_window_increment(e.windowIncrement);
    p->set_ping_data(e.pingData);
    p->set_rtt_ns(e.rttNs);
    for (const auto &[id, value] : e.settings) {
        capture::Setting *s = p->add_settings();
        s->set_id(id);
        s->set_value(value);
    }
    p->set_text(e.text);
    p->set_text2(e.text2);
    p->set_label(e.label);
}

// False when a value cannot come from this build's writer (an enum or a width out of range).
bool fromProto(const capture::Event &p, WireEvent *e)
{
    if (p.kind() > std::uint32_t(EventKind::LabEvent) || p.dir() > 1 || p.frame_type() > 0xFF ||
        p.flags() > 0xFF)
        return false;
    e->kind = EventKind(p.kind());
    e->connection = p.connection();
    e->dir = Direction(p.dir());
    e->tNs = p.t_ns();
    e->stream = p.stream();
    e->frameType = std::uint8_t(p.frame_type());
    e->flags = std::uint8_t(p.flags());
    e->length = p.length();
    e->errorCode = p.error_code();
    e->endStream = p.end_stream();
    e->compressed = p.compressed();
    e->headers.reserve(p.headers_size());
    for (const capture::Header &h : p.headers())
        e->headers.push_back({h.name(), h.value()});
    if (p.has_grpc()) {
        const capture::GrpcFields &g = p.grpc();
        GrpcFields &f = e->grpc;
        f.path = g.path();
        if (g.has_timeout_ns()) {
            if (g.timeout_ns() < 0 || g.timeout_ns() > kMaxTimeoutNs) // the decoder caps it (events.h)
                return false;
            f.timeoutNs = g.timeout_ns();
        }
        if (g.has_previous_attempts())
            f.previousAttempts = g.previous_attempts();
        if (g.has_http_status())
            f.httpStatus = g.http_status();
        if (g.has_status())
            f.status = g.status();
        if (g.has_message())
            f.message = g.message();
        if (g.has_pushback_ms())
            f.pushbackMs = g.pushback_ms();
        f.callId = g.call_id();
        f.encoding = g.encoding();
        // The decoder gives a policy of finite positive numbers, or none (zeros).
        for (double v : {g.retry_initial_ms(), g.retry_multiplier(), g.retry_max_ms()})
            if (!std::isfinite(v) || v < 0)
                return false;
        f.retryInitialMs = g.retry_initial_ms();
        f.retryMultiplier = g.retry_multiplier();
        f.retryMaxMs = g.retry_max_ms();
        f.traceId = g.trace_id();
        f.parentSpanId = g.parent_span_id();
    }
    e->hpackUnknown = p.hpack_unknown();
    e->truncated = p.truncated();
    e->payload = p.payload();
    e->lastStreamId = p.last_stream_id();
    e->windowIncrement = p.window_increment();
    e->pingData = p.ping_data();
    e->rttNs = p.rtt_ns();
    for (const capture::Setting &s : p.settings()) {
        if (s.id() > 0xFFFF)
            return false;
        e->settings.emplace_back(std::uint16_t(s.id()), s.value());
    }
    e->text = p.text();
    e->text2 = p.text2();
    e->label = p.label();
    return true;
}

// What the first bytes of a file that is not ours are, to say more than "not a capture file".
QString whatItIs(const QByteArray &head)
{
    auto starts = [&](std::initializer_list<std::uint8_t> bytes) {
        if (head.size() < qsizetype(bytes.size()))
            return false;
        size_t i = 0;
        for (std::uint8_t b : bytes)
            if (std::uint8_t(head[qsizetype(i++)]) != b)
                return false;
        return true;
    };
    if (starts({0x0A, 0x0D, 0x0D, 0x0A}))
        return QStringLiteral(" (it is a pcapng file)");
    if (starts({0xD4, 0xC3, 0xB2, 0xA1}) || starts({0xA1, 0xB2, 0xC3, 0xD4}) ||
        starts({0x4D, 0x3C, 0xB2, 0xA1}) || starts({0xA1, 0xB2, 0x3C, 0x4D}))
        return QStringLiteral(" (it is a pcap file)");
    if (starts({0x1F, 0x8B}))
        return QStringLiteral(" (it is gzip-compressed)");
    const QByteArray t = head.trimmed();
    if (t.startsWith('{') || t.startsWith('['))
        return QStringLiteral(" (it looks like JSON)");
    return {};
}

} // namespace

bool looksLikeCaptureFile(const QByteArray &head)
{
    return head.size() >= qsizetype(sizeof kMagic) &&
           std::memcmp(head.constData(), kMagic, sizeof kMagic) == 0;
}

std::string encodeBatch(const EventBatch &batch, const Redaction *redaction)
{
    capture::EventBatch b;
    b.mutable_events()->Reserve(int(batch.size()));
    for (const WireEvent &e : batch)
        toProto(e, redaction && redaction->enabled ? redaction : nullptr, b.add_events());
    return b.SerializeAsString();
}

bool decodeBatch(const char *data, size_t len, EventBatch *out)
{
    capture::EventBatch b;
    if (len > size_t(std::numeric_limits<int>::max()) || !b.ParseFromArray(data, int(len)))
        return false;
    out->reserve(out->size() + size_t(b.events_size()));
    for (const capture::Event &pe : b.events()) {
        WireEvent e;
        if (!fromProto(pe, &e))
            return false;
        out->push_back(std::move(e));
    }
    return true;
}

namespace {
// Serializes record by record and hands `sink` chunks of about kProgressStep bytes, so a large session is
// never held twice in memory. `batchAt` gives batch i encoded (and redacted) with its event count. Progress
// counts events. False when the sink fails or progress cancels.
// The magic, the version and the header record.
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
        if (std::find(redacted.begin(), redacted.end(), n) == redacted.end())
            redacted.push_back(n);
    for (const std::string &n : redacted)
        h->add_redacted_headers(n);
    appendRecord(out, record);
}

void appendFooter(QByteArray &out, std::uint64_t batches, std::uint64_t events)
{
    capture::Record footer;
    footer.mutable_footer()->set_batches(batches);
    footer.mutable_footer()->set_events(events);
    appendRecord(out, footer);
}

bool serialize(const CaptureInfo &info, size_t batchCount, std::int64_t totalEvents,
               const std::function<void(size_t, std::string *, size_t *)> &batchAt,
               const Redaction &redaction, const std::function<bool(const QByteArray &)> &sink,
               const CaptureProgress &progress, bool *cancelled)
{
    *cancelled = false;
    QByteArray out;
    appendFileHeader(out, info, redaction);

    std::int64_t events = 0;
    size_t batches = 0;
    std::string encoded;
    for (size_t i = 0; i < batchCount; ++i) {
        size_t n = 0;
        batchAt(i, &encoded, &n);
        if (n == 0)
            continue;
        appendBatchRecord(out, encoded);
        events += std::int64_t(n);
        ++batches;
        if (out.size() >= kProgressStep) {
            if (!sink(out))
                return false;
            out.clear();
            if (progress && !progress(events, totalEvents)) {
                *cancelled = true;
                return false;
            }
        }
    }
    appendFooter(out, batches, std::uint64_t(events));
    if (!sink(out))
        return false;
    if (progress)
        progress(totalEvents, totalEvents);
    return true;
}

// Why writing f failed: the system's errno, taken right after the call, when it has one. Qt reports a short
// write (a full disk, a file-size limit) only as "Unknown error".
std::string writeFailure(const QFileDevice &f, int err)
{
    return err != 0 ? std::string(std::strerror(err)) : f.errorString().toStdString();
}

bool saveAtomically(const QString &path, std::string *error,
                    const std::function<bool(const std::function<bool(const QByteArray &)> &, bool *)> &write)
{
    QSaveFile f(path); // a temporary file next to `path`, renamed over it by commit()
    if (!f.open(QIODevice::WriteOnly)) {
        *error = "cannot write " + path.toStdString() + ": " + f.errorString().toStdString();
        return false;
    }
    bool cancelled = false;
    int err = 0;
    auto sink = [&f, &err](const QByteArray &chunk) {
        errno = 0;
        const bool ok = f.write(chunk) == chunk.size();
        err = errno;
        return ok;
    };
    if (!write(sink, &cancelled)) {
        *error = cancelled ? std::string("cancelled") : "cannot write " + path.toStdString() + ": " + writeFailure(f, err);
        f.cancelWriting();
        return false;
    }
    errno = 0;
    if (!f.commit()) {
        *error = "cannot write " + path.toStdString() + ": " + writeFailure(f, errno);
        return false;
    }
    return true;
}

auto dataBatches(const CaptureData &data, const Redaction &redaction)
{
    return [&data, &redaction](size_t i, std::string *encoded, size_t *events) {
        *events = data.batches[i].size();
        if (*events)
            *encoded = encodeBatch(data.batches[i], &redaction);
    };
}

auto logBatches(const EventLog &log, const Redaction &redaction)
{
    // The log holds the batches as captured: re-encoded only when something may need masking.
    const bool masking = !redaction.names().empty();
    return [&log, &redaction, masking](size_t i, std::string *encoded, size_t *events) {
        *events = log.batchEventCount(i);
        if (!masking) {
            *encoded = log.encodedBatch(i);
            return;
        }
        *encoded = encodeBatch(log.batch(i), &redaction);
    };
}
} // namespace

QByteArray captureToBytes(const CaptureData &data, const Redaction &redaction)
{
    QByteArray all;
    bool cancelled = false;
    serialize(
        data.info, data.batches.size(), std::int64_t(data.eventCount()), dataBatches(data, redaction),
        redaction,
        [&all](const QByteArray &chunk) {
            all += chunk;
            return true;
        },
        {}, &cancelled);
    return all;
}

bool writeCaptureFile(const QString &path, const CaptureData &data, const Redaction &redaction,
                      std::string *error, const CaptureProgress &progress)
{
    return saveAtomically(path, error, [&](const auto &sink, bool *cancelled) {
        return serialize(data.info, data.batches.size(), std::int64_t(data.eventCount()),
                         dataBatches(data, redaction), redaction, sink, progress, cancelled);
    });
}

bool writeCaptureFile(const QString &path, const CaptureInfo &info, const EventLog &log,
                      const Redaction &redaction, std::string *error, const CaptureProgress &progress)
{
    return saveAtomically(path, error, [&](const auto &sink, bool *cancelled) {
        return serialize(info, log.batchCount(), std::int64_t(log.eventCount()), logBatches(log, redaction),
                         redaction, sink, progress, cancelled);
    });
}

// write(2) until all of it is written: 0, or the errno of the write that failed.
int writeAll(int fd, const char *data, size_t len)
{
    while (len > 0) {
        const ssize_t n = ::write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        data += n;
        len -= size_t(n);
    }
    return 0;
}

CaptureFileStream::CaptureFileStream() = default;

CaptureFileStream::~CaptureFileStream()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

QString CaptureFileStream::partialPath() const
{
    return m_path + QStringLiteral(".partial");
}

bool CaptureFileStream::fail(int err, std::string *error)
{
    m_error = "cannot write " + partialPath().toStdString() + ": " + std::strerror(err);
    if (error)
        *error = m_error;
    return false;
}

bool CaptureFileStream::open(const QString &path, const CaptureInfo &info, const Redaction &redaction,
                             std::string *error)
{
    // A symbolic link is written through, as QSaveFile does for the other formats: the renamed .partial file
    // replaces its target, not the link. Anything but a regular file (a device, a FIFO) is refused: renaming
    // over it would replace it.
    const QFileInfo named(path);
    m_path = named.isSymLink() ? named.symLinkTarget() : path; // symLinkTarget() is absolute
    const QFileInfo target(m_path);
    if (target.exists() && !target.isFile()) {
        m_error = "cannot write " + path.toStdString() + ": it is not a regular file";
        *error = m_error;
        return false;
    }
    m_redaction = redaction;
    // Written straight to the system, unbuffered: a kill loses no batch already appended. Readable too, for
    // copyTo().
    // Never over an existing .partial file: that is what a capture that did not finish left behind.
    m_fd = ::open(QFile::encodeName(partialPath()).constData(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (m_fd < 0 && errno == EEXIST) {
        m_error = partialPath().toStdString() +
                  " already exists, left by a capture that did not finish; it opens as a truncated capture. "
                  "Move it away or write to another file";
        *error = m_error;
        return false;
    }
    if (m_fd < 0)
        return fail(errno, error);
    QByteArray head;
    appendFileHeader(head, info, redaction);
    if (const int err = writeAll(m_fd, head.constData(), size_t(head.size())))
        return fail(err, error);
    m_intact = head.size();
    return true;
}

bool CaptureFileStream::append(const EventBatch &batch)
{
    if (failed() || m_fd < 0 || m_finished)
        return false;
    if (batch.empty())
        return true;
    QByteArray record;
    appendBatchRecord(record, encodeBatch(batch, &m_redaction));
    // A short write leaves part of a record after m_intact: readers stop there (a truncated file).
    if (const int err = writeAll(m_fd, record.constData(), size_t(record.size())))
        return fail(err, nullptr);
    m_intact += record.size();
    ++m_batches;
    m_events += batch.size();
    return true;
}

QByteArray CaptureFileStream::footer() const
{
    QByteArray out;
    appendFooter(out, m_batches, m_events);
    return out;
}

bool CaptureFileStream::finish(std::string *error)
{
    if (failed() || m_fd < 0) {
        *error = failed() ? m_error : std::string("nothing was opened");
        return false;
    }
    if (!m_finished) {
        const QByteArray end = footer();
        if (const int err = writeAll(m_fd, end.constData(), size_t(end.size()))) {
            *error = "cannot write " + partialPath().toStdString() + ": " + std::strerror(err);
            // No half end record: the file stays a readable truncated capture.
            [[maybe_unused]] const int ignored = ::ftruncate(m_fd, m_intact);
            return false;
        }
        m_finished = true;
    }
    // rename(2) replaces an existing file in one step, which QFile::rename does not.
    if (std::rename(QFile::encodeName(partialPath()).constData(), QFile::encodeName(m_path).constData()) != 0) {
        *error = "cannot write " + m_path.toStdString() + ": " + std::strerror(errno);
        return false;
    }
    ::close(m_fd);
    m_fd = -1;
    return true;
}

void CaptureFileStream::discard()
{
    if (m_fd < 0)
        return;
    ::close(m_fd);
    m_fd = -1;
    ::unlink(QFile::encodeName(partialPath()).constData());
}

bool CaptureFileStream::copyTo(const QString &path, std::string *error)
{
    if (m_fd < 0) {
        *error = "nothing to copy";
        return false;
    }
    return saveAtomically(path, error, [this](const auto &sink, bool *cancelled) {
        *cancelled = false;
        QByteArray chunk(kProgressStep, Qt::Uninitialized);
        for (qint64 at = 0; at < m_intact;) {
            const ssize_t n = ::pread(m_fd, chunk.data(), size_t(std::min<qint64>(m_intact - at, chunk.size())), at);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || !sink(chunk.left(n)))
                return false;
            at += n;
        }
        return sink(footer());
    });
}

CaptureReadResult readCaptureFile(const QString &path, CaptureData *out, const CaptureProgress &progress)
{
    // Before opening: opening a FIFO waits for a writer, and a device has no size to read up to (/dev/zero
    // never ends).
    const QFileInfo info(path);
    if (info.exists() && !info.isDir() && !info.isFile())
        return {CaptureReadResult::Failed,
                "cannot read " + path.toStdString() + ": it is not a regular file (a device, pipe or socket)"};
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
        CaptureReadResult r = readCaptureBytes(view, path, out, progress);
        f.unmap(p);
        return r;
    }
    return readCaptureBytes(f.readAll(), path, out, progress);
}

CaptureReadResult readCaptureBytes(const QByteArray &bytes, const QString &nameQ, CaptureData *out,
                                   const CaptureProgress &progress)
{
    const std::string name = nameQ.toStdString();
    *out = CaptureData{};
    const char *data = bytes.constData();
    const std::int64_t size = bytes.size();
    if (size == 0)
        return {CaptureReadResult::Failed, name + " is empty (0 bytes): not an rpcscope capture"};
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
    std::optional<std::int64_t> timeBase; // what event times count from
    bool haveHeader = false;
    auto loaded = [&] {
        return std::to_string(out->batches.size()) + (out->batches.size() == 1 ? " batch" : " batches") +
               " (" + std::to_string(events) + " events)";
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
        if (!complete && shift >= 64)
            return corrupt("has an invalid length");
        if (!complete)
            return truncated("inside the length of record " + std::to_string(recordIndex));
        if (len > kMaxRecordBytes)
            return corrupt("claims " + std::to_string(len) + " bytes, more than any record can hold");
        if (std::uint64_t(size - p) < len + 4)
            return truncated("inside record " + std::to_string(recordIndex));
        const char *body = data + p;
        if (crc32(body, size_t(len)) != le32(body + len))
            return corrupt("fails its checksum");
        if (!record.ParseFromArray(body, int(len)))
            return corrupt("is not a valid record");

        if (!haveHeader) {
            if (!record.has_header())
                return corrupt("should be the file header");
            const capture::FileHeader &h = record.header();
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
                if (!fromProto(pe, &e))
                    return corrupt("holds an event this version does not know");
                // Without an origin in the header the timeline counts from the first event, as the store does.
                if (!timeBase)
                    timeBase = out->info.hasOrigin ? out->info.originNs : e.tNs;
                if (__int128(e.tNs) - *timeBase < -kMaxSpanNs || __int128(e.tNs) - *timeBase > kMaxSpanNs ||
                    *timeBase < -kMaxOriginNs || *timeBase > kMaxOriginNs)
                    return corrupt("holds an event time (" + std::to_string(e.tNs) +
                                   " ns) more than 9.5 years from the capture's origin");
                batch.push_back(std::move(e));
            }
            events += batch.size();
            ++batchRecords;
            // An empty batch changes nothing, and is never written (the footer counts it all the same).
            if (!batch.empty())
                out->batches.push_back(std::move(batch));
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
            if (progress)
                progress(size, size);
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

CaptureInfo captureInfoOf(const TimelineStore &store)
{
    CaptureInfo info;
    info.hasOrigin = store.hasOrigin();
    info.originNs = store.originNs();
    info.originWallNs = store.originWallNs();
    info.recordFrames = store.recordFrames();
    info.writer = "rpcscope";
    return info;
}

CaptureData captureFromLog(const TimelineStore &store, const EventLog &log)
{
    CaptureData data;
    data.info = captureInfoOf(store);
    data.batches.reserve(log.batchCount());
    for (size_t i = 0; i < log.batchCount(); ++i)
        data.batches.push_back(log.batch(i));
    return data;
}

void replayCapture(const CaptureData &data, TimelineStore &store)
{
    store.clear();
    store.setRecordFrames(data.info.recordFrames);
    if (data.info.hasOrigin)
        store.setOrigin(data.info.originNs, data.info.originWallNs);
    for (const EventBatch &batch : data.batches)
        store.apply(batch);
}

} // namespace rpcscope
