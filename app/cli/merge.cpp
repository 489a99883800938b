// rpcscope-cli merge: several captures (agents on several hosts) onto one timeline, saved as one capture.

#include "captureconvert.h"
#include "captureio.h"
#include "commands.h"
#include "mergeset.h"
#include "options.h"
#include "output.h"
#include "timelinepainter.h"
#include "timelinestore.h"

#include <QFileInfo>
#include <QStringList>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

namespace rpcscope {

namespace {

std::string msText(std::int64_t ns)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%+.3f ms", double(ns) / 1e6);
    return buf;
}

bool splitAssignment(const std::string &option, const std::string &value, std::string *file, std::string *rhs,
                     std::string *error)
{
    const size_t eq = value.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
        *error = option + " needs FILE=" +
                 (option == "--offset" ? "OFFSET, for example edge.rpcscope=+12.5ms"
                                       : "NAME, for example edge.rpcscope=edge") +
                 "; got '" + value + "'";
        return false;
    }
    *file = value.substr(0, eq);
    *rhs = value.substr(eq + 1);
    return true;
}

} // namespace

int cmdMerge(const std::vector<std::string> &args)
{
    std::vector<std::string> inputs;
    std::vector<std::pair<std::string, std::string>> offsets, labels; // in the order given
    std::map<std::string, std::string> opts;
    Redaction redaction;
    LoadOptions load;
    static const char *const kValued[] = {"--out",    "--to",    "--png",    "--svg",
                                          "--offset", "--label", "--redact", "--port"};
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a == "--frames" || a == "--no-redact") {
            // not = "1": GCC 12 warns a false -Wrestrict on a one-character assignment (bug 105329)
            opts[a].assign(1, '1');
            continue;
        }
        if (a.rfind("--", 0) != 0) {
            inputs.push_back(a);
            continue;
        }
        if (std::find(std::begin(kValued), std::end(kValued), a) == std::end(kValued))
            return usageError("unknown option '" + a + "'");
        if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1].rfind("--", 0) == 0)
            return usageError("option " + a + " needs a value");
        const std::string &v = args[++i];
        std::string file, rhs, error;
        if (a == "--offset" || a == "--label") {
            if (!splitAssignment(a, v, &file, &rhs, &error)) return usageError(error);
            (a == "--offset" ? offsets : labels).emplace_back(file, rhs);
        } else if (a == "--redact") {
            redaction.extraNames.push_back(v);
        } else {
            opts[a] = v;
        }
    }
    if (opts.count("--no-redact")) redaction.enabled = false;
    if (inputs.empty()) return usageError("merge needs the capture files to merge");
    if (!opts.count("--out")) return usageError("merge needs --out FILE");
    FileFormat format = FileFormat::Unknown;
    if (opts.count("--to")) {
        format = formatFromName(opts["--to"]);
        if (format == FileFormat::Unknown)
            return usageError("unknown format '" + opts["--to"] + "' (known: " + formatNames() + ")");
    } else {
        format = formatFromPath(QString::fromStdString(opts["--out"]));
        if (format == FileFormat::Unknown)
            return usageError("cannot tell the format of '" + opts["--out"] +
                              "' from its name; add --to FORMAT (" + formatNames() + ")");
    }
    if (std::string error; !serverPortOption(opts, &load, &error)) return usageError(error);
    // Offsets are checked before anything is read, so a typo costs no time.
    std::vector<std::int64_t> offsetNs;
    for (const auto &[file, text] : offsets) {
        std::int64_t ns = 0;
        std::string error;
        if (!parseMergeOffset(text, &ns, &error))
            return usageError("--offset " + file + "=" + text + ": " + error);
        offsetNs.push_back(ns);
    }

    // Each file is read once here for what places it, and once more as it is merged: never held whole.
    MergeSet set;
    std::vector<std::unique_ptr<MergeFacts>> facts;
    for (const std::string &in : inputs) {
        auto f = std::make_unique<MergeFacts>();
        const QString path = QString::fromStdString(in);
        const CaptureReadResult r = gatherMergeFacts(path, f.get(), load);
        if (!r.usable()) return usageError(r.message);
        if (r.status == CaptureReadResult::Truncated)
            std::fprintf(stderr, "rpcscope-cli: warning: %s\n", r.message.c_str());
        for (const std::string &note : r.notes)
            std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
        set.add(CaptureData{f->info, {}}, defaultMergeLabel(in, {}), path);
        facts.push_back(std::move(f));
    }
    for (const auto &[file, label] : labels) {
        std::string error;
        const auto index = set.find(file, &error);
        if (!index || !set.setLabel(*index, label, &error))
            return usageError("--label " + file + "=" + label + ": " + error);
    }
    for (size_t k = 0; k < offsets.size(); ++k) {
        std::string error;
        const auto index = set.find(offsets[k].first, &error);
        if (!index)
            return usageError("--offset " + offsets[k].first + "=" + offsets[k].second + ": " + error);
        set.setOffset(*index, offsetNs[k]);
    }

    std::vector<MergeFile> files;
    for (size_t i = 0; i < set.size(); ++i) {
        const MergeSet::Source &s = set.sources()[i];
        files.push_back({s.path, facts[i].get(), s.label, s.offsetNs});
    }
    ExportOptions options;
    options.redaction = redaction;
    options.withFrames = opts.count("--frames");
    const bool picture = opts.count("--png") || opts.count("--svg");
    TimelineStore store; // only for a picture: the formats that need a store build their own
    MergeResult m;
    bool planned = false;
    ConvertResult written;
    std::string error;
    const QString out = QString::fromStdString(opts["--out"]);
    const bool ok = exportProduced(
        [&](CaptureInfo *info, const CaptureBatchSink &sink) {
            CaptureReadResult read;
            m = mergeCaptureFiles(files, load, info, sink, &read);
            planned = m.ok;
            if (!m.ok) return CaptureReadResult{CaptureReadResult::Failed, m.error};
            return read;
        },
        format, out, options, &written, &error, picture ? &store : nullptr);
    if (!planned && !m.error.empty()) return usageError(m.error);
    for (const std::string &note : m.notes)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
    if (!ok) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    if (picture) {
        QStringList names; // "edge + backend (offset -12.5 ms)": the offsets are part of what it shows
        for (const MergeSet::Source &s : set.sources())
            names << QString::fromStdString(s.label) +
                         (s.offsetNs ? QStringLiteral(" (offset %1%2 ms)")
                                           .arg(s.offsetNs > 0 ? QStringLiteral("+") : QString())
                                           .arg(double(s.offsetNs) / 1e6, 0, 'g', 9)
                                     : QString());
        TimelinePainter::Options pictureOptions{
            QStringLiteral("rpcscope — merged: %1").arg(names.join(QStringLiteral(" + "))), true};
        for (const Call &c : store.calls())
            if (c.parentCall) pictureOptions.grouping = LaneGrouping::Chain;
        if ((opts.count("--png") &&
             !writePng(TimelinePainter::renderImage(store, 1400, pictureOptions), opts["--png"], &error)) ||
            (opts.count("--svg") && !writeSvg(store, pictureOptions, opts["--svg"], &error))) {
            std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
            return 1;
        }
    }

    std::printf("merged %zu captures (%zu events) into %s (%s)\n", set.size(), written.events,
                opts["--out"].c_str(), formatName(format));
    const MergeSet::Source &ref = set.sources()[m.reference];
    for (size_t i = 0; i < set.size(); ++i) {
        const MergeSet::Source &s = set.sources()[i];
        std::string where = "the reference (earliest origin)";
        if (i != m.reference) {
            if (s.data.info.originWallNs && ref.data.info.originWallNs)
                where = "origin " + msText(s.data.info.originWallNs - ref.data.info.originWallNs) + " from " +
                        ref.label + "'s";
            else
                where = "no wall-clock origin: placed at " + ref.label + "'s";
        }
        std::printf("  %s (%s): %zu events, %s, offset %s\n", s.label.c_str(), s.path.toStdString().c_str(),
                    facts[i]->events, where.c_str(), msText(s.offsetNs).c_str());
    }
    return 0;
}

} // namespace rpcscope
