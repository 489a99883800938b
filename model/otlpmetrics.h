#pragma once

#include "timelinestore.h"

#include <QByteArray>
#include <QJsonObject>
#include <array>

namespace rpcscope {

// The timeline as OTLP/JSON metric data (an ExportMetricsServiceRequest) under the names, units, attributes
// and histogram buckets gRPC's own OpenTelemetry plugin uses, so dashboards built for it read a capture as
// they read a client:
// - gRFC A66 (OpenTelemetry Metrics), client per-attempt and per-call instruments:
//   grpc.client.attempt.started, grpc.client.attempt.duration,
//   grpc.client.attempt.sent_total_compressed_message_size,
//   grpc.client.attempt.rcvd_total_compressed_message_size, grpc.client.call.duration; attributes
//   grpc.method, grpc.target and (on all but attempt.started) grpc.status;
// - gRFC A96 (OTel Metrics for Retries): grpc.client.call.retries, grpc.client.call.transparent_retries,
//   grpc.client.call.retry_delay (grpc.method, grpc.target).
// Cumulative temporality: every data point runs from the capture's wall-clock origin to its latest event.
// Attempts count once started; durations, sizes and the per-call metrics once they ended. The proxy records
// what crossed the wire, so some of what a client measures is out of its sight (the README lists it).
QJsonObject timelineToOtlpMetrics(const TimelineStore &store);
QByteArray timelineToOtlpMetricsBytes(const TimelineStore &store);

namespace otlpmetrics {
// gRFC A66, "Metrics Schema" / "Units": the buckets of the default views.
inline constexpr std::array<double, 41> kLatencyBoundsS{
    0,    0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
    0.01, 0.013,   0.016,   0.02,   0.025,  0.03,   0.04,   0.05,  0.065, 0.08,  0.1,   0.13,  0.16,  0.2,
    0.25, 0.3,     0.4,     0.5,    0.65,   0.8,    1,      2,     5,     10,    20,    50,    100};
inline constexpr std::array<double, 14> kSizeBoundsBy{0,        1024,      2048,       4096,      16384,
                                                      65536,    262144,    1048576,    4194304,   16777216,
                                                      67108864, 268435456, 1073741824, 4294967296};
// gRFC A96, "Proposal": the recommended buckets of grpc.client.call.retries and .transparent_retries;
// grpc.client.call.retry_delay takes A66's latency buckets.
inline constexpr std::array<double, 5> kRetryBounds{1, 2, 3, 4, 5};
inline constexpr std::array<double, 6> kTransparentRetryBounds{1, 2, 3, 4, 5, 10};
} // namespace otlpmetrics

} // namespace rpcscope
