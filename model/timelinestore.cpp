#include "timelinestore.h"

#include "clientoutcome.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace rpcscope {

namespace {
// A retry without a call id joins an earlier call only if that call's last attempt ended at most this long
// before. C-core's maxBackoff is commonly 1-30 s and pushback is bounded by the deadline; 60 s keeps every
// realistic retry while stopping unrelated calls minutes apart from merging.
constexpr std::int64_t kInferWindowNs = 60'000'000'000;
// Only this many recent calls are searched for an inferred parent, so assembly stays O(1) per attempt.
constexpr size_t kInferSearchDepth = 4096;
constexpr size_t kMaxNotesPerConnection = 8;
// Nesting looks at most this many calls of the same trace back for a parent, and relinks at most this many
// later ones when a call appears or ends, so a huge trace costs O(depth) per change instead of O(trace).
constexpr size_t kNestSearchDepth = 256;

// How much later than its parent's a child's deadline may lie before it counts as reset. A propagated
// deadline drifts by the rounding of grpc-timeout (C-core rounds up to three significant digits: at most 1 %)
// and by the time between the hop computing its grpc-timeout and the relay stamping the HEADERS: under 1 ms
// on an idle machine, up to 20 ms measured with both cores oversubscribed three times over. A reset that
// matters (a fresh 1 s where 100 ms were left) is far beyond this.
std::int64_t resetToleranceNs(std::int64_t childTimeoutNs)
{
    return 50'000'000 + childTimeoutNs / 50;
}

void addUnique(std::vector<size_t> &v, size_t x)
{
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it == v.end() || *it != x) v.insert(it, x);
}
} // namespace

void TimelineStore::setOrigin(std::int64_t steadyNs, std::int64_t wallNs)
{
    m_originNs = steadyNs;
    m_originWallNs = wallNs;
    m_hasOrigin = true;
    ++m_generation; // every time on the ruler moves
}

void TimelineStore::clear()
{
    m_calls.clear();
    m_callSpans.clear();
    m_connections.clear();
    m_connectionIndex.clear();
    m_frames.clear();
    m_stalls.clear();
    m_openStalls.clear();
    m_pings.clear();
    m_labEvents.clear();
    m_labEventBytes = 0;
    m_labEventsCut = 0;
    ++m_labEventsMoved;
    m_openStreams.clear();
    m_recentEnded.clear();
    m_recentEndedOrder.clear();
    m_pendingInjections.clear();
    m_blackholed.clear();
    m_callsByKey.clear();
    m_traces.clear();
    m_callBase = 0;
    m_pinnedCalls = 0;
    m_tracedCalls = 0;
    m_retentionCutNs = 0;
    m_evictedCalls = 0;
    m_loss = {};
    m_unresolvedLabEvents.clear();
    m_watchClose.clear();
    m_watchDeadline.clear();
    m_attemptCount = 0;
    m_latestNs = m_originNs;
    ++m_generation;
    m_changeLog.clear();
    m_changeMarks.clear();
    m_changeLogFrom = m_generation;
    m_clearedAt = m_generation;
}

Connection *TimelineStore::connection(std::uint32_t id)
{
    auto it = m_connectionIndex.find(id);
    return it == m_connectionIndex.end() ? nullptr : &m_connections[it->second];
}

// The store pairs a PING with its ACK itself (by the opaque data, as the peer must echo it) rather than
// relying on the decoder's rtt: a PING that never gets one must stay visible after the connection ends.
void TimelineStore::recordPing(const WireEvent &e)
{
    Connection *c = connection(e.connection);
    if (!c) return;
    auto &open = c->openPings;
    if (!(e.flags & FlagAck)) {
        if (open.size() < Connection::kMaxOpenPings) open.push_back({e.dir, e.tNs, e.pingData});
        return;
    }
    // The ACK travels opposite to the PING it answers.
    const Direction sender =
        e.dir == Direction::ClientToServer ? Direction::ServerToClient : Direction::ClientToServer;
    const auto it = std::find_if(open.begin(), open.end(), [&](const Connection::OpenPing &p) {
        return p.dir == sender && p.data == e.pingData;
    });
    if (it != open.end()) open.erase(it);
}

