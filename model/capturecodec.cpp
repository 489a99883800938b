#include "capturecodec.h"

#include "capture.pb.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace rpcscope {

namespace {

// Files written before the violation fields said a broken rule only as its sentence (describe()).
std::optional<ProtocolViolation> violationFromSentence(const std::string &s, Direction by)
{
    const std::string_view prefix =
        by == Direction::ClientToServer ? "protocol error by the client: " : "protocol error by the server: ";
    if (!std::string_view(s).starts_with(prefix)) return std::nullopt; // most notices: no allocation
    const size_t open = s.rfind(" (");
    if (open == std::string::npos || open < prefix.size() || s.back() != ')') return std::nullopt;
    const std::string name = s.substr(open + 2, s.size() - open - 3);
    // Every code h2ErrorName knows by name; past them it says "error N".
    for (std::uint32_t code = 0;; ++code) {
        const std::string known = h2ErrorName(code);
        if (known.starts_with("error ")) return std::nullopt;
        if (known == name) return ProtocolViolation{by, s.substr(prefix.size(), open - prefix.size()), code};
    }
}

} // namespace

bool decodeEvent(const capture::Event &p, WireEvent *e)
{
    if (p.kind() > std::uint32_t(EventKind::LabEvent) || p.dir() > 1 || p.frame_type() > 0xFF ||
        p.flags() > 0xFF)
        return false;
    e->kind = EventKind(p.kind());
    e->connection = p.connection();
    e->dir = Direction(p.dir());
    e->tNs = p.t_ns();
    e->stream = p.stream();
    e->frameType = std::uint8_t(p.frame_type());
    e->flags = std::uint8_t(p.flags());
    e->length = p.length();
    e->errorCode = p.error_code();
    e->endStream = p.end_stream();
    e->compressed = p.compressed();
    e->headers.reserve(p.headers_size());
    for (const capture::Header &h : p.headers())
        e->headers.push_back({h.name(), h.value()});
    if (p.has_grpc()) {
        const capture::GrpcFields &g = p.grpc();
        GrpcFields &f = e->grpc;
        f.path = g.path();
        if (g.has_timeout_ns()) {
            if (g.timeout_ns() < 0 || g.timeout_ns() > kMaxTimeoutNs) // the decoder caps it (events.h)
                return false;
            f.timeoutNs = g.timeout_ns();
        }
        if (g.has_previous_attempts()) f.previousAttempts = g.previous_attempts();
        if (g.has_http_status()) f.httpStatus = g.http_status();
        if (g.has_status()) f.status = g.status();
        if (g.has_message()) f.message = g.message();
        if (g.has_pushback_ms()) f.pushbackMs = g.pushback_ms();
        f.callId = g.call_id();
        f.encoding = g.encoding();
        // The decoder gives a policy of finite positive numbers, or none (zeros).
        for (double v : {g.retry_initial_ms(), g.retry_multiplier(), g.retry_max_ms()})
            if (!std::isfinite(v) || v < 0) return false;
        f.retryInitialMs = g.retry_initial_ms();
        f.retryMultiplier = g.retry_multiplier();
        f.retryMaxMs = g.retry_max_ms();
        f.traceId = g.trace_id();
        f.parentSpanId = g.parent_span_id();
    }
    e->hpackUnknown = p.hpack_unknown();
    e->truncated = p.truncated();
    e->payload = p.payload();
    e->lastStreamId = p.last_stream_id();
    e->windowIncrement = p.window_increment();
    e->pingData = p.ping_data();
    e->rttNs = p.rtt_ns();
    for (const capture::Setting &s : p.settings()) {
        if (s.id() > 0xFFFF) return false;
        e->settings.emplace_back(std::uint16_t(s.id()), s.value());
    }
    switch (e->kind) {
    case EventKind::ConnectionOpened:
        e->about = PeerNames{p.text(), p.text2()};
        break;
    case EventKind::LabEvent:
        e->about = LabDecision{p.text(), p.text2()};
        break;
    default:
        e->reason = p.text();
        break;
    }
    e->label = p.label();
    if (e->kind == EventKind::Notice) {
        if (p.has_violation_error_code())
            e->about = ProtocolViolation{e->dir, p.violation_rule(), p.violation_error_code()};
        else if (p.fault_rule() != 0)
            e->about = FaultInjection{p.fault_rule(), p.fault_rule_text()};
        else if (auto v = violationFromSentence(e->reason, e->dir))
            e->about = std::move(*v);
    }
    if (e->kind == EventKind::Frame && p.run_count() > 0) {
        // A run's first frame cannot follow its last, nor lie outside what the model takes in (events.h).
        const __int128 span = __int128(p.t_ns()) - p.run_first_ns();
        if (span < 0 || span > kMaxSpanNs) return false;
        e->about = FrameRun{p.run_count(), p.run_first_ns(), p.run_bytes()};
    }
    return true;
}

