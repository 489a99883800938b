#include "comparewindow.h"

#include "captureio.h"
#include "latencyhistogram.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

namespace rpcscope {

namespace {

const char *const kSideName[2] = {"A", "B"};

QTableWidgetItem *cell(const QString &text, bool right = true)
{
    auto *item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (right) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

CompareWindow::CompareWindow(QWidget *parent) : QWidget(parent, Qt::Window)
{
    setObjectName(QStringLiteral("compareWindow"));
    setWindowTitle(QStringLiteral("rpcscope — compare two runs"));
    m_baseFont = font();
    auto *layout = new QVBoxLayout(this);

    // A: [run ▾] [Open…]   B: [run ▾] [Open…]   [Swap] [Fit]
    auto *pickRow = new QHBoxLayout;
    for (int side = 0; side < 2; ++side) {
        Side &s = m_sides[side];
        auto *name = new QLabel(QString::fromLatin1(kSideName[side]), this);
        QFont bold = name->font();
        bold.setBold(true);
        name->setFont(bold);
        pickRow->addWidget(name);
        s.picker = new QComboBox(this);
        s.picker->setObjectName(QStringLiteral("pick%1").arg(QLatin1String(kSideName[side])));
        s.picker->setMinimumContentsLength(18);
        s.picker->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        s.picker->setToolTip(
            QStringLiteral("The run or file compared as %1 (Alt+%1)").arg(QLatin1String(kSideName[side])));
        name->setBuddy(s.picker);
        name->setText(QStringLiteral("&%1").arg(QLatin1String(kSideName[side])));
        connect(s.picker, &QComboBox::activated, this, [this, side](int i) { pick(side, i); });
        pickRow->addWidget(s.picker, 1);
        auto *open = new QToolButton(this);
        open->setText(QStringLiteral("Open…"));
        open->setObjectName(QStringLiteral("open%1").arg(QLatin1String(kSideName[side])));
        const QString key = side == 0 ? QStringLiteral("Ctrl+1") : QStringLiteral("Ctrl+2");
        open->setShortcut(QKeySequence(key));
        open->setToolTip(
            QStringLiteral("Compare a capture file as %1 (%2)").arg(QLatin1String(kSideName[side]), key));
        connect(open, &QToolButton::clicked, this, [this, side] { openInteractive(side); });
        pickRow->addWidget(open);
        pickRow->addSpacing(12);
    }
    auto *swap = new QPushButton(QStringLiteral("Swap"), this);
    swap->setObjectName(QStringLiteral("swap"));
    swap->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+X")));
    swap->setToolTip(QStringLiteral("Swap A and B (Ctrl+Shift+X)"));
    connect(swap, &QPushButton::clicked, this, &CompareWindow::swapSides);
    pickRow->addWidget(swap);
    auto *fit = new QPushButton(QStringLiteral("Fit both"), this);
    fit->setObjectName(QStringLiteral("fitBoth"));
    fit->setShortcut(QKeySequence(QStringLiteral("Ctrl+0")));
    fit->setToolTip(
        QStringLiteral("Show both timelines whole, over the same time from their origins (Ctrl+0)"));
    connect(fit, &QPushButton::clicked, this, &CompareWindow::fitBoth);
    pickRow->addWidget(fit);
    layout->addLayout(pickRow);

    m_table = new QTableWidget(0, 5, this);
    m_table->setObjectName(QStringLiteral("compareTable"));
    m_table->setHorizontalHeaderLabels({QStringLiteral("Measure"), QStringLiteral("A"), QStringLiteral("B"),
                                        QStringLiteral("B−A"), QStringLiteral("B/A")});
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(QFontMetrics(m_table->font()).height() + 6);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int c = 1; c < 5; ++c)
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_table->setToolTip(QStringLiteral("Both runs' statistics per row: the difference B−A and the ratio B/A "
                                       "(— when A is 0). Select a row for its latency histogram"));
    connect(m_table, &QTableWidget::currentCellChanged, this, [this] { showHistogram(); });
    // The Statistics dock's histogram, A and B side by side in each bucket, under the row's title.
    auto *histogramPane = new QWidget(this);
    auto *histogramLayout = new QVBoxLayout(histogramPane);
    histogramLayout->setContentsMargins(0, 0, 0, 0);
    m_histogramTitle = new QLabel(histogramPane);
    m_histogram = new LatencyHistogram(histogramPane);
    m_histogram->setObjectName(QStringLiteral("compareHistogram"));
    m_histogram->setEmptyText(QStringLiteral("No ended calls in this row"));
    histogramLayout->addWidget(m_histogramTitle);
    histogramLayout->addWidget(m_histogram, 1);

    auto *top = new QSplitter(Qt::Horizontal, this);
    top->addWidget(m_table);
    top->addWidget(histogramPane);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(buildTimelines());
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    resize(1280, 900);
}

CompareWindow::~CompareWindow() = default;

QWidget *CompareWindow::buildTimelines()
{
    auto *box = new QWidget(this);
    auto *v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    auto *lanes = new QSplitter(Qt::Vertical, box);
    for (int side = 0; side < 2; ++side) {
        Side &s = m_sides[side];
        s.model = std::make_unique<TimelineModel>();
        auto *pane = new QWidget(lanes);
        auto *pv = new QVBoxLayout(pane);
        pv->setContentsMargins(0, 0, 0, 0);
        pv->setSpacing(2);
        s.title = new QLabel(pane);
        s.title->setObjectName(QStringLiteral("title%1").arg(QLatin1String(kSideName[side])));
        pv->addWidget(s.title);
        s.view = new SwimlaneView(s.model.get(), pane);
        s.view->setObjectName(QStringLiteral("timeline%1").arg(QLatin1String(kSideName[side])));
        s.view->setToolTip(QStringLiteral("Run %1's timeline, aligned with the other at their origins: zoom "
                                          "or pan either and both follow")
                               .arg(QLatin1String(kSideName[side])));
        pv->addWidget(s.view, 1);
        lanes->addWidget(pane);
        connect(&s.view->zoomControl(), &ZoomControl::rangeChanged, this,
                [this, side] { followRange(side); });
    }
    v->addWidget(lanes);
    return box;
}

void CompareWindow::setSources(std::vector<Source> sources)
{
    // The run list says it changed with every batch a run records: the pickers change only with the names.
    const bool sameNames = std::equal(sources.begin(), sources.end(), m_sources.begin(), m_sources.end(),
                                      [](const Source &x, const Source &y) { return x.name == y.name; });
    m_sources = std::move(sources);
    if (!sameNames) rebuildPickers();
}

void CompareWindow::rebuildPickers()
{
    for (Side &s : m_sides) {
        const QString was = s.picker->currentText();
        s.picker->clear();
        for (const Source &src : m_sources)
            s.picker->addItem(src.name);
        for (const auto &f : m_files)
            s.picker->addItem(f->name);
        const int again = s.picker->findText(was);
        s.picker->setCurrentIndex(again);
    }
}

void CompareWindow::pick(int side, int index)
{
    const int total = int(m_sources.size() + m_files.size());
    if (side < 0 || side > 1 || index < 0 || index >= total) return;
    m_sides[side].picker->setCurrentIndex(index);
    load(side, index);
    refresh();
}

void CompareWindow::load(int side, int index)
{
    if (index < int(m_sources.size())) {
        const Source &src = m_sources[size_t(index)];
        load(side, src.capture(), src.name);
    } else {
        const FileSource &f = *m_files[size_t(index) - m_sources.size()];
        load(side, f.data, f.name);
    }
}

void CompareWindow::load(int side, const CaptureData &data, const QString &label)
{
    Side &s = m_sides[side];
    s.label = label;
    s.model->replay(data); // its statistics too
    s.loaded = true;
    s.title->setText(QStringLiteral("<b>%1</b>  %2 — %3 calls, %4 attempts")
                         .arg(QLatin1String(kSideName[side]), label.toHtmlEscaped())
                         .arg(s.model->stats().total().calls)
                         .arg(s.model->stats().total().attempts));
}

bool CompareWindow::openFile(int side, const QString &path, QString *error)
{
    auto file = std::make_shared<FileSource>();
    const CaptureReadResult r = loadCapture(path, &file->data);
    if (!r.usable()) {
        if (error) *error = QString::fromStdString(r.message);
        return false;
    }
    file->name = QFileInfo(path).fileName();
    m_files.push_back(file);
    rebuildPickers();
    pick(side, int(m_sources.size() + m_files.size()) - 1);
    return true;
}

void CompareWindow::openInteractive(int side)
{
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Compare a capture as %1").arg(QLatin1String(kSideName[side])), QString(),
        QStringLiteral("Captures (*.rpcscope *.pcap *.pcapng);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!openFile(side, path, &error)) QMessageBox::warning(this, QStringLiteral("Cannot compare"), error);
}

void CompareWindow::swapSides()
{
    // Each view keeps its model: the data moves, by loading each side with the other's choice.
    const int a = m_sides[0].picker->currentIndex(), b = m_sides[1].picker->currentIndex();
    if (a < 0 || b < 0) return;
    m_sides[0].picker->setCurrentIndex(b);
    m_sides[1].picker->setCurrentIndex(a);
    load(0, b);
    load(1, a);
    refresh();
}

void CompareWindow::refresh()
{
    if (!m_sides[0].loaded || !m_sides[1].loaded) return;
    m_comparison = compareStats(m_sides[0].model->stats(), m_sides[1].model->stats(),
                                m_sides[0].label.toStdString(), m_sides[1].label.toStdString());
    fillTable();
    fitBoth();
    emit compared();
}

void CompareWindow::fillTable()
{
    m_table->setRowCount(0);
    m_tableRows.clear();
    QFont bold = m_table->font();
    bold.setBold(true);
    for (size_t r = 0; r < m_comparison.rows.size(); ++r) {
        const CompareRow &row = m_comparison.rows[r];
        const int at = m_table->rowCount();
        m_table->insertRow(at);
        QString title = QString::fromStdString(row.title());
        if (!(row.inA && row.inB))
            title += row.inA ? QStringLiteral("  (only in A)") : QStringLiteral("  (only in B)");
        auto *t = cell(title, false);
        t->setFont(bold);
        m_table->setItem(at, 0, t);
        m_table->setSpan(at, 0, 1, 5);
        m_tableRows.emplace_back(int(r), -1);
        for (size_t k = 0; k < row.values.size(); ++k) {
            const CompareValue &v = row.values[k];
            const int i = m_table->rowCount();
            m_table->insertRow(i);
            m_table->setItem(i, 0, cell(QStringLiteral("    ") + QString::fromUtf8(v.label), false));
            m_table->setItem(i, 1, cell(QString::fromStdString(formatCompareValue(v.unit, v.a))));
            m_table->setItem(i, 2, cell(QString::fromStdString(formatCompareValue(v.unit, v.b))));
            m_table->setItem(i, 3,
                             cell(QString::fromStdString(formatCompareValue(v.unit, v.difference(), true))));
            m_table->setItem(i, 4, cell(QString::fromStdString(formatRatio(v.ratio()))));
            m_tableRows.emplace_back(int(r), int(k));
        }
    }
    m_table->setCurrentCell(0, 0);
    showHistogram();
}

void CompareWindow::showHistogram()
{
    const int at = m_table->currentRow();
    if (at < 0 || at >= int(m_tableRows.size()) || m_comparison.rows.empty()) return;
    const auto [r, k] = m_tableRows[size_t(at)];
    const CompareRow &row = m_comparison.rows[size_t(r)];
    // An attempt measure shows the attempts' latencies; anything else the calls'.
    const bool attempts = k >= 0 && QByteArray(row.values[size_t(k)].key).startsWith("attempt_");
    // A blue, B orange: apart on a light and on a dark window.
    const QColor colours[2] = {m_dark ? QColor(0x6a, 0xa5, 0xff) : QColor(0x2b, 0x6c, 0xc4),
                               m_dark ? QColor(0xff, 0xa6, 0x4d) : QColor(0xd9, 0x6c, 0x0c)};
    std::vector<LatencyHistogram::Series> series;
    for (int side = 0; side < 2; ++side) {
        const StatsRow *s = m_sides[side].model->stats().find(row.kind, row.key);
        const QString label = m_sides[side].label;
        if (s)
            series.push_back(LatencyHistogram::fromRecorder(attempts ? s->attemptLatency : s->callLatency,
                                                            label, colours[side]));
        else
            series.push_back({label, colours[side], {}, {}, {}});
    }
    m_histogram->setSeries(std::move(series));
    m_histogramTitle->setText(QStringLiteral("%1 latency — %2")
                                  .arg(attempts ? QStringLiteral("Attempt") : QStringLiteral("Call"),
                                       QString::fromStdString(row.title())));
}

QString CompareWindow::histogramTitle() const
{
    return m_histogramTitle->text();
}

void CompareWindow::fitBoth()
{
    if (!m_sides[0].loaded || !m_sides[1].loaded) return;
    // From each origin to the later of the two ends, so that the same x is the same time into each run.
    qint64 span = ZoomControl::kMinRangeNs;
    for (const Side &s : m_sides) {
        const TimelineStore &store = s.model->store();
        span = std::max(span, s.view->timelinePainter().fullRange().second - store.originNs());
    }
    m_syncing = true;
    for (const Side &s : m_sides) {
        const qint64 origin = s.model->store().originNs();
        s.view->zoomControl().setFollow(false);
        s.view->setRange(origin, origin + span);
    }
    m_syncing = false;
}

void CompareWindow::followRange(int from)
{
    if (m_syncing || !m_sides[0].loaded || !m_sides[1].loaded) return;
    const Side &src = m_sides[from];
    const Side &dst = m_sides[1 - from];
    const qint64 shift = dst.model->store().originNs() - src.model->store().originNs();
    m_syncing = true;
    dst.view->zoomControl().setVisibleRange(src.view->zoomControl().rangeStart() + shift,
                                            src.view->zoomControl().rangeEnd() + shift);
    dst.view->update();
    m_syncing = false;
}

void CompareWindow::setWorkshop(bool on)
{
    m_workshop = on;
    QFont f = m_baseFont;
    if (on) f.setPointSizeF(f.pointSizeF() * 1.5);
    setFont(f);
    m_table->verticalHeader()->setDefaultSectionSize(QFontMetrics(f).height() + 6);
    for (Side &s : m_sides)
        s.view->setWorkshop(on);
}

void CompareWindow::setDark(bool on)
{
    m_dark = on;
    for (Side &s : m_sides)
        s.view->setDark(on);
    showHistogram(); // its series' colours follow the look
}

} // namespace rpcscope
