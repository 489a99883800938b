#include "capturewriter.h"

#include "capturecodec.h"
#include "filewrite.h"

#include <QSaveFile>
#include <cerrno>
#include <cstring>

namespace rpcscope {

using records::appendBatchRecord;
using records::appendFileHeader;
using records::appendFooter;
using records::kProgressStep;

namespace {

// Serializes record by record and hands `sink` chunks of about kProgressStep bytes, so a large session is
// never held twice in memory. `batchAt` gives batch i encoded (and redacted) with its event count. Progress
// counts events. False when the sink fails or progress cancels.
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
        if (n == 0) continue;
        appendBatchRecord(out, encoded);
        events += std::int64_t(n);
        ++batches;
        if (out.size() >= kProgressStep) {
            if (!sink(out)) return false;
            out.clear();
            if (progress && !progress(events, totalEvents)) {
                *cancelled = true;
                return false;
            }
        }
    }
    appendFooter(out, batches, std::uint64_t(events));
    if (!sink(out)) return false;
    if (progress) progress(totalEvents, totalEvents);
    return true;
}

auto dataBatches(const CaptureData &data, const Redaction &redaction)
{
    return [&data, &redaction](size_t i, std::string *encoded, size_t *events) {
        *events = data.batches[i].size();
        if (*events) *encoded = encodeBatch(data.batches[i], &redaction);
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

bool saveCaptureAtomically(const QString &path, std::string *error,
                           const std::function<bool(const CaptureSink &sink, bool *cancelled)> &write)
{
    QSaveFile f(path); // a temporary file next to `path`, renamed over it by commit()
    if (!f.open(QIODevice::WriteOnly)) {
        *error = "cannot write " + path.toStdString() + ": " + f.errorString().toStdString();
        return false;
    }
    bool cancelled = false;
    std::string why;
    auto sink = [&f, &why](const QByteArray &chunk) { return writeAll(f, chunk, &why); };
    if (!write(sink, &cancelled)) {
        if (why.empty()) why = f.errorString().toStdString();
        *error = cancelled ? std::string("cancelled") : "cannot write " + path.toStdString() + ": " + why;
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
    return saveCaptureAtomically(path, error, [&](const auto &sink, bool *cancelled) {
        return serialize(data.info, data.batches.size(), std::int64_t(data.eventCount()),
                         dataBatches(data, redaction), redaction, sink, progress, cancelled);
    });
}

bool writeCaptureFile(const QString &path, const CaptureInfo &info, const EventLog &log,
                      const Redaction &redaction, std::string *error, const CaptureProgress &progress)
{
    return saveCaptureAtomically(path, error, [&](const auto &sink, bool *cancelled) {
        return serialize(info, log.batchCount(), std::int64_t(log.eventCount()), logBatches(log, redaction),
                         redaction, sink, progress, cancelled);
    });
}

} // namespace rpcscope
