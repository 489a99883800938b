#pragma once

// Capture files and exports in every format rpcscope writes, for the CLI's convert/run/capture and the
// GUI's Save, Open and Export. The GUI saves a live session with
//     exportSession(model.store(), model.eventLog(), FileFormat::Rpcscope, path, {}, &error)
// and opens one with loadCapture() (on a worker thread if it is large: it only reads the file, with progress
// and cancel) followed by TimelineModel::replay() on the model's thread. EventLog::generation() compared
// with its value at the last save says whether a session has unsaved events.

#include "capturefile.h"

#include <QString>
#include <string>

namespace rpcscope {

enum class FileFormat
{
    Unknown,
    Rpcscope,
    Json,
    Chrome,
    Otlp,
    Pcapng,
    OtlpMetrics // gRPC's OpenTelemetry metrics (otlpmetrics.h)
};

// "rpcscope", "json", "chrome", "otlp", "pcapng", "otlp-metrics"
const char *formatName(FileFormat format);
// A --to value (the names above); Unknown otherwise.
FileFormat formatFromName(const std::string &name);
// By extension: .rpcscope, .pcapng, .metrics.otlp.json or .otlp-metrics.json, .otlp.json, .chrome.json or
// .trace.json, then any other .json (rpcscope-json).
FileFormat formatFromPath(const QString &path);
// The list for messages: "rpcscope, json, chrome, otlp, pcapng, otlp-metrics".
std::string formatNames();
// The Save dialogs' filter list, one entry per format written, in the order above (rpcscope first).
QString saveFileFilters();
// `path` as the Save dialog's chosen filter means it: with the filter's extension added when the name alone
// tells no format ("run1" with "OTLP metrics JSON (*.metrics.otlp.json)" is "run1.metrics.otlp.json").
QString withFilterExtension(const QString &path, const QString &selectedFilter);

struct ExportOptions
{
    Redaction redaction;     // on by default: authorization, cookie and friends are masked
    bool withFrames = false; // json: add every HTTP/2 frame
};

// Writes `data` as `format` (atomically: temporary file, then rename). `live`, when given, is the store the
// events built, used for the timeline formats instead of replaying them (the result is the same).
bool exportCapture(const CaptureData &data, FileFormat format, const QString &path,
                   const ExportOptions &options, std::string *error, const TimelineStore *live = nullptr,
                   const CaptureProgress &progress = {});

struct LoadOptions
{
    // pcap/pcapng: the HTTP/2 server port; 0 detects it (capture/pcapimport.h).
    std::uint16_t serverPort = 0;
    // pcap/pcapng: an NSS key log whose secrets decrypt the capture's TLS connections (empty: none).
    std::string keylogFile;
};

// A live session (TimelineModel::store() and eventLog()): .rpcscope straight from the log, batch by batch;
// the other formats from its decoded events and the store.
bool exportSession(const TimelineStore &store, const EventLog &log, FileFormat format, const QString &path,
                   const ExportOptions &options, std::string *error, const std::string &writer = "rpcscope",
                   const CaptureProgress &progress = {});

// Opens a file rpcscope can read events from, by its content whatever its name says: an .rpcscope capture,
// or a pcap/pcapng packet capture of h2c traffic, reassembled and decoded like live traffic (its origin is
// the first packet's time).
CaptureReadResult loadCapture(const QString &path, CaptureData *out, const CaptureProgress &progress = {},
                              const LoadOptions &options = {});
// The same, batch by batch into `sink` (capturereader.h): neither an .rpcscope file nor a packet capture is
// ever held whole (a packet capture is reassembled and decoded as it is read).
CaptureReadResult loadCaptureBatches(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                     const CaptureProgress &progress = {}, const LoadOptions &options = {});
// A pcap or pcapng file, by its first bytes.
bool isPacketCaptureFile(const QString &path);
// A packet capture, batch by batch into `sink` as it is read; `info` (origin: the first packet's wall clock)
// is complete by the first batch.
CaptureReadResult importPacketCapture(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                      const CaptureProgress &progress = {}, const LoadOptions &options = {});

} // namespace rpcscope
