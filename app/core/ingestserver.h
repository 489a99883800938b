#pragma once

#include "events.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rpcscope {

// One resilience event reported by the user's own service, as it arrives (ingest.proto or a JSON line).
struct ReportedEvent
{
    std::int64_t timeUnixNanos = 0; // 0: now
    std::string kind;               // breaker, rejection, retry-suppressed, custom
    std::string detail;
    std::string label;
    std::string callId;
    std::string traceparent;
    std::string source;
};

// Checks a reported event and turns it into a LabEvent stamped on the capture's steady clock.
// On a bad event returns false with a one-line reason (unknown kind, bad time, oversized field, ...).
bool toWireEvent(const ReportedEvent &in, std::int64_t steadyNow, std::int64_t wallNow, WireEvent *out,
                 std::string *error);

// Parses one JSON line ({"kind":..., "detail":..., "time_unix_nanos":..., ...}) into a ReportedEvent.
bool parseEventLine(const std::string &line, ReportedEvent *out, std::string *error);

// The ingestion endpoint a capture session serves on loopback: the gRPC Ingest service (ingest.proto) and the
// same events as line-delimited JSON over plain TCP, answered line by line with "ok" or "error: REASON".
// Accepted events go to the sink as LabEvent batches; a bad event never reaches it.
class IngestServer
{
public:
    using Sink = std::function<void(EventBatch &&)>;

    IngestServer();
    ~IngestServer();
    IngestServer(const IngestServer &) = delete;
    IngestServer &operator=(const IngestServer &) = delete;

    // Whether the model has room for more events, waiting up to the given time for it. Without room the JSON
    // endpoint reads nothing (TCP holds the senders back) and the gRPC one answers RESOURCE_EXHAUSTED. Set
    // before start(); none: always room.
    using RoomProbe = std::function<bool(std::chrono::milliseconds)>;
    void setRoomProbe(RoomProbe probe);

    // Port 0 picks free ports. Binds 127.0.0.1 only.
    bool start(std::uint16_t grpcPort, std::uint16_t jsonPort, Sink sink, std::string *error);
    void stop();

    std::uint16_t grpcPort() const;
    std::uint16_t jsonPort() const;
    std::uint64_t accepted() const;
    std::uint64_t rejected() const;
    // gRPC events refused with RESOURCE_EXHAUSTED because the model had no room.
    std::uint64_t pushedBack() const;

    static constexpr size_t kMaxLineBytes = 8192;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope
