#include "timelinetooltips.h"

#include "attemptduration.h"
#include "clientoutcome.h"
#include "timeformat.h"
#include "tlssummary.h"

#include <algorithm>
#include <cmath>

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
    if (a.injected())
        html += QStringLiteral("<br><b>injected by rpcscope</b>: rule %1 <tt>%2</tt>")
                    .arg(a.faultRule)
                    .arg(QString::fromStdString(a.faultRuleText).toHtmlEscaped());
    html += QStringLiteral("<br>start %1").arg(formatDuration(a.startNs - origin));
    if (a.endNs) html += QStringLiteral(" · took %1").arg(attemptDurationText(a).toHtmlEscaped());
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
    if (const auto tls = TlsSummary::find(c.notes)) {
        // The hop's TLS in fields; the note itself follows among the notes.
        html += QStringLiteral("<br><b>%1</b>").arg(QString::fromStdString(tls->shortLine()).toHtmlEscaped());
        if (tls->intercepted)
            html += QStringLiteral("<br>cipher %1; target %2 %3, certificate %4%5")
                        .arg(QString::fromStdString(tls->cipher).toHtmlEscaped(),
                             QString::fromStdString(tls->targetVersion).toHtmlEscaped(),
                             QString::fromStdString(tls->targetCipher).toHtmlEscaped(),
                             QString::fromStdString(tls->certificate).toHtmlEscaped(),
                             tls->targetUnverified ? QStringLiteral(" (not verified)") : QString());
    }
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

namespace {
QString esc(const std::string &s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}
} // namespace

QString TimelineToolTips::call(const TimelineStore &store, size_t index)
{
    if (index >= store.calls().size()) return {};
    const Call &c = store.calls()[index];
    const qint64 origin = store.originNs();
    QString html = QStringLiteral("<b>%1</b><br>%2").arg(esc(c.key), esc(c.method));
    const Attempt *outcome = c.outcomeAttempt();
    html += QStringLiteral("<br><b>%1</b> after %2 attempt%3")
                .arg(outcome ? QString::fromStdString(outcome->outcomeLabel()).toHtmlEscaped()
                             : QStringLiteral("in flight"))
                .arg(c.attempts.size())
                .arg(c.attempts.size() == 1 ? "" : "s");
    html += clientLine(store, c);
    html += QStringLiteral("<br>started %1").arg(formatDuration(c.startNs() - origin));
    if (outcome && c.endNs())
        html += QStringLiteral(" · took %1").arg(formatDuration(*c.endNs() - c.startNs()));
    if (const auto budget = c.budgetNs())
        html += QStringLiteral("<br>deadline %1 after its start").arg(formatDuration(*budget));
    size_t transparent = 0;
    for (size_t k = 1; k < c.attempts.size(); ++k)
        transparent += c.transparentRetry(k);
    if (c.attempts.size() > 1)
        html += QStringLiteral("<br>%1 retr%2")
                    .arg(c.attempts.size() - 1)
                    .arg(c.attempts.size() == 2 ? "y" : "ies");
    if (transparent) html += QStringLiteral(" (%1 transparent)").arg(transparent);
    if (!c.hop.empty()) html += QStringLiteral("<br>") + hopText(c.hop).toHtmlEscaped();
    if (c.parentCall && *c.parentCall < store.calls().size())
        html += QStringLiteral("<br>made while serving %1").arg(esc(store.calls()[*c.parentCall].key));
    if (c.deadlineReset) html += QStringLiteral("<br><b>deadline reset:</b> the budget grew at this hop");
    if (c.deadlineDropped) html += QStringLiteral("<br><b>deadline dropped</b> by this hop");
    if (c.inferred) html += QStringLiteral("<br><i>attempts grouped by inference (no call id)</i>");
    // The header's words about a retry the client chose not to make, in full (they may be cut in the lane).
    for (const LabEventRecord &e : store.labEvents())
        if (e.kind == "retry-suppressed" && e.callId == c.key)
            html += QStringLiteral("<br><b>retry suppressed:</b> %1").arg(esc(e.detail));
    html += QStringLiteral("<br><span style='color:gray'>click to select its last attempt</span>");
    return html;
}

