#pragma once

// A relay's frame times against a loopback recording's packet times, for the benchmarks that report the
// wire-time error (userbench: plaintext hops; tlsbench: intercepted TLS hops, the recording decrypted with
// the relay's key log). dumpcap records; rpcscope's own pcap reader imports; frames are matched by
// connection, direction, stream, type, flags, a PING's data or a WINDOW_UPDATE's increment, and occurrence
// on their stream (a connection's own frames, stream 0, by the call stream's frame they follow); requests on
// the client leg, responses on the server leg.

#include "benchtable.h"
#include "events.h"
#include "relay.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <tuple>
#include <utility>
#include <vector>

namespace rpcscope {
class TlsKeyLog;
}

namespace rpcscope::bench {

// realtime - steady, the narrowest of a few samples: what turns a packet's wall-clock time into the
// relay's steady clock.
std::int64_t wallMinusSteady();

// Every event a relay hands over, kept.
struct EventSink
{
    std::mutex mu;
    EventBatch all;
    Relay::Sink sink();
};

// dir, stream, type, flags, what tells a connection's frames apart (a PING's opaque data, a WINDOW_UPDATE's
// increment), occurrence
using FrameKey = std::tuple<int, std::uint32_t, int, int, std::uint64_t, int>;
// A connection's own frame (stream 0): the call stream's frame it follows in its direction (a FrameKey with
// type -1 before any), how many connection frames came between that one and it, its type, flags and what
// tells it apart. Both legs carry the same bytes in the same order, so the key names one frame on either;
// a frame the recording lost leaves only the frames right after it without a partner.
using ControlKey = std::tuple<FrameKey, int, int, int, std::uint64_t>;

// A connection's frames and its opening (time, client peer). A call stream's frames are keyed by their
// stream and occurrence on it; a connection's own frames (SETTINGS, PING, WINDOW_UPDATE on stream 0) by the
// call stream's frame they follow (ControlKey). Matching the latter by their sequence alone paired a run of
// identical ones (a WINDOW_UPDATE of the same increment after every call) one off after a single lost packet,
// and counted a call's length as the relay's error.
struct ConnFrames
{
    std::int64_t openedNs = 0;
    std::string client;
    std::map<FrameKey, std::int64_t> frames;
    std::map<ControlKey, std::int64_t> control;
};

// Every connection's frames, in the order connections opened.
std::vector<ConnFrames> byConnection(const EventBatch &events);

// One relay whose frames are judged: its own events, the recording's client leg of it (connections to its
// listening port) and whether it takes kernel receive times (else read times).
struct RelayUnderTest
{
    std::vector<ConnFrames> relay;
    std::vector<ConnFrames> clientLeg;
    bool kernel = false;
};

// Absolute errors in microseconds, [kernel]: all frames, and the call streams' frames alone.
struct WireErrors
{
    std::vector<double> all[2];
    std::vector<double> streams[2];
    // Frames more than kOffUs off, and those of them whose time is (within 2 µs) that of a later packet in
    // the same direction: the kernel merged their segment into a later one before the relay read it, and a
    // merged segment keeps only the later one's receive time.
    static constexpr double kOffUs = 20;
    int off[2] = {0, 0};
    int offByLaterPacket[2] = {0, 0};
    int unmatched = 0;
    size_t connections = 0;
};

// `serverLeg`: the recording's connections to the real server, which are the relays' upstream connections
// in the order they opened. `offsetNs`: wallMinusSteady().
WireErrors compareWireTimes(const std::vector<RelayUnderTest> &relays,
                            const std::vector<ConnFrames> &serverLeg, std::int64_t offsetNs);

// dumpcap on loopback with a capture filter, writing a pcapng; stop() ends it (SIGINT) and waits.
class DumpcapRecording
{
public:
    ~DumpcapRecording() { stop(); }
    // False when there is no dumpcap (the caller says so and skips its rows) or it wrote nothing within 5 s.
    bool start(const std::string &filter, const std::string &pcapPath, std::string *error);
    void stop();

private:
    pid_t m_pid = -1;
};

// A process that keeps one core busy until killed (SIGKILL, then waitpid).
pid_t spin();

// One measurement: two relays to 127.0.0.1:serverPort, set up by `configure` (a TLS interception, say), one
// timing its reads and one taking kernel receive times. dumpcap records loopback while two spinning processes
// keep both cores busy and `drive(readPort, kernelPort)` sends calls through them; the recording is then
// imported (decrypted with `keys()`, asked once the relays have stopped, when set) and compared.
struct WireTimesRun
{
    bool recorded = false; // false: dumpcap could not record, `why` says why
    std::string why;
    WireErrors errors;
    std::uint64_t kernelStampedReads = 0, readTimedReads = 0; // of the kernel-timed relay
    std::vector<std::string> importNotes;
};
// False (and *error) when a relay does not start.
bool measureWireTimes(std::uint16_t serverPort, const std::string &pcapPath,
                      const std::function<void(Relay &relay, bool kernel)> &configure,
                      const std::function<void(std::uint16_t readPort, std::uint16_t kernelPort)> &drive,
                      const std::function<std::shared_ptr<const TlsKeyLog>()> &keys, WireTimesRun *run,
                      std::string *error);

// A run's rows and notes: where nothing was recorded, a note saying so; else the import's notes, p50 / p99 /
// max per way of timing with the goal on the p99 (kernel times and read times alike, so the old way shows
// what it missed by), the call streams' frames alone, and how `connections` (what was matched, e.g. "relay
// connections") were matched. `what` prefixes the rows ("", "TLS ").
void reportWireTimes(const WireTimesRun &run, const std::string &what, const std::string &connections,
                     std::vector<Row> *rows, std::vector<std::string> *notes);

} // namespace rpcscope::bench