void TimelineStore::watchClientOutcome(const AttemptRef &ref)
{
    // The same conditions as clientOutcome()'s rules, loosely: watching a call too many only costs a repaint
    // of its row.
    constexpr int kUnavailable = 14;
    constexpr size_t kMaxWatchedPerConnection = 64;
    const Call &call = m_calls[ref.call];
    const Attempt &a = call.attempts[ref.attempt];
    if (a.rstErrorCode && a.rstByClient && !a.status) {
        auto &list = m_watchClose[a.connection];
        if (list.size() < kMaxWatchedPerConnection) list.push_back(call.serial);
    } else if (a.status == kUnavailable && call.retryInitialMs > 0 &&
               ref.attempt + 1 == call.attempts.size()) {
        if (const auto deadline = call.deadlineNs(); deadline && *deadline > *a.endNs)
            m_watchDeadline.emplace(*deadline - deadlineToleranceNs(call), call.serial);
    }
}

void TimelineStore::markWatchedClose(std::uint32_t connection, StoreChanges &ch)
{
    const auto it = m_watchClose.find(connection);
    if (it == m_watchClose.end()) return;
    for (std::uint64_t serial : it->second)
        if (const auto i = indexOfSerial(serial)) markChanged(ch, *i);
    m_watchClose.erase(it);
}

void TimelineStore::markWatchedDeadlines(StoreChanges &ch)
{
    while (!m_watchDeadline.empty() && m_watchDeadline.begin()->first <= m_latestNs) {
        if (const auto i = indexOfSerial(m_watchDeadline.begin()->second)) markChanged(ch, *i);
        m_watchDeadline.erase(m_watchDeadline.begin());
    }
}

const Connection *TimelineStore::findConnection(std::uint32_t id) const
{
    auto it = m_connectionIndex.find(id);
    return it == m_connectionIndex.end() ? nullptr : &m_connections[it->second];
}

std::string Attempt::outcomeLabel() const
{
    if (!ended()) return "in flight";
    if (status) return grpcStatusName(*status);
    if (rstErrorCode) return "RST_STREAM " + h2ErrorName(*rstErrorCode);
    if (goawayErrorCode)
        return *goawayErrorCode ? "refused by GOAWAY " + h2ErrorName(*goawayErrorCode) : "refused by GOAWAY";
    return "no status";
}

void TimelineStore::markChanged(StoreChanges &ch, size_t call)
{
    if (call < ch.firstNewCall) addUnique(ch.changedCalls, call);
}

void TimelineStore::endAttempt(const AttemptRef &ref, std::int64_t t, StoreChanges &ch)
{
    Call &call = m_calls[ref.call];
    Attempt &a = call.attempts[ref.attempt];
    if (!a.endNs) a.endNs = t;
    const std::uint64_t key = streamKey(a.connection, a.stream);
    m_openStreams.erase(key);
    if (m_recentEnded.insert_or_assign(key, call.serial).second) {
        m_recentEndedOrder.push_back(key);
        if (m_recentEndedOrder.size() > kMaxRecentEnded) {
            m_recentEnded.erase(m_recentEndedOrder.front());
            m_recentEndedOrder.pop_front();
        }
    }
    markChanged(ch, ref.call);
    // The call is no longer in flight: calls of its trace that started after this may not nest under it.
    if (!call.traceId.empty() && ref.attempt + 1 == call.attempts.size()) linkTrace(ref.call, ch);
}

FaultInjection TimelineStore::connectionFault(const std::string &reason)
{
    static const std::string prefix = "fault: ", ruleAt = " (rule ";
    FaultInjection f;
    if (reason.compare(0, prefix.size(), prefix) != 0) return f;
    const size_t at = reason.rfind(ruleAt);
    if (at == std::string::npos || at < prefix.size()) return f;
    const std::uint32_t rule = std::uint32_t(std::strtoul(reason.c_str() + at + ruleAt.size(), nullptr, 10));
    if (rule == 0) return f;
    f.rule = rule;
    f.text = reason.substr(prefix.size(), at - prefix.size());
    return f;
}