// Empty strings are not set: their fields have no presence, so the bytes are the same.
void toMessage(const WireEvent &e, const Redaction *redaction, capture::Event *p)
{
    p->set_kind(std::uint32_t(e.kind));
    p->set_connection(e.connection);
    p->set_dir(std::uint32_t(e.dir));
    p->set_t_ns(e.tNs);
    p->set_stream(e.stream);
    p->set_frame_type(e.frameType);
    p->set_flags(e.flags);
    p->set_length(e.length);
    p->set_error_code(e.errorCode);
    p->set_end_stream(e.endStream);
    p->set_compressed(e.compressed);
    for (const Header &h : e.headers) {
        capture::Header *ph = p->add_headers();
        ph->set_name(h.name);
        ph->set_value(redaction && redaction->masks(h.name) ? std::string(kRedactedValue) : h.value);
    }
    if (e.kind == EventKind::Headers || e.kind == EventKind::LabEvent || e.grpc != GrpcFields{}) {
        capture::GrpcFields *g = p->mutable_grpc();
        const GrpcFields &f = e.grpc;
        if (!f.path.empty()) g->set_path(f.path);
        if (f.timeoutNs) g->set_timeout_ns(*f.timeoutNs);
        if (f.previousAttempts) g->set_previous_attempts(*f.previousAttempts);
        if (f.httpStatus) g->set_http_status(*f.httpStatus);
        if (f.status) g->set_status(*f.status);
        if (f.message) g->set_message(*f.message);
        if (f.pushbackMs) g->set_pushback_ms(*f.pushbackMs);
        if (!f.callId.empty()) g->set_call_id(f.callId);
        if (!f.encoding.empty()) g->set_encoding(f.encoding);
        g->set_retry_initial_ms(f.retryInitialMs);
        g->set_retry_multiplier(f.retryMultiplier);
        g->set_retry_max_ms(f.retryMaxMs);
        if (!f.traceId.empty()) g->set_trace_id(f.traceId);
        if (!f.parentSpanId.empty()) g->set_parent_span_id(f.parentSpanId);
    }
    p->set_hpack_unknown(e.hpackUnknown);
    p->set_truncated(e.truncated);
    if (!e.payload.empty()) p->set_payload(e.payload);
    p->set_last_stream_id(e.lastStreamId);
    p->set_window_increment(e.windowIncrement);
    p->set_ping_data(e.pingData);
    p->set_rtt_ns(e.rttNs);
    for (const auto &[id, value] : e.settings) {
        capture::Setting *s = p->add_settings();
        s->set_id(id);
        s->set_value(value);
    }
    if (const PeerNames *peers = e.peers()) {
        if (!peers->client.empty()) p->set_text(peers->client);
        if (!peers->server.empty()) p->set_text2(peers->server);
    } else if (const LabDecision *decision = e.decision()) {
        if (!decision->kind.empty()) p->set_text(decision->kind);
        if (!decision->detail.empty()) p->set_text2(decision->detail);
    } else if (!e.reason.empty()) {
        p->set_text(e.reason);
    }
    if (!e.label.empty()) p->set_label(e.label);
    if (const ProtocolViolation *v = e.violation()) {
        p->set_violation_rule(v->rule);
        p->set_violation_error_code(v->errorCode);
    }
    if (const FaultInjection *f = e.injection()) {
        p->set_fault_rule(f->rule);
        p->set_fault_rule_text(f->text);
    }
    if (const FrameRun *run = e.frameRun()) {
        p->set_run_count(run->count);
        p->set_run_first_ns(run->firstNs);
        p->set_run_bytes(run->bytes);
    }
}

