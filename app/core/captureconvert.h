#pragma once

// Converting a capture file (an .rpcscope capture or a pcap/pcapng) to another format without holding its
// events whole: batches go straight from the reader (or the packet import) to the writer. The .rpcscope
// writer takes them one by one; the timeline formats (json, chrome, otlp, otlp-metrics) need only the store
// they are built from; the pcapng writer writes packets as soon as they are settled (pcapngwriter.h).

#include "captureio.h"

#include <functional>

namespace rpcscope {

struct ConvertResult
{
    CaptureReadResult read; // how reading the input went (notes, a truncated input)
    size_t events = 0;      // events read from the input
    bool noCalls = false;   // the input holds no gRPC call
};

// Writes `in` as `format` to `out` (atomically). False with a one-line error: the input's when it could not
// be read (`result->read` says how), the output's when it could not be written.
bool convertCapture(const QString &in, FileFormat format, const QString &out, const ExportOptions &options,
                    const LoadOptions &load, ConvertResult *result, std::string *error,
                    const CaptureProgress &progress = {});

// What hands a capture's events over: fills `info` (complete before the first batch, or at the end when there
// is none) and gives the batches to `sink` in order; the result says how reading went.
using CaptureProducer = std::function<CaptureReadResult(CaptureInfo *info, const CaptureBatchSink &sink)>;

// convertCapture() with any source of events (a merge of several files, say). `store`, when given, is built
// from the same events (for a picture of them); for the timeline formats it is the store they are written
// from.
bool exportProduced(const CaptureProducer &produce, FileFormat format, const QString &out,
                    const ExportOptions &options, ConvertResult *result, std::string *error,
                    TimelineStore *store = nullptr);

} // namespace rpcscope
