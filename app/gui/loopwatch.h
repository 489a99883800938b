#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace rpcscope {

class ModelFeed;

// How well the GUI thread keeps answering (RPCSCOPE_LOOP_REPORT=1, for scripts/bench.sh --burst): the longest
// gap between turns of its event loop (a 5 ms timer that fires late by that much) and from an append to
// the model to the next repaint of the timeline, each gap's wall time beside the GUI thread's CPU time in it.
// The figures count from the first append on (the window's own start, its first layout and paint, is no part
// of a burst: 40 ms of CPU in one turn on a quiet machine), and once more over the whole run. The numbers are
// only gathered; report() says them.
class LoopWatch : public QObject
{
    Q_OBJECT
public:
    LoopWatch(QWidget *watched, ModelFeed *feed, QObject *parent = nullptr);
    // One line: the longest loop gap and repaint gap, in ms, and how many repaints there were.
    QString report() const;

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    QTimer m_beat;
    QElapsedTimer m_sinceBeat, m_sincePaint;
    // On a shared machine a gap's wall time is the scheduler's as much as the window's: the GUI thread's CPU
    // time in the longest gap, and the gap in which it spent the most.
    struct Gaps
    {
        qint64 longest = 0, longestCpu = 0, mostCpu = 0, mostCpuGap = 0;
        void add(qint64 gap, qint64 cpu);
    };
    Gaps m_sinceAppend, m_whole; // from the first append on; the whole run, the window's start included
    bool m_appended = false;
    qint64 m_longestPaintGap = 0, m_paints = 0;
    long long m_cpuAtBeat = 0;
    bool m_updatePending = false;
    QElapsedTimer m_sinceUpdate;
};

} // namespace rpcscope
