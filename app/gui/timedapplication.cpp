#include "timedapplication.h"

#include "stallprobe.h"

#include <QElapsedTimer>
#include <QEvent>
#include <QTimer>
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
    // A timer says which one it is (its name, else its interval): "event 1 to QTimer" named none of them.
    QByteArray which;
    if (const auto *timer = qobject_cast<QTimer *>(receiver)) {
        which = timer->objectName().isEmpty()
                    ? QByteArray(" every ") + QByteArray::number(timer->interval()) + " ms"
                    : " '" + timer->objectName().toUtf8() + "'";
        if (const QObject *parent = timer->parent())
            which += QByteArray(" of ") + parent->metaObject()->className();
    }
    const bool handled = QApplication::notify(receiver, event);
    --m_depth;
    if (const qint64 ms = t.elapsed(); ms >= m_thresholdMs)
        std::fprintf(stderr, "rpcscope: stall: event %d to %s%s took %lld ms (%lld ms on the CPU)\n", type,
                     cls, which.constData(), static_cast<long long>(ms),
                     (StallProbe::threadCpuNs() - cpu) / 1000000);
    return handled;
}

} // namespace rpcscope
