#pragma once

#include "timeline.h"

#include <QString>

namespace rpcscope {

// How long an ended attempt took, as the inspector and the tooltip say it. formatDuration's "0 ns" reads as
// a measuring fault; an attempt the capturing proxy failed before the server saw it takes no time at all,
// and says so: "0 µs — answered by the proxy before the server saw it".
QString attemptDurationText(const Attempt &a);

} // namespace rpcscope
