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
    size_t n = sizeof(Call) + c.attempts.capacity() * sizeof(Attempt) + stringBytes(c.key) + stringBytes(c.method) +
               stringBytes(c.clientPeer) + stringBytes(c.traceId) + stringBytes(c.spanId) + stringBytes(c.hop);
    for (const Attempt &a : c.attempts) {
        n += stringBytes(a.encoding);
        if (a.statusMessage)
            n += stringBytes(*a.statusMessage);
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
    if (sampled)
        n += size_t(double(extra) / double(sampled) * double(m_calls.size()));
    for (const LabEventRecord &e : m_labEvents)
        n += sizeof(LabEventRecord) + stringBytes(e.kind) + stringBytes(e.detail) + stringBytes(e.callId);
    return n;
}

void TimelineStore::setPinned(size_t call, bool pinned)
{
    if (call < m_calls.size() && m_calls[call].pinned != pinned) {
        m_calls[call].pinned = pinned;
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
    if (m_calls.empty())
        return evicted;
    // A cheap lower bound first, so a session far below its budget costs nothing here.
    const size_t floor = m_calls.size() * (sizeof(Call) + sizeof(Attempt)) + m_frames.size() * sizeof(FrameRecord);
    const bool nearBytes = policy.maxBytes && floor > policy.maxBytes / 2;
    if (!nearBytes && !(policy.maxCalls && m_calls.size() > policy.maxCalls) &&
        !(policy.maxAgeNs && m_calls.front().startNs() < m_latestNs - policy.maxAgeNs))
        return evicted;
    const size_t bytes = knownBytes ? knownBytes : approxBytes();
    const bool overBytes = policy.maxBytes && bytes > policy.maxBytes;
    const bool overCalls = policy.maxCalls && m_calls.size() > policy.maxCalls;
    const std::int64_t ageCut = policy.maxAgeNs ? m_latestNs - policy.maxAgeNs : INT64_MIN;
    const bool overAge = policy.maxAgeNs && m_calls.front().startNs() < ageCut;
    if (!overBytes && !overCalls && !overAge)
        return evicted;

    // Evict down to 90% of the limits, so eviction runs in chunks rather than on every batch.
    const size_t bytesTarget = overBytes ? policy.maxBytes / 10 * 9 : SIZE_MAX;
    const size_t callsTarget = overCalls ? policy.maxCalls / 10 * 9 : SIZE_MAX;
    size_t bytesLeft = bytes, callsLeft = m_calls.size();
    // What evicting a call frees besides the call itself: its share of the frames, its index entries.
    const size_t sharePerCall = m_frames.size() * sizeof(FrameRecord) / m_calls.size() + 96 + 16;
    for (size_t i = 0; i < m_calls.size(); ++i) {
        const Call &c = m_calls[i];
        const bool oldEnough = overAge && c.startNs() < ageCut;
        if (!oldEnough && bytesLeft <= bytesTarget && callsLeft <= callsTarget)
            break;
        // Whole calls only: one still in flight (or waiting for a retry) stays, and so does a pinned one.
        if (c.pinned || !c.endNs() || !c.attempts.back().ended())
            continue;
        evicted.push_back(i);
        const size_t cb = callBytes(c) + sharePerCall;
        bytesLeft -= std::min(bytesLeft, cb);
        --callsLeft;
    }
    return evicted;
}

void TimelineStore::evict(const std::vector<size_t> &evicted, Evicted *gone)
{
    if (evicted.empty())
        return;
    std::vector<bool> goneCall(m_calls.size(), false);
    for (size_t i : evicted) {
        goneCall[i] = true;
        m_attemptCount -= m_calls[i].attempts.size();
        m_retentionCutNs = std::max(m_retentionCutNs, m_calls[i].endNs().value_or(0));
    }

    // New index of every call that stays.
    std::vector<size_t> remap(m_calls.size(), SIZE_MAX);
    size_t next = 0;
    for (size_t i = 0; i < m_calls.size(); ++i)
        if (!goneCall[i])
            remap[i] = next++;
    // Frames, pings, stalls and lab events older than every remaining unpinned call go too, except what belongs
    // to a pinned call.
    std::int64_t keepFrom = INT64_MAX;
    std::unordered_set<std::uint64_t> pinnedStreams;
    std::unordered_set<std::string> pinnedKeys;
    for (size_t i = 0; i < m_calls.size(); ++i) {
        if (goneCall[i])
            continue;
        const Call &c = m_calls[i];
        if (c.pinned) {
            for (const Attempt &a : c.attempts)
                pinnedStreams.insert(streamKey(a.connection, a.stream));
            pinnedKeys.insert(c.key);
        } else {
            keepFrom = std::min(keepFrom, c.startNs());
        }
    }
    keepFrom = std::min(keepFrom, m_retentionCutNs + 1);
    // The evicted calls' own frames go whenever they happened (a call still in flight holds keepFrom back).
    std::unordered_set<std::uint64_t> evictedStreams;
    for (size_t i : evicted)
        for (const Attempt &a : m_calls[i].attempts)
            evictedStreams.insert(streamKey(a.connection, a.stream));
    if (gone) {
        gone->keepFromNs = keepFrom;
        gone->pinnedKept = !pinnedKeys.empty();
        gone->streams.assign(evictedStreams.begin(), evictedStreams.end());
        for (size_t i : evicted)
            gone->keys.push_back(m_calls[i].key);
    }

    // Compacted in place: no second copy of every call while evicting.
    size_t write = 0;
    for (size_t i = 0; i < m_calls.size(); ++i) {
        if (goneCall[i])
            continue;
        Call &c = m_calls[i];
        if (c.parentCall)
            c.parentCall = remap[*c.parentCall] == SIZE_MAX ? std::nullopt : std::optional(remap[*c.parentCall]);
        if (write != i)
            m_calls[write] = std::move(c);
        ++write;
    }
    m_calls.resize(write);
    m_evictedCalls += evicted.size();

    for (auto it = m_callsByKey.begin(); it != m_callsByKey.end();) {
        if (remap[it->second] == SIZE_MAX) {
            it = m_callsByKey.erase(it);
        } else {
            it->second = remap[it->second];
            ++it;
        }
    }
    for (auto it = m_traces.begin(); it != m_traces.end();) {
        std::vector<size_t> &members = it->second;
        std::erase_if(members, [&](size_t c) { return remap[c] == SIZE_MAX; });
        for (size_t &c : members)
            c = remap[c];
        it = members.empty() ? m_traces.erase(it) : std::next(it);
    }
    for (auto &[key, ref] : m_openStreams)
        ref.call = remap[ref.call]; // open streams belong to calls still in flight, which always stay

    std::erase_if(m_frames, [&](const FrameRecord &f) {
        const std::uint64_t key = streamKey(f.connection, f.stream);
        return (f.stream && evictedStreams.count(key)) || (f.tNs < keepFrom && !pinnedStreams.count(key));
    });
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
