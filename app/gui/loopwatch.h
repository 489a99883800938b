#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace rpcscope {

class ModelFeed;

// How well the GUI thread keeps answering (RPCSCOPE_LOOP_REPORT=1, for scripts/bench.sh --burst): the longest
// gap between turns of its event loop (a 5 ms timer that fires late by that much) and from an append to
// the model to the next repaint of the timeline. The numbers are only gathered; report() says them.
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
    qint64 m_longestBeatGap = 0, m_longestPaintGap = 0, m_paints = 0;
    bool m_updatePending = false;
    QElapsedTimer m_sinceUpdate;
};

} // namespace rpcscope
