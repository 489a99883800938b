#pragma once

#include "timeline.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace rpcscope {

// What one applied batch changed; the item model turns this into row insertions and dataChanged.
struct StoreChanges
{
    size_t firstNewCall = 0;                      // calls at or after this index are new
    std::vector<size_t> callsWithNewAttempts;     // existing calls that gained attempts (sorted, unique)
    std::vector<size_t> changedCalls;             // existing calls whose data changed (sorted, unique)
    bool connectionsChanged = false;
};

// Plain data and call assembly. No Qt, no locks: it lives on one thread (see DESIGN.md, Threads).
class TimelineStore
{
public:
    void apply(const EventBatch &batch, StoreChanges *changes = nullptr);
    void clear();

    const std::vector<Call> &calls() const { return m_calls; }
    const std::vector<Connection> &connections() const { return m_connections; }
    const std::vector<FrameRecord> &frames() const { return m_frames; }
    const std::vector<FlowStall> &stalls() const { return m_stalls; }
    const std::vector<PingRecord> &pings() const { return m_pings; }
    const std::vector<LabEventRecord> &labEvents() const { return m_labEvents; }

    // The capture's origins: the steady ns that JSON and the ruler count from, and the wall clock at that
    // moment. Set by whoever starts the capture; otherwise the first event's time.
    void setOrigin(std::int64_t steadyNs, std::int64_t wallNs);
    std::int64_t originNs() const { return m_originNs; }
    std::int64_t originWallNs() const { return m_originWallNs; }
    bool hasOrigin() const { return m_hasOrigin; }

    // Latest event time seen; open attempts are drawn up to here.
    std::int64_t latestNs() const { return m_latestNs; }
    // Increments on every change, so views can key caches on it.
    std::uint64_t generation() const { return m_generation; }

    void setRecordFrames(bool on) { m_recordFrames = on; }

private:
    struct AttemptRef
    {
        size_t call;
        size_t attempt;
    };
    static std::uint64_t streamKey(std::uint32_t conn, std::uint32_t stream)
    {
        return (std::uint64_t(conn) << 32) | stream;
    }
    void onRequestHeaders(const WireEvent &e, StoreChanges &ch);
    void onResponseHeaders(const WireEvent &e, StoreChanges &ch);
    void endAttempt(Attempt &a, std::int64_t t);
    size_t findInferredCall(const std::string &method, const std::string &peer, int previous,
                            std::int64_t t) const;
    Connection *connection(std::uint32_t id);
    void markChanged(StoreChanges &ch, size_t call);

    std::vector<Call> m_calls;
    std::vector<Connection> m_connections;
    std::unordered_map<std::uint32_t, size_t> m_connectionIndex;
    std::vector<FrameRecord> m_frames;
    std::vector<FlowStall> m_stalls;
    std::map<std::tuple<std::uint32_t, Direction, std::uint32_t>, size_t> m_openStalls;
    std::vector<PingRecord> m_pings;
    std::vector<LabEventRecord> m_labEvents;
    std::unordered_map<std::uint64_t, AttemptRef> m_openStreams; // (conn, stream) -> attempt, while open
    std::map<std::string, size_t> m_callsByKey;
    std::int64_t m_originNs = 0;
    std::int64_t m_originWallNs = 0;
    bool m_hasOrigin = false;
    std::int64_t m_latestNs = 0;
    std::uint64_t m_generation = 0;
    bool m_recordFrames = true;
};

} // namespace rpcscope
