#include "loopwatch.h"

#include "modelfeed.h"
#include "stallprobe.h"

#include <QEvent>
#include <QWidget>

namespace rpcscope {

LoopWatch::LoopWatch(QWidget *watched, ModelFeed *feed, QObject *parent) : QObject(parent)
{
    connect(feed, &ModelFeed::appended, this, [this] {
        if (!m_updatePending) m_sinceUpdate.start();
        m_updatePending = true;
    });
    m_beat.setTimerType(Qt::PreciseTimer);
    m_beat.setObjectName(QStringLiteral("loop watch"));
    connect(&m_beat, &QTimer::timeout, this, [this] {
        const long long cpu = StallProbe::threadCpuNs();
        if (m_sinceBeat.isValid()) {
            const qint64 gap = m_sinceBeat.elapsed() - 5;
            const qint64 gapCpu = (cpu - m_cpuAtBeat) / 1'000'000;
            if (gap > m_longestBeatGap) {
                m_longestBeatGap = gap;
                m_longestGapCpu = gapCpu;
            }
            if (gapCpu > m_mostCpu) {
                m_mostCpu = gapCpu;
                m_mostCpuGap = gap;
            }
        }
        m_sinceBeat.start();
        m_cpuAtBeat = cpu;
    });
    m_beat.start(5);
    watched->installEventFilter(this);
}

bool LoopWatch::eventFilter(QObject *watched, QEvent *event)
{
    // From the first append after a paint to the next paint: how long new events wait to be seen.
    if (event->type() == QEvent::Paint) {
        if (m_updatePending) m_longestPaintGap = std::max(m_longestPaintGap, m_sinceUpdate.elapsed());
        m_updatePending = false;
        ++m_paints;
    }
    return QObject::eventFilter(watched, event);
}

QString LoopWatch::report() const
{
    return QStringLiteral(
               "longest event-loop gap %1 ms, longest wait for a repaint %2 ms, %3 repaints; "
               "%4 ms of that gap on the CPU; most CPU between two turns %5 ms (in a gap of %6 ms)")
        .arg(m_longestBeatGap)
        .arg(m_longestPaintGap)
        .arg(m_paints)
        .arg(m_longestGapCpu)
        .arg(m_mostCpu)
        .arg(m_mostCpuGap);
}

} // namespace rpcscope
