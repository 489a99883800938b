#include "rulechecks.h"

#include "flowwindows.h"
#include "h2wire.h"

#include <nghttp2/nghttp2.h>

namespace rpcscope {

void RuleChecks::report(std::string what, std::uint32_t code, std::uint32_t stream, const EventStamp &stamp,
                        EventBatch &out)
{
    constexpr std::uint32_t kRecorded = 4;
    const char *side = stamp.dir == Direction::ClientToServer ? "client" : "server";
    if (m_reported < kRecorded)
        stamp.violation({stamp.dir, std::move(what), code}, stream, out);
    else if (m_reported == kRecorded)
        stamp.notice(std::string("further protocol errors by the ") + side + " are not recorded", stream,
                     out);
    ++m_reported;
}

void RuleChecks::check(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::uint32_t len,
                       const std::uint8_t *payload, const FlowWindows *peerWindows, const EventStamp &stamp,
                       EventBatch &out)
{
    // The framing stays intact whatever the payload says, so each of these is a notice, never a reason to
    // stop. Strings are built only for a rule broken.
    auto sized = [&](std::uint32_t want) {
        if (len != want)
            report(std::string(frameTypeName(type)) + " of " + std::to_string(len) + " bytes, not " +
                       std::to_string(want),
                   NGHTTP2_FRAME_SIZE_ERROR, stream, stamp, out);
        return len == want;
    };
    auto onConnection = [&] {
        if (stream != 0)
            report(std::string(frameTypeName(type)) + " on stream " + std::to_string(stream) +
                       ", not on stream 0",
                   NGHTTP2_PROTOCOL_ERROR, stream, stamp, out);
    };
    switch (type) {
    case FramePriority:
        if (stream == 0) report("PRIORITY on stream 0", NGHTTP2_PROTOCOL_ERROR, 0, stamp, out);
        if (sized(5) && (be32(payload) & 0x7fffffffu) == stream)
            report("PRIORITY makes stream " + std::to_string(stream) + " depend on itself",
                   NGHTTP2_PROTOCOL_ERROR, stream, stamp, out);
        break;
    case FrameHeaders:
        if (flags & FlagPriority) {
            const std::uint32_t pad = (flags & FlagPadded) && len ? 1 : 0;
            if (len >= pad + 5 && (be32(payload + pad) & 0x7fffffffu) == stream)
                report("HEADERS makes stream " + std::to_string(stream) + " depend on itself",
                       NGHTTP2_PROTOCOL_ERROR, stream, stamp, out);
        }
        break;
    case FrameRstStream:
        sized(4);
        break;
    case FrameSettings:
        onConnection();
        if (flags & FlagAck) {
            if (len != 0)
                report("SETTINGS ACK with " + std::to_string(len) + " bytes of payload",
                       NGHTTP2_FRAME_SIZE_ERROR, stream, stamp, out);
            break;
        }
        if (len % 6 != 0)
            report("SETTINGS of " + std::to_string(len) + " bytes, not a multiple of 6",
                   NGHTTP2_FRAME_SIZE_ERROR, stream, stamp, out);
        for (std::uint32_t off = 0; off + 6 <= len; off += 6) {
            const std::uint16_t id = std::uint16_t((payload[off] << 8) | payload[off + 1]);
            const std::uint32_t value = be32(payload + off + 2);
            if (id == NGHTTP2_SETTINGS_ENABLE_PUSH && value > 1)
                report("SETTINGS_ENABLE_PUSH " + std::to_string(value) + ", not 0 or 1",
                       NGHTTP2_PROTOCOL_ERROR, 0, stamp, out);
            else if (id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE && value > 0x7fffffffu)
                report("SETTINGS_INITIAL_WINDOW_SIZE " + std::to_string(value) + " above 2^31-1",
                       NGHTTP2_FLOW_CONTROL_ERROR, 0, stamp, out);
            else if (id == NGHTTP2_SETTINGS_MAX_FRAME_SIZE && (value < 16384 || value > kMaxFrameSizeLimit))
                report("SETTINGS_MAX_FRAME_SIZE " + std::to_string(value) + " outside 16384 to 16777215",
                       NGHTTP2_PROTOCOL_ERROR, 0, stamp, out);
        }
        break;
    case FramePing:
        onConnection();
        sized(8);
        break;
    case FrameGoaway:
        onConnection();
        if (len < 8)
            report("GOAWAY of " + std::to_string(len) + " bytes, under 8", NGHTTP2_FRAME_SIZE_ERROR, stream,
                   stamp, out);
        break;
    case FrameWindowUpdate:
        if (!sized(4)) break;
        if ((be32(payload) & 0x7fffffffu) == 0)
            report(std::string("WINDOW_UPDATE of 0 on ") +
                       (stream ? "stream " + std::to_string(stream) : std::string("the connection")),
                   NGHTTP2_PROTOCOL_ERROR, stream, stamp, out);
        else if (peerWindows)
            if (const std::int64_t over = peerWindows->overflow(stream, be32(payload) & 0x7fffffffu))
                report(std::string("WINDOW_UPDATE takes ") +
                           (stream ? "stream " + std::to_string(stream) + "'s"
                                   : std::string("the connection's")) +
                           " window " + std::to_string(over) + " bytes past 2^31-1",
                       NGHTTP2_FLOW_CONTROL_ERROR, stream, stamp, out);
        break;
    default:
        break;
    }
}

} // namespace rpcscope
