#pragma once

#include "gapenvelopes.h"
#include "timelinelayout.h"

#include <QString>
#include <memory>

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
    // Backoff ranges for calls that do not carry their own policy (a service config the user gave, judged by
    // the Policy check); null: only the calls' own. Exports copy the options, and so draw them too.
    std::shared_ptr<const GapEnvelopes> gapEnvelopes{};
};

} // namespace rpcscope
