#pragma once

#include "gapenvelopes.h"
#include "timelinestore.h"

#include <QString>
#include <vector>

namespace rpcscope {

// The rich-text tooltips of the swimlanes: an attempt, a lab event, a connection, a call's header, a backoff
// gap, a deadline line, a breaker state on the policy band and a cluster of markers.
class TimelineToolTips
{
public:
    static QString attempt(const TimelineStore &store, size_t call, size_t attempt);
    static QString labEvent(const TimelineStore &store, const LabEventRecord &event);
    // An index past the connections: the lane that shows every connection at once.
    static QString connection(const TimelineStore &store, size_t connection);
    // A PING no ACK answered, in plain text (one line).
    static QString openPing(const TimelineStore &store, const Connection &c,
                            const Connection::OpenPing &ping);
    // What the client got, as a line to add under the wire's status; empty when the wire's status says it.
    static QString clientLine(const TimelineStore &store, const Call &call);
    static QString call(const TimelineStore &store, size_t call);
    // The gap before attempt `attempt` (>= 1): measured against the range the client's policy allows.
    // With `envelopes`, a call without a policy of its own is read against the range given for it.
    static QString gap(const TimelineStore &store, size_t call, size_t attempt,
                       const GapEnvelopes *envelopes = nullptr);
    static QString deadline(const TimelineStore &store, size_t call);
    static QString bandSegment(const TimelineStore &store, const QString &state, qint64 fromNs, qint64 toNs,
                               bool current);
    // The first kClusterLines events, then how many more.
    static QString cluster(const TimelineStore &store, const std::vector<const LabEventRecord *> &events);
    static constexpr int kClusterLines = 8;
};

} // namespace rpcscope
