#include "statsdock.h"

#include "latencyhistogram.h"
#include "statstablemodel.h"
#include "timelinelayout.h"
#include "timelinemodel.h"

#include <QAction>
#include <QActionGroup>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace rpcscope {

namespace {

// Readable on the light and the dark palette alike.
const QColor kCallColour(0x3b7dd8);
const QColor kAttemptColour(0x00897b);

// Sorts by the raw values and keeps Total on top in either order.
class StatsSortProxy : public QSortFilterProxyModel
{
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;

protected:
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override
    {
        const bool ascending = sortOrder() == Qt::AscendingOrder;
        if (left.row() == 0) return ascending;
        if (right.row() == 0) return !ascending;
        return QSortFilterProxyModel::lessThan(left, right);
    }
};

QString joinTerms(const QString &a, const QString &b)
{
    return a.isEmpty() ? b : b.isEmpty() ? a : a + QLatin1Char(' ') + b;
}

} // namespace

StatsDock::StatsDock(TimelineModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    m_table = new StatsTableModel(this);
    m_table->setStats(&model->stats());
    m_sorted = new StatsSortProxy(this);
    m_sorted->setSourceModel(m_table);
    m_sorted->setSortRole(StatsTableModel::SortRole);
    m_sorted->setDynamicSortFilter(true);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("statsTable"));
    m_view->setModel(m_sorted);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(-1, Qt::AscendingOrder); // the stats' own order (by key) until a header is clicked
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(StatsTableModel::Name, QHeaderView::Interactive);
    m_view->horizontalHeader()->setHighlightSections(false);
    m_view->setWordWrap(false);
    m_view->setToolTip(QStringLiteral(
        "Click a row (or press Return) to show only its calls on the timeline and in the Calls table; "
        "click it again to show every call. Click a header to sort."));

    m_histogram = new LatencyHistogram(this);
    m_histogram->setObjectName(QStringLiteral("statsHistogram"));
    m_caption = new QLabel(this);
    m_caption->setObjectName(QStringLiteral("statsCaption"));

    auto button = [this](QAction *a) {
        auto *b = new QToolButton(this);
        b->setDefaultAction(a);
        b->setAutoRaise(true);
        return b;
    };
    auto action = [this](const QString &text, const QString &key, const QString &tip, bool checkable) {
        auto *a = new QAction(text, this);
        a->setShortcut(QKeySequence(key));
        a->setToolTip(QStringLiteral("%1 (%2)").arg(tip, key));
        a->setCheckable(checkable);
        return a;
    };
    m_byMethod = action(QStringLiteral("Per method"), QStringLiteral("Alt+M"),
                        QStringLiteral("A row per method after the Total"), true);
    m_byHop = action(QStringLiteral("Per hop"), QStringLiteral("Alt+H"),
                     QStringLiteral("A row per hop (capturing proxy) after the Total"), true);
    auto *kinds = new QActionGroup(this);
    kinds->addAction(m_byMethod);
    kinds->addAction(m_byHop);
    m_byMethod->setChecked(true);
    connect(m_byMethod, &QAction::triggered, this, [this] { setKind(StatsRow::Kind::Method); });
    connect(m_byHop, &QAction::triggered, this, [this] { setKind(StatsRow::Kind::Hop); });
    m_callLatency =
        action(QStringLiteral("Call latency"), QStringLiteral("Alt+C"),
               QStringLiteral("The histogram of call latency: first attempt's start to the outcome"), true);
    m_attemptLatencyAction =
        action(QStringLiteral("Attempt latency"), QStringLiteral("Alt+A"),
               QStringLiteral("The histogram of attempt latency: each attempt's start to its end"), true);
    auto *latencies = new QActionGroup(this);
    latencies->addAction(m_callLatency);
    latencies->addAction(m_attemptLatencyAction);
    m_callLatency->setChecked(true);
    connect(m_callLatency, &QAction::triggered, this, [this] { setAttemptLatency(false); });
    connect(m_attemptLatencyAction, &QAction::triggered, this, [this] { setAttemptLatency(true); });
    m_clear = action(QStringLiteral("Clear filter"), QStringLiteral("Alt+X"),
                     QStringLiteral("Show every call again"), false);
    connect(m_clear, &QAction::triggered, this, [this] {
        m_histogram->setSelectedBucket(-1);
        emit filterRequested(QString());
    });

    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(0, 0, 0, 0);
    for (QAction *a : {m_byMethod, m_byHop})
        bar->addWidget(button(a));
    bar->addSpacing(12);
    for (QAction *a : {m_callLatency, m_attemptLatencyAction})
        bar->addWidget(button(a));
    bar->addSpacing(12);
    bar->addWidget(button(m_clear));
    bar->addStretch(1);
    bar->addWidget(m_caption);

    auto *split = new QSplitter(Qt::Horizontal, this);
    m_split = split;
    split->addWidget(m_view);
    split->addWidget(m_histogram);
    // The table has two dozen columns: it takes what the histogram (its size hint) leaves.
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 0);
    split->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(bar);
    layout->addWidget(split, 1);
    // Behind the Calls tab it must not make the bottom docks any taller or wider than the Calls table
    // needs (workshop fonts would): it shrinks, the table scrolls.
    layout->setSizeConstraint(QLayout::SetNoConstraint);
    setMinimumSize(0, 0);

    connect(m_view, &QTableView::clicked, this,
            [this](const QModelIndex &i) { clickRow(m_sorted->mapToSource(i).row()); });
    // The keyboard's click: Return or Enter on the current row.
    auto *filterRow = new QAction(QStringLiteral("Show only the current row's calls"), m_view);
    filterRow->setShortcuts({QKeySequence(Qt::Key_Return), QKeySequence(Qt::Key_Enter)});
    filterRow->setShortcutContext(Qt::WidgetShortcut);
    connect(filterRow, &QAction::triggered, this, [this] { clickRow(currentRow()); });
    m_view->addAction(filterRow);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] {
        m_histogram->setSelectedBucket(-1);
        updateHistogram();
    });
    connect(m_histogram, &LatencyHistogram::bucketClicked, this, &StatsDock::clickBucket);
    // A cleared or replaced run: the table starts over (its rows were the old run's).
    connect(model, &QAbstractItemModel::modelReset, this, [this] { refresh(true); });

    m_timer = new QTimer(this);
    m_timer->setInterval(kRefreshMs);
    connect(m_timer, &QTimer::timeout, this, [this] {
        if (inFront()) refresh();
    });
    m_timer->start();
    refresh(true);
}

