#pragma once

#include "policycheck.h"

#include <QAbstractTableModel>
#include <cstdint>
#include <deque>
#include <vector>

namespace rpcscope {

// The Policy check's findings as the dock lists them: a row per call that does not conform, in call (serial)
// order, with the call, its method, the verdict and why. Rows are changed one by one as the check says
// (LivePolicyCheck::findingChanges), so that a selection, the current row and the scroll position stay while
// calls come in, and a refresh costs the rows that changed: a table view takes rows added at the end or
// removed at the start without laying out the others (a tree view lays out every row after each insert).
class FindingsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        CallColumn,
        MethodColumn,
        VerdictColumn,
        WhyColumn,
        kColumns
    };
    struct Row
    {
        std::uint64_t serial = 0;
        QString call, method, verdict, why;
        RetryVerdict::Kind kind = RetryVerdict::Kind::Conforms;
        int attempt = 0; // RetryVerdict::attempt: 1-based, 0 for the call as a whole
        static Row of(const PolicyCheck::Finding &f);
    };

    using QAbstractTableModel::QAbstractTableModel;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const Row &row(int r) const { return m_rows[size_t(r)]; }
    // All rows anew (a reset: the view forgets its selection).
    void reset(std::vector<Row> rows);
    // Removes the rows of these serials (ascending), runs of neighbouring rows at once.
    void remove(const std::vector<std::uint64_t> &serials);
    // The row of f's serial rewritten, or inserted at its place; rows past the last are gathered and come in
    // at once with flush().
    void put(Row r);
    void flush();

private:
    std::deque<Row> m_rows;
    std::vector<Row> m_pending; // put() after the last row, in order
    size_t rowOf(std::uint64_t serial) const;
};

} // namespace rpcscope
