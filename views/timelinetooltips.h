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
};

} // namespace rpcscope