// The encoder writes the wire format straight from the events, field by field in field-number order, as
// protobuf's serializer writes toMessage()'s message (tst_capturefile holds the two to the same bytes).
// Building that message first copied every string of every event into it, and encoding took most of what
// the model's thread did per sequential unary call (it encodes every batch it applies for its event log) and
// a good part of the decoder thread's (the capture file).
namespace {

size_t varintSize(std::uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        ++n;
    return n;
}

enum WireType : std::uint32_t
{
    kVarint = 0,
    kFixed64 = 1,
    kLengthDelimited = 2,
};

// Counts the bytes a message takes.
struct Sizer
{
    size_t n = 0;
    void tag(std::uint32_t field, WireType type) { n += varintSize(field << 3 | type); }
    void varint(std::uint64_t v) { n += varintSize(v); }
    void fixed64(std::uint64_t) { n += 8; }
    void data(std::string_view b) { n += b.size(); }
};

// Writes them into a buffer sized by a Sizer.
struct Writer
{
    std::uint8_t *p;
    void tag(std::uint32_t field, WireType type) { varint(field << 3 | type); }
    void varint(std::uint64_t v)
    {
        for (; v >= 0x80; v >>= 7)
            *p++ = std::uint8_t(v | 0x80);
        *p++ = std::uint8_t(v);
    }
    void fixed64(std::uint64_t v)
    {
        for (int i = 0; i < 8; ++i)
            *p++ = std::uint8_t(v >> (8 * i));
    }
    void data(std::string_view b)
    {
        if (b.empty()) return;
        std::memcpy(p, b.data(), b.size());
        p += b.size();
    }
};

// proto3 scalars without presence are left out when zero (a double when all its bits are); those declared
// `optional` are written whenever set. Negative int32 and int64 values take ten bytes, as protobuf writes
// them.
template <typename Out> void varintField(Out &o, std::uint32_t field, std::uint64_t v)
{
    if (v == 0) return;
    o.tag(field, kVarint);
    o.varint(v);
}

template <typename Out> void presentVarintField(Out &o, std::uint32_t field, std::uint64_t v)
{
    o.tag(field, kVarint);
    o.varint(v);
}

template <typename Out> void doubleField(Out &o, std::uint32_t field, double d)
{
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    if (bits == 0) return;
    o.tag(field, kFixed64);
    o.fixed64(bits);
}

// An `optional bytes` field: written when set, even empty.
template <typename Out> void presentBytesField(Out &o, std::uint32_t field, std::string_view b)
{
    o.tag(field, kLengthDelimited);
    o.varint(b.size());
    o.data(b);
}

template <typename Out> void bytesField(Out &o, std::uint32_t field, std::string_view b)
{
    if (!b.empty()) presentBytesField(o, field, b);
}

template <typename Out> void messageHead(Out &o, std::uint32_t field, size_t length)
{
    o.tag(field, kLengthDelimited);
    o.varint(length);
}

std::uint64_t signedVarint(std::int64_t v)
{
    return std::uint64_t(v);
}

template <typename Out> void headerBody(Out &o, std::string_view name, std::string_view value)
{
    bytesField(o, 1, name);
    bytesField(o, 2, value);
}

template <typename Out> void settingBody(Out &o, std::uint16_t id, std::uint32_t value)
{
    varintField(o, 1, id);
    varintField(o, 2, value);
}

template <typename Out> void grpcBody(Out &o, const GrpcFields &f)
{
    bytesField(o, 1, f.path);
    if (f.timeoutNs) presentVarintField(o, 2, signedVarint(*f.timeoutNs));
    if (f.previousAttempts) presentVarintField(o, 3, signedVarint(*f.previousAttempts));
    if (f.httpStatus) presentVarintField(o, 4, signedVarint(*f.httpStatus));
    if (f.status) presentVarintField(o, 5, signedVarint(*f.status));
    if (f.message) presentBytesField(o, 6, *f.message);
    if (f.pushbackMs) presentVarintField(o, 7, signedVarint(*f.pushbackMs));
    bytesField(o, 8, f.callId);
    bytesField(o, 9, f.encoding);
    doubleField(o, 10, f.retryInitialMs);
    doubleField(o, 11, f.retryMultiplier);
    doubleField(o, 12, f.retryMaxMs);
    bytesField(o, 13, f.traceId);
    bytesField(o, 14, f.parentSpanId);
}

template <typename Body> size_t sizeOf(Body body)
{
    Sizer s;
    body(s);
    return s.n;
}

// Whether the event carries its gRPC fields: headers and lab events always (even all empty), others only
// when one is set (as `grpc != GrpcFields{}` says, without building one to compare with).
bool carriesGrpc(const WireEvent &e)
{
    if (e.kind == EventKind::Headers || e.kind == EventKind::LabEvent) return true;
    const GrpcFields &f = e.grpc;
    return !f.path.empty() || f.timeoutNs || f.previousAttempts || f.httpStatus || f.status || f.message ||
           f.pushbackMs || !f.callId.empty() || !f.encoding.empty() || f.retryInitialMs != 0 ||
           f.retryMultiplier != 0 || f.retryMaxMs != 0 || !f.traceId.empty() || !f.parentSpanId.empty();
}

// `grpcSize`: the bytes of its GrpcFields message (grpcBody), when carriesGrpc().
template <typename Out>
void eventBody(Out &o, const WireEvent &e, const Redaction *redaction, size_t grpcSize)
{
    varintField(o, 1, std::uint32_t(e.kind));
    varintField(o, 2, e.connection);
    varintField(o, 3, std::uint32_t(e.dir));
    varintField(o, 4, signedVarint(e.tNs));
    varintField(o, 5, e.stream);
    varintField(o, 6, e.frameType);
    varintField(o, 7, e.flags);
    varintField(o, 8, e.length);
    varintField(o, 9, e.errorCode);
    varintField(o, 10, e.endStream);
    varintField(o, 11, e.compressed);
    for (const Header &h : e.headers) {
        const std::string_view value = redaction && redaction->masks(h.name)
                                           ? std::string_view(kRedactedValue)
                                           : std::string_view(h.value);
        messageHead(o, 12, sizeOf([&](auto &s) { headerBody(s, h.name, value); }));
        headerBody(o, h.name, value);
    }
    if (carriesGrpc(e)) {
        messageHead(o, 13, grpcSize);
        grpcBody(o, e.grpc);
    }
    varintField(o, 14, e.hpackUnknown);
    varintField(o, 15, e.truncated);
    bytesField(o, 16, e.payload);
    varintField(o, 17, e.lastStreamId);
    varintField(o, 18, e.windowIncrement);
    varintField(o, 19, e.pingData);
    varintField(o, 20, signedVarint(e.rttNs));
    for (const auto &setting : e.settings) { // not a structured binding: clang 14 cannot capture one
        messageHead(o, 21, sizeOf([&](auto &s) { settingBody(s, setting.first, setting.second); }));
        settingBody(o, setting.first, setting.second);
    }
    // text and text2: the peers of an open, a lab event's kind and detail, any other event's reason.
    if (const PeerNames *peers = e.peers()) {
        bytesField(o, 22, peers->client);
        bytesField(o, 23, peers->server);
    } else if (const LabDecision *decision = e.decision()) {
        bytesField(o, 22, decision->kind);
        bytesField(o, 23, decision->detail);
    } else {
        bytesField(o, 22, e.reason);
    }
    bytesField(o, 24, e.label);
    if (const ProtocolViolation *v = e.violation()) {
        bytesField(o, 25, v->rule);
        presentVarintField(o, 26, v->errorCode);
    }
    if (const FrameRun *run = e.frameRun()) {
        varintField(o, 27, run->count);
        varintField(o, 28, signedVarint(run->firstNs));
        varintField(o, 29, run->bytes);
    }
    if (const FaultInjection *f = e.injection()) {
        varintField(o, 30, f->rule);
        bytesField(o, 31, f->text);
    }
}

} // namespace

