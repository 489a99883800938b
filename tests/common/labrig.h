#pragma once

// A capture relay in front of a lab server, with every decoded event collected, and what the lab's streaming
// RPCs put on the wire: shared by the streaming tests.

#include "events.h"
#include "lab.pb.h"
#include "labserver.h"
#include "relay.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace labrig {

using namespace rpcscope;
using namespace std::chrono_literals;

// What real grpc++ peers never cause: the decoder giving up, or a broken HTTP/2 rule noted against a peer.
inline bool decodeProblem(const WireEvent &e)
{
    return e.kind == EventKind::DecodeError ||
           (e.kind == EventKind::Notice && e.reason.find("protocol error") != std::string::npos);
}

struct Collector
{
    std::mutex mu;
    std::condition_variable cv;
    EventBatch events;
    bool hold = false;    // while set, the sink does not return: the relay's decoder thread is stuck in it
    bool holding = false; // the decoder thread is waiting in the sink
    Relay::Sink sink()
    {
        return [this](EventBatch &&b) {
            std::unique_lock lk(mu);
            events.insert(events.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
            holding = hold;
            cv.notify_all();
            cv.wait_for(lk, 30s, [&] { return !hold; });
            holding = false;
        };
    }
    void setHold(bool on)
    {
        std::lock_guard lk(mu);
        hold = on;
        cv.notify_all();
    }
    bool waitHolding()
    {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, 10s, [&] { return holding; });
    }
};

// The relay in front of a lab server, with every decoded event collected.
struct Rig
{
    Collector collector; // outlives the relay, whose stop flushes into it (also when a check fails early)
    lab::LabServer server;
    Relay relay;
    std::string error;

    bool start()
    {
        return server.start(&error) &&
               relay.start({"127.0.0.1", 0}, {"127.0.0.1", std::uint16_t(server.port())}, collector.sink(),
                           &error);
    }
    std::string target() const { return relay.listenAddress().toString(); }
    // Stops the relay (flushing the decoder) and returns what it decoded.
    EventBatch stop()
    {
        relay.stop();
        server.stop();
        std::lock_guard lk(collector.mu);
        return collector.events;
    }
};

// The stream that carried the call with this rpcscope-call-id; 0 when none did.
inline std::pair<std::uint32_t, std::uint32_t> streamOf(const EventBatch &events, const std::string &callId)
{
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer && e.grpc.callId == callId)
            return {e.connection, e.stream};
    return {0, 0};
}

inline std::vector<std::uint32_t> messageSizes(const EventBatch &events,
                                               std::pair<std::uint32_t, std::uint32_t> stream, Direction dir)
{
    std::vector<std::uint32_t> sizes;
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Message && e.dir == dir && e.connection == stream.first &&
            e.stream == stream.second)
            sizes.push_back(e.length);
    return sizes;
}

inline std::optional<int> grpcStatusOf(const EventBatch &events,
                                       std::pair<std::uint32_t, std::uint32_t> stream)
{
    for (const WireEvent &e : events)
        if (e.kind == EventKind::Headers && e.dir == Direction::ServerToClient &&
            e.connection == stream.first && e.stream == stream.second && e.endStream)
            return e.grpc.status;
    return std::nullopt;
}

inline lab::CallReply serverStreamReply(const lab::StreamRequest &req, int sequence)
{
    lab::CallReply r;
    r.set_call_id(req.call_id());
    r.set_arrival(1);
    r.set_sequence(sequence);
    r.set_payload(std::string(req.message_size(), 's'));
    return r;
}

// Checks the server stream's replies the relay decoded on `stream` against what the lab server sent for
// `req`: each one's length, and its kept first bytes. Returns how many there were; *why names the first
// mismatch.
inline int checkServerStreamReplies(const EventBatch &events, std::pair<std::uint32_t, std::uint32_t> stream,
                                    const lab::StreamRequest &req, std::string *why)
{
    int seen = 0;
    for (const WireEvent &e : events) {
        if (e.kind != EventKind::Message || e.dir != Direction::ServerToClient ||
            e.connection != stream.first || e.stream != stream.second)
            continue;
        const std::string reply = serverStreamReply(req, ++seen).SerializeAsString();
        if (why->empty() && e.length != reply.size())
            *why = "reply " + std::to_string(seen) + " is " + std::to_string(e.length) + " bytes, not " +
                   std::to_string(reply.size());
        if (why->empty() && e.payload != reply.substr(0, e.payload.size()))
            *why = "reply " + std::to_string(seen) + ": the kept bytes differ from what was sent";
    }
    return seen;
}

} // namespace labrig
