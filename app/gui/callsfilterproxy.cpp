#include "callsfilterproxy.h"

#include "timelinemodel.h"

namespace rpcscope {

CallsFilterProxy::CallsFilterProxy(TimelineModel *model, QObject *parent)
    : QSortFilterProxyModel(parent), m_model(model)
{
    setSourceModel(model);
    // New calls and changed outcomes (a call ending UNAVAILABLE) are filtered as they arrive.
    setDynamicSortFilter(true);
}

void CallsFilterProxy::setFilterLine(const QString &line)
{
    LaneFilter f = LaneFilter::parse(line);
    f.collapsed.clear(); // folding nested calls is the timeline's own business
    if (f == m_filter) return;
    m_filter = std::move(f);
    invalidateRowsFilter();
}

bool CallsFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    // Attempts are asked about only under call rows that were kept.
    if (sourceParent.isValid() || m_filter.isEmpty()) return true;
    const auto &calls = m_model->store().calls();
    return sourceRow >= 0 && size_t(sourceRow) < calls.size() &&
           m_filter.matches(calls[size_t(sourceRow)], &m_model->store());
}

} // namespace rpcscope
