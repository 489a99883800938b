#pragma once

// The captures merged onto one timeline, with each file's label and offset (model/capturemerge.h says how
// they are aligned). The GUI's "Merged captures" dock and `rpcscope-cli merge` both keep their files here;
// re-merging after an offset changed reads nothing from disk again.

#include "captureio.h"
#include "capturemerge.h"

#include <QString>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

// Merging files without holding them, as `rpcscope-cli merge` does: each file is read twice, once for what
// places it on the common timeline (gatherMergeFacts) and once to merge it (mergeCaptureFiles), when a
// thread of its own reads it a few batches ahead of the merge. What is held: those batches and one merged
// batch, plus each file's call ids.
CaptureReadResult gatherMergeFacts(const QString &path, MergeFacts *facts, const LoadOptions &options = {});

struct MergeFile
{
    QString path;
    const MergeFacts *facts = nullptr; // gatherMergeFacts() of `path`; not owned
    std::string label;
    std::int64_t offsetNs = 0;
};

// The merge of `files` into `sink` (mergeCaptureStreams()). `read` says how reading them again went: the
// first file that could not be read, or the last one's result.
MergeResult mergeCaptureFiles(const std::vector<MergeFile> &files, const LoadOptions &options,
                              CaptureInfo *info, const CaptureBatchSink &sink, CaptureReadResult *read);

class MergeSet
{
public:
    struct Source
    {
        QString path;      // as given; empty for a session that was never a file
        std::string label; // unique in the set: shown on every lane of this file ("edge: client->A")
        std::int64_t offsetNs = 0;
        CaptureData data;
    };

    // Reads `path` (any format loadCapture reads) and appends it, labelled after its file name unless `label`
    // is given. On anything but a usable result nothing is added.
    CaptureReadResult add(const QString &path, const CaptureProgress &progress = {},
                          const LoadOptions &options = {}, const std::string &label = {});
    // Appends a capture already in memory (the session on screen when a file is added to it).
    void add(CaptureData data, const std::string &label, const QString &path = {});
    void remove(size_t index);
    void clear() { m_sources.clear(); }

    const std::vector<Source> &sources() const { return m_sources; }
    size_t size() const { return m_sources.size(); }
    bool empty() const { return m_sources.empty(); }

    void setOffset(size_t index, std::int64_t ns);
    // False with a one-line reason when the label is empty or another file has it.
    bool setLabel(size_t index, const std::string &label, std::string *error);
    // The file `name` means: its path as given, its file name, or its label. nullopt with a one-line reason
    // when none (or more than one) does.
    std::optional<size_t> find(const std::string &name, std::string *error) const;
    // A label no file has yet, after `base` ("edge", "edge (2)", ...).
    std::string uniqueLabel(const std::string &base) const;

    MergeResult merge(CaptureData *out, const MergeProgress &progress = {}) const;

private:
    std::vector<Source> m_sources;
};

} // namespace rpcscope
