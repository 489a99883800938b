#pragma once

#include "timelinestore.h"

#include <QColor>
#include <QString>
#include <algorithm>
#include <cstdint>
#include <string>

namespace rpcscope {

// How the picture sorts what the store holds: an attempt's status colour group, the lab events drawn as
// markers, the frames marked on connection lanes, and what the legend has to explain. The timeline index
// and the paint passes share these, so a colour or a marker means the same wherever it is drawn.

// Legend bits beyond the six status groups (0-5): what the picture contains and the legend explains.
enum LegendUse : int
{
    kUseTransparent = 6,
    kUsePhases,
    kUseGap,
    kUseExpected,
    kUseDeadline,
    kUseAttemptTimeout,
    kUseCommit,
    kUseMarker,
    kUseStall,
    kUseFastFail,
    // What the header, the markers and the connection lanes draw (set by the passes as they paint).
    kUseBreakerClosed,
    kUseBreakerOpen,
    kUseBreakerHalfOpen,
    kUseTransition,
    kUseCluster,
    kUsePushback,
    kUseTrailers,
    kUseFrameTicks,
    kUseConnection,
    kUseSettings,
    kUsePing,
    kUseRst,
    kUseGoaway,
    kUseUnansweredPing,
    kUseInjected, // an attempt a fault rule of the capture failed (hatched)
    kUseCount
};
static_assert(kUseCount <= 32, "legend bits are one std::uint32_t");

inline const QColor kOk(0x2e, 0x9d, 0x4a);
inline const QColor kUnavailable(0xe8, 0x80, 0x1a);
inline const QColor kDeadlineExceeded(0x8e, 0x44, 0xad);
inline const QColor kCancelled(0x8a, 0x8f, 0x96);
inline const QColor kOtherError(0xd0, 0x35, 0x2b);
inline const QColor kInFlight(0x3b, 0x7d, 0xd8);
inline const QColor kGroupColors[6] = {kOk,         kUnavailable, kDeadlineExceeded,
                                       kOtherError, kCancelled,   kInFlight};

// The overview's colour groups, in the order they are stacked (failures on top where the eye goes first).
inline std::uint8_t statusGroup(const Attempt &a)
{
    if (!a.ended()) return 5;
    if (!a.status) return 4;
    switch (*a.status) {
    case 0:
        return 0;
    case 1:
        return 4;
    case 4:
        return 2;
    case 14:
        return 1;
    default:
        return 3;
    }
}

inline QColor statusColor(const Attempt &a)
{
    return kGroupColors[statusGroup(a)];
}

inline QString statusText(const Attempt &a)
{
    return QString::fromStdString(a.outcomeLabel());
}

// Lab event kinds drawn as markers, with the word shown next to them.
struct MarkerKind
{
    const char *kind;
    const char *label;
};
inline constexpr MarkerKind kMarkerKinds[] = {
    {"bulkhead-rejected", "bulkhead rejected"},
    {"hedge-fired", "hedge fired"},
    {"hedge-cancelled", "hedge cancelled"},
    {"budget-check-failed", "budget check failed"},
    {"health", "health"},
    {"deduplicated", "deduplicated"},
    {"client-outcome",
     "client gets"},     // what the application got, when no frame says it (a deadline in a backoff)
    {"custom", "event"}, // reported through the ingestion endpoint; its detail starts with its label
};
inline const char *markerLabel(const std::string &kind)
{
    for (const MarkerKind &m : kMarkerKinds)
        if (kind == m.kind) return m.label;
    return nullptr;
}

// A retry resends what is left of the call's budget, rounded by grpc-timeout's 8-digit encoding and late by
// the client's own scheduling: within 2% (at least 1 ms) it is the call's deadline, not a budget of its own.
inline qint64 attemptTimeoutSlack(qint64 timeoutNs)
{
    return std::max<qint64>(1'000'000, timeoutNs / 50);
}

// A frame the connection lanes mark: SETTINGS (not an ACK), RST_STREAM, GOAWAY.
inline bool isConnectionMark(const FrameRecord &f)
{
    // A flood's run (FrameRecord::isRun) is marked whatever its kind: it is what the lane says of the flood.
    return (f.type == FrameSettings && !(f.flags & 0x1) /* ACK */) || f.type == FrameRstStream ||
           f.type == FrameGoaway || f.isRun();
}

} // namespace rpcscope
