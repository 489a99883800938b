#include "flowwindows.h"

#include <algorithm>

namespace rpcscope {

bool FlowWindows::close(std::uint32_t stream)
{
    const auto it = m_streams.find(stream);
    if (it == m_streams.end()) return false;
    const bool stalled = it->second.stalled;
    m_streams.erase(it);
    return stalled;
}

bool FlowWindows::grow(std::uint32_t stream, std::uint32_t increment)
{
    if (stream == 0) {
        m_connWindow += increment;
        if (m_connStalled && m_connWindow > 0) {
            m_connStalled = false;
            return true;
        }
        return false;
    }
    const auto it = m_streams.find(stream);
    if (it == m_streams.end())
        return false; // a stream this side has finished sending on (or one opened before the capture
                      // attached)
    Window &w = it->second;
    w.window += increment;
    if (w.stalled && w.window > 0) {
        w.stalled = false;
        return true;
    }
    return false;
}

std::int64_t FlowWindows::overflow(std::uint32_t stream, std::uint32_t increment) const
{
    constexpr std::int64_t kMaxWindow = 0x7fffffff;
    std::int64_t window = m_connWindow;
    if (stream != 0) {
        const auto it = m_streams.find(stream);
        window = it == m_streams.end() ? m_initialWindow : it->second.window;
    }
    return std::max<std::int64_t>(0, window + increment - kMaxWindow);
}

} // namespace rpcscope
