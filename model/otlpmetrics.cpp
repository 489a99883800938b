#include "otlpmetrics.h"

#include "clientoutcome.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef RPCSCOPE_VERSION
#define RPCSCOPE_VERSION "0"
#endif

namespace rpcscope {

namespace {
// OTLP/JSON writes 64-bit integers as decimal strings.
QJsonValue u64(std::int64_t v)
{
    return QString::number(v);
}

// An attribute set as ids: grpc.method and grpc.target (indices into the export's name tables) and
// grpc.status (the code; -1 on metrics without one). Looking a point up builds no string.
using Attrs = std::array<int, 3>;

// The names behind the ids, turned into OTLP attributes.
struct AttrNames
{
    std::vector<QString> methods, targets;

    QJsonArray json(const Attrs &attrs) const
    {
        auto kv = [](const char *key, const QString &value) {
            return QJsonObject{{"key", key}, {"value", QJsonObject{{"stringValue", value}}}};
        };
        QJsonArray a{kv("grpc.method", methods[size_t(attrs[0])]),
                     kv("grpc.target", targets[size_t(attrs[1])])};
        if (attrs[2] >= 0) a.append(kv("grpc.status", QString::fromLatin1(grpcStatusName(attrs[2]))));
        return a;
    }
};

struct Histogram
{
    std::vector<std::uint64_t> buckets;
    std::uint64_t count = 0;
    double sum = 0;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
};

// One metric's data points by attribute set: a histogram, or (no bounds) a monotonic counter.
struct Instrument
{
    Instrument(const char *name, const char *unit, const char *description, std::span<const double> bounds)
        : name(name), unit(unit), description(description), bounds(bounds)
    {
    }
    const char *name;
    const char *unit;
    const char *description;
    std::span<const double> bounds; // empty: a counter
    std::map<Attrs, Histogram> points;

    void record(const Attrs &attrs, double value)
    {
        Histogram &h = points[attrs];
        h.buckets.resize(bounds.size() + 1);
        // OTLP buckets are upper-inclusive: bucket i holds (bounds[i-1], bounds[i]].
        ++h.buckets[size_t(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin())];
        ++h.count;
        h.sum += value;
        h.min = std::min(h.min, value);
        h.max = std::max(h.max, value);
    }
    void add(const Attrs &attrs) { ++points[attrs].count; }