void TimelineStore::onFaultInjection(const WireEvent &e, const FaultInjection &f, StoreChanges &ch)
{
    const std::uint64_t key = streamKey(e.connection, e.stream);
    auto mark = [&](size_t callIndex) {
        for (Attempt &a : m_calls[callIndex].attempts)
            if (a.connection == e.connection && a.stream == e.stream) {
                a.faultRule = f.rule;
                a.faultRuleText = f.text;
                markChanged(ch, callIndex);
                return true;
            }
        return false;
    };
    if (auto it = m_openStreams.find(key); it != m_openStreams.end() && mark(it->second.call)) return;
    if (auto it = m_recentEnded.find(key); it != m_recentEnded.end())
        if (const auto i = indexOfSerial(it->second); i && mark(*i)) return;
    if (m_pendingInjections.size() < kMaxPendingInjections) m_pendingInjections.insert_or_assign(key, f);
}

void TimelineStore::onConnectionFaultNote(const WireEvent &e, StoreChanges &ch)
{
    // Only a blackhole fails the streams of a connection that stays open; close and tcp-reset mark them by
    // the close reason, and bandwidth and slow-close fail nothing.
    const FaultInjection f = connectionFault(e.reason);
    if (f.rule == 0 || f.text != "blackhole") return;
    for (const auto &[key, ref] : m_openStreams)
        if ((key >> 32) == e.connection) {
            Attempt &a = m_calls[ref.call].attempts[ref.attempt];
            a.faultRule = f.rule;
            a.faultRuleText = f.text;
            markChanged(ch, ref.call);
        }
    m_blackholed.insert_or_assign(e.connection, f);
}

int TimelineStore::nestingDepth(size_t call) const
{
    int depth = 0;
    // A parent always starts strictly earlier than its child, so the walk ends; the bound is belt and braces.
    while (call < m_calls.size() && m_calls[call].parentCall && depth < int(m_calls.size())) {
        call = *m_calls[call].parentCall;
        ++depth;
    }
    return depth;
}

// Nesting rule. Real services do not tell us which incoming call an outgoing call serves: the traceparent a
// hop sends carries its own span id, not the one it received. So a call nests under the call of the same
// trace that was in flight when it started (started strictly earlier, not ended by then) on another
// connection, the latest-started one if several are. In a chain A->B->C->D that is exactly the hop before;
// with parallel fan-out under one trace a call may land under a sibling that started just before it.
// Relays flush independently, so a child can arrive before its parent or before the event that ended a
// candidate: every call that appears, gains an attempt or ends relinks itself and the calls after it.
void TimelineStore::linkTrace(size_t call, StoreChanges &ch)
{
    auto it = m_traces.find(m_calls[call].traceId);
    if (it == m_traces.end()) return;
    const std::vector<size_t> &members = it->second;
    const std::int64_t start = m_calls[call].startNs();
    size_t pos =
        size_t(std::lower_bound(members.begin(), members.end(), start,
                                [this](size_t c, std::int64_t t) { return callById(c).startNs() < t; }) -
               members.begin());
    while (pos < members.size() && members[pos] != call + m_callBase)
        ++pos;
    if (pos == members.size()) return;
    const size_t stop = std::min(members.size(), pos + 1 + kNestSearchDepth);
    for (size_t j = pos; j < stop; ++j)
        linkCall(members, j, ch);
}

void TimelineStore::linkCall(const std::vector<size_t> &members, size_t pos, StoreChanges &ch)
{
    Call &c = callById(members[pos]);
    const std::int64_t start = c.startNs();
    const std::uint32_t conn = c.attempts.front().connection;
    std::optional<size_t> parent;
    const size_t stop = pos > kNestSearchDepth ? pos - kNestSearchDepth : 0;
    for (size_t i = pos; i-- > stop;) {
        const Call &p = callById(members[i]);
        if (p.startNs() >= start || p.attempts.front().connection == conn) continue;
        if (const auto end = p.endNs(); end && *end <= start) continue;
        parent = members[i] - m_callBase;
        break;
    }
    std::optional<std::int64_t> parentBudget;
    bool reset = false, dropped = false;
    if (parent) {
        if (const auto parentDeadline = m_calls[*parent].deadlineNs()) {
            parentBudget = *parentDeadline - start;
            if (const auto deadline = c.deadlineNs())
                reset = *deadline - *parentDeadline > resetToleranceNs(*c.budgetNs());
            else
                dropped = true;
        }
    }
    if (parent == c.parentCall && parentBudget == c.parentBudgetNs && reset == c.deadlineReset &&
        dropped == c.deadlineDropped)
        return;
    c.parentCall = parent;
    c.parentBudgetNs = parentBudget;
    c.deadlineReset = reset;
    c.deadlineDropped = dropped;
    markChanged(ch, members[pos] - m_callBase);
}

