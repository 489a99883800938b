#pragma once

#include "eventstamp.h"

#include <cstdint>
#include <string>

namespace rpcscope {

class FlowWindows;

// The rules of RFC 9113 one side can break while the framing survives (a wrong size, a zero increment, a
// window overrun). Each is recorded as a notice, the first few per side; decoding goes on.
class RuleChecks
{
public:
    // The rules a frame's header and payload must keep. `peerWindows`: the other direction's flow-control
    // windows when they are known (a WINDOW_UPDATE must not overflow them), else null.
    void check(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::uint32_t len,
               const std::uint8_t *payload, const FlowWindows *peerWindows, const EventStamp &stamp,
               EventBatch &out);
    // A rule this side broke: `what` it did; `code`, the error the receiver should answer with (RFC 9113
    // section 7).
    void report(std::string what, std::uint32_t code, std::uint32_t stream, const EventStamp &stamp,
                EventBatch &out);

    // Frames with nothing to check: DATA, CONTINUATION and HEADERS without priority fields, most of them.
    static bool unchecked(std::uint8_t type, std::uint8_t flags)
    {
        return type == FrameData || type == FrameContinuation ||
               (type == FrameHeaders && !(flags & FlagPriority));
    }

private:
    std::uint32_t m_reported = 0; // rules this side broke; the first few are recorded
};

} // namespace rpcscope