QList<QAction *> StatsDock::shortcutActions() const
{
    return {m_byMethod, m_byHop, m_callLatency, m_attemptLatencyAction, m_clear};
}

int StatsDock::currentRow() const
{
    const QModelIndex i = m_sorted->mapToSource(m_view->currentIndex());
    return i.isValid() ? i.row() : 0;
}

void StatsDock::refresh(bool force)
{
    const std::uint64_t generation = m_model->stats().generation();
    if (!force && generation == m_seenGeneration) return;
    m_seenGeneration = generation;
    const int rows = m_table->rowCount();
    m_table->refresh();
    // The name column fits the longest method once (ResizeToContents would measure every row each time).
    if (m_table->rowCount() != rows) m_view->resizeColumnToContents(StatsTableModel::Name);
    updateHistogram();
    const StatsRow &total = m_model->stats().total();
    m_caption->setText(total.calls ? QStringLiteral("%1 calls · %2 attempts · %3×")
                                         .arg(total.calls)
                                         .arg(total.attempts)
                                         .arg(total.amplification(), 0, 'f', 2)
                                   : QStringLiteral("no calls yet"));
}

void StatsDock::updateHistogram()
{
    const int row = currentRow();
    const StatsRow *stats = m_table->statsRow(row);
    const QString name = StatsTableModel::rowLabel(m_table->rowKind(row), m_table->rowKey(row));
    std::vector<LatencyHistogram::Series> series;
    if (stats)
        series.push_back(LatencyHistogram::fromRecorder(
            m_attemptLatency ? stats->attemptLatency : stats->callLatency,
            QStringLiteral("%1 · %2").arg(name, m_attemptLatency ? QStringLiteral("attempts")
                                                                 : QStringLiteral("calls")),
            m_attemptLatency ? kAttemptColour : kCallColour));
    m_histogram->setEmptyText(m_attemptLatency ? QStringLiteral("%1: no ended attempts yet").arg(name)
                                               : QStringLiteral("%1: no ended calls yet").arg(name));
    m_histogram->setSeries(std::move(series));
}

