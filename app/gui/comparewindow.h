#pragma once

#include "capturedata.h"
#include "statscompare.h"

#include <QString>
#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

class QComboBox;
class QLabel;
class QSplitter;
class QTableWidget;

namespace rpcscope {

class LatencyHistogram;
class SwimlaneView;
class TimelineModel;

// Two runs or capture files side by side (issue 20, "Compare two runs"):
// - the statistics table of statscompare.h: both values, the difference B-A and the ratio B/A per measure,
//   for the Total row and every method and hop;
// - the latency histogram of the selected row, A and B overlaid;
// - both timelines stacked, their origins aligned: zooming or panning one moves the other by the same time
//   from its own origin.
class CompareWindow : public QWidget
{
    Q_OBJECT
public:
    // A run the pickers offer: its name, and how to get its capture when it is picked.
    struct Source
    {
        QString name;
        std::function<CaptureData()> capture;
    };

    explicit CompareWindow(QWidget *parent = nullptr);
    ~CompareWindow() override;

    // The runs to pick from, keeping each side's choice when its name is still there; files opened here stay.
    void setSources(std::vector<Source> sources);
    // Picks source `index` (in the order given, files opened here after them) for side 0 (A) or 1 (B).
    void pick(int side, int index);
    // Reads a capture file for a side; false with a one-line reason.
    bool openFile(int side, const QString &path, QString *error = nullptr);

    const StatsComparison &comparison() const { return m_comparison; }
    SwimlaneView *timeline(int side) const { return m_sides[side].view; }
    TimelineModel *model(int side) const { return m_sides[side].model.get(); }
    QTableWidget *table() const { return m_table; }
    LatencyHistogram *histogram() const { return m_histogram; }
    QString histogramTitle() const;
    // The label a side is compared under (its run's or file's name).
    QString label(int side) const { return m_sides[side].label; }

public slots:
    // Both timelines over the same time from their origins: as long as the longer run.
    void fitBoth();
    void swapSides();
    void setWorkshop(bool on);
    void setDark(bool on);

signals:
    // The table, histogram and timelines show a new pair.
    void compared();

private:
    struct Side
    {
        QComboBox *picker = nullptr;
        QLabel *title = nullptr;
        SwimlaneView *view = nullptr;
        std::unique_ptr<TimelineModel> model;
        QString label;
        bool loaded = false;
    };
    struct FileSource
    {
        QString name;
        CaptureData data;
    };
    void rebuildPickers();
    void load(int side, int index);
    void load(int side, const CaptureData &data, const QString &label);
    void refresh();
    void fillTable();
    void showHistogram();
    void followRange(int from);
    void openInteractive(int side);
    QWidget *buildTimelines();

    std::vector<Source> m_sources;
    std::vector<std::shared_ptr<FileSource>> m_files;
    Side m_sides[2];
    StatsComparison m_comparison;
    QTableWidget *m_table = nullptr;
    LatencyHistogram *m_histogram = nullptr;
    QLabel *m_histogramTitle = nullptr;
    std::vector<std::pair<int, int>> m_tableRows; // table row -> (comparison row, value or -1 for a title)
    bool m_syncing = false;
    bool m_workshop = false;
    bool m_dark = false;
    QFont m_baseFont;
};

} // namespace rpcscope
