// rpcscope-cli convert: a capture file or a pcap/pcapng to another format.

#include "captureconvert.h"
#include "captureio.h"
#include "commands.h"
#include "options.h"
#include "tlskeylog.h"

#include <cstdio>

namespace rpcscope {

int cmdConvert(std::vector<std::string> args)
{
    std::string error;
    const Redaction redaction = takeRedaction(&args, &error);
    if (!error.empty()) return usageError(error);
    std::vector<std::string> files, rest;
    for (size_t i = 0; i < args.size(); ++i) {
        if ((args[i] == "--to" || args[i] == "--port" || args[i] == "--keylog") && i + 1 < args.size()) {
            rest.push_back(args[i]);
            rest.push_back(args[++i]);
        } else if (args[i].rfind("--", 0) == 0 || args[i].empty()) {
            rest.push_back(args[i]);
        } else {
            files.push_back(args[i]);
        }
    }
    if (files.size() != 2)
        return usageError("convert needs an input and an output file, got " + std::to_string(files.size()) +
                          (files.size() == 1 ? " file" : " files"));
    std::map<std::string, std::string> opts;
    if (!parseOptions(rest, {"--to", "--port", "--keylog"}, {"--frames"}, &opts, &error))
        return usageError(error);
    LoadOptions load;
    if (!serverPortOption(opts, &load, &error)) return usageError(error);
    if (opts.count("--keylog")) {
        // Read once here so that a bad key log is a bad argument (exit 2), not a failed conversion.
        TlsKeyLog keys;
        if (!keys.load(opts["--keylog"], &error)) {
            std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
            return 2;
        }
        load.keylogFile = opts["--keylog"];
    }
    opts["--out"] = files[1];
    const FileFormat format = outputFormat(opts, &error);
    if (!error.empty()) return usageError(error);

    ExportOptions options;
    options.redaction = redaction;
    options.withFrames = opts.count("--frames");
    // Streamed: the input's events go batch by batch to the output's writer, never held whole.
    ConvertResult converted;
    const bool ok = convertCapture(QString::fromStdString(files[0]), format, QString::fromStdString(files[1]),
                                   options, load, &converted, &error);
    const CaptureReadResult &read = converted.read;
    if (!read.usable()) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", read.message.c_str());
        return 1;
    }
    if (read.status == CaptureReadResult::Truncated)
        std::fprintf(stderr, "rpcscope-cli: warning: %s\n", read.message.c_str());
    for (const std::string &note : read.notes)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
    if (!ok) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    // Metrics of a capture without a call are a valid, empty document; say so rather than leave it to a
    // dashboard that shows nothing.
    if (format == FileFormat::OtlpMetrics && converted.noCalls)
        std::fprintf(stderr, "rpcscope-cli: note: %s holds no gRPC call: %s has no data points\n",
                     files[0].c_str(), files[1].c_str());
    std::printf("converted %s (%zu events) to %s (%s)\n", files[0].c_str(), converted.events,
                files[1].c_str(), formatName(format));
    return 0;
}

} // namespace rpcscope
