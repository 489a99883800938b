#pragma once

// Reading an .rpcscope capture file (layout in capturerecords.h): every record is checked (length, CRC-32,
// the events' values and times) before the model sees it, and a damaged or cut file loads what is intact
// before the damage.

#include "capturedata.h"
#include "capturerecords.h"

#include <QByteArray>
#include <QString>
#include <functional>
#include <string>
#include <vector>

namespace rpcscope {

struct CaptureReadResult
{
    enum Status
    {
        Ok,
        Truncated, // the file ends early: everything intact before the cut was loaded; message says where
        Corrupt,   // a record is damaged: the batches before it were loaded, but the file cannot be trusted
        Failed,    // nothing usable: empty, not a capture file, a newer format, unreadable
        Cancelled,
    };
    CaptureReadResult() = default;
    CaptureReadResult(Status s, std::string m) : status(s), message(std::move(m)) {}

    Status status = Ok;
    std::string message; // one line; empty when Ok
    // Things worth saying that did not stop loading (an imported pcap's lost segments, say); one line each.
    std::vector<std::string> notes;
    // The file can be shown: complete, or truncated with what is intact.
    bool usable() const { return status == Ok || status == Truncated; }
};

// Reads a capture file. On anything but Ok, `message` says what is wrong in one line naming the file.
CaptureReadResult readCaptureFile(const QString &path, CaptureData *out,
                                  const CaptureProgress &progress = {});
// Batch by batch: `info` receives the file's header (before the first batch), and every intact batch goes to
// `sink` as soon as it is read, never held, so a capture larger than memory can be read (rpcscope-cli stats).
// The result is the same as above; a damaged file has handed over its intact batches before the damage.
using CaptureBatchSink = std::function<void(EventBatch &&batch)>;
CaptureReadResult readCaptureFile(const QString &path, CaptureInfo *info, const CaptureBatchSink &sink,
                                  const CaptureProgress &progress = {});
// Either: into `out`, or (with a sink) only the header into `out`.
CaptureReadResult readCaptureFileTo(const QString &path, CaptureData *out, const CaptureBatchSink &sink,
                                    const CaptureProgress &progress = {});
CaptureReadResult readCaptureBytesTo(const QByteArray &bytes, const QString &name, CaptureData *out,
                                     const CaptureBatchSink &sink, const CaptureProgress &progress = {});
// The same over bytes in memory; `name` is used in messages.
CaptureReadResult readCaptureBytes(const QByteArray &bytes, const QString &name, CaptureData *out,
                                   const CaptureProgress &progress = {});

} // namespace rpcscope
