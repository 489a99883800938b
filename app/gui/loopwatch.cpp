#include "loopwatch.h"

#include "modelfeed.h"
#include "stallprobe.h"

#include <QEvent>
#include <QWidget>

namespace rpcscope {

LoopWatch::LoopWatch(QWidget *watched, ModelFeed *feed, QObject *parent) : QObject(parent)
{
    connect(feed, &ModelFeed::appended, this, [this] {
        m_appended = true; // the gap this append is in counts as the burst's
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
            m_whole.add(gap, gapCpu);
            if (m_appended) m_sinceAppend.add(gap, gapCpu);
        }
        m_sinceBeat.start();
        m_cpuAtBeat = cpu;
    });
    m_beat.start(5);
    watched->installEventFilter(this);
}

void LoopWatch::Gaps::add(qint64 gap, qint64 cpu)
{
    if (gap > longest) {
        longest = gap;
        longestCpu = cpu;
    }
    if (cpu > mostCpu) {
        mostCpu = cpu;
        mostCpuGap = gap;
    }
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
    // Without any append (an idle window), the whole run.
    const Gaps &g = m_appended ? m_sinceAppend : m_whole;
    return QStringLiteral(
               "longest event-loop gap %1 ms, longest wait for a repaint %2 ms, %3 repaints; "
               "%4 ms of that gap on the CPU; most CPU between two turns %5 ms (in a gap of %6 ms)%7; "
               "with the window's start: longest gap %8 ms (%9 ms on the CPU), most CPU between two turns "
               "%10 ms")
        .arg(g.longest)
        .arg(m_longestPaintGap)
        .arg(m_paints)
        .arg(g.longestCpu)
        .arg(g.mostCpu)
        .arg(g.mostCpuGap)
        .arg(m_appended ? QStringLiteral(" since the first append") : QString())
        .arg(m_whole.longest)
        .arg(m_whole.longestCpu)
        .arg(m_whole.mostCpu);
}

} // namespace rpcscope
