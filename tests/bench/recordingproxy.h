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

// A plain blocking TCP forwarder on 127.0.0.1 that keeps every read, in the order the reads happened, so the
// decoder benchmark can replay real grpc++ bytes cut the way a relay's 64 KiB reads cut them. It decodes
// nothing and is not fast; it exists only to record.
class RecordingProxy
{
public:
    RecordingProxy();
    ~RecordingProxy();

    bool start(std::uint16_t targetPort, std::string *error);
    std::uint16_t port() const;
    // Closes the listener and every connection, then joins all threads.
    void stop();
    // The recorded reads of each connection, by accept order.
    std::vector<std::vector<Chunk>> connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope::bench