size_t TimelineStore::findInferredCall(const std::string &method, const std::string &peer, int previous,
                                       std::int64_t t) const
{
    const size_t stop = m_calls.size() > kInferSearchDepth ? m_calls.size() - kInferSearchDepth : 0;
    for (size_t i = m_calls.size(); i-- > stop;) {
        const Call &c = m_calls[i];
        if (c.method != method || c.clientPeer != peer || int(c.attempts.size()) != previous) continue;
        const Attempt &last = c.attempts.back();
        if (last.endNs && t >= *last.endNs && t - *last.endNs <= kInferWindowNs) return i;
    }
    return m_calls.size();
}

// A trace's calls are kept in start order: the call goes in at its start.
void TimelineStore::placeInTrace(std::vector<size_t> &members, size_t callIndex)
{
    const std::int64_t start = m_calls[callIndex].startNs();
    members.insert(std::upper_bound(members.begin(), members.end(), start,
                                    [this](std::int64_t t, size_t c) { return t < callById(c).startNs(); }),
                   callIndex + m_callBase);
}

// A traced call whose start moved earlier (an attempt placed before its first): its place among its trace's
// calls again.
void TimelineStore::retraceStart(size_t callIndex)
{
    const auto it = m_traces.find(m_calls[callIndex].traceId);
    if (it == m_traces.end()) return;
    std::vector<size_t> &members = it->second;
    const auto was = std::find(members.begin(), members.end(), callIndex + m_callBase);
    if (was == members.end()) return;
    members.erase(was);
    placeInTrace(members, callIndex);
}

void TimelineStore::onRequestHeaders(const WireEvent &e, StoreChanges &ch)
{
    const auto key = streamKey(e.connection, e.stream);
    if (m_openStreams.count(key)) return; // request trailers or a repeated block on a stream we already track
    if (e.grpc.path.empty()) return;

    Attempt a;
    a.connection = e.connection;
    a.stream = e.stream;
    a.startNs = e.tNs;
    // gRPC (A6) sends no grpc-previous-rpc-attempts on a first attempt: absent means 0.
    a.previousAttempts = e.grpc.previousAttempts.value_or(0);
    a.timeoutNs = e.grpc.timeoutNs;
    a.encoding = e.grpc.encoding;

    const Connection *conn = connection(e.connection);
    const std::string peer = conn ? conn->client : std::string();

    size_t callIndex = m_calls.size();
    if (!e.grpc.callId.empty()) {
        auto it = m_callsByKey.find(e.grpc.callId);
        if (it != m_callsByKey.end()) callIndex = it->second - m_callBase;
    } else if (*a.previousAttempts > 0) {
        callIndex = findInferredCall(e.grpc.path, peer, *a.previousAttempts, e.tNs);
    }

    if (callIndex == m_calls.size()) {
        Call c;
        c.method = e.grpc.path;
        c.clientPeer = peer;
        c.retryInitialMs = e.grpc.retryInitialMs;
        c.retryMultiplier = e.grpc.retryMultiplier;
        c.retryMaxMs = e.grpc.retryMaxMs;
        c.traceId = e.grpc.traceId;
        c.spanId = e.grpc.parentSpanId;
        if (conn) c.hop = conn->label;
        if (!e.grpc.callId.empty()) {
            c.key = e.grpc.callId;
        } else {
            c.inferred = true;
            c.key = "conn" + std::to_string(e.connection) + "/stream" + std::to_string(e.stream);
        }
        c.serial = m_nextSerial++;
        m_callsByKey.emplace(c.key, callIndex + m_callBase);
        m_calls.push_back(std::move(c));
    } else if (callIndex < ch.firstNewCall) {
        addUnique(ch.callsWithNewAttempts, callIndex);
        markChanged(ch, callIndex);
    }
    Call &call = m_calls[callIndex];
    // Attempts in the order they started. One that started before attempts already here came through another
    // hop whose decoder was behind (a hedge's first copy, on a busy machine): it goes in its place, and the
    // open streams of the attempts after it follow them.
    size_t at = call.attempts.size();
    if (!call.attempts.empty() && a.startNs < call.attempts.back().startNs) {
        at = size_t(std::upper_bound(call.attempts.begin(), call.attempts.end(), a.startNs,
                                     [](std::int64_t t, const Attempt &x) { return t < x.startNs; }) -
                    call.attempts.begin());
        ch.attemptsPlacedBefore.push_back({callIndex, at, call.attempts.size()});
        call.attempts.insert(call.attempts.begin() + std::ptrdiff_t(at), std::move(a));
        for (size_t k = at + 1; k < call.attempts.size(); ++k)
            if (auto it = m_openStreams.find(streamKey(call.attempts[k].connection, call.attempts[k].stream));
                it != m_openStreams.end() && it->second.call == callIndex)
                it->second.attempt = k;
        if (at == 0 && !call.traceId.empty()) retraceStart(callIndex);
    } else {
        call.attempts.push_back(std::move(a));
    }
    ++m_attemptCount;
    m_openStreams[key] = {callIndex, at};
    Attempt &placed = call.attempts[at];
    if (!m_pendingInjections.empty())
        if (auto it = m_pendingInjections.find(key); it != m_pendingInjections.end()) {
            placed.faultRule = it->second.rule;
            placed.faultRuleText = std::move(it->second.text);
            m_pendingInjections.erase(it);
        }
    if (!m_blackholed.empty())
        if (auto it = m_blackholed.find(e.connection); it != m_blackholed.end()) {
            placed.faultRule = it->second.rule;
            placed.faultRuleText = it->second.text;
        }
    if (call.traceId.empty()) return;
    if (call.attempts.size() == 1) {
        placeInTrace(m_traces[call.traceId], callIndex);
        ++m_tracedCalls;
    }
    // A new call may be the parent of calls that arrived before it; a retry puts its call in flight again.
    linkTrace(callIndex, ch);
}

