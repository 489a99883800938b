#pragma once

#include "modelfeed.h"
#include "relay.h"
#include "timelinemodel.h"

namespace rpcscope {

// Relay sinks run on the decoder thread; the model lives on its own (GUI or CLI main) thread and has no
// locks: every sink of one model hands its batches to the model's one feed (modelfeed.h), which coalesces
// them into at most one append per frame interval and holds feeders back when the model falls behind. Call on
// the model's thread. The relay must be stopped before the model is destroyed.
inline Relay::Sink queuedSinkTo(TimelineModel *model)
{
    return ModelFeed::of(model)->sink();
}

} // namespace rpcscope
