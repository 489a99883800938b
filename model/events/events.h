#pragma once

// The event vocabulary. Capture, the lab and file readers produce these plain values; the model consumes
// them. Nothing here depends on Qt so that producers on any thread can build them cheaply.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace rpcscope {

enum class Direction : std::uint8_t
{
    ClientToServer,
    ServerToClient
};

enum class EventKind : std::uint8_t
{
    ConnectionOpened, // peers(), label
    ConnectionClosed, // reason
    Frame,            // one HTTP/2 frame, complete
    Headers,          // a complete header block (HEADERS + CONTINUATION), decoded
    Message,          // one complete gRPC length-prefixed message
    DecodeError,      // reason; this direction is undecodable from here on (bytes still relayed)
    Notice,           // reason: something worth marking that does not stop decoding (a limit hit, HPACK
                      // unknown); violation(): the HTTP/2 rule a peer broke, when that is what it marks
    FlowStallBegin,   // dir = the sender whose window reached 0 with its stream still open; stream 0 =
                      // connection
    FlowStallEnd,     // a WINDOW_UPDATE (or SETTINGS) opened the window again, or the stream was reset
    LabEvent,         // a client policy's decision(): its kind ("breaker", "fast-fail", ...) and detail,
                      // grpc.callId = the call it concerns (may never reach the wire), connection = 0
};

// HTTP/2 frame types (RFC 9113 section 6).
enum FrameType : std::uint8_t
{
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

enum FrameFlag : std::uint8_t
{
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
    std::string path;                       // :path (requests)
    std::optional<std::int64_t> timeoutNs;  // grpc-timeout, parsed
    std::optional<int> previousAttempts;    // grpc-previous-rpc-attempts
    std::optional<int> httpStatus;          // :status (responses)
    std::optional<int> status;              // grpc-status
    std::optional<std::string> message;     // grpc-message, percent-decoded
    std::optional<std::int64_t> pushbackMs; // grpc-retry-pushback-ms; negative means "stop retrying"
    std::string callId;                     // rpcscope-call-id metadata (the lab sends it)
    std::string encoding;                   // grpc-encoding
    // rpcscope-retry-policy (the lab client tells its retryPolicy): backoff parameters in ms; 0 when absent
    double retryInitialMs = 0, retryMultiplier = 0, retryMaxMs = 0;
    // W3C traceparent (requests): the trace this call belongs to and the caller's span that made it, as the
    // lower-case hex on the wire; both empty when absent or malformed.
    std::string traceId;      // 32 hex digits
    std::string parentSpanId; // 16 hex digits
    bool operator==(const GrpcFields &) const = default;
};

// A rule of RFC 9113 that one side broke while the framing survived: a frame of the wrong size or on the
// wrong stream, a SETTINGS value out of range, a WINDOW_UPDATE of 0, DATA past a window.
struct ProtocolViolation
{
    Direction by = Direction::ClientToServer; // the side that broke it
    std::string rule;                         // what it did: "WINDOW_UPDATE of 0 on stream 3"
    std::uint32_t errorCode = 0;              // what the receiver should answer with (RFC 9113 section 7)
    bool operator==(const ProtocolViolation &) const = default;
};

// ConnectionOpened: the two ends of the connection.
struct PeerNames
{
    std::string client; // "127.0.0.1:40000"
    std::string server;
    bool operator==(const PeerNames &) const = default;
};

// LabEvent: a client policy's decision.
struct LabDecision
{
    std::string kind; // "breaker", "fast-fail", "retry-suppressed", ...
    std::string detail;
    bool operator==(const LabDecision &) const = default;
};

// A Notice on one stream (its `stream` and `dir` set) saying that the capturing proxy, not a peer, made this
// attempt fail: a fault rule's stream action (abort, reset, goaway, delay). Its reason says what was done
// ("fault: abort UNAVAILABLE before the server (rule 2)"); the timeline marks the attempt as injected and
// exports carry the rule.
struct FaultInjection
{
    std::uint32_t rule = 0; // 1-based, as the capture numbers its rules
    std::string text;       // the rule in the compact syntax ("abort status=14 method=/shop.Cart/*")
    bool operator==(const FaultInjection &) const = default;
};

// A Frame event that stands for a run of control frames of one kind (type and flags) in one direction of one
// connection: past a per-connection rate (a PING or SETTINGS flood), the decoder records them as counted
// runs instead of one event each. The event's tNs is the last frame's time, its length the last frame's.
struct FrameRun
{
    std::uint32_t count = 0;  // frames the event stands for (at least 1)
    std::int64_t firstNs = 0; // the first one's time
    std::uint64_t bytes = 0;  // their payload bytes together
    bool operator==(const FrameRun &) const = default;
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
    bool truncated = false; // Headers: the list was cut at the header-list limit; Message: payload was cut
    std::string payload;    // Message: its first bytes (without the 5-byte prefix), up to the keep limit