    QJsonObject json(const AttrNames &names, const QJsonValue &start, const QJsonValue &time) const
    {
        QJsonArray dataPoints;
        for (const auto &[attrs, h] : points) {
            QJsonObject p{
                {"attributes", names.json(attrs)}, {"startTimeUnixNano", start}, {"timeUnixNano", time}};
            if (bounds.empty()) {
                p.insert("asInt", u64(std::int64_t(h.count)));
            } else {
                QJsonArray counts, explicitBounds;
                for (std::uint64_t c : h.buckets)
                    counts.append(u64(std::int64_t(c)));
                for (double b : bounds)
                    explicitBounds.append(b);
                p.insert("count", u64(std::int64_t(h.count)));
                p.insert("sum", h.sum);
                p.insert("bucketCounts", counts);
                p.insert("explicitBounds", explicitBounds);
                p.insert("min", h.min);
                p.insert("max", h.max);
            }
            dataPoints.append(p);
        }
        constexpr int kCumulative = 2; // AGGREGATION_TEMPORALITY_CUMULATIVE
        QJsonObject metric{{"name", name}, {"unit", unit}, {"description", description}};
        if (bounds.empty())
            metric.insert("sum", QJsonObject{{"dataPoints", dataPoints},
                                             {"aggregationTemporality", kCumulative},
                                             {"isMonotonic", true}});
        else
            metric.insert("histogram",
                          QJsonObject{{"dataPoints", dataPoints}, {"aggregationTemporality", kCumulative}});
        return metric;
    }
};

constexpr int kCancelled = 1, kUnknown = 2, kResourceExhausted = 8, kPermissionDenied = 7, kInternal = 13,
              kUnavailable = 14, kUnauthenticated = 16;

// A client's library reads a code outside the known ones as UNKNOWN.
int knownStatus(int code)
{
    return code >= 0 && code <= kUnauthenticated ? code : kUnknown;
}

// The status a client's gRPC library ends attempt i with: its grpc-status, the client's outcome for the last
// attempt when the wire only implies it, else what a stream ended without a status means (gRPC's mapping of
// HTTP/2 errors, PROTOCOL-HTTP2.md "Errors"; a connection that closed or a GOAWAY that refused the stream is
// UNAVAILABLE).
int attemptStatus(const Call &call, size_t i, const ClientOutcome &outcome)
{
    const Attempt &a = call.attempts[i];
    if (a.status) return knownStatus(*a.status);
    if (i + 1 == call.attempts.size() && outcome.status) return knownStatus(*outcome.status);
    if (a.rstErrorCode) {
        switch (*a.rstErrorCode) {
        case 7: // REFUSED_STREAM
            return kUnavailable;
        case 8: // CANCEL
            return kCancelled;
        case 11: // ENHANCE_YOUR_CALM
            return kResourceExhausted;
        case 12: // INADEQUATE_SECURITY
            return kPermissionDenied;
        default:
            return kInternal;
        }
    }
    return kUnavailable;
}

// A66's grpc.method: the full name without the leading slash, "pkg.Service/Method".
QString methodName(const std::string &path)
{
    QString m = QString::fromStdString(path);
    if (m.startsWith('/')) m.remove(0, 1);
    return m.isEmpty() ? QStringLiteral("other") : m;
}

// A66's grpc.target is the client channel's target, which never crosses the wire; the nearest the capture
// knows is the server address its first attempt was relayed to, else its hop's name.
QString targetName(const Call &call, const TimelineStore &store)
{
    if (!call.attempts.empty())
        if (const Connection *c = store.findConnection(call.attempts.front().connection);
            c && !c->server.empty())
            return QString::fromStdString(c->server);
    if (!call.hop.empty()) return QString::fromStdString(call.hop);
    return QStringLiteral("unknown");
}

// gRPC message bytes without the 5-byte length prefix of each message: A66 counts messages, not framing.
double messageBytes(std::uint64_t bytes, int messages)
{
    const std::uint64_t framing = 5 * std::uint64_t(std::max(messages, 0));
    return double(bytes > framing ? bytes - framing : 0);
}

// In double, so that times off a damaged file cannot overflow; exact below 2^53 ns (104 days).
double secondsBetween(std::int64_t fromNs, std::int64_t toNs)
{
    return (double(toNs) - double(fromNs)) / 1e9;
}

// A96's retry delay: the time within the call when no attempt was in flight, between its first attempt's
// start and its last one's end (the backoff gaps; hedged attempts that overlap leave none).
double retryDelaySeconds(const Call &call)
{
    double delay = 0;
    std::int64_t coveredTo = call.startNs();
    for (const Attempt &a : call.attempts) {
        if (a.startNs > coveredTo) delay += secondsBetween(coveredTo, a.startNs);
        coveredTo = std::max(coveredTo, a.endNs.value_or(std::numeric_limits<std::int64_t>::max()));
    }
    return delay;
}
} // namespace

QJsonObject timelineToOtlpMetrics(const TimelineStore &store)
{
    using namespace otlpmetrics;
    Instrument started{"grpc.client.attempt.started",
                       "{attempt}",
                       "The number of RPC attempts started, including those that have not completed.",
                       {}};
    Instrument attemptDuration{"grpc.client.attempt.duration", "s",
                               "The time an RPC attempt took, from its first HEADERS to its end on the wire.",
                               kLatencyBoundsS};
    Instrument sent{"grpc.client.attempt.sent_total_compressed_message_size", "By",
                    "The bytes of all request messages of an attempt as sent (compressed when the client "
                    "compressed them), without gRPC or HTTP/2 framing.",
                    kSizeBoundsBy};
    Instrument rcvd{"grpc.client.attempt.rcvd_total_compressed_message_size", "By",
                    "The bytes of all response messages of an attempt as received (compressed when the "
                    "server compressed them), without gRPC or HTTP/2 framing.",
                    kSizeBoundsBy};
    Instrument callDuration{"grpc.client.call.duration", "s",
                            "The time an RPC took from its first attempt's start to the status the client "
                            "got, retries and backoff included.",
                            kLatencyBoundsS};
    Instrument retries{"grpc.client.call.retries", "{retry}",
                       "The retries of a call, transparent ones not counted; calls without one are not "
                       "recorded.",
                       kRetryBounds};
    Instrument transparent{"grpc.client.call.transparent_retries", "{transparent_retry}",
                           "The transparent retries of a call; calls without one are not recorded.",
                           kTransparentRetryBounds};
    Instrument retryDelay{"grpc.client.call.retry_delay", "s",
                          "The time within a call when none of its attempts was in flight.", kLatencyBoundsS};

    // Name tables: a method's or a target's name is built once, however many calls share it.
    AttrNames names;
    std::unordered_map<std::string, int> methodIds;
    std::unordered_map<std::uint32_t, int> targetOfConnection;
    std::unordered_map<QString, int> targetIds;
    auto methodId = [&](const Call &call) {
        const auto [it, added] = methodIds.try_emplace(call.method, int(names.methods.size()));
        if (added) names.methods.push_back(methodName(call.method));
        return it->second;
    };
    auto targetId = [&](const Call &call) {
        const std::uint32_t conn = call.attempts.front().connection;
        if (const auto known = targetOfConnection.find(conn); known != targetOfConnection.end())
            return known->second;
        const QString name = targetName(call, store);
        const auto [it, added] = targetIds.try_emplace(name, int(names.targets.size()));
        if (added) names.targets.push_back(name);
        // A connection's server names the target of every call on it; the hop only stands in without one.
        if (store.findConnection(conn)) targetOfConnection.emplace(conn, it->second);
        return it->second;
    };

    for (const Call &call : store.calls()) {
        if (call.attempts.empty()) continue;
        const ClientOutcome outcome = clientOutcome(call, store);
        const Attrs base{methodId(call), targetId(call), -1};
        auto withStatus = [&](int status) { return Attrs{base[0], base[1], status}; };

        int retried = 0, transparentlyRetried = 0;
        for (size_t i = 0; i < call.attempts.size(); ++i) {
            const Attempt &a = call.attempts[i];
            started.add(base);
            if (i > 0) (call.transparentRetry(i) ? transparentlyRetried : retried) += 1;
            if (!a.endNs) continue;
            const Attrs attrs = withStatus(attemptStatus(call, i, outcome));
            attemptDuration.record(attrs, secondsBetween(a.startNs, *a.endNs));
            sent.record(attrs, messageBytes(a.requestBytes, a.requestMessages));
            rcvd.record(attrs, messageBytes(a.responseBytes, a.responseMessages));
        }

        if (outcome.source == ClientOutcome::Source::InFlight) continue;
        const std::int64_t end = outcome.atNs.value_or(*call.endNs());
        const int status = outcome.status ? knownStatus(*outcome.status)
                                          : attemptStatus(call, call.attempts.size() - 1, outcome);
        callDuration.record(withStatus(status), secondsBetween(call.startNs(), end));
        if (retried > 0) retries.record(base, retried);
        if (transparentlyRetried > 0) transparent.record(base, transparentlyRetried);
        retryDelay.record(base, retryDelaySeconds(call));
    }

    const std::int64_t origin = store.originNs();
    const std::int64_t wall = store.originWallNs();
    const QJsonValue start = u64(wall);
    const QJsonValue time = u64(wall + (std::max(store.latestNs(), origin) - origin));
    QJsonArray metrics;
    // Like an SDK's, an instrument nothing was recorded on exports no metric.
    for (const Instrument *m :
         {&started, &attemptDuration, &sent, &rcvd, &callDuration, &retries, &transparent, &retryDelay})
        if (!m->points.empty()) metrics.append(m->json(names, start, time));

    const QJsonObject resource{
        {"attributes", QJsonArray{QJsonObject{{"key", "service.name"},
                                              {"value", QJsonObject{{"stringValue", "rpcscope-capture"}}}},
                                  QJsonObject{{"key", "telemetry.sdk.name"},
                                              {"value", QJsonObject{{"stringValue", "rpcscope"}}}}}}};
    const QJsonObject scope{{"name", "rpcscope"}, {"version", RPCSCOPE_VERSION}};
    return {{"resourceMetrics",
             QJsonArray{QJsonObject{
                 {"resource", resource},
                 {"scopeMetrics", QJsonArray{QJsonObject{{"scope", scope}, {"metrics", metrics}}}}}}}};
}

QByteArray timelineToOtlpMetricsBytes(const TimelineStore &store)
{
    return QJsonDocument(timelineToOtlpMetrics(store)).toJson(QJsonDocument::Compact);
}

} // namespace rpcscope
