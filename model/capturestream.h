#pragma once

// Writing an .rpcscope capture file (layout in capturerecords.h) while the capture runs, record by record.

#include "capturedata.h"
#include "redaction.h"

#include <QByteArray>
#include <QString>
#include <cstdint>
#include <span>
#include <string>

namespace rpcscope {

// Writes a capture file while the capture runs, batch by batch, so that a long capture is never held in
// memory and a crash or a kill loses nothing already written. Until finish(), the file is `path` +
// ".partial", which opens as a truncated capture holding every batch written so far; finish() adds the end
// record and renames it to `path`.
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
    bool append(const EventBatch &batch) { return appendPart(batch); }
    // The same for part of a batch: a record of its own.
    bool appendPart(std::span<const WireEvent> events);
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

} // namespace rpcscope
