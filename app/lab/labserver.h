#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope::lab {

// One arrival of a call at the lab server, stamped with the capture's steady clock (model/events/clock.h) so
// tests can compare it with what the relay saw on the wire.
struct Arrival
{
    std::string callId;
    std::int64_t tNs = 0;
    int arrival = 0; // 1-based count for this call id
    std::optional<int> previousAttempts;
};

// How a lab server differs from the default one; scenarios that need it start a second server.
struct LabServerOptions
{
    int maxConcurrentStreams = 0; // SETTINGS_MAX_CONCURRENT_STREAMS; 0: gRPC's default (unlimited)
    // > 0: Call and Search are served by this many workers, first come first served; a request waits for a
    // free worker, then holds it for its delay_ms. A shared handler pool, as in a thread-per-request server.
    int handlerPool = 0;
    // Accept keepalive PINGs at any rate, also on a connection without calls (C-core's server otherwise
    // answers a third early PING with GOAWAY too_many_pings).
    bool permitIdlePings = false;
    // > 0: the largest header list a request may carry (GRPC_ARG_MAX_METADATA_SIZE); 0: gRPC's default,
    // 8 KiB, past which C-core resets the stream and drops the connection.
    int maxMetadataBytes = 0;
    bool healthService = false; // grpc.health.v1 (grpc++'s default health service), SERVING at start
    // gRPC server reflection (grpc.reflection.v1alpha), so rpcscope can fetch the lab's schemas and decode
    // its messages with no .proto at hand.
    bool reflection = true;
};

// A grpc++ callback server for the Lab service on 127.0.0.1 (port 0 picks a free port).
class LabServer
{
public:
    LabServer();
    ~LabServer();

    void setOptions(const LabServerOptions &options); // before start()
    bool start(std::string *error);
    void stop();
    int port() const;

    std::vector<Arrival> arrivals() const;
    std::vector<Arrival> arrivalsFor(const std::string &callId) const;

    // Side effects (CallRequest.side_effect) applied for a call id, and repeats answered from the
    // idempotency-key cache instead. The listener runs on a gRPC thread for every de-duplicated arrival.
    int sideEffectsFor(const std::string &callId) const;
    int deduplicatedFor(const std::string &callId) const;
    void setDeduplicationListener(std::function<void(const std::string &callId, const std::string &key)> fn);

    // With healthService: the status of the whole server and of rpcscope.lab.Lab.
    void setServing(bool serving);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope::lab
