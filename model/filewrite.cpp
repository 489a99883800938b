#include "filewrite.h"

#include <QSaveFile>
#include <cerrno>
#include <cstring>

namespace rpcscope {

std::string writeFailure(const QFileDevice &f, int err)
{
    return err != 0 ? std::string(std::strerror(err)) : f.errorString().toStdString();
}

bool writeAll(QFileDevice &f, const QByteArray &bytes, std::string *why)
{
    errno = 0;
    if (f.write(bytes) == bytes.size()) return true;
    *why = writeFailure(f, errno);
    return false;
}

bool saveFileAtomically(const QString &path, const QByteArray &bytes, std::string *error)
{
    QSaveFile f(path);
    std::string why;
    if (!f.open(QIODevice::WriteOnly)) {
        why = f.errorString().toStdString();
    } else if (writeAll(f, bytes, &why)) {
        errno = 0;
        if (f.commit()) return true; // the buffered rest is written here, so a full disk may show only now
        why = writeFailure(f, errno);
    }
    *error = "cannot write " + path.toStdString() + ": " + why;
    return false;
}

} // namespace rpcscope
