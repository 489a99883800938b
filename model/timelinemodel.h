#pragma once

#include "timelinestore.h"

#include <QAbstractItemModel>

namespace rpcscope {

// A two-level tree over the TimelineStore: calls at the top, their attempts below. Rows are published in
// batches: the store is updated first, then the rows it grew are announced with one beginInsertRows per
// parent, the way Wireshark's packet list publishes its visible rows.
class TimelineModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column { ColName, ColMethod, ColStatus, ColStart, ColDuration, ColumnCount };
    enum Role { StartNsRole = Qt::UserRole + 1, EndNsRole, StatusCodeRole };

    explicit TimelineModel(QObject *parent = nullptr);

    const TimelineStore &store() const { return m_store; }
    void setOrigin(qint64 steadyNs, qint64 wallNs);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

public slots:
    void appendBatch(const rpcscope::EventBatch &batch);
    void clear();

signals:
    // Emitted once per applied batch, after the rows are published.
    void timelineChanged();

private:
    TimelineStore m_store;
    std::vector<int> m_publishedAttempts; // per published call
};

} // namespace rpcscope