void TimelineStore::onResponseHeaders(const WireEvent &e, StoreChanges &ch)
{
    auto it = m_openStreams.find(streamKey(e.connection, e.stream));
    if (it == m_openStreams.end()) return;
    const AttemptRef ref = it->second;
    Attempt &a = m_calls[ref.call].attempts[ref.attempt];
    if (e.endStream) {
        if (e.grpc.status) a.status = e.grpc.status;
        if (e.grpc.message) a.statusMessage = e.grpc.message;
        if (e.grpc.pushbackMs) a.pushbackMs = e.grpc.pushbackMs;
        a.trailersOnly = !a.responseHeadersNs;
        endAttempt(ref, e.tNs, ch);
        watchClientOutcome(ref);
    } else if (!a.responseHeadersNs) {
        a.responseHeadersNs = e.tNs;
    }
    markChanged(ch, ref.call);
}

void TimelineStore::apply(EventSpan batch, StoreChanges *changesOut)
{
    StoreChanges local;
    StoreChanges &ch = changesOut ? *changesOut : local;
    ch = StoreChanges{};
    ch.firstNewCall = m_calls.size();

    for (const WireEvent &e : batch) {
        if (!m_hasOrigin) setOrigin(e.tNs, 0);
        m_latestNs = std::max(m_latestNs, e.tNs);
        switch (e.kind) {
        case EventKind::ConnectionOpened: {
            if (connection(e.connection)) break;
            m_connectionIndex[e.connection] = m_connections.size();
            Connection c;
            c.id = e.connection;
            if (const PeerNames *peers = e.peers()) {
                c.client = peers->client;
                c.server = peers->server;
            }
            c.label = e.label;
            c.openedNs = e.tNs;
            m_connections.push_back(std::move(c));
            ch.connectionsChanged = true;
            break;
        }
        case EventKind::ConnectionClosed: {
            if (Connection *c = connection(e.connection)) {
                c->closedNs = e.tNs;
                c->closeReason = e.reason;
            }
            ch.connectionsChanged = true;
            std::vector<AttemptRef> open;
            for (const auto &[key, ref] : m_openStreams)
                if ((key >> 32) == e.connection) open.push_back(ref);
            // A connection fault rule closing it ("fault: close (rule 1)", relayloopfaults.cpp) failed the
            // streams still open on it: they were injected as much as a stream action's are.
            const FaultInjection byClose = connectionFault(e.reason);
            for (const AttemptRef &ref : open) {
                if (byClose.rule) {
                    Attempt &a = m_calls[ref.call].attempts[ref.attempt];
                    a.faultRule = byClose.rule;
                    a.faultRuleText = byClose.text;
                }
                endAttempt(ref, e.tNs, ch);
            }
            m_blackholed.erase(e.connection);
            markWatchedClose(e.connection, ch);
            // A stall ends with its connection: nothing waits for a window any more.
            for (auto it = m_openStalls.lower_bound({e.connection, Direction::ClientToServer, 0});
                 it != m_openStalls.end() && std::get<0>(it->first) == e.connection;) {
                m_stalls[it->second].endNs = e.tNs;
                it = m_openStalls.erase(it);
            }
            break;
        }
        case EventKind::DecodeError:
            if (Connection *c = connection(e.connection); c && c->decodeError.empty())
                c->decodeError = e.reason;
            ch.connectionsChanged = true;
            break;
        case EventKind::Notice:
            // A connection can hit a limit on every block; the first few say what happened.
            if (Connection *c = connection(e.connection); c && c->notes.size() < kMaxNotesPerConnection) {
                c->notes.push_back(e.reason);
                if (e.violation() && !c->firstViolation) c->firstViolation = *e.violation();
            }
            if (const FaultInjection *f = e.injection(); f && e.stream != 0 && f->rule != 0)
                onFaultInjection(e, *f, ch);
            else if (e.stream == 0)
                onConnectionFaultNote(e, ch);
            ch.connectionsChanged = true;
            break;
        case EventKind::LabEvent: {
            // An event reported with a traceparent (the ingestion endpoint) concerns the call that carried
            // it.
            const LabDecision *decision = e.decision();
            LabEventRecord r{e.tNs,
                             decision ? decision->kind : std::string(),
                             decision ? decision->detail : std::string(),
                             e.grpc.callId,
                             {}};
            if (r.callId.empty())
                for (const Header &h : e.headers)
                    if (h.name == "traceparent") r.traceparent = h.value;
            if (!r.traceparent.empty())
                m_unresolvedLabEvents.push_back(m_labEvents.size()); // its call may not have arrived yet
            m_labEventBytes += labEventHeapBytes(r);
            m_labEvents.push_back(std::move(r));
            break;
        }
        case EventKind::FlowStallBegin:
            if (m_openStalls.try_emplace({e.connection, e.dir, e.stream}, m_stalls.size()).second)
                m_stalls.push_back({e.connection, e.dir, e.stream, e.tNs, std::nullopt});
            break;
        case EventKind::FlowStallEnd:
            if (auto it = m_openStalls.find({e.connection, e.dir, e.stream}); it != m_openStalls.end()) {
                m_stalls[it->second].endNs = e.tNs;
                m_openStalls.erase(it);
            }
            break;
        case EventKind::Frame: {
            if (const FrameRun *run = e.frameRun(); run && run->count > 1) {
                // A flood's run (events.h): one record; its PINGs pair with no ACK one by one.
                if (m_recordFrames) {
                    const std::int64_t spanUs =
                        std::clamp<std::int64_t>((e.tNs - run->firstNs) / 1000, 0, std::int64_t(UINT32_MAX));
                    m_frames.push_back({e.tNs, e.connection, e.dir, e.frameType, e.flags, e.stream,
                                        std::uint32_t(std::min<std::uint64_t>(run->bytes, UINT32_MAX)),
                                        std::uint32_t(spanUs), run->count});
                }
                if (e.frameType == FramePing && (e.flags & FlagAck))
                    if (Connection *c = connection(e.connection))
                        std::erase_if(c->openPings,
                                      [&](const Connection::OpenPing &p) { return p.dir != e.dir; });
                break;
            }
            if (m_recordFrames)
                m_frames.push_back({e.tNs, e.connection, e.dir, e.frameType, e.flags, e.stream, e.length,
                                    e.frameType == FrameWindowUpdate ? e.windowIncrement : e.errorCode});
            if (e.frameType == FramePing) recordPing(e);
            if (e.frameType == FramePing && e.rttNs >= 0) {
                // The ACK travels opposite to the PING it answers.
                const Direction sender = e.dir == Direction::ClientToServer ? Direction::ServerToClient
                                                                            : Direction::ClientToServer;
                m_pings.push_back({e.connection, sender, e.tNs, e.rttNs});
                if (Connection *c = connection(e.connection)) c->lastPingRttNs = e.rttNs;
            }
            if (e.frameType == FrameGoaway && e.dir == Direction::ServerToClient) {
                // Requests on streams above the last one the server names were never processed: they end
                // here, even if the connection stays open for the streams below.
                std::vector<AttemptRef> refused;
                for (const auto &[key, ref] : m_openStreams)
                    if ((key >> 32) == e.connection && std::uint32_t(key) > e.lastStreamId)
                        refused.push_back(ref);
                for (const AttemptRef &ref : refused) {
                    m_calls[ref.call].attempts[ref.attempt].goawayErrorCode = e.errorCode;
                    endAttempt(ref, e.tNs, ch);
                }
            }
            if (e.frameType == FrameRstStream) {
                auto it = m_openStreams.find(streamKey(e.connection, e.stream));
                if (it != m_openStreams.end()) {
                    const AttemptRef ref = it->second;
                    Attempt &a = m_calls[ref.call].attempts[ref.attempt];
                    a.rstErrorCode = e.errorCode;
                    a.rstByClient = e.dir == Direction::ClientToServer;
                    endAttempt(ref, e.tNs, ch);
                    watchClientOutcome(ref);
                }
            }
            break;
        }
        case EventKind::Headers:
            if (e.dir == Direction::ClientToServer)
                onRequestHeaders(e, ch);
            else
                onResponseHeaders(e, ch);
            break;
        case EventKind::Message: {
            auto it = m_openStreams.find(streamKey(e.connection, e.stream));
            if (it == m_openStreams.end()) break;
            Attempt &a = m_calls[it->second.call].attempts[it->second.attempt];
            if (e.dir == Direction::ClientToServer) {
                a.requestBytes += e.length + 5;
                ++a.requestMessages;
            } else {
                a.responseBytes += e.length + 5;
                ++a.responseMessages;
            }
            markChanged(ch, it->second.call);
            break;
        }
        }
    }
    if (!m_unresolvedLabEvents.empty()) resolveLabEvents();
    markWatchedDeadlines(ch);
    ++m_generation;
    m_callSpans.resize(m_calls.size());
    auto mark = [&](size_t i) {
        Call &c = m_calls[i];
        c.revision = m_generation;
        m_callSpans[i] = {c.startNs(), c.endNs().value_or(kOpenEnd)};
    };
    for (size_t i = ch.firstNewCall; i < m_calls.size(); ++i)
        mark(i);
    for (const std::vector<size_t> *changed : {&ch.changedCalls, &ch.callsWithNewAttempts})
        for (size_t i : *changed)
            if (i < m_calls.size()) mark(i);
    logChanges(ch);
}

