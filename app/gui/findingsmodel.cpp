#include "findingsmodel.h"

#include <algorithm>

namespace rpcscope {

FindingsModel::Row FindingsModel::Row::of(const PolicyCheck::Finding &f)
{
    Row r;
    r.serial = f.serial;
    r.call = QString::fromStdString(f.call);
    r.method = QString::fromStdString(f.method);
    r.verdict = QString::fromLatin1(RetryVerdict::title(f.verdict.kind));
    r.why = QString::fromStdString(f.verdict.reason);
    r.kind = f.verdict.kind;
    r.attempt = f.verdict.attempt;
    return r;
}

int FindingsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int FindingsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : kColumns;
}

QVariant FindingsModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || size_t(index.row()) >= m_rows.size()) return {};
    const Row &r = m_rows[size_t(index.row())];
    if (role == Qt::ToolTipRole && index.column() == WhyColumn) return r.why;
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
    case CallColumn:
        return r.call;
    case MethodColumn:
        return r.method;
    case VerdictColumn:
        return r.verdict;
    case WhyColumn:
        return r.why;
    }
    return {};
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case CallColumn:
        return QStringLiteral("Call");
    case MethodColumn:
        return QStringLiteral("Method");
    case VerdictColumn:
        return QStringLiteral("Verdict");
    case WhyColumn:
        return QStringLiteral("Why");
    }
    return {};
}

size_t FindingsModel::rowOf(std::uint64_t serial) const
{
    return size_t(std::lower_bound(m_rows.begin(), m_rows.end(), serial,
                                   [](const Row &r, std::uint64_t s) { return r.serial < s; }) -
                  m_rows.begin());
}

void FindingsModel::reset(std::vector<Row> rows)
{
    beginResetModel();
    m_rows.assign(std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    m_pending.clear();
    endResetModel();
}

void FindingsModel::remove(const std::vector<std::uint64_t> &serials)
{
    // Runs of rows, the last run first so that the rows before it keep their numbers.
    std::vector<std::pair<size_t, size_t>> runs; // [first, last]
    for (std::uint64_t s : serials) {
        const size_t r = rowOf(s);
        if (r >= m_rows.size() || m_rows[r].serial != s) continue;
        if (!runs.empty() && runs.back().second + 1 == r)
            runs.back().second = r;
        else
            runs.emplace_back(r, r);
    }
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        beginRemoveRows({}, int(it->first), int(it->second));
        m_rows.erase(m_rows.begin() + std::ptrdiff_t(it->first),
                     m_rows.begin() + std::ptrdiff_t(it->second + 1));
        endRemoveRows();
    }
}

void FindingsModel::put(Row r)
{
    if (!m_pending.empty() || m_rows.empty() || m_rows.back().serial < r.serial) {
        m_pending.push_back(std::move(r));
        return;
    }
    const size_t at = rowOf(r.serial);
    if (at < m_rows.size() && m_rows[at].serial == r.serial) {
        m_rows[at] = std::move(r);
        emit dataChanged(index(int(at), 0), index(int(at), kColumns - 1));
        return;
    }
    beginInsertRows({}, int(at), int(at));
    m_rows.insert(m_rows.begin() + std::ptrdiff_t(at), std::move(r));
    endInsertRows();
}

void FindingsModel::flush()
{
    if (m_pending.empty()) return;
    beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + m_pending.size()) - 1);
    for (Row &r : m_pending)
        m_rows.push_back(std::move(r));
    m_pending.clear();
    endInsertRows();
}

} // namespace rpcscope
