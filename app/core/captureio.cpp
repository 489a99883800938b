#include "captureio.h"

#include "chrometrace.h"
#include "filewrite.h"
#include "jsonexport.h"
#include "otlpexport.h"
#include "otlpmetrics.h"
#include "pcapimport.h"
#include "pcapngwriter.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>

namespace rpcscope {

const char *formatName(FileFormat format)
{
    switch (format) {
    case FileFormat::Rpcscope:
        return "rpcscope";
    case FileFormat::Json:
        return "json";
    case FileFormat::Chrome:
        return "chrome";
    case FileFormat::Otlp:
        return "otlp";
    case FileFormat::Pcapng:
        return "pcapng";
    case FileFormat::OtlpMetrics:
        return "otlp-metrics";
    case FileFormat::Unknown:
        break;
    }
    return "unknown";
}

std::string formatNames()
{
    return "rpcscope, json, chrome, otlp, pcapng, otlp-metrics";
}

QString saveFileFilters()
{
    return QStringLiteral(
        "rpcscope capture (*.rpcscope);;rpcscope JSON (*.json);;Chrome trace (*.chrome.json);;"
        "OTLP JSON (*.otlp.json);;pcapng for Wireshark (*.pcapng);;"
        "OTLP metrics JSON (*.metrics.otlp.json)");
}

QString withFilterExtension(const QString &path, const QString &selectedFilter)
{
    if (path.isEmpty() || formatFromPath(path) != FileFormat::Unknown) return path;
    // "Name (*.ext *.other)": the first pattern's extension.
    const qsizetype star = selectedFilter.indexOf(QLatin1String("(*."));
    if (star < 0) return path;
    const qsizetype end = selectedFilter.indexOf(QRegularExpression(QStringLiteral("[ )]")), star + 2);
    if (end < 0) return path;
    QString p = path;
    if (p.endsWith('.')) p.chop(1);
    return p + selectedFilter.mid(star + 2, end - star - 2);
}

FileFormat formatFromName(const std::string &name)
{
    for (FileFormat f : {FileFormat::Rpcscope, FileFormat::Json, FileFormat::Chrome, FileFormat::Otlp,
                         FileFormat::Pcapng, FileFormat::OtlpMetrics})
        if (name == formatName(f)) return f;
    return FileFormat::Unknown;
}

FileFormat formatFromPath(const QString &path)
{
    const QString p = path.toLower();
    if (p.endsWith(QLatin1String(".rpcscope"))) return FileFormat::Rpcscope;
    if (p.endsWith(QLatin1String(".pcapng"))) return FileFormat::Pcapng;
    if (p.endsWith(QLatin1String(".metrics.otlp.json")) || p.endsWith(QLatin1String(".otlp-metrics.json")))
        return FileFormat::OtlpMetrics;
    if (p.endsWith(QLatin1String(".otlp.json"))) return FileFormat::Otlp;
    if (p.endsWith(QLatin1String(".chrome.json")) || p.endsWith(QLatin1String(".trace.json")))
        return FileFormat::Chrome;
    if (p.endsWith(QLatin1String(".json"))) return FileFormat::Json;
    return FileFormat::Unknown;
}

bool exportCapture(const CaptureData &data, FileFormat format, const QString &path,
                   const ExportOptions &options, std::string *error, const TimelineStore *live,
                   const CaptureProgress &progress)
{
    switch (format) {
    case FileFormat::Rpcscope:
        return writeCaptureFile(path, data, options.redaction, error, progress);
    case FileFormat::Pcapng: {
        // Redacted a batch at a time, so the capture is never copied whole.
        PcapngFileWriter file;
        if (!file.open(path.toStdString(), data.info, error)) return false;
        EventBatch redacted;
        for (const EventBatch &b : data.batches) {
            redacted = b;
            options.redaction.apply(redacted);
            if (!file.add(redacted, error)) return false;
        }
        return file.commit(error);
    }
    case FileFormat::Json:
    case FileFormat::Chrome:
    case FileFormat::Otlp:
    case FileFormat::OtlpMetrics: {
        // These carry no header values, so there is nothing to redact in them.
        TimelineStore replayed;
        if (!live) replayCapture(data, replayed);
        const TimelineStore &store = live ? *live : replayed;
        const QByteArray bytes = format == FileFormat::Json ? timelineToJsonBytes(store, options.withFrames)
                                 : format == FileFormat::Chrome      ? timelineToChromeTraceBytes(store)
                                 : format == FileFormat::OtlpMetrics ? timelineToOtlpMetricsBytes(store)
                                                                     : timelineToOtlpBytes(store);
        return saveFileAtomically(path, bytes, error);
    }
    case FileFormat::Unknown:
        break;
    }
    *error = "cannot write " + path.toStdString() + ": unknown format (known: " + formatNames() + ")";
    return false;
}

namespace {
bool isPacketCapture(const QByteArray &head)
{
    static const char *const magics[] = {"\x0a\x0d\x0d\x0a", "\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4",
                                         "\x4d\x3c\xb2\xa1", "\xa1\xb2\x3c\x4d"};
    for (const char *m : magics)
        if (head.startsWith(QByteArray(m, 4))) return true;
    return false;
}

// Batches of this many events, so an imported capture saved as .rpcscope has records of a sane size.
constexpr size_t kImportBatch = 1024;

} // namespace

CaptureReadResult importPacketCapture(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                      const CaptureProgress &progress, const LoadOptions &options)
{
    const std::int64_t size = QFileInfo(path).size();
    PcapImportOptions o;
    if (options.serverPort) o.serverPort = options.serverPort;
    if (progress)
        o.progress = [&](double fraction) { return progress(std::int64_t(fraction * double(size)), size); };
    o.batchEvents = kImportBatch;
    PcapImportResult r;
    std::string error;
    if (!options.keylogFile.empty()) {
        auto keys = std::make_shared<TlsKeyLog>();
        if (!keys->load(options.keylogFile, &error)) return {CaptureReadResult::Failed, error};
        o.keylog = std::move(keys);
    }
    *info = CaptureInfo{};
    info->hasOrigin = true;
    info->recordFrames = true;
    info->writer = "rpcscope pcap import";
    auto toSink = [&](EventBatch &&batch) {
        // Imported events are stamped with the packets' wall clock; the first packet is read before any
        // event.
        info->originNs = r.firstPacketWallNs;
        info->originWallNs = r.firstPacketWallNs;
        sink(std::move(batch));
    };
    if (!importPcap(path.toStdString(), o, toSink, &r, &error))
        return {CaptureReadResult::Failed, "cannot import " + path.toStdString() + ": " + error};
    if (r.cancelled)
        return {CaptureReadResult::Cancelled, "importing " + path.toStdString() + " was cancelled"};
    info->originNs = r.firstPacketWallNs;
    info->originWallNs = r.firstPacketWallNs;
    CaptureReadResult result;
    for (const std::string &note : r.notes)
        result.notes.push_back(path.toStdString() + ": " + note);
    return result;
}

namespace {
CaptureReadResult importPacketCapture(const QString &path, CaptureData *out, const CaptureProgress &progress,
                                      const LoadOptions &options)
{
    return importPacketCapture(
        path, &out->info, [out](EventBatch &&batch) { out->batches.push_back(std::move(batch)); }, progress,
        options);
}
} // namespace

bool exportSession(const TimelineStore &store, const EventLog &log, FileFormat format, const QString &path,
                   const ExportOptions &options, std::string *error, const std::string &writer,
                   const CaptureProgress &progress)
{
    if (format == FileFormat::Rpcscope) {
        CaptureInfo info = captureInfoOf(store);
        info.writer = writer;
        return writeCaptureFile(path, info, log, options.redaction, error, progress);
    }
    if (format == FileFormat::Json || format == FileFormat::Chrome || format == FileFormat::Otlp ||
        format == FileFormat::OtlpMetrics)
        return exportCapture({captureInfoOf(store), {}}, format, path, options, error, &store, progress);
    CaptureData data = captureFromLog(store, log);
    data.info.writer = writer;
    return exportCapture(data, format, path, options, error, &store, progress);
}

CaptureReadResult loadCapture(const QString &path, CaptureData *out, const CaptureProgress &progress,
                              const LoadOptions &options)
{
    *out = CaptureData{};
    const QFileInfo info(path);
    if (info.exists() && !info.isFile()) // a directory, device or pipe: refused without opening it
        return readCaptureFile(path, out, progress);
    QFile f(path);
    if (f.open(QIODevice::ReadOnly) && isPacketCapture(f.read(4)))
        return importPacketCapture(path, out, progress, options);
    return readCaptureFile(path, out, progress);
}

bool isPacketCaptureFile(const QString &path)
{
    QFile f(path);
    return QFileInfo(path).isFile() && f.open(QIODevice::ReadOnly) && isPacketCapture(f.read(4));
}

CaptureReadResult loadCaptureBatches(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                     const CaptureProgress &progress, const LoadOptions &options)
{
    *info = CaptureInfo{};
    if (isPacketCaptureFile(path)) return importPacketCapture(path, info, sink, progress, options);
    return readCaptureFile(path, info, sink, progress);
}

} // namespace rpcscope
