#include "captureconvert.h"

#include "capturecodec.h"
#include "capturefile.h"

namespace rpcscope {

namespace {

// .rpcscope: header, one record per batch as it arrives, footer, as writeCaptureFile() writes a whole
// capture (the same bytes).
bool convertToRpcscope(const QString &in, const QString &out, const ExportOptions &options,
                       const LoadOptions &load, ConvertResult *result, std::string *error,
                       const CaptureProgress &progress)
{
    bool readFailed = false;
    const bool ok = saveCaptureAtomically(out, error, [&](const CaptureSink &sink, bool *cancelled) {
        QByteArray pending;
        CaptureInfo info;
        bool header = false, writing = true;
        std::uint64_t batches = 0;
        auto put = [&](EventBatch &&batch) {
            result->events += batch.size();
            if (!writing) return;
            if (!header) { // the reader has the header (or the first packet) before the first batch
                records::appendFileHeader(pending, info, options.redaction);
                header = true;
            }
            if (batch.empty()) return;
            records::appendBatchRecord(pending, encodeBatch(batch, &options.redaction));
            ++batches;
            if (pending.size() >= records::kProgressStep) {
                writing = sink(pending);
                pending.clear();
            }
        };
        result->read = loadCaptureBatches(in, &info, put, progress, load);
        if (!result->read.usable()) {
            readFailed = true;
            *cancelled = result->read.status == CaptureReadResult::Cancelled;
            return false;
        }
        if (!writing) return false;
        if (!header) records::appendFileHeader(pending, info, options.redaction);
        records::appendFooter(pending, batches, result->events);
        return sink(pending);
    });
    if (readFailed) *error = result->read.message;
    return ok;
}

// The timeline formats: the store built batch by batch, then written as exportCapture() writes it.
bool convertToTimeline(const QString &in, FileFormat format, const QString &out, const ExportOptions &options,
                       const LoadOptions &load, ConvertResult *result, std::string *error,
                       const CaptureProgress &progress)
{
    TimelineStore store;
    CaptureInfo info;
    bool started = false;
    result->read = loadCaptureBatches(
        in, &info,
        [&](EventBatch &&batch) {
            if (!started) {
                store.setRecordFrames(info.recordFrames);
                if (info.hasOrigin) store.setOrigin(info.originNs, info.originWallNs);
                started = true;
            }
            result->events += batch.size();
            store.apply(batch);
        },
        progress, load);
    if (!result->read.usable()) {
        *error = result->read.message;
        return false;
    }
    if (!started) {
        store.setRecordFrames(info.recordFrames);
        if (info.hasOrigin) store.setOrigin(info.originNs, info.originWallNs);
    }
    result->noCalls = store.calls().empty();
    return exportCapture({info, {}}, format, out, options, error, &store);
}

} // namespace

bool convertCapture(const QString &in, FileFormat format, const QString &out, const ExportOptions &options,
                    const LoadOptions &load, ConvertResult *result, std::string *error,
                    const CaptureProgress &progress)
{
    *result = ConvertResult{};
    switch (format) {
    case FileFormat::Rpcscope:
        return convertToRpcscope(in, out, options, load, result, error, progress);
    case FileFormat::Json:
    case FileFormat::Chrome:
    case FileFormat::Otlp:
    case FileFormat::OtlpMetrics:
        return convertToTimeline(in, format, out, options, load, result, error, progress);
    case FileFormat::Pcapng:
    case FileFormat::Unknown:
        break;
    }
    CaptureData data;
    result->read = loadCapture(in, &data, progress, load);
    if (!result->read.usable()) {
        *error = result->read.message;
        return false;
    }
    result->events = data.eventCount();
    return exportCapture(data, format, out, options, error);
}

} // namespace rpcscope
