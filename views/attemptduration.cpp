#include "attemptduration.h"

#include "timeformat.h"

namespace rpcscope {

QString attemptDurationText(const Attempt &a)
{
    if (!a.endNs) return {};
    const qint64 ns = *a.endNs - a.startNs;
    // Under a microsecond no answer crossed a network: the proxy gave it on the request's arrival.
    if (!a.injected() || ns >= 1'000) return formatDuration(ns);
    const QString took = ns <= 0 ? QStringLiteral("0 µs") : QStringLiteral("under 1 µs");
    const QString how = a.status         ? QStringLiteral("answered")
                        : a.rstErrorCode ? QStringLiteral("reset")
                                         : QStringLiteral("refused");
    return QStringLiteral("%1 — %2 by the proxy before the server saw it").arg(took, how);
}

} // namespace rpcscope
