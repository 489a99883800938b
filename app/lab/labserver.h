#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope::lab {

// One arrival of a call at the lab server, stamped with the capture's steady clock (model/clock.h) so tests
// can compare it with what the relay saw on the wire.
struct Arrival
{
    std::string callId;
    std::int64_t tNs = 0;
    int arrival = 0; // 1-based count for this call id
    std::optional<int> previousAttempts;
};

// A grpc++ callback server for the Lab service on 127.0.0.1 (port 0 picks a free port).
class LabServer
{
public:
    LabServer();
    ~LabServer();

    bool start(std::string *error);
    void stop();
    int port() const;

    std::vector<Arrival> arrivals() const;
    std::vector<Arrival> arrivalsFor(const std::string &callId) const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rpcscope::lab
