#pragma once

// A capture as a pcapng file that Wireshark and tshark dissect as HTTP/2 and gRPC. The capture holds decoded
// events, not bytes, so the packets are synthesized: Ethernet/IPv4/TCP headers (a handshake, sequence and
// acknowledgement numbers, FINs) around HTTP/2 frames re-encoded from the events. Header blocks are
// re-encoded with nghttp2's HPACK deflater (one per direction, honouring SETTINGS_HEADER_TABLE_SIZE) and
// split over as many HEADERS + CONTINUATION frames as the capture saw; DATA frames carry the gRPC messages
// (prefix and kept payload, zeros where the payload was not kept) in their recorded lengths. Every frame
// keeps its type, stream and time, so frame counts match the capture's. Header values are written as they
// are in `data`: redact before calling (capturefile.h's Redaction).

#include "capturedata.h"

#include <string>

namespace rpcscope {

std::string captureToPcapng(const CaptureData &data);
// Writes atomically: a temporary file next to `path`, renamed over it once complete.
bool writePcapng(const std::string &path, const CaptureData &data, std::string *error);

} // namespace rpcscope
