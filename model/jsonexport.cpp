#include "jsonexport.h"

#include "clientoutcome.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace rpcscope {

namespace {
template <typename T> QJsonValue opt(const std::optional<T> &v)
{
    return v ? QJsonValue(qint64(*v)) : QJsonValue(QJsonValue::Null);
}

QJsonArray notes(const std::vector<std::string> &list)
{
    QJsonArray a;
    for (const std::string &n : list)
        a.append(QString::fromStdString(n));
    return a;
}

// Empty text is absent: null.
QJsonValue text(const std::string &s)
{
    return s.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(s));
}

const char *dirName(Direction d)
{
    return d == Direction::ClientToServer ? "c2s" : "s2c";
}

QJsonValue status(std::optional<int> code, const std::optional<std::string> &message)
{
    if (!code) return QJsonValue::Null;
    return QJsonObject{{"code", *code},
                       {"name", QString::fromLatin1(grpcStatusName(*code))},
                       {"message", message ? QJsonValue(QString::fromStdString(*message)) : QJsonValue()}};
}
QJsonArray openPings(const Connection &c, qint64 origin)
{
    QJsonArray a;
    for (const Connection::OpenPing &p : c.openPings)
        a.append(QJsonObject{{"dir", dirName(p.dir)}, {"sent_ns", qint64(p.sentNs - origin)}});
    return a;
}

QJsonValue clientOutcomeJson(const ClientOutcome &o, qint64 origin)
{
    if (o.source == ClientOutcome::Source::InFlight) return QJsonValue::Null;
    static const char *const sources[] = {"in-flight", "wire", "implied", "unknown"};
    return QJsonObject{
        {"code", o.status ? QJsonValue(*o.status) : QJsonValue()},
        {"name", o.status ? QJsonValue(QString::fromLatin1(grpcStatusName(*o.status))) : QJsonValue()},
        {"at_ns", o.atNs ? QJsonValue(qint64(*o.atNs - origin)) : QJsonValue()},
        {"source", sources[int(o.source)]},
        {"why", o.why.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(o.why))}};
}
} // namespace

