#pragma once

#include "timelinelayout.h"

#include <QString>

namespace rpcscope {

// How the swimlanes are drawn (TimelinePainter::Options).
struct TimelineOptions
{
    QString title;       // drawn above the ruler when set (exports)
    bool legend = false; // colour legend below the lanes (exports)
    bool dark = false;
    bool workshop = false;  // large text and thick bars, for a projector
    bool wallClock = false; // ruler in wall-clock time (when the capture has a wall-clock origin)
    LaneGrouping grouping = LaneGrouping::None;
    bool connectionLanes = true;
    LaneFilter filter{};
    LaneDensity density = LaneDensity::Compact;
    int labelWidth = 0; // the label column at scale 1 (dragged in the widget); 0: the default
    bool rates = false; // the rates strip under the ruler (calls/s, failures/s, retries/s, in flight)
};

} // namespace rpcscope
