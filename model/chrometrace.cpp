#include "chrometrace.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace rpcscope {

namespace {
// Trace event timestamps are microseconds; a double keeps the nanoseconds (exact up to 2^53 ns, 104 days).
double us(std::int64_t ns)
{
    return double(ns) / 1000.0;
}

QString statusLabel(const Attempt &a)
{
    return QString::fromStdString(a.outcomeLabel());
}
} // namespace

QJsonObject timelineToChromeTrace(const TimelineStore &store)
{
    const std::int64_t origin = store.originNs();
    const std::int64_t latest = std::max(store.latestNs(), origin);
    QJsonArray events;
    auto meta = [&](const char *what, int pid, const QJsonObject &args) {
        events.append(QJsonObject{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", 1}, {"args", args}});
    };
    // pid 1 holds the lab events; call k is pid k + 2.
    meta("process_name", 1, {{"name", "lab events"}});
    meta("process_sort_index", 1, {{"sort_index", 0}});

    for (size_t k = 0; k < store.calls().size(); ++k) {
        const Call &call = store.calls()[k];
        if (call.attempts.empty()) continue;
        const int pid = int(k) + 2;
        const QString method = QString::fromStdString(call.method);
        const QString key = QString::fromStdString(call.key);
        meta("process_name", pid, {{"name", QStringLiteral("call %1 %2").arg(k).arg(method)}});
        meta("process_sort_index", pid, {{"sort_index", int(k) + 1}});
        meta("thread_name", pid, {{"name", key}});
        const QString id = QStringLiteral("call-%1").arg(k);
        // One category and id for the whole call: both viewers put the slices on one track and nest them by
        // time. A parent's end is written after its children's, so ends at the same time close innermost
        // first once the viewer sorts by time.
        auto begin = [&](const QString &name, const char *kind, std::int64_t start, QJsonObject args) {
            args.insert("kind", kind);
            events.append(QJsonObject{{"ph", "b"},
                                      {"cat", "rpc"},
                                      {"name", name},
                                      {"id", id},
                                      {"pid", pid},
                                      {"tid", 1},
                                      {"ts", us(start - origin)},
                                      {"args", args}});
        };
        auto end = [&](const QString &name, std::int64_t t) {
            events.append(QJsonObject{{"ph", "e"},
                                      {"cat", "rpc"},
                                      {"name", name},
                                      {"id", id},
                                      {"pid", pid},
                                      {"tid", 1},
                                      {"ts", us(t - origin)}});
        };

        const Attempt *outcome = call.outcomeAttempt();
        begin(key, "call", call.startNs(),
              {{"method", method},
               {"grouping", call.inferred ? "inferred" : "call-id"},
               {"attempts", int(call.attempts.size())},
               {"outcome", outcome ? statusLabel(*outcome) : QStringLiteral("in flight")}});
        const auto gaps = call.gapsNs();
        for (size_t i = 0; i < call.attempts.size(); ++i) {
            const Attempt &a = call.attempts[i];
            QJsonObject args{{"attempt", int(i) + 1},
                             {"connection", qint64(a.connection)},
                             {"stream", qint64(a.stream)},
                             {"previous_attempts", a.previousAttempts.value_or(0)},
                             {"status", statusLabel(a)},
                             {"request_bytes", qint64(a.requestBytes)},
                             {"response_bytes", qint64(a.responseBytes)}};
            if (a.statusMessage) args.insert("message", QString::fromStdString(*a.statusMessage));
            if (a.pushbackMs) args.insert("pushback_ms", qint64(*a.pushbackMs));
            if (a.timeoutNs) args.insert("timeout_ms", double(*a.timeoutNs) / 1e6);
            if (!a.ended()) args.insert("open", true);
            if (a.injected()) {
                args.insert("injected", true);
                args.insert(
                    "fault_rule",
                    QStringLiteral("%1: %2").arg(a.faultRule).arg(QString::fromStdString(a.faultRuleText)));
            }
            const QString name = QStringLiteral("attempt %1 %2").arg(i + 1).arg(statusLabel(a));
            begin(name, "attempt", a.startNs, args);
            end(name, a.endNs.value_or(latest));
            if (i < gaps.size() && gaps[i]) {
                QJsonObject gapArgs{{"gap_ms", double(*gaps[i]) / 1e6}};
                if (const auto range = call.expectedGapNs(i))
                    gapArgs.insert("expected_ms",
                                   QJsonArray{double(range->first) / 1e6, double(range->second) / 1e6});
                const QString name = QStringLiteral("backoff %1 ms").arg(double(*gaps[i]) / 1e6, 0, 'f', 1);
                begin(name, "gap", *a.endNs, gapArgs);
                end(name, call.attempts[i + 1].startNs);
            }
        }
        end(key, call.endNs().value_or(latest));
        if (const auto deadline = call.deadlineNs())
            events.append(QJsonObject{{"ph", "i"},
                                      {"s", "p"},
                                      {"cat", "deadline"},
                                      {"name", "deadline"},
                                      {"pid", pid},
                                      {"tid", 1},
                                      {"ts", us(*deadline - origin)},
                                      {"args", QJsonObject{{"call", key}}}});
    }
    for (const LabEventRecord &l : store.labEvents())
        events.append(QJsonObject{{"ph", "i"},
                                  {"s", "g"},
                                  {"cat", "lab"},
                                  {"name", QString::fromStdString(l.kind)},
                                  {"pid", 1},
                                  {"tid", 1},
                                  {"ts", us(l.tNs - origin)},
                                  {"args", QJsonObject{{"detail", QString::fromStdString(l.detail)},
                                                       {"call", QString::fromStdString(l.callId)}}}});
    return {{"traceEvents", events},
            {"displayTimeUnit", "ms"},
            {"otherData", QJsonObject{{"producer", "rpcscope"},
                                      {"origin_wall_ns", QString::number(store.originWallNs())}}}};
}

QByteArray timelineToChromeTraceBytes(const TimelineStore &store)
{
    return QJsonDocument(timelineToChromeTrace(store)).toJson(QJsonDocument::Compact);
}

} // namespace rpcscope
