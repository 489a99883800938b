#include "timeformat.h"

#include <cstdlib>

namespace rpcscope {

QString formatDuration(qint64 ns)
{
    const qint64 a = std::abs(ns);
    if (a >= 10'000'000'000) return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 1);
    if (a >= 1'000'000'000) return QStringLiteral("%1 s").arg(double(ns) / 1e9, 0, 'f', 3);
    if (a >= 10'000'000) return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 1);
    if (a >= 1'000'000) return QStringLiteral("%1 ms").arg(double(ns) / 1e6, 0, 'f', 2);
    if (a >= 1'000) return QStringLiteral("%1 µs").arg(double(ns) / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 ns").arg(ns);
}

QString formatTick(qint64 ns, qint64 stepNs)
{
    // The unit follows the step, and decimals only as many as the step needs: "20 ms", "2.5 ms", "1.2 s".
    // A unit is used once the step is at least a fifth of it: 200 ms steps read "1.2 s", 100 ms steps "300
    // ms".
    const qint64 unit = stepNs * 5 >= 1'000'000'000 ? 1'000'000'000
                        : stepNs * 5 >= 1'000'000   ? 1'000'000
                        : stepNs * 5 >= 1'000       ? 1'000
                                                    : 1;
    const char *name = unit == 1'000'000'000 ? "s" : unit == 1'000'000 ? "ms" : unit == 1'000 ? "µs" : "ns";
    int decimals = 0;
    for (qint64 s = stepNs; s % unit != 0 && decimals < 3; s *= 10)
        ++decimals;
    return QStringLiteral("%1 %2")
        .arg(double(ns) / double(unit), 0, 'f', decimals)
        .arg(QString::fromUtf8(name));
}

QString hopText(const std::string &label)
{
    const QString name = QString::fromStdString(label);
    // The word anywhere: a merged capture's hops are "FILE: LABEL" ("live1: hop 1"). Lanes ask as they paint,
    // so by hand rather than by a regular expression.
    const auto wordChar = [&](qsizetype i) {
        return i >= 0 && i < name.size() && (name[i].isLetterOrNumber() || name[i] == QLatin1Char('_'));
    };
    for (qsizetype at = name.indexOf(QLatin1String("hop"), 0, Qt::CaseInsensitive); at >= 0;
         at = name.indexOf(QLatin1String("hop"), at + 1, Qt::CaseInsensitive))
        if (!wordChar(at - 1) && !wordChar(at + 3)) return name;
    return QStringLiteral("hop ") + name;
}

QString counted(qint64 n, const char *one, const char *many)
{
    const QString noun = n == 1 ? QString::fromUtf8(one)
                         : many ? QString::fromUtf8(many)
                                : QString::fromUtf8(one) + QLatin1Char('s');
    return QStringLiteral("%1 %2").arg(n).arg(noun);
}

} // namespace rpcscope
