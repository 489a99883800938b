#pragma once

#include "callstats.h"
#include "capturedata.h"
#include "timelinestore.h"

namespace rpcscope {

// Call statistics of a capture read batch by batch (rpcscope-cli stats, compare): the calls are assembled in
// a TimelineStore without frames, and the oldest ended calls are evicted once they are counted, so that a
// capture of any length is counted in bounded memory. A call's outcome can still change after it ended
// (its connection closing after the client reset it): the store keeps the latest kKeepCalls calls for that.
class StatsFeed
{
public:
    static constexpr size_t kKeepCalls = 50'000;

    void setInfo(const CaptureInfo &info);
    void apply(const EventBatch &batch);
    const CallStats &stats() const { return m_stats; }
    const TimelineStore &store() const { return m_store; }

private:
    TimelineStore m_store;
    CallStats m_stats;
    size_t m_sinceCheck = 0;
};

} // namespace rpcscope