size_t TimelineStore::callsOverlapping(std::int64_t fromNs, std::int64_t toNs) const
{
    const std::int64_t latest = latestNs();
    size_t n = 0;
    for (const CallSpan &s : m_callSpans)
        n += s.start <= toNs && (s.end == kOpenEnd ? latest : s.end) >= fromNs;
    return n;
}

void TimelineStore::logChanges(const StoreChanges &ch)
{
    const size_t before = m_changeLog.size();
    // Changed existing calls in index order (both lists are sorted and unique; a call in both counts once),
    // then the new ones: serials ascend within an apply.
    std::vector<size_t> changed;
    std::set_union(ch.changedCalls.begin(), ch.changedCalls.end(), ch.callsWithNewAttempts.begin(),
                   ch.callsWithNewAttempts.end(), std::back_inserter(changed));
    const size_t existing = std::min(ch.firstNewCall, m_calls.size());
    for (size_t i : changed)
        if (i < existing) m_changeLog.push_back(m_calls[i].serial);
    for (size_t i = existing; i < m_calls.size(); ++i)
        m_changeLog.push_back(m_calls[i].serial);
    if (m_changeLog.size() == before) return;
    m_changeMarks.emplace_back(m_generation, m_changeLog.size());
    // A log longer than the store's calls saves its reader nothing over reading them all: bounded by twice
    // their number (and kChangeLogMax), it costs at most 16 bytes a call.
    if (m_changeLog.size() <= std::min(m_changeLogMax, std::max<size_t>(1024, 2 * m_calls.size()))) return;
    // Over the bound: the oldest applies go, at least half of the log at once (amortised O(1) a serial).
    auto cut =
        std::lower_bound(m_changeMarks.begin(), m_changeMarks.end(), m_changeLog.size() / 2,
                         [](const std::pair<std::uint64_t, size_t> &m, size_t n) { return m.second < n; });
    if (cut == m_changeMarks.end()) cut = std::prev(m_changeMarks.end());
    const size_t dropped = cut->second;
    m_changeLogFrom = cut->first;
    m_changeLog.erase(m_changeLog.begin(), m_changeLog.begin() + std::ptrdiff_t(dropped));
    m_changeMarks.erase(m_changeMarks.begin(), std::next(cut));
    for (auto &m : m_changeMarks)
        m.second -= dropped;
}

