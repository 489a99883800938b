#include "mergeset.h"

#include <QFileInfo>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace rpcscope {

namespace {

// Batches a file's reader may be ahead of the merge.
constexpr size_t kReadAhead = 4;

// A file read on a thread of its own, its batches pulled one event at a time.
class FileSource : public MergeSource
{
public:
    FileSource(const QString &path, const LoadOptions &options) : m_path(path), m_options(options)
    {
        m_thread = std::thread([this] { run(); });
    }
    ~FileSource() override
    {
        {
            std::lock_guard lk(m_mu);
            m_stop = true;
        }
        m_cv.notify_all();
        m_thread.join();
    }

    const WireEvent *head() override
    {
        while (m_index >= m_current.size()) {
            std::unique_lock lk(m_mu);
            m_cv.wait(lk, [this] { return !m_queue.empty() || m_done; });
            if (m_queue.empty()) return nullptr;
            m_current = std::move(m_queue.front());
            m_queue.pop_front();
            m_index = 0;
            m_cv.notify_all();
        }
        return &m_current[m_index];
    }
    void pop() override { ++m_index; }

    // After head() returned nullptr.
    CaptureReadResult result()
    {
        std::lock_guard lk(m_mu);
        return m_result;
    }

private:
    void run()
    {
        CaptureInfo info;
        CaptureReadResult r = loadCaptureBatches(
            m_path, &info,
            [this](EventBatch &&batch) {
                if (batch.empty()) return;
                std::unique_lock lk(m_mu);
                m_cv.wait(lk, [this] { return m_queue.size() < kReadAhead || m_stop; });
                if (m_stop) return;
                m_queue.push_back(std::move(batch));
                m_cv.notify_all();
            },
            [this](std::int64_t, std::int64_t) {
                std::lock_guard lk(m_mu);
                return !m_stop;
            },
            m_options);
        std::lock_guard lk(m_mu);
        m_result = std::move(r);
        m_done = true;
        m_cv.notify_all();
    }

    const QString m_path;
    const LoadOptions m_options;
    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<EventBatch> m_queue;
    bool m_done = false, m_stop = false;
    CaptureReadResult m_result;
    EventBatch m_current;
    size_t m_index = 0;
    std::thread m_thread;
};

} // namespace

CaptureReadResult gatherMergeFacts(const QString &path, MergeFacts *facts, const LoadOptions &options)
{
    *facts = MergeFacts{};
    return loadCaptureBatches(
        path, &facts->info, [facts](EventBatch &&batch) { facts->add(batch); }, {}, options);
}

MergeResult mergeCaptureFiles(const std::vector<MergeFile> &files, const LoadOptions &options,
                              CaptureInfo *info, const CaptureBatchSink &sink, CaptureReadResult *read)
{
    std::vector<std::unique_ptr<FileSource>> sources;
    std::vector<MergeStreamInput> inputs;
    for (const MergeFile &f : files) {
        sources.push_back(std::make_unique<FileSource>(f.path, options));
        inputs.push_back({f.facts, sources.back().get(), f.label, f.offsetNs});
    }
    MergeResult r = mergeCaptureStreams(inputs, info, sink);
    *read = CaptureReadResult{};
    for (const auto &s : sources) {
        if (!r.ok) break; // stopped early: the readers were told to stop
        *read = s->result();
        if (!read->usable()) break;
    }
    return r;
}

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
