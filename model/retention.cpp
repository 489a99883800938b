// Retention: a live session left running for hours keeps only what its budget allows, evicting the oldest
// calls whole (never half a call) and keeping pinned ones.

#include "timelinestore.h"

#include <algorithm>
#include <unordered_set>

namespace rpcscope {

namespace {

size_t stringBytes(const std::string &s)
{
    return s.capacity() > 15 ? s.capacity() + 1 : 0; // beyond the small-string buffer
}

} // namespace

size_t TimelineStore::callBytes(const Call &c)
{
    size_t n = sizeof(Call) + c.attempts.capacity() * sizeof(Attempt) + stringBytes(c.key) +
               stringBytes(c.method) + stringBytes(c.clientPeer) + stringBytes(c.traceId) +
               stringBytes(c.spanId) + stringBytes(c.hop);
    for (const Attempt &a : c.attempts) {
        n += stringBytes(a.encoding);
        if (a.statusMessage) n += stringBytes(*a.statusMessage);
    }
    return n;
}

size_t TimelineStore::approxBytes() const
{
    // Sizes, not capacities: after an eviction the spare capacity is what the next calls fill, so a session's
    // real footprint settles at its budget plus that slack instead of growing.
    size_t n = m_frames.size() * sizeof(FrameRecord) + m_pings.size() * sizeof(PingRecord) +
               m_stalls.size() * sizeof(FlowStall);
    // Index structures: a map node per call key, a hash node per trace member (roughly).
    n += m_callsByKey.size() * 96 + m_calls.size() * 16;
    // Calls and attempts by count; their strings and spare capacity from a sample of one call in 64, so this
    // stays cheap enough to run on the GUI thread every few batches.
    n += m_calls.size() * sizeof(Call) + m_attemptCount * sizeof(Attempt);
    size_t sampled = 0, extra = 0;
    for (size_t i = 0; i < m_calls.size(); i += 64, ++sampled) {
        const Call &c = m_calls[i];
        extra += callBytes(c) - sizeof(Call) - c.attempts.size() * sizeof(Attempt);
    }
    if (sampled) n += size_t(double(extra) / double(sampled) * double(m_calls.size()));
    for (const LabEventRecord &e : m_labEvents)
        n += sizeof(LabEventRecord) + stringBytes(e.kind) + stringBytes(e.detail) + stringBytes(e.callId);
    return n;
}

void TimelineStore::setPinned(size_t call, bool pinned)
{
    if (call < m_calls.size() && m_calls[call].pinned != pinned) {
        m_calls[call].pinned = pinned;
        m_pinnedCalls += pinned ? 1 : -1;
        ++m_generation;
    }
}

std::vector<size_t> TimelineStore::enforce(const RetentionPolicy &policy, Evicted *gone)
{
    std::vector<size_t> calls = planEviction(policy);
    evict(calls, gone);
    return calls;
}

std::vector<size_t> TimelineStore::planEviction(const RetentionPolicy &policy, size_t knownBytes) const
{
    std::vector<size_t> evicted;
    if (m_calls.empty()) return evicted;
    // A cheap lower bound first, so a session far below its budget costs nothing here.
    const size_t floor =
        m_calls.size() * (sizeof(Call) + sizeof(Attempt)) + m_frames.size() * sizeof(FrameRecord);
    const bool nearBytes = policy.maxBytes && floor > policy.maxBytes / 2;
    if (!nearBytes && !(policy.maxCalls && m_calls.size() > policy.maxCalls) &&
        !(policy.maxAgeNs && m_calls.front().startNs() < m_latestNs - policy.maxAgeNs))
        return evicted;
    const size_t bytes = knownBytes ? knownBytes : approxBytes();
    const bool overBytes = policy.maxBytes && bytes > policy.maxBytes;
    const bool overCalls = policy.maxCalls && m_calls.size() > policy.maxCalls;
    const std::int64_t ageCut = policy.maxAgeNs ? m_latestNs - policy.maxAgeNs : INT64_MIN;
    const bool overAge = policy.maxAgeNs && m_calls.front().startNs() < ageCut;
    if (!overBytes && !overCalls && !overAge) return evicted;

    // Evict down to a fraction of the limits (90% by default), so eviction runs in chunks rather than on
    // every batch.
    const double to = std::clamp(policy.evictTo, 0.5, 1.0);
    const size_t bytesTarget = overBytes ? size_t(double(policy.maxBytes) * to) : SIZE_MAX;
    const size_t callsTarget = overCalls ? size_t(double(policy.maxCalls) * to) : SIZE_MAX;
    size_t bytesLeft = bytes, callsLeft = m_calls.size();
    // What evicting a call frees besides the call itself: its share of the frames, its index entries.
    const size_t sharePerCall = m_frames.size() * sizeof(FrameRecord) / m_calls.size() + 96 + 16;
    for (size_t i = 0; i < m_calls.size(); ++i) {
        const Call &c = m_calls[i];
        const bool oldEnough = overAge && c.startNs() < ageCut;
        if (!oldEnough && bytesLeft <= bytesTarget && callsLeft <= callsTarget) break;
        // Whole calls only: one still in flight (or waiting for a retry) stays, and so does a pinned one.
        if (c.pinned || !c.endNs() || !c.attempts.back().ended()) continue;
        evicted.push_back(i);
        const size_t cb = callBytes(c) + sharePerCall;
        bytesLeft -= std::min(bytesLeft, cb);
        --callsLeft;
    }
    return evicted;
}

void TimelineStore::evict(const std::vector<size_t> &evicted, Evicted *gone)
{
    if (evicted.empty()) return;
    // The work is proportional to the region the evicted calls span - the oldest calls, planEviction walks
    // from the front - not to everything the store keeps: calls and frames are deques, and the key and trace
    // indices hold ids that evicting the oldest calls leaves valid.
    const EvictionShift remap(evicted);
    const size_t region = remap.region();
    for (size_t i : evicted) {
        m_attemptCount -= m_calls[i].attempts.size();
        m_retentionCutNs = std::max(m_retentionCutNs, m_calls[i].endNs().value_or(0));
    }
    // The region's survivors (pinned, or still in flight) move up to just before the calls after the region.
    std::vector<size_t> keptInRegion;
    for (size_t i = 0; i < region; ++i)
        if (!remap.gone(i)) keptInRegion.push_back(i);
    const size_t removed = evicted.size();

    // Frames, pings, stalls and lab events older than every remaining unpinned call go too, except what
    // belongs to a pinned call. Calls are in (nearly) start order, so the earliest start is among the first
    // ones kept.
    std::int64_t keepFrom = INT64_MAX;
    for (size_t i = 0, unpinnedSeen = 0; i < m_calls.size() && unpinnedSeen < 256; ++i) {
        if (remap.gone(i)) continue;
        if (!m_calls[i].pinned) {
            keepFrom = std::min(keepFrom, m_calls[i].startNs());
            ++unpinnedSeen;
        }
    }
    keepFrom = std::min(keepFrom, m_retentionCutNs + 1);
    std::vector<std::uint64_t> pinnedStreams;
    std::unordered_set<std::string> pinnedKeys;
    if (m_pinnedCalls) {
        for (const Call &c : m_calls) {
            if (!c.pinned) continue;
            for (const Attempt &a : c.attempts)
                pinnedStreams.push_back(streamKey(a.connection, a.stream));
            pinnedKeys.insert(c.key);
        }
        std::sort(pinnedStreams.begin(), pinnedStreams.end());
    }
    // The evicted calls' own frames go whenever they happened (a call still in flight holds keepFrom back).
    std::vector<std::uint64_t> evictedStreams;
    std::int64_t evictedUntil = INT64_MIN;
    for (size_t i : evicted)
        for (const Attempt &a : m_calls[i].attempts) {
            evictedStreams.push_back(streamKey(a.connection, a.stream));
            evictedUntil = std::max(evictedUntil, a.endNs.value_or(a.startNs));
        }
    std::sort(evictedStreams.begin(), evictedStreams.end());
    if (gone) {
        gone->keepFromNs = keepFrom;
        gone->pinnedKept = !pinnedKeys.empty();
        gone->streams = evictedStreams;
        for (size_t i : evicted)
            gone->keys.push_back(m_calls[i].key);
    }

    // Indices: the evicted calls' entries go; the region's survivors get new ids; every other id stays.
    const size_t newBase = m_callBase + removed;
    std::vector<std::string> touchedTraces;
    for (size_t i : evicted) {
        const Call &c = m_calls[i];
        if (auto it = m_callsByKey.find(c.key); it != m_callsByKey.end() && it->second == i + m_callBase)
            m_callsByKey.erase(it);
        if (!c.traceId.empty()) touchedTraces.push_back(c.traceId);
    }
    // Each trace the evicted calls were in loses them in one pass.
    std::sort(touchedTraces.begin(), touchedTraces.end());
    touchedTraces.erase(std::unique(touchedTraces.begin(), touchedTraces.end()), touchedTraces.end());
    for (const std::string &trace : touchedTraces) {
        const auto it = m_traces.find(trace);
        if (it == m_traces.end()) continue;
        m_tracedCalls -= std::erase_if(it->second, [&](size_t id) { return remap.gone(id - m_callBase); });
        if (it->second.empty()) m_traces.erase(it);
    }
    for (size_t k = 0; k < keptInRegion.size(); ++k) {
        const size_t i = keptInRegion[k], oldId = i + m_callBase, newId = k + newBase;
        const Call &c = m_calls[i];
        if (auto it = m_callsByKey.find(c.key); it != m_callsByKey.end() && it->second == oldId)
            it->second = newId;
        if (!c.traceId.empty())
            if (auto it = m_traces.find(c.traceId); it != m_traces.end())
                std::replace(it->second.begin(), it->second.end(), oldId, newId);
    }
    for (auto &[key, ref] : m_openStreams)
        ref.call = remap(ref.call); // open streams belong to calls still in flight, which always stay

    // Calls: the survivors move up, the evicted ones leave the front of the deque.
    for (size_t k = keptInRegion.size(); k-- > 0;)
        if (keptInRegion[k] != removed + k) m_calls[removed + k] = std::move(m_calls[keptInRegion[k]]);
    m_calls.erase(m_calls.begin(), m_calls.begin() + std::ptrdiff_t(removed));
    m_callBase = newBase;
    // Parent links are indices: every nested call's shifts (links into the evicted calls are cut). Only calls
    // of a trace have one.
    auto relink = [&](Call &c) {
        if (c.parentCall)
            c.parentCall =
                remap(*c.parentCall) == SIZE_MAX ? std::nullopt : std::optional(remap(*c.parentCall));
    };
    if (m_tracedCalls < m_calls.size() / 4) {
        for (const auto &[trace, members] : m_traces)
            for (size_t id : members)
                relink(callById(id));
    } else {
        for (Call &c : m_calls)
            relink(c);
    }
    m_evictedCalls += removed;

    // Frames are in (nearly) time order: only the front ones, up to the last evicted attempt's end and a
    // second of slack for batches that arrived out of order, can go.
    auto isIn = [](const std::vector<std::uint64_t> &sorted, std::uint64_t key) {
        return std::binary_search(sorted.begin(), sorted.end(), key);
    };
    const std::int64_t frameHorizon = std::max(evictedUntil, keepFrom) + 1'000'000'000;
    size_t scan = 0;
    while (scan < m_frames.size() && m_frames[scan].tNs <= frameHorizon)
        ++scan;
    const auto frameGone = [&](const FrameRecord &f) {
        const std::uint64_t key = streamKey(f.connection, f.stream);
        return (f.stream && isIn(evictedStreams, key)) || (f.tNs < keepFrom && !isIn(pinnedStreams, key));
    };
    // Survivors of the scanned front move to its end; the front then leaves the deque.
    size_t write = scan;
    for (size_t i = scan; i-- > 0;)
        if (!frameGone(m_frames[i])) m_frames[--write] = m_frames[i];
    m_frames.erase(m_frames.begin(), m_frames.begin() + std::ptrdiff_t(write));
    m_lastFrameTrim = {scan, scan - write};
    std::erase_if(m_pings, [&](const PingRecord &p) { return p.tNs < keepFrom; });
    std::erase_if(m_stalls, [&](const FlowStall &s) { return s.endNs && *s.endNs < keepFrom; });
    m_openStalls.clear();
    for (size_t i = 0; i < m_stalls.size(); ++i)
        if (!m_stalls[i].endNs)
            m_openStalls[{m_stalls[i].connection, m_stalls[i].dir, m_stalls[i].stream}] = i;
    std::erase_if(m_labEvents, [&](const LabEventRecord &e) {
        return e.tNs < keepFrom && (e.callId.empty() || !pinnedKeys.count(e.callId));
    });
    m_unresolvedLabEvents.clear();
    for (size_t i = 0; i < m_labEvents.size(); ++i)
        if (m_labEvents[i].callId.empty() && !m_labEvents[i].traceparent.empty())
            m_unresolvedLabEvents.push_back(i);
    ++m_generation;
}

} // namespace rpcscope