bool TimelineStore::changedSince(std::uint64_t generation, std::vector<std::uint64_t> *serials) const
{
    if (generation < m_changeLogFrom) return false;
    auto from = std::upper_bound(
        m_changeMarks.begin(), m_changeMarks.end(), generation,
        [](std::uint64_t g, const std::pair<std::uint64_t, size_t> &m) { return g < m.first; });
    const size_t start = from == m_changeMarks.begin() ? 0 : std::prev(from)->second;
    serials->insert(serials->end(), m_changeLog.begin() + std::ptrdiff_t(start), m_changeLog.end());
    return true;
}

std::optional<size_t> TimelineStore::callIndex(const std::string &callId) const
{
    const auto it = m_callsByKey.find(callId);
    return it == m_callsByKey.end() ? std::nullopt : std::optional(it->second - m_callBase);
}

std::optional<size_t> TimelineStore::indexOfSerial(std::uint64_t serial) const
{
    const auto it = std::lower_bound(m_calls.begin(), m_calls.end(), serial,
                                     [](const Call &c, std::uint64_t s) { return c.serial < s; });
    return it != m_calls.end() && it->serial == serial ? std::optional(size_t(it - m_calls.begin()))
                                                       : std::nullopt;
}

std::optional<size_t> TimelineStore::attemptAt(size_t call, std::int64_t tNs) const
{
    if (call >= m_calls.size()) return std::nullopt;
    const auto &attempts = m_calls[call].attempts;
    std::optional<size_t> found;
    for (size_t i = 0; i < attempts.size() && attempts[i].startNs <= tNs; ++i)
        found = i;
    return found;
}

