#pragma once

#include "events.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rpcscope::bench {

// One read of a TCP relay: which way the bytes went and what they were.
struct Chunk
{
    Direction dir;
    std::string bytes;
};

// A plain blocking TCP forwarder on 127.0.0.1, two threads per connection (one per direction), that decodes
// nothing. It does one of two jobs:
// - Record: keeps every read, in the order the reads happened, so the decoder benchmark can replay real
// grpc++
//   bytes cut the way a relay's 64 KiB reads cut them. Not fast; it exists only to record.
// - Splice: the leanest relay there is, as a baseline for the cost of the extra TCP hop alone. Each direction
//   splices socket -> 1 MiB pipe -> socket with blocking calls: no poll, no user-space copy, no bookkeeping.
class PlainProxy
{
public:
    enum class Mode
    {
        Record,
        Splice
    };

    explicit PlainProxy(Mode mode);
    ~PlainProxy();

    bool start(std::uint16_t targetPort, std::string *error);
    std::uint16_t port() const;
    // Closes the listener and every connection, then joins all threads.
    void stop();
    // Record: the recorded reads of each connection, by accept order.
    std::vector<std::vector<Chunk>> connections() const;
    // Splice: directions that could not make their pipe and copied instead (0 when all spliced).
    int copiedDirections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope::bench