std::string encodeEvents(std::span<const WireEvent> batch, const Redaction *redaction)
{
    if (redaction && !redaction->enabled) redaction = nullptr;
    // Each event is sized, then written where its size says (field 1 of EventBatch, one record each).
    struct Sizes
    {
        size_t event = 0, grpc = 0;
    };
    std::vector<Sizes> sizes(batch.size());
    size_t total = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
        const WireEvent &e = batch[i];
        if (carriesGrpc(e)) sizes[i].grpc = sizeOf([&](auto &s) { grpcBody(s, e.grpc); });
        sizes[i].event = sizeOf([&](auto &s) { eventBody(s, e, redaction, sizes[i].grpc); });
        total += 1 + varintSize(sizes[i].event) + sizes[i].event;
    }
    std::string out(total, '\0');
    Writer w{reinterpret_cast<std::uint8_t *>(out.data())};
    for (size_t i = 0; i < batch.size(); ++i) {
        messageHead(w, 1, sizes[i].event);
        eventBody(w, batch[i], redaction, sizes[i].grpc);
    }
    return out;
}

bool decodeBatch(const char *data, size_t len, EventBatch *out)
{
    capture::EventBatch b;
    if (len > size_t(std::numeric_limits<int>::max()) || !b.ParseFromArray(data, int(len))) return false;
    out->reserve(out->size() + size_t(b.events_size()));
    for (const capture::Event &pe : b.events()) {
        WireEvent e;
        if (!decodeEvent(pe, &e)) return false;
        out->push_back(std::move(e));
    }
    return true;
}

} // namespace rpcscope
