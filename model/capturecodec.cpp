#include "capturecodec.h"

#include "capture.pb.h"

#include <cmath>
#include <google/protobuf/arena.h>
#include <limits>
#include <string_view>

namespace rpcscope {

namespace {

// Empty strings are not set: their fields have no presence, so the bytes are the same, and setting one still
// made a string in the arena (a lab event has half a dozen empty ones), a tenth of an append under a burst.
void toProto(const WireEvent &e, const Redaction *redaction, capture::Event *p)
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

std::string encodeEvents(std::span<const WireEvent> batch, const Redaction *redaction)
{
    // The messages live in an arena: a batch is a few allocations of up to 64 KiB, not several small ones
    // per event (its messages, their strings) that are freed again right after. The model encodes every
    // batch it applies on the GUI thread, where under a burst those small allocations in a heap full of
    // retention's holes were most of an append's time.
    google::protobuf::ArenaOptions options;
    options.start_block_size = 4096;
    options.max_block_size = 64 * 1024;
    google::protobuf::Arena arena(options);
    auto *b = google::protobuf::Arena::CreateMessage<capture::EventBatch>(&arena);
    b->mutable_events()->Reserve(int(batch.size()));
    for (const WireEvent &e : batch)
        toProto(e, redaction && redaction->enabled ? redaction : nullptr, b->add_events());
    return b->SerializeAsString();
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
