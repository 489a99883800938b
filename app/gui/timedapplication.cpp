#include "timedapplication.h"

#include "stallprobe.h"

#include <QElapsedTimer>
#include <QEvent>
#include <cstdio>

namespace rpcscope {

TimedApplication::TimedApplication(int &argc, char **argv)
    : QApplication(argc, argv), m_thresholdMs(StallProbe::threshold())
{
}

bool TimedApplication::notify(QObject *receiver, QEvent *event)
{
    // Only the outermost delivery: nested ones (a send inside a slot) are part of its time.
    if (m_thresholdMs < 0 || m_depth > 0) return QApplication::notify(receiver, event);
    QElapsedTimer t;
    t.start();
    const long long cpu = StallProbe::threadCpuNs();
    ++m_depth;
    const int type = int(event->type());
    const char *cls = receiver->metaObject()->className();
    const bool handled = QApplication::notify(receiver, event);
    --m_depth;
    if (const qint64 ms = t.elapsed(); ms >= m_thresholdMs)
        std::fprintf(stderr, "rpcscope: stall: event %d to %s took %lld ms (%lld ms on the CPU)\n", type, cls,
                     static_cast<long long>(ms), (StallProbe::threadCpuNs() - cpu) / 1000000);
    return handled;
}

} // namespace rpcscope
