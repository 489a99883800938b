#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rpcscope::lab {

// A TCP front for a lab server that can misbehave on purpose, below gRPC: it speaks just enough raw HTTP/2 to
// refuse a connection's first stream, or it stops forwarding bytes without closing anything (a blackhole,
// as a middlebox that dropped the connection's state). Otherwise it forwards both directions unchanged.
// Listens on 127.0.0.1; put a capture hop in front of it to see what the client does about it.
class FaultFront
{
public:
    FaultFront();
    ~FaultFront();
    FaultFront(const FaultFront &) = delete;
    FaultFront &operator=(const FaultFront &) = delete;

    // The first n connections answer the client's preface with a server SETTINGS, read up to the first
    // HEADERS, answer it with GOAWAY (last-stream-id 0, NO_ERROR: "I processed no stream of yours") and
    // close. Later connections are forwarded. Set before start().
    void refuseFirstConnections(int n);

    bool start(std::uint16_t targetPort, std::string *error);
    void stop();
    std::uint16_t port() const;
    std::string address() const; // "127.0.0.1:PORT"

    // From now on every open connection forwards nothing in either direction and stays open; what arrives
    // is read and dropped. Connections accepted later are forwarded as usual.
    void blackhole();
    // Steady ns (model/events/clock.h) when the client closed a blackholed connection: it noticed the loss.
    std::optional<std::int64_t> blackholeNoticedNs() const;

    int connections() const; // accepted so far
    int refused() const;     // connections answered with GOAWAY

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope::lab
