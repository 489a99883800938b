#pragma once

// The .rpcscope capture file (layout in resources/proto/capture.proto): a versioned header, then
// length-delimited protobuf records, each with a CRC-32, ending in a footer with the totals.

#include "capturedata.h"
#include "eventlog.h"
#include "redaction.h"
#include "timelinestore.h"

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <functional>
#include <string>

namespace rpcscope {

inline constexpr std::uint32_t kCaptureFormatVersion = 1;

// Called now and then with the work done so far and the total (bytes when reading, events when writing);
// returning false cancels.
using CaptureProgress = std::function<bool(std::int64_t done, std::int64_t total)>;

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
// The same over bytes in memory; `name` is used in messages.
CaptureReadResult readCaptureBytes(const QByteArray &bytes, const QString &name, CaptureData *out,
                                   const CaptureProgress &progress = {});

// Serializes to bytes, with `redaction` applied to header values (the data itself is not changed).
QByteArray captureToBytes(const CaptureData &data, const Redaction &redaction);
// Writes atomically (a temporary file in the same directory, renamed over `path` once complete), so an
// existing file is never left half-written. Returns false with a one-line error, or "cancelled".
bool writeCaptureFile(const QString &path, const CaptureData &data, const Redaction &redaction,
                      std::string *error, const CaptureProgress &progress = {});

// Saves a live session straight from its event log, batch by batch, without decoding it all at once.
bool writeCaptureFile(const QString &path, const CaptureInfo &info, const EventLog &log,
                      const Redaction &redaction, std::string *error, const CaptureProgress &progress = {});

// Does this look like the start of a capture file (the magic)?
bool looksLikeCaptureFile(const QByteArray &head);

// The store's origins and frame setting, for the header of a file saved from a live session.
CaptureInfo captureInfoOf(const TimelineStore &store);
// The capture of a live session, decoded: the store's origin and frame setting with the logged batches.
CaptureData captureFromLog(const TimelineStore &store, const EventLog &log);
// Rebuilds the timeline from a capture into `store`, which is cleared first.
void replayCapture(const CaptureData &data, TimelineStore &store);

} // namespace rpcscope
