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

// Writes a capture file while the capture runs, batch by batch, so that a long capture is never held in
// memory and a crash or a kill loses nothing already written. Until finish(), the file is `path` + ".partial",
// which opens as a truncated capture holding every batch written so far; finish() adds the end record and
// renames it to `path`.
class CaptureFileStream
{
public:
    CaptureFileStream();
    ~CaptureFileStream(); // without finish(), the .partial file stays
    CaptureFileStream(const CaptureFileStream &) = delete;
    CaptureFileStream &operator=(const CaptureFileStream &) = delete;

    // Fails, saying so, when `path`.partial exists already (a capture that did not finish left it).
    bool open(const QString &path, const CaptureInfo &info, const Redaction &redaction, std::string *error);
    // Appends one batch and hands it to the system. False once writing has failed (error() says why): from
    // then on batches are dropped, and what was written before stays readable.
    bool append(const EventBatch &batch);
    bool failed() const { return !m_error.empty(); }
    const std::string &error() const { return m_error; }
    QString partialPath() const;
    std::uint64_t events() const { return m_events; }
    std::int64_t bytesWritten() const { return m_intact; } // whole records so far
    // Adds the end record and renames the file to the path given to open(). False with a one-line error.
    bool finish(std::string *error);
    // Writes everything appended intact, with an end record, to another path (atomically): for when finish()
    // could not put the file in place, its directory removed, say.
    bool copyTo(const QString &path, std::string *error);
    // Closes and removes the .partial file: nothing worth keeping was written (the capture never started).
    void discard();

private:
    QByteArray footer() const;
    bool fail(int err, std::string *error);
    int m_fd = -1;
    QString m_path;
    Redaction m_redaction;
    std::string m_error;
    std::uint64_t m_batches = 0;
    std::uint64_t m_events = 0;
    qint64 m_intact = 0; // bytes of whole records written
    bool m_finished = false;
};

// Does this look like the start of a capture file (the magic)?
bool looksLikeCaptureFile(const QByteArray &head);

// The store's origins and frame setting, for the header of a file saved from a live session.
CaptureInfo captureInfoOf(const TimelineStore &store);
// The capture of a live session, decoded: the store's origin and frame setting with the logged batches.
CaptureData captureFromLog(const TimelineStore &store, const EventLog &log);
// Rebuilds the timeline from a capture into `store`, which is cleared first.
void replayCapture(const CaptureData &data, TimelineStore &store);

} // namespace rpcscope
