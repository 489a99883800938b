#pragma once

#include <QByteArray>
#include <QString>
#include <string>

class QFileDevice;

namespace rpcscope {

// Why a write, flush or commit of f failed: the system's reason (errno `err`, taken right after the call,
// when it has one), such as "No space left on device" or "File too large". Qt says only "Unknown error" when
// the disk fills part way through a write.
std::string writeFailure(const QFileDevice &f, int err);

// Writes all of `bytes` to f; false with the reason in *why.
bool writeAll(QFileDevice &f, const QByteArray &bytes, std::string *why);

// Writes `bytes` as the file at `path`, atomically (a temporary file beside it, renamed over it): a failure
// leaves any older file as it was and says "cannot write PATH: REASON" in *error.
bool saveFileAtomically(const QString &path, const QByteArray &bytes, std::string *error);

} // namespace rpcscope
