#pragma once

// The event vocabulary. Capture, the lab and file readers produce these plain values; the model consumes them.
// Nothing here depends on Qt so that producers on any thread can build them cheaply.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

enum class Direction : std::uint8_t { ClientToServer, ServerToClient };

enum class EventKind : std::uint8_t {
    ConnectionOpened, // text = client peer, text2 = server peer
    ConnectionClosed,
    Frame,            // one HTTP/2 frame, complete
    Headers,          // a complete header block (HEADERS + CONTINUATION), decoded
    Message,          // one complete gRPC length-prefixed message
    DecodeError,      // text = reason; this direction is undecodable from here on (bytes still relayed)
    Notice,           // text = something worth marking that does not stop decoding (a limit hit, HPACK unknown)
    FlowStallBegin,   // dir = the sender whose window reached 0 with its stream still open; stream 0 = connection
    FlowStallEnd,     // a WINDOW_UPDATE (or SETTINGS) opened the window again, or the stream was reset
    LabEvent,         // a client policy's decision: text = kind ("breaker", "fast-fail", ...), text2 = detail,
                      // grpc.callId = the call it concerns (may never reach the wire), connection = 0
};

// HTTP/2 frame types (RFC 9113 section 6).
enum FrameType : std::uint8_t {
    FrameData = 0,
    FrameHeaders = 1,
    FramePriority = 2,
    FrameRstStream = 3,
    FrameSettings = 4,
    FramePushPromise = 5,
    FramePing = 6,
    FrameGoaway = 7,
    FrameWindowUpdate = 8,
    FrameContinuation = 9,
};

enum FrameFlag : std::uint8_t {
    FlagEndStream = 0x1,
    FlagAck = 0x1,
    FlagEndHeaders = 0x4,
    FlagPadded = 0x8,
    FlagPriority = 0x20,
};

struct Header
{
    std::string name;
    std::string value;
    bool operator==(const Header &) const = default;
};

// gRPC fields pulled out of a header block. Absent fields stay empty.
struct GrpcFields
{
    std::string path;                            // :path (requests)
    std::optional<std::int64_t> timeoutNs;       // grpc-timeout, parsed
    std::optional<int> previousAttempts;         // grpc-previous-rpc-attempts
    std::optional<int> httpStatus;               // :status (responses)
    std::optional<int> status;                   // grpc-status
    std::optional<std::string> message;          // grpc-message, percent-decoded
    std::optional<std::int64_t> pushbackMs;      // grpc-retry-pushback-ms; negative means "stop retrying"
    std::string callId;                          // rpcscope-call-id metadata (the lab sends it)
    std::string encoding;                        // grpc-encoding
    // rpcscope-retry-policy (the lab client tells its retryPolicy): backoff parameters in ms; 0 when absent
    double retryInitialMs = 0, retryMultiplier = 0, retryMaxMs = 0;
    // W3C traceparent (requests): the trace this call belongs to and the caller's span that made it, as the
    // lower-case hex on the wire; both empty when absent or malformed.
    std::string traceId;      // 32 hex digits
    std::string parentSpanId; // 16 hex digits
    bool operator==(const GrpcFields &) const = default;
};

struct WireEvent
{
    EventKind kind = EventKind::Frame;
    std::uint32_t connection = 0;
    Direction dir = Direction::ClientToServer;
    std::int64_t tNs = 0; // steady-clock ns, same clock for every producer of one capture

    // Frame / Headers / Message
    std::uint32_t stream = 0;
    std::uint8_t frameType = 0;
    std::uint8_t flags = 0;
    std::uint32_t length = 0;    // Frame: payload length; Message: message length without the 5-byte prefix
    std::uint32_t errorCode = 0; // RST_STREAM and GOAWAY
    bool endStream = false;      // Headers: the block ends the stream (trailers or Trailers-Only)
    bool compressed = false;     // Message: compressed flag of the prefix

    std::vector<Header> headers; // Headers only
    GrpcFields grpc;             // Headers only
    bool hpackUnknown = false;   // Headers: decoded without the full HPACK context (attached mid-connection)
    bool truncated = false;      // Headers: the list was cut at the header-list limit; Message: payload was cut
    std::string payload;         // Message: its first bytes (without the 5-byte prefix), up to the keep limit

    std::uint32_t lastStreamId = 0;    // GOAWAY
    std::uint32_t windowIncrement = 0; // WINDOW_UPDATE
    std::uint64_t pingData = 0;        // PING opaque data
    std::int64_t rttNs = -1;           // PING ACK: time since the PING it answers, when that was seen
    std::vector<std::pair<std::uint16_t, std::uint32_t>> settings; // SETTINGS parameters, in order

    std::string text;  // ConnectionOpened: client peer; ConnectionClosed: why; DecodeError/Notice: reason;
                       // GOAWAY: debug data
    std::string text2; // ConnectionOpened: server peer
    std::string label; // ConnectionOpened: the capturing relay's label (a hop name such as "B->C"); may be empty

    bool operator==(const WireEvent &) const = default;
};

using EventBatch = std::vector<WireEvent>;

// Bounds on the times the model takes in. A capture file beyond them is refused, the merge refuses to go
// beyond them, and the decoder caps a longer grpc-timeout. Within them every sum and difference the model and
// its exports form fits in int64: a deadline (start + timeout), a budget (deadline - start), deadlines
// compared, gaps, wall-clock times (wall origin + time since origin). With |origin| <= O, |t - origin| <= S and
// timeouts <= T: 2O + 2S + T = 8.9e18 < 9.22e18.
// O = 4e18 ns is 2096 for clocks that count from the epoch (pcap imports); S and T are 9.5 years.
inline constexpr std::int64_t kMaxOriginNs = 4'000'000'000'000'000'000; // steady and wall-clock origins
inline constexpr std::int64_t kMaxSpanNs = 300'000'000'000'000'000;     // an event from its capture's origin
inline constexpr std::int64_t kMaxTimeoutNs = 300'000'000'000'000'000;  // grpc-timeout, and a gap's length

// How a Notice about a broken HTTP/2 rule begins, followed by "client: " or "server: " (the side that broke
// it), what it did, and the error code the receiver should answer with in parentheses.
inline constexpr char kProtocolErrorPrefix[] = "protocol error by the ";

const char *frameTypeName(std::uint8_t type);
const char *grpcStatusName(int code);
// RST_STREAM and GOAWAY error codes (RFC 9113 section 7) by name: "CANCEL", "ENHANCE_YOUR_CALM"; an unknown
// code as its number.
std::string h2ErrorName(std::uint32_t code);

} // namespace rpcscope
