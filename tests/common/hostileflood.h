#pragma once

// A hostile HTTP/2 client for the hostile-traffic suite and its benchmark: hand-built frames on plain
// loopback sockets, written as fast as the peer takes them, each flood bounded by a count and a time. It
// shares no code with the capture layer it attacks.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hostile {

enum class Flood
{
    Ping,         // PING frames on one connection, no calls
    Settings,     // SETTINGS frames, one setting each
    Continuation, // one HEADERS without END_HEADERS, then empty CONTINUATION frames
    HpackHeavy,  // streams opened with ~16 KiB header blocks that grow through the dynamic table, never ended
    RapidReset,  // HEADERS then RST_STREAM(CANCEL), again and again (CVE-2023-44487)
    OpenStreams, // streams opened and left open, over more connections when the server limits them
    DistinctPaths, // whole requests (END_STREAM), each to a :path never used before: a row each in statistics
};

std::vector<Flood> allFloods();
const char *floodName(Flood flood); // "ping", "settings", ...
bool floodFromName(const std::string &name, Flood *out);

struct FloodLimits
{
    std::uint64_t count = 0; // frames (Ping, Settings, Continuation) or streams (the others); 0: no limit
    double seconds = 3;      // wall-clock bound, whatever the count
    double rate = 0;         // units a second, evenly spread; 0: as fast as the peer takes them
};

// `count` units spread over `seconds`: a flood that lasts its time rather than a burst.
FloodLimits paced(std::uint64_t count, double seconds);
// The suite's rate for a flood, units a second: enough to show a budget that does not hold within seconds,
// little enough that an unbounded capture does not take the machine's memory with it (a PING flood as fast
// as loopback goes reaches gigabytes in seconds). Open streams: 100,000 in 10 s. Distinct paths: 2,000 a
// second, each answered by the server (UNIMPLEMENTED), so each is a call that ends.
double suiteRate(Flood flood);

struct FloodResult
{
    std::uint64_t units = 0;  // flood frames or streams written, as FloodLimits::count counts them
    std::uint64_t frames = 0; // every frame written, the prefaces' SETTINGS included
    std::uint64_t bytes = 0;  // every byte written
    int connections = 0;      // connections opened
    int closedByPeer = 0;     // connections the other side ended
    std::uint64_t resetsReceived = 0;
    std::uint64_t goaways = 0;
    std::string lastGoaway; // "ENHANCE_YOUR_CALM too_many_pings", say; empty when none came
    double seconds = 0;
    std::string error; // why it stopped before its bound (cannot connect); empty when it reached it

    std::string summary() const; // one line
};

// Floods 127.0.0.1:port. The connections stay open after run() (so streams stay in flight) until close() or
// the destructor.
class FloodClient
{
public:
    FloodClient();
    ~FloodClient();
    FloodClient(const FloodClient &) = delete;
    FloodClient &operator=(const FloodClient &) = delete;

    // Blocking; returns when the count is written or the time is up.
    FloodResult run(Flood flood, std::uint16_t port, const FloodLimits &limits);
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace hostile
