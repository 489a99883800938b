#include "captureconvert.h"

#include "capturecodec.h"
#include "capturefile.h"
#include "pcapngwriter.h"

namespace rpcscope {

namespace {

// The store a capture's events build, as replayCapture() builds it: the header's settings first, then every
// batch (none: the header only, for a capture without events).
class StoreFeed
{
public:
    explicit StoreFeed(TimelineStore *store) : m_store(store) {}
    void operator()(const CaptureInfo &info, const EventBatch *batch)
    {
        if (!m_store) return;
        if (!m_started) {
            m_store->setRecordFrames(info.recordFrames);
            if (info.hasOrigin) m_store->setOrigin(info.originNs, info.originWallNs);
            m_started = true;
        }
        if (batch) m_store->apply(*batch);
    }

private:
    TimelineStore *m_store;
    bool m_started = false;
};

// .rpcscope: header, one record per batch as it arrives, footer, as writeCaptureFile() writes a whole
// capture (the same bytes).
bool convertToRpcscope(const CaptureProducer &produce, const QString &out, const ExportOptions &options,
                       ConvertResult *result, std::string *error, TimelineStore *store)
{
    StoreFeed feed(store);
    bool readFailed = false;
    const bool ok = saveCaptureAtomically(out, error, [&](const CaptureSink &sink, bool *cancelled) {
        QByteArray pending;
        CaptureInfo info;
        bool header = false, writing = true;
        std::uint64_t batches = 0;
        auto put = [&](EventBatch &&batch) {
            result->events += batch.size();
            feed(info, &batch);
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
        result->read = produce(&info, put);
        if (!result->read.usable()) {
            readFailed = true;
            *cancelled = result->read.status == CaptureReadResult::Cancelled;
            return false;
        }
        if (!writing) return false;
        feed(info, nullptr);
        if (!header) records::appendFileHeader(pending, info, options.redaction);
        records::appendFooter(pending, batches, result->events);
        return sink(pending);
    });
    if (readFailed) *error = result->read.message;
    return ok;
}

// pcapng: packets written as they are settled (pcapngwriter.h), header values redacted batch by batch.
bool convertToPcapng(const CaptureProducer &produce, const QString &out, const ExportOptions &options,
                     ConvertResult *result, std::string *error, TimelineStore *store)
{
    StoreFeed feed(store);
    PcapngFileWriter file;
    CaptureInfo info;
    bool opened = false, failed = false;
    std::string writeError;
    result->read = produce(&info, [&](EventBatch &&batch) {
        result->events += batch.size();
        feed(info, &batch);
        if (failed) return;
        if (!opened) { // the producer has the header (or the first packet) before the first batch
            if (!file.open(out.toStdString(), info, &writeError)) {
                failed = true;
                return;
            }
            opened = true;
        }
        options.redaction.apply(batch);
        if (!file.add(batch, &writeError)) failed = true;
    });
    if (!result->read.usable()) {
        *error = result->read.message;
        return false;
    }
    if (failed) {
        *error = writeError;
        return false;
    }
    feed(info, nullptr);
    if (!opened && !file.open(out.toStdString(), info, error)) return false;
    return file.commit(error);
}

// The timeline formats: the store built batch by batch, then written as exportCapture() writes it.
bool convertToTimeline(const CaptureProducer &produce, FileFormat format, const QString &out,
                       const ExportOptions &options, ConvertResult *result, std::string *error,
                       TimelineStore *keep)
{
    TimelineStore own;
    TimelineStore &store = keep ? *keep : own;
    StoreFeed feed(&store);
    CaptureInfo info;
    result->read = produce(&info, [&](EventBatch &&batch) {
        result->events += batch.size();
        feed(info, &batch);
    });
    if (!result->read.usable()) {
        *error = result->read.message;
        return false;
    }
    feed(info, nullptr);
    result->noCalls = store.calls().empty();
    return exportCapture({info, {}}, format, out, options, error, &store);
}

} // namespace

bool exportProduced(const CaptureProducer &produce, FileFormat format, const QString &out,
                    const ExportOptions &options, ConvertResult *result, std::string *error,
                    TimelineStore *store)
{
    *result = ConvertResult{};
    switch (format) {
    case FileFormat::Rpcscope:
        return convertToRpcscope(produce, out, options, result, error, store);
    case FileFormat::Pcapng:
        return convertToPcapng(produce, out, options, result, error, store);
    case FileFormat::Json:
    case FileFormat::Chrome:
    case FileFormat::Otlp:
    case FileFormat::OtlpMetrics:
        return convertToTimeline(produce, format, out, options, result, error, store);
    case FileFormat::Unknown:
        break;
    }
    *error = "cannot write " + out.toStdString() + ": unknown format (known: " + formatNames() + ")";
    return false;
}

bool convertCapture(const QString &in, FileFormat format, const QString &out, const ExportOptions &options,
                    const LoadOptions &load, ConvertResult *result, std::string *error,
                    const CaptureProgress &progress)
{
    return exportProduced(
        [&](CaptureInfo *info, const CaptureBatchSink &sink) {
            return loadCaptureBatches(in, info, sink, progress, load);
        },
        format, out, options, result, error);
}

} // namespace rpcscope
