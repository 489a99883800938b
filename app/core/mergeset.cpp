#include "mergeset.h"

#include <QFileInfo>

namespace rpcscope {

CaptureReadResult MergeSet::add(const QString &path, const CaptureProgress &progress,
                                const LoadOptions &options, const std::string &label)
{
    Source s;
    s.path = path;
    CaptureReadResult r = loadCapture(path, &s.data, progress, options);
    if (!r.usable()) return r;
    s.label = label.empty() ? uniqueLabel(defaultMergeLabel(path.toStdString(), {})) : label;
    m_sources.push_back(std::move(s));
    return r;
}

void MergeSet::add(CaptureData data, const std::string &label, const QString &path)
{
    Source s;
    s.path = path;
    s.label = uniqueLabel(label.empty() ? std::string("session") : label);
    s.data = std::move(data);
    m_sources.push_back(std::move(s));
}

void MergeSet::remove(size_t index)
{
    if (index < m_sources.size()) m_sources.erase(m_sources.begin() + std::ptrdiff_t(index));
}

void MergeSet::setOffset(size_t index, std::int64_t ns)
{
    if (index < m_sources.size()) m_sources[index].offsetNs = ns;
}

bool MergeSet::setLabel(size_t index, const std::string &label, std::string *error)
{
    if (index >= m_sources.size()) return false;
    if (label.empty()) {
        *error = "a label cannot be empty";
        return false;
    }
    for (size_t i = 0; i < m_sources.size(); ++i)
        if (i != index && m_sources[i].label == label) {
            *error = "the label '" + label + "' is taken by " +
                     (m_sources[i].path.isEmpty() ? std::string("another capture")
                                                  : m_sources[i].path.toStdString());
            return false;
        }
    m_sources[index].label = label;
    return true;
}

std::optional<size_t> MergeSet::find(const std::string &name, std::string *error) const
{
    std::vector<size_t> hits;
    for (size_t i = 0; i < m_sources.size(); ++i) {
        const Source &s = m_sources[i];
        const std::string path = s.path.toStdString();
        if (name == s.label ||
            (!path.empty() && (name == path || name == QFileInfo(s.path).fileName().toStdString())))
            hits.push_back(i);
    }
    if (hits.size() == 1) return hits.front();
    if (hits.empty()) {
        std::string known;
        for (const Source &s : m_sources)
            known += (known.empty() ? "" : ", ") + s.label;
        *error = "no input named '" + name + "' (give its path, file name or label: " + known + ")";
    } else {
        *error = "'" + name + "' names more than one input; give its label instead";
    }
    return std::nullopt;
}

std::string MergeSet::uniqueLabel(const std::string &base) const
{
    auto taken = [this](const std::string &label) {
        for (const Source &s : m_sources)
            if (s.label == label) return true;
        return false;
    };
    std::string label = base;
    for (int n = 2; taken(label); ++n)
        label = base + " (" + std::to_string(n) + ")";
    return label;
}

MergeResult MergeSet::merge(CaptureData *out, const MergeProgress &progress) const
{
    std::vector<MergeInput> inputs;
    for (const Source &s : m_sources)
        inputs.push_back({&s.data, s.label, s.offsetNs});
    return mergeCaptures(inputs, out, progress);
}

} // namespace rpcscope
