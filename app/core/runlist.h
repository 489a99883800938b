#pragma once

#include "capturedata.h"
#include "eventlog.h"

#include <QObject>
#include <QString>
#include <optional>
#include <vector>

namespace rpcscope {

// The runs of a window, the way a terminal keeps tabs: every lab run, live capture and opened file is one.
// One of them is on stage (the TimelineModel holds it); the others are archived here as their event log,
// encoded the way a capture file keeps it, so twenty runs cost what twenty saved files would.
class RunList : public QObject
{
    Q_OBJECT
public:
    enum class Kind
    {
        Scenario,
        Capture,
        File,
        MergedFiles
    };

    struct Run
    {
        int id = 0;
        QString name;
        Kind kind = Kind::Scenario;
        QString source; // the file (or files, or hops) it came from; empty for a lab run
        bool unsaved = false;
        size_t calls = 0;
        // The service config its scenario handed the lab client (verify-policy); its calls are judged against
        // it whenever it is on stage. Empty for other runs.
        QString serviceConfig;
        // Empty while the run is on stage; otherwise everything needed to bring it back.
        std::optional<CaptureInfo> info;
        EventLog log;
    };

    explicit RunList(QObject *parent = nullptr) : QObject(parent) {}

    int count() const { return int(m_runs.size()); }
    const Run &at(int index) const { return m_runs[size_t(index)]; }
    // The run on stage, or -1 before the first one.
    int current() const { return m_current; }
    int indexOfId(int id) const;

    // A new run, appended and put on stage; its name is made unique ("retry-basic (2)").
    int add(const QString &name, Kind kind, const QString &source = {});
    // The run on stage leaves it: its batches are kept here until restore().
    void archive(int index, const CaptureInfo &info, const EventLog &log, bool unsaved, size_t calls);
    // A batch of an archived run that is still being recorded while another run is shown: kept with the
    // run's log (so it is there when the run comes back), the run unsaved, `calls` its calls now.
    void appendToArchive(int index, const EventBatch &batch, size_t calls);
    // Takes the archive of a run back for the stage (it becomes current). Empty data for a run never
    // archived.
    CaptureData restore(int index);
    // The capture of an archived run without taking it (saving a run not on stage).
    CaptureData captureOf(int index) const;
    void setCurrent(int index);
    void rename(int index, const QString &name);
    void setUnsaved(int index, bool unsaved);
    void setCalls(int index, size_t calls);
    void setKind(int index, Kind kind, const QString &source);
    void setServiceConfig(int index, const QString &json) { m_runs[size_t(index)].serviceConfig = json; }
    // Removes a run; the current index follows. Returns nothing: the window decides what goes on stage.
    void remove(int index);

    static QString kindName(Kind kind);
    QString uniqueName(const QString &name, int except = -1) const;

signals:
    // Anything changed: names, count, current, saved state.
    void changed();

private:
    std::vector<Run> m_runs;
    int m_current = -1;
    int m_nextId = 1;
};

} // namespace rpcscope