std::string TimelineStore::callForTraceparent(const std::string &traceparent, std::int64_t tNs,
                                              bool exactOnly) const
{
    // version-traceid-parentid-flags
    if (traceparent.size() < 55) return {};
    const std::string traceId = traceparent.substr(3, 32), spanId = traceparent.substr(36, 16);
    const auto it = m_traces.find(traceId);
    if (it == m_traces.end()) return {};
    const Call *latest = nullptr;
    for (size_t c : it->second) {
        const Call &call = callById(c);
        if (call.spanId == spanId) return call.key;
        if (call.startNs() <= tNs && (!latest || call.startNs() >= latest->startNs())) latest = &call;
    }
    return latest && !exactOnly ? latest->key : std::string();
}

void TimelineStore::resolveLabEvents()
{
    std::erase_if(m_unresolvedLabEvents, [this](size_t i) {
        if (i >= m_labEvents.size()) return true;
        LabEventRecord &e = m_labEvents[i];
        // Wait a while for the very call that carried it (relays deliver in their own time), then settle for
        // the latest call of its trace.
        constexpr std::int64_t kWaitNs = 5'000'000'000;
        m_labEventBytes -= labEventHeapBytes(e);
        e.callId = callForTraceparent(e.traceparent, e.tNs, m_latestNs - e.tNs < kWaitNs);
        m_labEventBytes += labEventHeapBytes(e);
        return !e.callId.empty();
    });
}

} // namespace rpcscope
