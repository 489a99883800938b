#include "capturestream.h"

#include "capturecodec.h"
#include "capturerecords.h"
#include "capturewriter.h"

#include <QFile>
#include <QFileInfo>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace rpcscope {

using records::appendBatchRecord;
using records::appendFileHeader;
using records::appendFooter;
using records::kProgressStep;

namespace {

// write(2) until all of it is written: 0, or the errno of the write that failed.
int writeAll(int fd, const char *data, size_t len)
{
    while (len > 0) {
        const ssize_t n = ::write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        data += n;
        len -= size_t(n);
    }
    return 0;
}

} // namespace

CaptureFileStream::CaptureFileStream() = default;

CaptureFileStream::~CaptureFileStream()
{
    if (m_fd >= 0) ::close(m_fd);
}

QString CaptureFileStream::partialPath() const
{
    return m_path + QStringLiteral(".partial");
}

bool CaptureFileStream::fail(int err, std::string *error)
{
    m_error = "cannot write " + partialPath().toStdString() + ": " + std::strerror(err);
    if (error) *error = m_error;
    return false;
}

bool CaptureFileStream::open(const QString &path, const CaptureInfo &info, const Redaction &redaction,
                             std::string *error)
{
    // A symbolic link is written through, as QSaveFile does for the other formats: the renamed .partial file
    // replaces its target, not the link. Anything but a regular file (a device, a FIFO) is refused: renaming
    // over it would replace it.
    const QFileInfo named(path);
    m_path = named.isSymLink() ? named.symLinkTarget() : path; // symLinkTarget() is absolute
    const QFileInfo target(m_path);
    if (target.exists() && !target.isFile()) {
        m_error = "cannot write " + path.toStdString() + ": it is not a regular file";
        *error = m_error;
        return false;
    }
    m_redaction = redaction;
    // Written straight to the system, unbuffered: a kill loses no batch already appended. Readable too, for
    // copyTo().
    // Never over an existing .partial file: that is what a capture that did not finish left behind.
    m_fd = ::open(QFile::encodeName(partialPath()).constData(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (m_fd < 0 && errno == EEXIST) {
        m_error = partialPath().toStdString() +
                  " already exists, left by a capture that did not finish; it opens as a truncated capture. "
                  "Move it away or write to another file";
        *error = m_error;
        return false;
    }
    if (m_fd < 0) return fail(errno, error);
    QByteArray head;
    appendFileHeader(head, info, redaction);
    if (const int err = writeAll(m_fd, head.constData(), size_t(head.size()))) return fail(err, error);
    m_intact = head.size();
    return true;
}

bool CaptureFileStream::appendPart(std::span<const WireEvent> batch)
{
    if (failed() || m_fd < 0 || m_finished) return false;
    if (batch.empty()) return true;
    QByteArray record;
    appendBatchRecord(record, encodeEvents(batch, &m_redaction));
    // A short write leaves part of a record after m_intact: readers stop there (a truncated file).
    if (const int err = writeAll(m_fd, record.constData(), size_t(record.size()))) return fail(err, nullptr);
    m_intact += record.size();
    ++m_batches;
    m_events += batch.size();
    return true;
}

QByteArray CaptureFileStream::footer() const
{
    QByteArray out;
    appendFooter(out, m_batches, m_events);
    return out;
}

bool CaptureFileStream::finish(std::string *error)
{
    if (failed() || m_fd < 0) {
        *error = failed() ? m_error : std::string("nothing was opened");
        return false;
    }
    if (!m_finished) {
        const QByteArray end = footer();
        if (const int err = writeAll(m_fd, end.constData(), size_t(end.size()))) {
            *error = "cannot write " + partialPath().toStdString() + ": " + std::strerror(err);
            // No half end record: the file stays a readable truncated capture.
            [[maybe_unused]] const int ignored = ::ftruncate(m_fd, m_intact);
            return false;
        }
        m_finished = true;
    }
    // rename(2) replaces an existing file in one step, which QFile::rename does not.
    if (std::rename(QFile::encodeName(partialPath()).constData(), QFile::encodeName(m_path).constData()) !=
        0) {
        *error = "cannot write " + m_path.toStdString() + ": " + std::strerror(errno);
        return false;
    }
    ::close(m_fd);
    m_fd = -1;
    return true;
}

void CaptureFileStream::discard()
{
    if (m_fd < 0) return;
    ::close(m_fd);
    m_fd = -1;
    ::unlink(QFile::encodeName(partialPath()).constData());
}

bool CaptureFileStream::copyTo(const QString &path, std::string *error)
{
    if (m_fd < 0) {
        *error = "nothing to copy";
        return false;
    }
    return saveCaptureAtomically(path, error, [this](const auto &sink, bool *cancelled) {
        *cancelled = false;
        QByteArray chunk(kProgressStep, Qt::Uninitialized);
        for (qint64 at = 0; at < m_intact;) {
            const ssize_t n =
                ::pread(m_fd, chunk.data(), size_t(std::min<qint64>(m_intact - at, chunk.size())), at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || !sink(chunk.left(n))) return false;
            at += n;
        }
        return sink(footer());
    });
}

} // namespace rpcscope
