#include "events.h"

namespace rpcscope {

const char *frameTypeName(std::uint8_t type)
{
    switch (type) {
    case FrameData:
        return "DATA";
    case FrameHeaders:
        return "HEADERS";
    case FramePriority:
        return "PRIORITY";
    case FrameRstStream:
        return "RST_STREAM";
    case FrameSettings:
        return "SETTINGS";
    case FramePushPromise:
        return "PUSH_PROMISE";
    case FramePing:
        return "PING";
    case FrameGoaway:
        return "GOAWAY";
    case FrameWindowUpdate:
        return "WINDOW_UPDATE";
    case FrameContinuation:
        return "CONTINUATION";
    default:
        return "UNKNOWN";
    }
}

std::string h2ErrorName(std::uint32_t code)
{
    static const char *const names[] = {"NO_ERROR",
                                        "PROTOCOL_ERROR",
                                        "INTERNAL_ERROR",
                                        "FLOW_CONTROL_ERROR",
                                        "SETTINGS_TIMEOUT",
                                        "STREAM_CLOSED",
                                        "FRAME_SIZE_ERROR",
                                        "REFUSED_STREAM",
                                        "CANCEL",
                                        "COMPRESSION_ERROR",
                                        "CONNECT_ERROR",
                                        "ENHANCE_YOUR_CALM",
                                        "INADEQUATE_SECURITY",
                                        "HTTP_1_1_REQUIRED"};
    if (code < std::size(names)) return names[code];
    return "error " + std::to_string(code);
}

std::string describe(const ProtocolViolation &v)
{
    return std::string("protocol error by the ") + (v.by == Direction::ClientToServer ? "client" : "server") +
           ": " + v.rule + " (" + h2ErrorName(v.errorCode) + ")";
}

const char *grpcStatusName(int code)
{
    static const char *const names[] = {
        "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
        "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
        "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
        "DATA_LOSS", "UNAUTHENTICATED"};
    if (code >= 0 && code < int(std::size(names))) return names[code];
    return "UNKNOWN_CODE";
}

} // namespace rpcscope
