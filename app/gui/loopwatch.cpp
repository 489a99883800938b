#include "loopwatch.h"

#include "modelfeed.h"

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
    connect(&m_beat, &QTimer::timeout, this, [this] {
        if (m_sinceBeat.isValid()) m_longestBeatGap = std::max(m_longestBeatGap, m_sinceBeat.elapsed() - 5);
        m_sinceBeat.start();
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
    return QStringLiteral("longest event-loop gap %1 ms, longest wait for a repaint %2 ms, %3 repaints")
        .arg(m_longestBeatGap)
        .arg(m_longestPaintGap)
        .arg(m_paints);
}

} // namespace rpcscope
