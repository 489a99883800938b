#pragma once

// Writing an .rpcscope capture file (layout in capturerecords.h) in one go: from decoded batches, or from a
// live session's event log without decoding it. Header values are masked as `redaction` says; the data
// itself is not changed.

#include "capturedata.h"
#include "capturerecords.h"
#include "eventlog.h"
#include "redaction.h"

#include <QByteArray>
#include <QString>
#include <functional>
#include <string>

namespace rpcscope {

// Serializes to bytes, with `redaction` applied to header values (the data itself is not changed).
QByteArray captureToBytes(const CaptureData &data, const Redaction &redaction);
// Writes atomically (a temporary file in the same directory, renamed over `path` once complete), so an
// existing file is never left half-written. Returns false with a one-line error, or "cancelled".
bool writeCaptureFile(const QString &path, const CaptureData &data, const Redaction &redaction,
                      std::string *error, const CaptureProgress &progress = {});

// Saves a live session straight from its event log, batch by batch, without decoding it all at once.
bool writeCaptureFile(const QString &path, const CaptureInfo &info, const EventLog &log,
                      const Redaction &redaction, std::string *error, const CaptureProgress &progress = {});

// Takes chunks of the file in order; false when writing failed.
using CaptureSink = std::function<bool(const QByteArray &chunk)>;
// The atomic save under writeCaptureFile and CaptureFileStream::copyTo: `write` hands its chunks to the
// sink and returns false when the sink failed or, setting *cancelled, when it gave up. False with a one-line
// error, or "cancelled"; `path` is then left as it was.
bool saveCaptureAtomically(const QString &path, std::string *error,
                           const std::function<bool(const CaptureSink &sink, bool *cancelled)> &write);

} // namespace rpcscope
