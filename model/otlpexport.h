#pragma once

#include "timelinestore.h"

#include <QByteArray>
#include <QJsonObject>

namespace rpcscope {

// The timeline as OTLP/JSON trace data (an ExportTraceServiceRequest), spans named and attributed the way
// gRPC's OpenTelemetry tracing design (gRFC A72) names a client's: one "Sent.<service>.<method>" span per
// call with one "Attempt.<service>.<method>" child per attempt, carrying "previous-rpc-attempts" and
// "transparent-retry", and the gRPC status as the span status. Each call is its own trace.
QJsonObject timelineToOtlp(const TimelineStore &store);
QByteArray timelineToOtlpBytes(const TimelineStore &store);

} // namespace rpcscope
