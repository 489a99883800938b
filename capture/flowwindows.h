#pragma once

#include "heapbytes.h"

#include <cstdint>
#include <unordered_map>

namespace rpcscope {

// Flow control of what one direction of a connection sends (RFC 9113 6.9): the connection's window and each
// open stream's, spent by this side's DATA and raised by the other side's SETTINGS and WINDOW_UPDATEs. The
// decoder makes the events (stalls, overruns) from what these calls return.
class FlowWindows
{
public:
    // What one DATA frame did to the windows.
    struct Spent
    {
        // How far the frame took a window below 0 that was not below 0 before (0: it did not).
        std::int64_t connectionOverrun = 0;
        std::int64_t streamOverrun = 0;
        bool streamStallEnded = false; // the frame ended a stalled stream
        bool streamStalled = false;    // the stream's window reached 0 with more to send
        bool connectionStalled =
            false; // the connection's window reached 0 with a stream that has more to send
    };

    // Once per DATA frame: inline, it runs on the decoder's per-frame path.
    Spent spend(std::uint32_t stream, bool endStream, std::uint32_t len)
    {
        // Flow control counts the whole payload, padding included (RFC 9113 6.9.1). The relay sees a
        // receiver's WINDOW_UPDATE before the sender does, so a window below 0 here was overrun by the
        // sender.
        Spent s;
        const bool wasOverrun = m_connWindow < 0;
        m_connWindow -= len;
        if (m_connWindow < 0 && !wasOverrun) s.connectionOverrun = -m_connWindow;
        const auto it = m_streams.try_emplace(stream, Window{m_initialWindow, false}).first;
        Window &w = it->second;
        const bool streamWasOverrun = w.window < 0;
        w.window -= len;
        if (w.window < 0 && !streamWasOverrun && !m_initialWindowLowered) s.streamOverrun = -w.window;
        if (endStream) {
            s.streamStallEnded = w.stalled;
            m_streams.erase(it);
            return s;
        }
        if (w.window <= 0 && !w.stalled) {
            w.stalled = true;
            s.streamStalled = true;
        }
        // Only a stream that has more to send makes an empty connection window a stall.
        if (m_connWindow <= 0 && !m_connStalled) {
            m_connStalled = true;
            s.connectionStalled = true;
        }
        return s;
    }

    // The stream has windows from its HEADERS on: a WINDOW_UPDATE for it may come before its first DATA.
    void open(std::uint32_t stream) { m_streams.try_emplace(stream, Window{m_initialWindow, false}); }
    // This side is done sending on the stream (END_STREAM, or a reset): true when that ends a stall.
    bool close(std::uint32_t stream);
    // The open streams' windows, as the allocator counts them.
    size_t memoryBytes() const
    {
        return heapbytes::hashMap<std::uint32_t, Window>(m_streams.size(), m_streams.bucket_count());
    }
    // The other side's WINDOW_UPDATE (stream 0: the connection's): true when it ends a stall.
    bool grow(std::uint32_t stream, std::uint32_t increment);
    // How far a WINDOW_UPDATE would take a window past 2^31-1 (0: it does not overflow).
    std::int64_t overflow(std::uint32_t stream, std::uint32_t increment) const;
    // The other side's SETTINGS_INITIAL_WINDOW_SIZE; calls stallEnded(stream) for each stall it ends.
    template <class StallEnded> void setInitialWindow(std::uint32_t size, StallEnded &&stallEnded)
    {
        // RFC 9113 6.9.2: a new initial window shifts every open stream's window by the difference.
        const std::int64_t delta = std::int64_t(size) - m_initialWindow;
        m_initialWindow = size;
        if (delta < 0) m_initialWindowLowered = true;
        for (auto &[stream, w] : m_streams) {
            w.window += delta;
            if (w.stalled && w.window > 0) {
                w.stalled = false;
                stallEnded(stream);
            }
        }
    }

private:
    struct Window
    {
        std::int64_t window = 0;
        bool stalled = false;
    };

    // Windows start at 65,535 bytes.
    std::int64_t m_connWindow = 65535;
    bool m_connStalled = false;
    std::int64_t m_initialWindow = 65535; // the receiver's SETTINGS_INITIAL_WINDOW_SIZE
    // The receiver lowered its initial window: data already in flight may then legally take a stream's window
    // below 0, so a stream overrun is no longer evidence of a broken rule.
    bool m_initialWindowLowered = false;
    std::unordered_map<std::uint32_t, Window> m_streams;
};

} // namespace rpcscope
