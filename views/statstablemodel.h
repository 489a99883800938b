#pragma once

#include "callstats.h"

#include <QAbstractTableModel>
#include <string>
#include <vector>

namespace rpcscope {

// The Statistics dock's table over a CallStats: the Total row, then one row per method or per hop (one kind
// at a time). refresh() follows the stats in place: values change with one dataChanged, rows for new methods
// or hops are inserted, and only a stats that lost rows (cleared, another run shown) resets the model. Cells
// are computed when asked for, so a refresh costs the visible cells only.
class StatsTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Name,
        Calls,
        Attempts,
        Amplification,
        OkFirstTry, // the CallCategory columns, in its order
        OkAfterRetry,
        FailedAfterRetries,
        FailedNoRetry,
        FailedFast,
        DeadlineExceeded,
        InFlight,
        CallP50,
        CallP90,
        CallP99,
        CallP999,
        CallMax,
        AttemptP50,
        AttemptP99,
        AttemptMax,
        AttemptsPerCall,
        GapsWithin,
        GapsEarly,
        GapsLate,
        GapsNoPolicy,
        GapsTransparent,
        ColumnCount
    };
    // The raw value behind a cell (a count, ns, a ratio), for sorting: numbers sort as numbers.
    static constexpr int SortRole = Qt::UserRole + 1;

    explicit StatsTableModel(QObject *parent = nullptr);

    // The stats to show (not owned; may be null). Resets the model.
    void setStats(const CallStats *stats);
    const CallStats *stats() const { return m_stats; }
    // Method rows or hop rows after the Total row. Resets the model.
    void setKind(StatsRow::Kind kind);
    StatsRow::Kind kind() const { return m_kind; }
    // Follows the stats: see the class comment.
    void refresh();

    // Row r's kind and key, and its StatsRow (null when the stats no longer have it).
    StatsRow::Kind rowKind(int r) const;
    std::string rowKey(int r) const;
    const StatsRow *statsRow(int r) const;
    // How the rest of the window names a row: "Total", "/pkg.Svc/Method", "(never sent)" for the fast-failed
    // calls' method row "", "(main proxy)" for hop "".
    static QString rowLabel(StatsRow::Kind kind, const std::string &key);
    // The row that counts the calls of every method (hop) past CallStats::maxKeyedRows().
    static bool isOtherRow(StatsRow::Kind kind, const std::string &key);
    // The filter terms that keep a row's calls ("" for Total): "method:/a.B/C", "hop:edge", "hop:=". The key
    // is matched exactly when another key contains it, as method: and hop: match parts.
    QString filterTerms(int r) const;
    // "1:12 2:5 3:3": calls by their number of attempts.
    static QString attemptsText(const StatsRow &row);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct RowRef
    {
        StatsRow::Kind kind;
        std::string key;
    };
    void resetRows();
    std::vector<RowRef> currentRows() const;
    QVariant value(const StatsRow &row, int column) const;

    const CallStats *m_stats = nullptr;
    StatsRow::Kind m_kind = StatsRow::Kind::Method;
    std::vector<RowRef> m_rows;
};

} // namespace rpcscope
