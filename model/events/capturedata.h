#pragma once

// What a capture file holds: the event batches in the order the model applied them, plus the origins the
// timeline counts from. Replaying the batches into a fresh TimelineStore rebuilds the live model exactly.
// No Qt here, so the capture layer's exporters (pcapng) can read it too.

#include "events.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rpcscope {

struct CaptureInfo
{
    bool hasOrigin = false;
    std::int64_t originNs = 0;     // steady-clock ns the timeline counts from
    std::int64_t originWallNs = 0; // wall clock (ns since the Unix epoch) at that origin
    bool recordFrames = true;      // the store kept every HTTP/2 frame
    std::string writer;            // who wrote the file, e.g. "rpcscope"
    std::int64_t writtenWallNs = 0;
    std::vector<std::string> redactedHeaders; // header names whose values were masked (empty: none)
};

struct CaptureData
{
    CaptureInfo info;
    std::vector<EventBatch> batches;

    size_t eventCount() const
    {
        size_t n = 0;
        for (const EventBatch &b : batches)
            n += b.size();
        return n;
    }
};

} // namespace rpcscope
