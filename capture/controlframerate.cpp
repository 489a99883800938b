#include "controlframerate.h"

#include <algorithm>

namespace rpcscope {

int ControlFrameRate::kindOf(const WireEvent &e)
{
    switch (e.frameType) {
    case FramePing:
        return e.flags & FlagAck ? PingAck : Ping;
    case FrameSettings:
        return e.flags & FlagAck ? SettingsAck : Settings;
    case FrameWindowUpdate:
        return WindowUpdate;
    case FrameContinuation:
        return e.length == 0 ? EmptyContinuation : -1;
    default:
        return -1;
    }
}

void ControlFrameRate::flush(std::int64_t tNs, EventBatch &out, bool all)
{
    if (!all && tNs < m_earliestEnd) return;
    m_earliestEnd = INT64_MAX;
    for (Slot &s : m_slots) {
        if (!s.pending) continue;
        if (all || tNs >= s.windowStart + kWindowNs) {
            out.push_back(std::move(s.run));
            s.run = WireEvent{};
            s.pending = false;
        } else {
            m_earliestEnd = std::min(m_earliestEnd, s.windowStart + kWindowNs);
        }
    }
}

bool ControlFrameRate::admit(const WireEvent &e)
{
    const int kind = kindOf(e);
    if (kind < 0) return true;
    Slot &s = m_slots[size_t(kind)];
    if (e.tNs >= s.windowStart + kWindowNs || e.tNs < s.windowStart) {
        // A new window (flush() already emitted the last one's run).
        s.windowStart = e.tNs;
        s.inWindow = 1;
        return true;
    }
    if (++s.inWindow <= (kind == WindowUpdate ? kWindowUpdatesPerWindow : kPerWindow)) return true;
    if (!s.pending) {
        s.run = WireEvent{};
        s.run.kind = EventKind::Frame;
        s.run.connection = e.connection;
        s.run.dir = e.dir;
        s.run.frameType = e.frameType;
        s.run.flags = e.flags;
        s.run.stream = e.stream;
        s.run.about = FrameRun{0, e.tNs, 0};
        s.pending = true;
        m_earliestEnd = std::min(m_earliestEnd, s.windowStart + kWindowNs);
    }
    FrameRun &run = std::get<FrameRun>(s.run.about);
    ++run.count;
    run.bytes += e.length;
    s.run.tNs = e.tNs;
    s.run.length = e.length;
    if (s.run.stream != e.stream) s.run.stream = 0; // WINDOW_UPDATEs of several streams: the connection's
    return false;
}

} // namespace rpcscope
