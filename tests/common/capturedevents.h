#pragma once

// What a relay or a CONNECT proxy hands its sink, kept whole for a test to look at: the events, the timeline
// they make, and the reasons of their notes and decode errors one a line.

#include "events.h"
#include "timelinestore.h"

#include <functional>
#include <mutex>
#include <string>

namespace rpcscope {

struct CapturedEvents
{
    std::mutex mutex;
    EventBatch events;
    std::function<void(EventBatch &&)> sink()
    {
        return [this](EventBatch &&b) {
            std::lock_guard lk(mutex);
            for (WireEvent &e : b)
                events.push_back(std::move(e));
        };
    }
    TimelineStore store()
    {
        std::lock_guard lk(mutex);
        TimelineStore s;
        s.apply(events);
        return s;
    }
    std::string notes()
    {
        std::lock_guard lk(mutex);
        std::string all;
        for (const WireEvent &e : events)
            if (e.kind == EventKind::Notice || e.kind == EventKind::DecodeError) all += e.reason + "\n";
        return all;
    }
};

} // namespace rpcscope
