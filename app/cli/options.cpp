// The option parsing and output checks every rpcscope-cli command shares.

#include "options.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <cstdio>

namespace rpcscope {

int usageError(const std::string &message)
{
    std::fprintf(stderr, "rpcscope-cli: %s\n(rpcscope-cli --help shows the usage)\n", message.c_str());
    return 2;
}

bool parseOptions(const std::vector<std::string> &args, const std::set<std::string> &valued,
                  const std::set<std::string> &bare, std::map<std::string, std::string> *out,
                  std::string *error)
{
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (bare.count(a)) {
            // not = "1": GCC 12 warns a false -Wrestrict on a one-character assignment (bug 105329)
            (*out)[a].assign(1, '1');
        } else if (valued.count(a)) {
            if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
                *error = "option " + a + " needs a value";
                return false;
            }
            if (out->count(a)) {
                *error = "option " + a + " given twice ('" + (*out)[a] + "' and '" + args[i + 1] + "')";
                return false;
            }
            (*out)[a] = args[++i];
        } else {
            *error = "unknown option '" + a + "'";
            return false;
        }
    }
    return true;
}

Redaction takeRedaction(std::vector<std::string> *args, std::string *error)
{
    Redaction r;
    std::vector<std::string> rest;
    for (size_t i = 0; i < args->size(); ++i) {
        const std::string &a = (*args)[i];
        if (a == "--redact") {
            if (i + 1 >= args->size() || (*args)[i + 1].rfind("--", 0) == 0 || (*args)[i + 1].empty()) {
                *error = "option --redact needs a header name";
                return r;
            }
            r.extraNames.push_back((*args)[++i]);
        } else if (a == "--no-redact") {
            r.enabled = false;
        } else {
            rest.push_back(a);
        }
    }
    *args = std::move(rest);
    return r;
}

FileFormat outputFormat(const std::map<std::string, std::string> &opts, std::string *error)
{
    if (auto to = opts.find("--to"); to != opts.end()) {
        const FileFormat f = formatFromName(to->second);
        if (f == FileFormat::Unknown)
            *error = "unknown format '" + to->second + "' (known: " + formatNames() + ")";
        return f;
    }
    auto out = opts.find("--out");
    if (out == opts.end()) return FileFormat::Unknown;
    const FileFormat f = formatFromPath(QString::fromStdString(out->second));
    if (f == FileFormat::Unknown)
        *error = "cannot tell the format of '" + out->second + "' from its name; add --to FORMAT (" +
                 formatNames() + ")";
    return f;
}

bool outputsWritable(const std::map<std::string, std::string> &opts, std::string *error)
{
    for (const char *flag : {"--json", "--out", "--png", "--svg"}) {
        auto it = opts.find(flag);
        if (it == opts.end()) continue;
        if (it->second.empty()) {
            *error = std::string(flag) + " needs a file name, got an empty one";
            return false;
        }
        const QFileInfo file(QString::fromStdString(it->second));
        if (file.exists() && !file.isDir() && !file.isFile()) { // a device, a FIFO, a socket (links followed)
            *error = "cannot write " + it->second + ": it is not a regular file";
            return false;
        }
        if (file.isDir()) {
            *error = "cannot write " + it->second + ": it is a directory";
            return false;
        }
        if (!file.absoluteDir().exists()) {
            *error = "cannot write " + it->second + ": there is no directory " +
                     QDir::toNativeSeparators(file.absolutePath()).toStdString();
            return false;
        }
        QSaveFile probe(file.absoluteFilePath()); // a temporary file beside the target, removed again
        if (!probe.open(QIODevice::WriteOnly)) {
            *error = "cannot write " + it->second + ": " + probe.errorString().toStdString();
            return false;
        }
        probe.cancelWriting();
    }
    return true;
}

bool serverPortOption(const std::map<std::string, std::string> &opts, LoadOptions *load, std::string *error)
{
    const auto it = opts.find("--port");
    if (it == opts.end()) return true;
    bool ok = false;
    const uint port = QString::fromStdString(it->second).toUInt(&ok);
    if (!ok || port == 0 || port > 65535) {
        *error = "--port needs a TCP port (1-65535), got '" + it->second + "'";
        return false;
    }
    load->serverPort = std::uint16_t(port);
    return true;
}

} // namespace rpcscope
