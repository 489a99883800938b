#pragma once

// A capture as a pcapng file that Wireshark and tshark dissect as HTTP/2 and gRPC. The capture holds decoded
// events, not bytes, so the packets are synthesized: Ethernet/IPv4/TCP headers (a handshake, sequence and
// acknowledgement numbers, FINs) around HTTP/2 frames re-encoded from the events. Header blocks are
// re-encoded with nghttp2's HPACK deflater (one per direction, honouring SETTINGS_HEADER_TABLE_SIZE) and
// split over as many HEADERS + CONTINUATION frames as the capture saw; DATA frames carry the gRPC messages
// (prefix and kept payload, zeros where the payload was not kept) in their recorded lengths. Every frame
// keeps its type, stream and time, so frame counts match the capture's. Header values are written as they
// are in the events: redact before handing them over (capturefile.h's Redaction).
//
// Streamed: events go in batch by batch and packets come out as soon as they are settled, so what is held
// does not grow with the capture. Two windows bound it:
//  - reassembly: a HEADERS frame waits for its CONTINUATIONs and the decoded header list that follows them,
//    a DATA frame for the gRPC messages that fill it (the decoder reports a message after the frame that
//    completes it). Later events wait behind them, so every connection's frames keep their order. A frame
//    still waiting when the held events pass the window is written with what is known (zeros for bytes no
//    message supplied), as it is when its connection closes or the capture ends;
//  - time order: packets are written in time order (events come in the order the relay read them, which
//    across directions and connections need not be their time order), from a buffer of the earliest
//    segments not yet written. A segment that arrives after a later one left the buffer is written next.
// Within both windows (any capture of up to tens of MB) the file is the one a writer holding the whole
// capture would write.

#include "capturedata.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rpcscope {

// How much a PcapngStreamWriter may hold before it writes what is not settled yet.
struct PcapngLimits
{
    size_t heldBytes = 32u << 20;    // events waiting for what completes them, and unconsumed messages
    size_t reorderBytes = 32u << 20; // segments waiting to be written in time order
};
// What a PcapngStreamWriter held at most: the bound a caller can check against the windows.
struct PcapngStats
{
    std::uint64_t events = 0;           // events taken
    std::uint64_t packets = 0;          // packets written
    std::uint64_t peakHeldEvents = 0;   // frames and connection events waiting at once
    std::uint64_t peakHeldBytes = 0;    // their bytes, with message bytes not yet in a DATA frame
    std::uint64_t peakReorderBytes = 0; // segments (with their payload) waiting for their time
    std::uint64_t forcedFrames = 0;     // frames written before what completes them came
    std::uint64_t lateSegments = 0;     // segments written after a later one (the time window passed)
};

class PcapngStreamWriter
{
public:
    // Receives the file's bytes in order; false stops the writer (add() and finish() then return false).
    using Output = std::function<bool(const char *data, size_t size)>;
    using Limits = PcapngLimits;
    using Stats = PcapngStats;

    // `originNs` (steady) and `originWallNs` place the events' times on the wall clock of the packets.
    PcapngStreamWriter(std::int64_t originNs, std::int64_t originWallNs, Output out, Limits limits = {});
    ~PcapngStreamWriter();
    PcapngStreamWriter(const PcapngStreamWriter &) = delete;
    PcapngStreamWriter &operator=(const PcapngStreamWriter &) = delete;

    bool add(const EventBatch &batch);
    bool add(const WireEvent &event);
    // Writes everything still held. Call once, after the last add().
    bool finish();
    const Stats &stats() const;

private:
    class Impl;
    std::unique_ptr<Impl> d;
};

// A pcapng file written atomically (a temporary file next to `path`, renamed over it by commit()), fed
// batch by batch. Destroyed without a commit, it leaves nothing behind.
class PcapngFileWriter
{
public:
    PcapngFileWriter();
    ~PcapngFileWriter();
    PcapngFileWriter(const PcapngFileWriter &) = delete;
    PcapngFileWriter &operator=(const PcapngFileWriter &) = delete;

    bool open(const std::string &path, const CaptureInfo &info, std::string *error,
              PcapngStreamWriter::Limits limits = {});
    bool add(const EventBatch &batch, std::string *error);
    bool commit(std::string *error);
    const PcapngStreamWriter::Stats &stats() const;

private:
    bool fail(std::string *error);
    std::string m_path, m_tmp, m_buffer;
    int m_fd = -1;
    int m_errno = 0;
    std::unique_ptr<PcapngStreamWriter> m_writer;
};

std::string captureToPcapng(const CaptureData &data);
// Writes atomically: a temporary file next to `path`, renamed over it once complete.
bool writePcapng(const std::string &path, const CaptureData &data, std::string *error);

} // namespace rpcscope
