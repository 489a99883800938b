#pragma once

#include "events.h"

#include <array>
#include <cstdint>

namespace rpcscope {

// Past a rate, control frames of one kind become counted runs (FrameRun) instead of one event each: a peer
// flooding PING, SETTINGS, empty CONTINUATION or WINDOW_UPDATE frames would otherwise fill the model, the
// event log and the capture file with a record per frame. Per direction of a connection (one decoder), per
// kind: the first kPerWindow frames of each kWindowNs window are events of their own, the rest of the window
// one run, emitted when a later frame shows the window over (or at finish()).
class ControlFrameRate
{
public:
    static constexpr std::int64_t kWindowNs = 100'000'000;
    static constexpr std::uint32_t kPerWindow = 16;
    // WINDOW_UPDATEs come by the hundred in a burst of large messages (one per stream and per connection as
    // the receiver reads): they get more room before they are folded, so ordinary traffic keeps every one.
    static constexpr std::uint32_t kWindowUpdatesPerWindow = 256;

    // Emits the runs whose window ended before tNs; all of them when `all`.
    void flush(std::int64_t tNs, EventBatch &out, bool all = false);
    // True when this Frame event is to be emitted as it is; false when it joined a run.
    bool admit(const WireEvent &e);

private:
    enum Kind
    {
        Ping,
        PingAck,
        Settings,
        SettingsAck,
        WindowUpdate,
        EmptyContinuation,
        KindCount
    };
    static int kindOf(const WireEvent &e);
    struct Slot
    {
        std::int64_t windowStart = INT64_MIN;
        std::uint32_t inWindow = 0;
        WireEvent run; // kind Frame with a FrameRun while run.frameRun()->count > 0
        bool pending = false;
    };
    std::array<Slot, KindCount> m_slots;
    std::int64_t m_earliestEnd = INT64_MAX; // the earliest pending run's window end: flush() is O(1) before
};

} // namespace rpcscope
