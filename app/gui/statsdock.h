#pragma once

#include "callstats.h"

#include <QWidget>
#include <cstdint>

class QAction;
class QLabel;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;
class QTimer;

namespace rpcscope {

class LatencyHistogram;
class StatsTableModel;
class TimelineModel;

// The Statistics dock's content (issue 20): the table of calls, outcomes, latency percentiles,
// attempts per call and backoff gaps (Total, then per method or per hop), and the latency histogram of the
// selected row. It follows the model's CallStats live: a timer looks at CallStats::generation() twice a
// second while the dock is visible and updates the table in place.
// A click on a row asks for a filter line that keeps that row's calls (filterRequested; the window puts it
// in the filter box, so it can be read, edited and cleared there); a click on a histogram bucket adds that
// latency range. The same click again takes it back.
class StatsDock : public QWidget
{
    Q_OBJECT
public:
    static constexpr int kRefreshMs = 500;

    explicit StatsDock(TimelineModel *model, QWidget *parent = nullptr);

    StatsTableModel *tableModel() const { return m_table; }
    QTableView *tableView() const { return m_view; }
    LatencyHistogram *histogram() const { return m_histogram; }
    // The source row whose histogram is shown (0, Total, when none is selected).
    int currentRow() const;
    // On screen: shown, and its tab (if it is one) in front. Qt moves a tab behind another off the window
    // without hiding it.
    bool inFront() const { return isVisible() && !visibleRegion().isEmpty(); }
    bool attemptLatency() const { return m_attemptLatency; }
    // Refreshes now when the stats changed (the timer does it while the dock is visible).
    void refresh(bool force = false);
    // What a click on a row (a source row) or on a histogram bucket does.
    void clickRow(int row);
    void clickBucket(int bucket);
    // The dock's actions (per method, per hop, call latency, attempt latency, clear the filter), with their
    // shortcuts; the window adds them so that they work from anywhere in it.
    QList<QAction *> shortcutActions() const;

public slots:
    // The filter line as it is now (typed or set by a click).
    void setFilterText(const QString &line);
    void setKind(StatsRow::Kind kind);
    void setAttemptLatency(bool on);

signals:
    void filterRequested(const QString &line);
    // A hint for the status bar ("calls never sent have no lane").
    void message(const QString &text);

protected:
    void showEvent(QShowEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    void updateHistogram();
    QString bucketTerm(int bucket) const;

    TimelineModel *m_model;
    StatsTableModel *m_table;
    QSortFilterProxyModel *m_sorted;
    QTableView *m_view = nullptr;
    LatencyHistogram *m_histogram;
    QLabel *m_caption;
    QSplitter *m_split;
    QTimer *m_timer;
    QAction *m_byMethod, *m_byHop, *m_callLatency, *m_attemptLatencyAction, *m_clear;
    std::uint64_t m_seenGeneration = ~std::uint64_t(0);
    bool m_attemptLatency = false;
    QString m_filterText;
};

} // namespace rpcscope
