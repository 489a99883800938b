#pragma once

#include "timelinestore.h"

#include <QByteArray>
#include <QJsonObject>

namespace rpcscope {

// The timeline as Chrome trace event JSON (the format chrome://tracing and Perfetto open). Each call is a
// process ("call 3 /pkg.Svc/Method") holding async slices on one track, all with category "rpc" and the
// call's id so they nest: the call, each attempt, and each backoff gap between attempts (args.kind says
// which); the deadline is an instant event.
// Lab events are global instant events. Times are microseconds from the capture origin.
QJsonObject timelineToChromeTrace(const TimelineStore &store);
QByteArray timelineToChromeTraceBytes(const TimelineStore &store);

} // namespace rpcscope
