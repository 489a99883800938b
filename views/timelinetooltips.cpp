#include "timelinetooltips.h"

#include "clientoutcome.h"
#include "timeformat.h"

namespace rpcscope {

QString TimelineToolTips::clientLine(const TimelineStore &store, const Call &call)
{
    const ClientOutcome client = clientOutcome(call, store);
    switch (client.source) {
    case ClientOutcome::Source::InFlight:
    case ClientOutcome::Source::Wire:
        return {}; // the status above is what the client got
    case ClientOutcome::Source::Implied:
        return QStringLiteral("<br><b>the client got %1</b> at %2: %3")
            .arg(QString::fromStdString(client.label()), formatDuration(*client.atNs - store.originNs()),
                 QString::fromStdString(client.why).toHtmlEscaped());
    case ClientOutcome::Source::Unknown:
        return QStringLiteral("<br>what the client got is unknown: %1")
            .arg(QString::fromStdString(client.why).toHtmlEscaped());
    }
    return {};
}

QString TimelineToolTips::attempt(const TimelineStore &store, size_t callIndex, size_t k)
{
    if (callIndex >= store.calls().size() || k >= store.calls()[callIndex].attempts.size()) return {};
    const Call &call = store.calls()[callIndex];
    const Attempt &a = call.attempts[k];
    const qint64 origin = store.originNs();
    QString status = QString::fromStdString(a.outcomeLabel());
    if (a.status && a.rstErrorCode)
        status +=
            QStringLiteral(" (RST_STREAM %1)").arg(QString::fromStdString(h2ErrorName(*a.rstErrorCode)));
    QString html = QStringLiteral("<b>%1</b> · attempt %2 of %3<br>%4<br>")
                       .arg(QString::fromStdString(call.key).toHtmlEscaped())
                       .arg(k + 1)
                       .arg(call.attempts.size())
                       .arg(QString::fromStdString(call.method).toHtmlEscaped());
    html += QStringLiteral("<b>%1</b>").arg(status.toHtmlEscaped());
    if (a.statusMessage && !a.statusMessage->empty())
        html += QStringLiteral(": %1").arg(QString::fromStdString(*a.statusMessage).toHtmlEscaped());
    html += QStringLiteral("<br>start %1").arg(formatDuration(a.startNs - origin));
    if (a.endNs) html += QStringLiteral(" · took %1").arg(formatDuration(*a.endNs - a.startNs));
    if (a.responseHeadersNs)
        html += QStringLiteral("<br>response headers after %1")
                    .arg(formatDuration(*a.responseHeadersNs - a.startNs));
    if (a.timeoutNs) html += QStringLiteral("<br>grpc-timeout %1").arg(formatDuration(*a.timeoutNs));
    if (a.previousAttempts)
        html += QStringLiteral("<br>grpc-previous-rpc-attempts %1").arg(*a.previousAttempts);
    if (call.transparentRetry(k))
        html += QStringLiteral("<br><i>transparent retry: the transport refused the previous stream</i>");
    if (const std::string note = attemptClientNote(call, k); !note.empty())
        html += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(note).toHtmlEscaped());
    if (k + 1 == call.attempts.size()) html += clientLine(store, call);
    if (a.pushbackMs) html += QStringLiteral("<br>grpc-retry-pushback-ms %1").arg(*a.pushbackMs);
    html += QStringLiteral("<br>connection %1, stream %2 · %3 B out, %4 B in")
                .arg(a.connection)
                .arg(a.stream)
                .arg(a.requestBytes)
                .arg(a.responseBytes);
    html += QStringLiteral("<br><span style='color:gray'>click for frames and headers</span>");
    return html;
}

QString TimelineToolTips::labEvent(const TimelineStore &store, const LabEventRecord &e)
{
    QString html =
        QStringLiteral("<b>%1</b> at %2")
            .arg(QString::fromStdString(e.kind).toHtmlEscaped(), formatDuration(e.tNs - store.originNs()));
    if (!e.detail.empty())
        html += QStringLiteral("<br>%1").arg(QString::fromStdString(e.detail).toHtmlEscaped());
    if (!e.callId.empty())
        html += QStringLiteral("<br>call %1").arg(QString::fromStdString(e.callId).toHtmlEscaped());
    if (e.kind == "fast-fail")
        html += QStringLiteral("<br><i>the open breaker refused it: it never reached the wire</i>");
    return html;
}

QString TimelineToolTips::connection(const TimelineStore &store, size_t index)
{
    const auto &conns = store.connections();
    if (index >= conns.size())
        return QStringLiteral("%1 connections in one lane: group by connection to see each")
            .arg(conns.size());
    const Connection &c = conns[index];
    const qint64 origin = store.originNs();
    QString html = QStringLiteral("<b>connection %1</b>").arg(c.id);
    if (!c.label.empty())
        html += QStringLiteral(" · %1").arg(QString::fromStdString(c.label).toHtmlEscaped());
    html += QStringLiteral("<br>%1 → %2")
                .arg(QString::fromStdString(c.client).toHtmlEscaped(),
                     QString::fromStdString(c.server).toHtmlEscaped());
    html += QStringLiteral("<br>opened %1").arg(formatDuration(c.openedNs - origin));
    if (c.closedNs)
        html += QStringLiteral(", closed %1 (%2)")
                    .arg(formatDuration(*c.closedNs - origin),
                         QString::fromStdString(c.closeReason).toHtmlEscaped());
    if (c.lastPingRttNs)
        html += QStringLiteral("<br>last PING round trip %1").arg(formatDuration(*c.lastPingRttNs));
    for (const Connection::OpenPing &ping : c.openPings)
        if (c.unanswered(ping, store.latestNs()))
            html += QStringLiteral("<br>%1").arg(openPing(store, c, ping).toHtmlEscaped());
    if (!c.decodeError.empty())
        html += QStringLiteral("<br><b>undecodable:</b> %1")
                    .arg(QString::fromStdString(c.decodeError).toHtmlEscaped());
    for (const std::string &n : c.notes)
        html += QStringLiteral("<br>%1").arg(QString::fromStdString(n).toHtmlEscaped());
    return html;
}

QString TimelineToolTips::openPing(const TimelineStore &store, const Connection &c,
                                   const Connection::OpenPing &ping)
{
    const qint64 origin = store.originNs();
    const QString who =
        ping.dir == Direction::ClientToServer ? QStringLiteral("client") : QStringLiteral("server");
    QString text =
        QStringLiteral("%1 PING at %2 never answered").arg(who, formatDuration(ping.sentNs - origin));
    if (!c.closedNs) return text + QStringLiteral(" (yet)");
    text += QStringLiteral(": no ACK in %1, until the connection closed")
                .arg(formatDuration(*c.closedNs - ping.sentNs));
    if (ping.dir == Direction::ClientToServer && c.closeReason == "closed by client")
        text += QStringLiteral(" (by the client: keepalive timed out, its calls failed UNAVAILABLE)");
    return text;
}

} // namespace rpcscope