    std::uint32_t lastStreamId = 0;    // GOAWAY
    std::uint32_t windowIncrement = 0; // WINDOW_UPDATE
    std::uint64_t pingData = 0;        // PING opaque data
    std::int64_t rttNs = -1;           // PING ACK: time since the PING it answers, when that was seen
    std::vector<std::pair<std::uint16_t, std::uint32_t>> settings; // SETTINGS parameters, in order

    std::string
        label; // ConnectionOpened: the capturing relay's label (a hop name such as "B->C"); may be empty

    // Why: ConnectionClosed, why it closed; DecodeError, why this direction stopped decoding; Notice, what
    // happened; a GOAWAY frame, its debug data (the peer's own why, up to 256 bytes).
    std::string reason;

    // What only one kind carries, typed by that kind: PeerNames (ConnectionOpened), LabDecision (LabEvent), a
    // ProtocolViolation (a Notice that marks a broken rule). One variant rather than a field each: 576 bytes
    // a WireEvent, against 688 with a field each (536 with the old untyped text/text2). The decoder moves
    // millions a second; HEADERS-heavy decoding measured about 10% slower at 688 bytes, no slower at 576.
    // FrameRun (a Frame event summarizing a flood of control frames) fits beside them without growing it.
    std::variant<std::monostate, PeerNames, LabDecision, ProtocolViolation, FrameRun, FaultInjection> about;

    const PeerNames *peers() const { return std::get_if<PeerNames>(&about); }
    const LabDecision *decision() const { return std::get_if<LabDecision>(&about); }
    const ProtocolViolation *violation() const { return std::get_if<ProtocolViolation>(&about); }
    const FrameRun *frameRun() const { return std::get_if<FrameRun>(&about); }
    const FaultInjection *injection() const { return std::get_if<FaultInjection>(&about); }

    bool operator==(const WireEvent &) const = default;
};

using EventBatch = std::vector<WireEvent>;
// A batch's events without owning them: a slice of a batch goes to the model without being moved out.
using EventSpan = std::span<const WireEvent>;

// Bounds on the times the model takes in. A capture file beyond them is refused, the merge refuses to go
// beyond them, and the decoder caps a longer grpc-timeout. Within them every sum and difference the model and
// its exports form fits in int64: a deadline (start + timeout), a budget (deadline - start), deadlines
// compared, gaps, wall-clock times (wall origin + time since origin). With |origin| <= O, |t - origin| <= S
// and timeouts <= T: 2O + 2S + T = 8.9e18 < 9.22e18. O = 4e18 ns is 2096 for clocks that count from the epoch
// (pcap imports); S and T are 9.5 years.
inline constexpr std::int64_t kMaxOriginNs = 4'000'000'000'000'000'000; // steady and wall-clock origins
inline constexpr std::int64_t kMaxSpanNs = 300'000'000'000'000'000;     // an event from its capture's origin
inline constexpr std::int64_t kMaxTimeoutNs = 300'000'000'000'000'000;  // grpc-timeout, and a gap's length

// Puts the connections of a batch in time order with each other, each connection's events keeping their own
// order (an open before its bytes, whatever their times). A relay reads the connections ready in one round
// one after another, so a connection read later hands over bytes that came earlier: in a batch its calls came
// after, and got lanes below calls they started before (a file's replay orders by time). A batch in time
// order already is left as it is.
void orderConnectionsByTime(EventBatch &batch);

// A broken rule as one sentence, the Notice's reason and a connection's note:
// "protocol error by the client: WINDOW_UPDATE of 0 on stream 3 (PROTOCOL_ERROR)".
std::string describe(const ProtocolViolation &v);

const char *frameTypeName(std::uint8_t type);
const char *grpcStatusName(int code);
// RST_STREAM and GOAWAY error codes (RFC 9113 section 7) by name: "CANCEL", "ENHANCE_YOUR_CALM"; an unknown
// code as its number.
std::string h2ErrorName(std::uint32_t code);

} // namespace rpcscope
