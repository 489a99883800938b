#include "runlist.h"

namespace rpcscope {

int RunList::indexOfId(int id) const
{
    for (size_t i = 0; i < m_runs.size(); ++i)
        if (m_runs[i].id == id) return int(i);
    return -1;
}

QString RunList::uniqueName(const QString &name, int except) const
{
    const QString base = name.trimmed().isEmpty() ? QStringLiteral("run") : name.trimmed();
    auto taken = [&](const QString &n) {
        for (size_t i = 0; i < m_runs.size(); ++i)
            if (int(i) != except && m_runs[i].name == n) return true;
        return false;
    };
    if (!taken(base)) return base;
    for (int n = 2;; ++n) {
        const QString candidate = QStringLiteral("%1 (%2)").arg(base).arg(n);
        if (!taken(candidate)) return candidate;
    }
}

int RunList::add(const QString &name, Kind kind, const QString &source)
{
    Run run;
    run.id = m_nextId++;
    run.name = uniqueName(name);
    run.kind = kind;
    run.source = source;
    m_runs.push_back(std::move(run));
    m_current = count() - 1;
    emit changed();
    return m_current;
}

void RunList::archive(int index, const CaptureInfo &info, const EventLog &log, bool unsaved, size_t calls)
{
    Run &r = m_runs[size_t(index)];
    r.info = info;
    r.log = log;
    r.unsaved = unsaved;
    r.calls = calls;
    emit changed();
}

void RunList::appendToArchive(int index, const EventBatch &batch, size_t calls)
{
    Run &r = m_runs[size_t(index)];
    r.log.append(batch);
    // No changed() for every batch: the run bar polls the counts.
    r.unsaved = true;
    r.calls = calls;
}

CaptureData RunList::captureOf(int index) const
{
    const Run &r = m_runs[size_t(index)];
    CaptureData data;
    if (!r.info) return data;
    data.info = *r.info;
    data.batches.reserve(r.log.batchCount());
    for (size_t i = 0; i < r.log.batchCount(); ++i)
        data.batches.push_back(r.log.batch(i));
    return data;
}

CaptureData RunList::restore(int index)
{
    CaptureData data = captureOf(index);
    Run &r = m_runs[size_t(index)];
    r.info.reset();
    r.log = EventLog();
    m_current = index;
    emit changed();
    return data;
}

void RunList::setCurrent(int index)
{
    if (m_current == index) return;
    m_current = index;
    emit changed();
}

void RunList::rename(int index, const QString &name)
{
    const QString unique = uniqueName(name, index);
    if (m_runs[size_t(index)].name == unique) return;
    m_runs[size_t(index)].name = unique;
    emit changed();
}

void RunList::setUnsaved(int index, bool unsaved)
{
    if (m_runs[size_t(index)].unsaved == unsaved) return;
    m_runs[size_t(index)].unsaved = unsaved;
    emit changed();
}

void RunList::setCalls(int index, size_t calls)
{
    if (m_runs[size_t(index)].calls == calls) return;
    m_runs[size_t(index)].calls = calls;
    emit changed();
}

void RunList::setKind(int index, Kind kind, const QString &source)
{
    m_runs[size_t(index)].kind = kind;
    m_runs[size_t(index)].source = source;
    emit changed();
}

void RunList::remove(int index)
{
    m_runs.erase(m_runs.begin() + index);
    if (m_current == index)
        m_current = -1;
    else if (m_current > index)
        --m_current;
    emit changed();
}

QString RunList::kindName(Kind kind)
{
    switch (kind) {
    case Kind::Scenario:
        return QStringLiteral("lab scenario");
    case Kind::Capture:
        return QStringLiteral("live capture");
    case Kind::File:
        return QStringLiteral("opened file");
    case Kind::MergedFiles:
        return QStringLiteral("merged files");
    }
    return {};
}

} // namespace rpcscope
