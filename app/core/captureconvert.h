#pragma once

// Converting a capture file (an .rpcscope capture or a pcap/pcapng) to another format without holding its
// events whole: batches go straight from the reader (or the packet import) to the writer. The .rpcscope
// writer takes them one by one; the timeline formats (json, chrome, otlp, otlp-metrics) need only the store
// they are built from. A pcapng output still loads the capture first.

#include "captureio.h"

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

} // namespace rpcscope
