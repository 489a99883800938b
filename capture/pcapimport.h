#pragma once

#include "events.h"
#include "h2decoder.h"
#include "tlskeylog.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

struct PcapImportOptions
{
    // The server's TCP port. Unset: detected from the HTTP/2 client preface (PRI * HTTP/2.0) and SYNs.
    std::optional<std::uint16_t> serverPort;
    DecoderLimits limits;
    // Out-of-order bytes held per direction while waiting for a missing segment; beyond it the gap is
    // declared lost and decoding of that direction stops (the connection is marked).
    size_t maxOutOfOrderBytes = size_t(8) << 20;
    // Called now and then with the fraction of the file read; return false to cancel. (When the server port
    // is detected, a first pass over the file finds it: its reading counts as the first fifth.)
    std::function<bool(double)> progress;
    // With a sink: events go to it in batches of about this many as the file is read.
    size_t batchEvents = 1024;
    // A key log: connections that start with a TLS ClientHello are decrypted with its secrets (TLS 1.2 and
    // 1.3, AES-GCM and ChaCha20-Poly1305) and their plaintext decoded as h2c. The server ports are then also
    // detected from ClientHellos. A connection whose keys are missing gets a note, not an error.
    std::shared_ptr<const TlsKeyLog> keylog;
};

struct PcapImportResult
{
    EventBatch events; // time-ordered per connection; tNs is the packet's wall-clock time in ns (no sink)
    std::int64_t firstPacketWallNs = 0;
    std::uint64_t packets = 0;       // every packet in the file
    std::uint64_t tcpSegments = 0;   // TCP segments on HTTP/2 connections
    std::uint64_t retransmitted = 0; // segments (or parts) seen before, dropped
    std::uint64_t outOfOrder = 0;    // segments that arrived ahead of a gap and were held
    std::uint16_t serverPort = 0;    // given or detected
    int connections = 0;
    bool cancelled = false;
    std::vector<std::string> notes; // things worth saying: truncated file, lost bytes, unsupported link type
};

// Reads a pcap or pcapng file (libpcap) of h2c traffic - Ethernet, Linux cooked (SLL, SLL2), BSD loopback or
// raw IP; IPv4 and IPv6 - reassembles each TCP connection (sequence numbers, retransmissions, out-of-order
// segments) and decodes it with the same HTTP/2 decoder as the live relay (TLS first decrypted with
// options.keylog, when given). Connections whose start was not
// captured are decoded as attached mid-stream. False with a one-line reason when the file cannot be read at
// all; a file cut short yields what was intact, with a note.
bool importPcap(const std::string &path, const PcapImportOptions &options, PcapImportResult *result,
                std::string *error);
// The same, streaming: the events go to `sink` batch by batch while the file is read (in the order above),
// and result->events stays empty, so memory is bounded by the reassembly windows and the decoders' state,
// not by the file. firstPacketWallNs is set before the first batch; the counters are current at each batch.
using PcapEventSink = std::function<void(EventBatch &&batch)>;
bool importPcap(const std::string &path, const PcapImportOptions &options, const PcapEventSink &sink,
                PcapImportResult *result, std::string *error);

} // namespace rpcscope
