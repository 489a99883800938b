#include "events.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

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

void orderConnectionsByTime(EventBatch &batch)
{
    if (std::is_sorted(batch.begin(), batch.end(),
                       [](const WireEvent &a, const WireEvent &b) { return a.tNs < b.tNs; }))
        return;
    // Each connection's positions in the batch, in order; then a merge by the time of each one's next event
    // (ties: the earlier position), so a connection's own order is never changed.
    std::unordered_map<std::uint32_t, size_t> runOf;
    std::vector<std::vector<std::uint32_t>> runs;
    for (size_t i = 0; i < batch.size(); ++i) {
        const auto [it, fresh] = runOf.try_emplace(batch[i].connection, runs.size());
        if (fresh) runs.emplace_back();
        runs[it->second].push_back(std::uint32_t(i));
    }
    struct Head
    {
        std::int64_t tNs;
        std::uint32_t position;
        std::uint32_t run;
        bool operator>(const Head &o) const { return tNs != o.tNs ? tNs > o.tNs : position > o.position; }
    };
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    std::vector<size_t> next(runs.size(), 0);
    for (std::uint32_t r = 0; r < runs.size(); ++r)
        heads.push({batch[runs[r][0]].tNs, runs[r][0], r});
    EventBatch out;
    out.reserve(batch.size());
    while (!heads.empty()) {
        const Head h = heads.top();
        heads.pop();
        out.push_back(std::move(batch[h.position]));
        if (++next[h.run] < runs[h.run].size()) {
            const std::uint32_t p = runs[h.run][next[h.run]];
            heads.push({batch[p].tNs, p, h.run});
        }
    }
    batch = std::move(out);
}

} // namespace rpcscope