QJsonObject timelineToJson(const TimelineStore &store, bool withFrames)
{
    const qint64 origin = store.originNs();
    auto rel = [origin](const std::optional<std::int64_t> &t) {
        return t ? QJsonValue(qint64(*t - origin)) : QJsonValue(QJsonValue::Null);
    };

    QJsonArray connections;
    for (const Connection &c : store.connections()) {
        connections.append(QJsonObject{
            {"id", qint64(c.id)},
            {"client", QString::fromStdString(c.client)},
            {"server", QString::fromStdString(c.server)},
            {"label", c.label.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(c.label))},
            {"opened_ns", qint64(c.openedNs - origin)},
            {"closed_ns", rel(c.closedNs)},
            {"close_reason",
             c.closeReason.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(c.closeReason))},
            {"decode_error",
             c.decodeError.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(c.decodeError))},
            {"notes", notes(c.notes)},
            {"last_ping_rtt_ns", opt(c.lastPingRttNs)},
            {"open_pings", openPings(c, origin)}});
    }

    QJsonArray calls;
    for (size_t i = 0; i < store.calls().size(); ++i) {
        const Call &call = store.calls()[i];
        QJsonArray attempts;
        for (const Attempt &a : call.attempts) {
            attempts.append(QJsonObject{
                {"connection", qint64(a.connection)},
                {"stream", qint64(a.stream)},
                {"start_ns", qint64(a.startNs - origin)},
                {"end_ns", rel(a.endNs)},
                {"previous_attempts", opt(a.previousAttempts)},
                {"timeout_ns", opt(a.timeoutNs)},
                {"status", status(a.status, a.statusMessage)},
                {"pushback_ms", opt(a.pushbackMs)},
                {"rst_error_code", opt(a.rstErrorCode)},
                {"rst_by", a.rstErrorCode ? QJsonValue(a.rstByClient ? "client" : "server") : QJsonValue()},
                {"goaway_error_code", opt(a.goawayErrorCode)},
                {"request_bytes", qint64(a.requestBytes)},
                {"response_bytes", qint64(a.responseBytes)},
                {"trailers_only", a.ended() ? QJsonValue(a.trailersOnly) : QJsonValue()},
                {"encoding",
                 a.encoding.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(a.encoding))},
                {"injected", a.injected()},
                {"fault_rule",
                 a.injected() ? QJsonValue(QJsonObject{{"number", qint64(a.faultRule)},
                                                       {"text", QString::fromStdString(a.faultRuleText)}})
                              : QJsonValue()}});
        }
        QJsonArray gaps, expectedGaps;
        for (const auto &g : call.gapsNs())
            gaps.append(opt(g));
        for (size_t g = 0; g + 1 < call.attempts.size(); ++g) {
            const auto range = call.expectedGapNs(g);
            expectedGaps.append(range ? QJsonValue(QJsonArray{qint64(range->first), qint64(range->second)})
                                      : QJsonValue(QJsonValue::Null));
        }
        QJsonArray flags;
        for (const std::string &f : call.deadlineFlags())
            flags.append(QString::fromStdString(f));
        const Attempt *outcome = call.outcomeAttempt();
        calls.append(QJsonObject{
            {"id", qint64(i)},
            {"method", QString::fromStdString(call.method)},
            {"key", QString::fromStdString(call.key)},
            {"grouping", call.inferred ? "inferred" : "call-id"},
            {"deadline_ns", rel(call.deadlineNs())},
            {"outcome", outcome ? status(outcome->status, outcome->statusMessage) : QJsonValue()},
            {"client_outcome", clientOutcomeJson(clientOutcome(call, store), origin)},
            {"gaps_ns", gaps},
            {"expected_gaps_ns", expectedGaps},
            {"trace_id", text(call.traceId)},
            {"span_id", text(call.spanId)},
            {"parent_call", call.parentCall ? QJsonValue(qint64(*call.parentCall)) : QJsonValue()},
            {"hop", text(call.hop)},
            {"parent_budget_ns", opt(call.parentBudgetNs)},
            {"deadline_flags", flags},
            {"attempts", attempts}});
    }

    QJsonArray stalls;
    for (const FlowStall &s : store.stalls())
        stalls.append(QJsonObject{{"connection", qint64(s.connection)},
                                  {"dir", dirName(s.dir)},
                                  {"stream", qint64(s.stream)},
                                  {"start_ns", qint64(s.startNs - origin)},
                                  {"end_ns", rel(s.endNs)}});
    QJsonArray pings;
    for (const PingRecord &p : store.pings())
        pings.append(QJsonObject{{"connection", qint64(p.connection)},
                                 {"dir", dirName(p.dir)},
                                 {"t_ns", qint64(p.tNs - origin)},
                                 {"rtt_ns", qint64(p.rttNs)}});

    QJsonArray labEvents;
    for (const LabEventRecord &l : store.labEvents()) {
        // The attempt it concerns: the one of its call in flight (or last started) at that moment, 1-based.
        QJsonValue attempt;
        if (const auto call = store.callIndex(l.callId))
            if (const auto a = store.attemptAt(*call, l.tNs)) attempt = qint64(*a + 1);
        labEvents.append(QJsonObject{
            {"t_ns", qint64(l.tNs - origin)},
            {"kind", QString::fromStdString(l.kind)},
            {"call", l.callId.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(l.callId))},
            {"attempt", attempt},
            {"detail", QString::fromStdString(l.detail)}});
    }

    QJsonObject doc{{"format", "rpcscope-json"},
                    {"version", 1},
                    {"origin_wall_ns", qint64(store.originWallNs())},
                    {"connections", connections},
                    {"calls", calls},
                    {"stalls", stalls},
                    {"pings", pings},
                    {"lab_events", labEvents}};
    if (withFrames) {
        QJsonArray frames;
        for (const FrameRecord &f : store.frames()) {
            QJsonObject frame{
                {"t_ns", qint64(f.tNs - origin)}, {"connection", qint64(f.connection)},
                {"dir", dirName(f.dir)},          {"type", QString::fromLatin1(frameTypeName(f.type))},
                {"stream", qint64(f.stream)},     {"flags", int(f.flags)},
                {"length", qint64(f.length)}};
            if (f.isRun()) {
                // A flood's run: `count` frames from first_t_ns to t_ns, `length` their bytes together.
                frame.insert("count", qint64(f.count));
                frame.insert("first_t_ns", qint64(f.firstNs() - origin));
            }
            frames.append(frame);
        }
        doc.insert("frames", frames);
    }
    return doc;
}

QByteArray timelineToJsonBytes(const TimelineStore &store, bool withFrames)
{
    return QJsonDocument(timelineToJson(store, withFrames)).toJson(QJsonDocument::Indented);
}

} // namespace rpcscope
