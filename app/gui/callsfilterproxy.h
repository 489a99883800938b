#pragma once

#include "timelinelayout.h"

#include <QSortFilterProxyModel>

namespace rpcscope {

class TimelineModel;

// The Calls dock's rows, filtered like the timeline's lanes: a call row stays when the timeline's filter
// keeps its lane, and its attempt rows stay with it.
class CallsFilterProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    explicit CallsFilterProxy(TimelineModel *model, QObject *parent = nullptr);

    const LaneFilter &laneFilter() const { return m_filter; }

public slots:
    // The filter box's line, parsed as the timeline parses it.
    void setFilterLine(const QString &line);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;

private:
    TimelineModel *m_model;
    LaneFilter m_filter;
};

} // namespace rpcscope