QString TimelineToolTips::gap(const TimelineStore &store, size_t index, size_t k,
                              const GapEnvelopes *envelopes)
{
    if (index >= store.calls().size()) return {};
    const Call &c = store.calls()[index];
    if (k == 0 || k >= c.attempts.size() || !c.attempts[k - 1].endNs) return {};
    const qint64 origin = store.originNs();
    const qint64 from = *c.attempts[k - 1].endNs, to = c.attempts[k].startNs;
    const qint64 gap = to - from;
    QString html;
    if (c.transparentRetry(k))
        html = QStringLiteral("<b>transparent retry</b> after %1").arg(formatDuration(gap));
    else
        html = QStringLiteral("<b>backoff gap</b> before attempt %1: <b>%2</b>")
                   .arg(k + 1)
                   .arg(formatDuration(gap));
    html += QStringLiteral("<br>from %1 (attempt %2 ended) to %3 (attempt %4 started)")
                .arg(formatDuration(from - origin))
                .arg(k)
                .arg(formatDuration(to - origin))
                .arg(k + 1);
    if (const auto &p = c.attempts[k - 1].pushbackMs; p && *p >= 0)
        html += QStringLiteral("<br>the server's pushback asked for %1 ms").arg(*p);
    bool given = false;
    if (const auto expected = GapEnvelopes::expected(envelopes, c, k, &given)) {
        const QString range = expected->first == expected->second
                                  ? formatDuration(expected->first)
                                  : QStringLiteral("%1 – %2").arg(formatDuration(expected->first),
                                                                  formatDuration(expected->second));
        html += !given ? QStringLiteral("<br>expected %1 (the client's policy)").arg(range)
                       : QStringLiteral("<br>expected %1 (the service config given in the Policy check, as "
                                        "this client's implementation retries)")
                             .arg(range);
        if (gap < expected->first)
            html += QStringLiteral("<br><b>%1 early</b>").arg(formatDuration(expected->first - gap));
        else if (gap > expected->second)
            html += QStringLiteral("<br><b>%1 late</b>").arg(formatDuration(gap - expected->second));
        else
            html += QStringLiteral("<br>within the expected range");
    } else if (!c.transparentRetry(k)) {
        html += QStringLiteral("<br><i>no expected range: the call did not say its retry policy</i>");
    }
    return html;
}

QString TimelineToolTips::deadline(const TimelineStore &store, size_t index)
{
    if (index >= store.calls().size()) return {};
    const Call &c = store.calls()[index];
    const auto deadline = c.deadlineNs();
    const auto budget = c.budgetNs();
    if (!deadline || !budget) return {};
    const qint64 origin = store.originNs();
    QString html = QStringLiteral("<b>call deadline</b> at %1<br>budget %2 from the call's start at %3")
                       .arg(formatDuration(*deadline - origin), formatDuration(*budget),
                            formatDuration(c.startNs() - origin));
    const bool ended = c.outcomeAttempt() && c.endNs();
    const qint64 used = (ended ? *c.endNs() : store.latestNs()) - c.startNs();
    const int percent = *budget > 0 ? int(std::llround(100.0 * double(used) / double(*budget))) : 100;
    if (ended)
        html += QStringLiteral("<br>the call ended after %1: <b>%2%</b> of its budget used")
                    .arg(formatDuration(used))
                    .arg(percent);
    else
        html += QStringLiteral("<br>in flight for %1 so far: %2% of its budget")
                    .arg(formatDuration(used))
                    .arg(percent);
    if (ended && *c.endNs() >= *deadline)
        html += QStringLiteral("<br><b>ran out</b> (%1)")
                    .arg(QString::fromStdString(c.outcomeAttempt()->outcomeLabel()).toHtmlEscaped());
    else if (ended)
        html += QStringLiteral("<br>%1 to spare").arg(formatDuration(*deadline - *c.endNs()));
    return html;
}

QString TimelineToolTips::bandSegment(const TimelineStore &store, const QString &state, qint64 fromNs,
                                      qint64 toNs, bool current)
{
    const qint64 origin = store.originNs();
    QString html = QStringLiteral("circuit breaker <b>%1</b>").arg(state.toHtmlEscaped());
    if (current)
        html +=
            QStringLiteral("<br>since %1 (still %2 at the end of the capture, %3 so far)")
                .arg(formatDuration(fromNs - origin), state.toHtmlEscaped(), formatDuration(toNs - fromNs));
    else
        html += QStringLiteral("<br>from %1 to %2 · lasted <b>%3</b>")
                    .arg(formatDuration(fromNs - origin), formatDuration(toNs - origin),
                         formatDuration(toNs - fromNs));
    if (state == QLatin1String("open"))
        html += QStringLiteral("<br><i>calls fail fast without reaching the wire</i>");
    else if (state == QLatin1String("half-open"))
        html +=
            QStringLiteral("<br><i>a probe call decides: success closes the breaker, failure opens it</i>");
    return html;
}

QString TimelineToolTips::cluster(const TimelineStore &store,
                                  const std::vector<const LabEventRecord *> &events)
{
    if (events.empty()) return {};
    const qint64 origin = store.originNs();
    QString html =
        QStringLiteral("<b>%1 events</b> from %2 to %3")
            .arg(events.size())
            .arg(formatDuration(events.front()->tNs - origin), formatDuration(events.back()->tNs - origin));
    const size_t shown = std::min<size_t>(events.size(), kClusterLines);
    for (size_t i = 0; i < shown; ++i) {
        const LabEventRecord &e = *events[i];
        html += QStringLiteral("<br>%1 <b>%2</b>").arg(formatDuration(e.tNs - origin), esc(e.kind));
        if (!e.detail.empty()) html += QStringLiteral(": ") + esc(e.detail);
        if (!e.callId.empty()) html += QStringLiteral(" (%1)").arg(esc(e.callId));
    }
    if (events.size() > shown) html += QStringLiteral("<br>and %1 more").arg(events.size() - shown);
    html += QStringLiteral("<br><span style='color:gray'>zoom in to tell them apart</span>");
    return html;
}

} // namespace rpcscope
