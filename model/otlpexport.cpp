#include "otlpexport.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>

namespace rpcscope {

namespace {
// OTLP/JSON writes 64-bit integers as decimal strings and ids as lowercase hex.
QJsonValue u64(std::int64_t v)
{
    return QString::number(v);
}

QJsonObject attr(const char *key, const QJsonValue &value)
{
    QJsonObject v;
    switch (value.type()) {
    case QJsonValue::Bool:
        v.insert("boolValue", value);
        break;
    case QJsonValue::Double:
        v.insert("intValue", QString::number(value.toInteger()));
        break;
    default:
        v.insert("stringValue", value);
    }
    return {{"key", key}, {"value", v}};
}

// Ids are derived from the capture's wall origin and the call's index, so exporting twice gives the same
// trace (re-imports replace rather than duplicate) and two captures do not collide.
QByteArray idBytes(const TimelineStore &store, size_t call, int attempt, int bytes)
{
    QByteArray seed = QByteArray::number(qint64(store.originWallNs())) + '/' +
                      QByteArray::number(qint64(call)) + '/' + QByteArray::number(attempt) + '/' +
                      QByteArray::fromStdString(store.calls()[call].key);
    QByteArray h = QCryptographicHash::hash(seed, QCryptographicHash::Sha256).left(bytes);
    if (h.count('\0') == h.size()) h[0] = 1; // an all-zero id is invalid
    return h.toHex();
}

// "/pkg.Service/Method" -> "pkg.Service.Method", as gRPC's tracing names spans.
QString spanMethod(const std::string &path)
{
    QString m = QString::fromStdString(path);
    if (m.startsWith('/')) m.remove(0, 1);
    m.replace('/', '.');
    return m;
}

QJsonObject spanStatus(const Attempt *a)
{
    if (!a || !a->ended()) return {{"code", 0}};
    if (a->status && *a->status == 0) return {{"code", 0}};
    QString message = QString::fromStdString(a->outcomeLabel());
    if (a->statusMessage && !a->statusMessage->empty())
        message += QStringLiteral(": ") + QString::fromStdString(*a->statusMessage);
    return {{"code", 2}, {"message", message}};
}
} // namespace

QJsonObject timelineToOtlp(const TimelineStore &store)
{
    const std::int64_t origin = store.originNs();
    const std::int64_t wall = store.originWallNs();
    const std::int64_t latest = std::max(store.latestNs(), origin);
    auto unixNs = [&](std::int64_t t) { return u64(wall + (t - origin)); };

    QJsonArray spans;
    for (size_t k = 0; k < store.calls().size(); ++k) {
        const Call &call = store.calls()[k];
        if (call.attempts.empty()) continue;
        const QString method = spanMethod(call.method);
        const QString traceId = QString::fromLatin1(idBytes(store, k, -1, 16));
        const QString callSpanId = QString::fromLatin1(idBytes(store, k, 0, 8));
        const QString path = QString::fromStdString(call.method);
        const QString service = path.section('/', 1, 1);
        const QString rpcMethod = path.section('/', 2, 2);
        const Attempt *outcome = call.outcomeAttempt();

        QJsonArray callAttrs{attr("rpc.system", "grpc"),
                             attr("rpc.service", service),
                             attr("rpc.method", rpcMethod),
                             attr("rpcscope.call.key", QString::fromStdString(call.key)),
                             attr("rpcscope.call.grouping", call.inferred ? "inferred" : "call-id"),
                             attr("rpcscope.call.attempts", qint64(call.attempts.size()))};
        if (outcome && outcome->status)
            callAttrs.append(attr("rpc.grpc.status_code", qint64(*outcome->status)));
        if (const auto deadline = call.deadlineNs())
            callAttrs.append(attr("rpcscope.deadline_unix_nano", unixNs(*deadline)));
        QJsonArray callEvents;
        const auto gaps = call.gapsNs();
        for (size_t i = 0; i < gaps.size(); ++i)
            if (gaps[i])
                callEvents.append(
                    QJsonObject{{"timeUnixNano", unixNs(*call.attempts[i].endNs)},
                                {"name", "Backoff"},
                                {"attributes", QJsonArray{attr("rpcscope.gap_ns", qint64(*gaps[i])),
                                                          attr("rpcscope.next_attempt", qint64(i + 2))}}});
        spans.append(QJsonObject{{"traceId", traceId},
                                 {"spanId", callSpanId},
                                 {"name", QStringLiteral("Sent.") + method},
                                 {"kind", 3}, // SPAN_KIND_CLIENT
                                 {"startTimeUnixNano", unixNs(call.startNs())},
                                 {"endTimeUnixNano", unixNs(call.endNs().value_or(latest))},
                                 {"attributes", callAttrs},
                                 {"events", callEvents},
                                 {"status", spanStatus(outcome)}});

        for (size_t i = 0; i < call.attempts.size(); ++i) {
            const Attempt &a = call.attempts[i];
            QJsonArray attrs{attr("previous-rpc-attempts", qint64(a.previousAttempts.value_or(0))),
                             attr("transparent-retry", call.transparentRetry(i)),
                             attr("rpc.system", "grpc"),
                             attr("rpc.service", service),
                             attr("rpc.method", rpcMethod),
                             attr("rpcscope.connection", qint64(a.connection)),
                             attr("rpcscope.stream", qint64(a.stream)),
                             attr("rpcscope.request_bytes", qint64(a.requestBytes)),
                             attr("rpcscope.response_bytes", qint64(a.responseBytes))};
            if (a.status) attrs.append(attr("rpc.grpc.status_code", qint64(*a.status)));
            if (a.pushbackMs) attrs.append(attr("rpcscope.pushback_ms", qint64(*a.pushbackMs)));
            if (a.timeoutNs) attrs.append(attr("rpcscope.timeout_ns", qint64(*a.timeoutNs)));
            if (a.injected()) {
                attrs.append(attr("rpcscope.injected", true));
                attrs.append(attr("rpcscope.fault_rule", qint64(a.faultRule)));
                attrs.append(attr("rpcscope.fault_rule_text", QString::fromStdString(a.faultRuleText)));
            }
            spans.append(QJsonObject{{"traceId", traceId},
                                     {"spanId", QString::fromLatin1(idBytes(store, k, int(i) + 1, 8))},
                                     {"parentSpanId", callSpanId},
                                     {"name", QStringLiteral("Attempt.") + method},
                                     {"kind", 1}, // SPAN_KIND_INTERNAL
                                     {"startTimeUnixNano", unixNs(a.startNs)},
                                     {"endTimeUnixNano", unixNs(a.endNs.value_or(latest))},
                                     {"attributes", attrs},
                                     {"status", spanStatus(a.ended() ? &a : nullptr)}});
        }
    }
    const QJsonObject resource{{"attributes", QJsonArray{attr("service.name", "rpcscope-capture"),
                                                         attr("telemetry.sdk.name", "rpcscope")}}};
    const QJsonObject scope{{"name", "rpcscope"}, {"version", "1"}};
    return {{"resourceSpans",
             QJsonArray{
                 QJsonObject{{"resource", resource},
                             {"scopeSpans", QJsonArray{QJsonObject{{"scope", scope}, {"spans", spans}}}}}}}};
}

QByteArray timelineToOtlpBytes(const TimelineStore &store)
{
    return QJsonDocument(timelineToOtlp(store)).toJson(QJsonDocument::Compact);
}

} // namespace rpcscope