QString StatsDock::bucketTerm(int bucket) const
{
    const auto [lo, hi] = LatencyBuckets::rangeNs(bucket);
    return LaneFilter::latencyTerm(lo, hi, m_attemptLatency);
}

void StatsDock::clickRow(int row)
{
    const QString terms = m_table->filterTerms(row);
    const QModelIndex at = m_sorted->mapFromSource(m_table->index(row, 0));
    if (at.isValid() && m_view->currentIndex().row() != at.row()) m_view->setCurrentIndex(at);
    m_histogram->setSelectedBucket(-1);
    // The same row again, or Total: every call.
    const QString line = m_filterText.trimmed() == terms ? QString() : terms;
    if (m_table->rowKind(row) == StatsRow::Kind::Method && m_table->rowKey(row).empty() && !line.isEmpty())
        emit message(QStringLiteral("Calls that were never sent have no lane: the circuit breaker band's red "
                                    "ticks show them"));
    emit filterRequested(line);
}

void StatsDock::clickBucket(int bucket)
{
    const QString terms = m_table->filterTerms(currentRow());
    const QString line = joinTerms(terms, bucketTerm(bucket));
    if (m_filterText.trimmed() == line) {
        m_histogram->setSelectedBucket(-1);
        emit filterRequested(terms);
        return;
    }
    m_histogram->setSelectedBucket(bucket);
    emit filterRequested(line);
}

void StatsDock::setFilterText(const QString &line)
{
    m_filterText = line;
    // Edited away in the filter box: the bucket is no longer what filters.
    const int b = m_histogram->selectedBucket();
    if (b >= 0 && !line.split(QLatin1Char(' ')).contains(bucketTerm(b))) m_histogram->setSelectedBucket(-1);
}

void StatsDock::setKind(StatsRow::Kind kind)
{
    (kind == StatsRow::Kind::Hop ? m_byHop : m_byMethod)->setChecked(true);
    m_table->setKind(kind);
    updateHistogram();
}

void StatsDock::setAttemptLatency(bool on)
{
    (on ? m_attemptLatencyAction : m_callLatency)->setChecked(true);
    if (on == m_attemptLatency) return;
    m_attemptLatency = on;
    m_histogram->setSelectedBucket(-1);
    updateHistogram();
}

void StatsDock::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    // Below the timeline the dock is wide: histogram beside the table. In a side area, or floated tall,
    // the histogram goes below it.
    const Qt::Orientation o = width() > 5 * height() / 2 ? Qt::Horizontal : Qt::Vertical;
    if (m_split->orientation() == o) return;
    m_split->setOrientation(o);
    // Beside: the table takes what the histogram's size hint leaves; below: they share the height.
    m_split->setStretchFactor(1, o == Qt::Horizontal ? 0 : 1);
}

void StatsDock::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    // The table's header keeps the font it had when workshop mode scales the window's (Qt 6.4 does not
    // pass it on to a QTableView's header, unlike a QTreeView's): it follows the table by hand.
    if (event->type() == QEvent::FontChange && m_view) m_view->horizontalHeader()->setFont(m_view->font());
}

void StatsDock::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    refresh();
}

} // namespace rpcscope
