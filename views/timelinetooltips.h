#pragma once

#include "timelinestore.h"

#include <QString>

namespace rpcscope {

// The rich-text tooltips of the swimlanes: an attempt, a lab event, a connection.
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
};

} // namespace rpcscope
