#include "ratebins.h"

#include "clientoutcome.h"

#include <algorithm>
#include <bit>

namespace rpcscope {

namespace {
std::int64_t floorDiv(std::int64_t a, std::int64_t b)
{
    const std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
} // namespace

std::int64_t RateBins::levelNs(int level)
{
    static constexpr std::int64_t kWidths[kLevels] = {kBaseNs, kBaseNs * 10, kBaseNs * 100, kBaseNs * 1000,
                                                      kBaseNs * 10000};
    return kWidths[level];
}

void RateBins::clear()
{
    for (auto &level : m_levels)
        level.clear();
    m_lastChunk.fill(nullptr);
    m_records.clear();
    m_hasOrigin = false;
    m_originNs = 0;
    m_totalCalls = 0;
}

RateBins::Record RateBins::recordOf(const Call &call, const TimelineStore &store) const
{
    Record r;
    r.serial = call.serial;
    if (call.attempts.empty()) return r;
    r.start = call.startNs();
    r.attempts = std::uint32_t(call.attempts.size());
    for (size_t k = 1; k < std::min<size_t>(call.attempts.size(), 64); ++k)
        if (call.transparentRetry(k)) r.transparentMask |= std::uint64_t(1) << k;
    // Attempts that failed before the last one: retried, so the client's outcome never shows them.
    for (size_t k = 0; k + 1 < std::min<size_t>(call.attempts.size(), 64); ++k) {
        const Attempt &a = call.attempts[k];
        const bool replaced = (r.transparentMask >> (k + 1)) & 1;
        if (a.ended() && a.status.value_or(-1) != 0 && !replaced) r.failMask |= std::uint64_t(1) << k;
    }
    const ClientOutcome outcome = clientOutcome(call, store);
    if (outcome.source != ClientOutcome::Source::InFlight) {
        const std::int64_t end = outcome.atNs.value_or(call.endNs().value_or(call.attempts.back().startNs));
        r.end = std::max(end, r.start);
        // Ended without OK: a status other than OK, or none at all (the connection went first).
        if (outcome.status.value_or(-1) != 0) r.fail = r.end;
    }
    return r;
}

RateBins::Bin &RateBins::binAt(int level, std::int64_t tNs)
{
    const std::int64_t index = floorDiv(tNs - m_originNs, levelNs(level));
    const std::int64_t chunk = floorDiv(index, kChunk);
    // Calls arrive in about start order: nearly every bin is in the chunk the last one was.
    if (!m_lastChunk[size_t(level)] || m_lastChunkIndex[size_t(level)] != chunk) {
        std::unique_ptr<Chunk> &c = m_levels[size_t(level)][chunk];
        if (!c) c = std::make_unique<Chunk>();
        m_lastChunk[size_t(level)] = c.get();
        m_lastChunkIndex[size_t(level)] = chunk;
    }
    return (*m_lastChunk[size_t(level)])[size_t(index - chunk * kChunk)];
}

void RateBins::contribute(const Record &r, const Call &call, int sign)
{
    if (r.start == kNone) return;
    for (int level = 0; level < kLevels; ++level) {
        const std::int64_t width = levelNs(level);
        // The end of the bin holding t, in absolute ns.
        auto binEnd = [&](std::int64_t t) {
            return m_originNs + (floorDiv(t - m_originNs, width) + 1) * width;
        };
        Bin &start = binAt(level, r.start);
        start.calls += sign;
        start.flightDelta += sign;
        start.flightNs += sign * (binEnd(r.start) - r.start);
        if (r.end != kNone) {
            Bin &end = binAt(level, r.end);
            end.flightDelta -= sign;
            end.flightNs -= sign * (binEnd(r.end) - r.end);
        }
        if (r.fail != kNone) {
            Bin &fail = binAt(level, r.fail);
            fail.failures += sign;
            fail.failedCalls += sign;
        }
        for (std::uint64_t mask = r.failMask; mask; mask &= mask - 1) {
            const size_t k = size_t(std::countr_zero(mask));
            if (k < call.attempts.size() && call.attempts[k].endNs)
                binAt(level, *call.attempts[k].endNs).failures += sign;
        }
        for (size_t k = 1; k < r.attempts && k < call.attempts.size(); ++k) {
            Bin &b = binAt(level, call.attempts[k].startNs);
            if (k < 64 && (r.transparentMask >> k) & 1)
                b.transparent += sign;
            else
                b.retries += sign;
        }
    }
}

void RateBins::absorb(Record &slot, const Call &call, const TimelineStore &store)
{
    const Record now = recordOf(call, store);
    if (now == slot) return;
    // Attempts are only ever appended, so the attempts the record counted are still the call's first ones.
    if (slot.start != kNone)
        contribute(slot, call, -1);
    else if (now.start != kNone)
        ++m_totalCalls;
    contribute(now, call, +1);
    slot = now;
}

void RateBins::sync(const TimelineStore &store, const StoreChanges *changes)
{
    const auto &calls = store.calls();
    if (!m_hasOrigin && !calls.empty()) {
        m_originNs = store.originNs();
        m_hasOrigin = true;
    }
    const size_t known = m_records.size();
    const bool follows = changes && changes->firstNewCall == known && known <= calls.size() &&
                         (known == 0 || (calls.front().serial == m_records.front().serial &&
                                         calls[known - 1].serial == m_records.back().serial));
    if (follows) {
        for (const auto *list : {&changes->changedCalls, &changes->callsWithNewAttempts})
            for (size_t i : *list)
                if (i < known) absorb(m_records[i], calls[i], store);
        for (size_t i = known; i < calls.size(); ++i) {
            m_records.push_back(Record{.serial = calls[i].serial});
            absorb(m_records.back(), calls[i], store);
        }
        return;
    }
    // Every call, matched by serial (both in serial order): a record without a call is an evicted call's,
    // whose counts stay.
    std::deque<Record> before = std::move(m_records);
    m_records.clear();
    size_t r = 0;
    for (const Call &call : calls) {
        while (r < before.size() && before[r].serial < call.serial)
            ++r;
        Record slot = r < before.size() && before[r].serial == call.serial ? before[r++]
                                                                           : Record{.serial = call.serial};
        absorb(slot, call, store);
        m_records.push_back(slot);
    }
}

void RateBins::evict(const std::vector<size_t> &evicted)
{
    if (evicted.empty() || evicted.back() >= m_records.size()) return; // the next sync matches by serial
    size_t write = 0, next = 0;
    for (size_t i = 0; i < m_records.size(); ++i) {
        if (next < evicted.size() && evicted[next] == i) {
            ++next;
            continue;
        }
        m_records[write++] = m_records[i];
    }
    m_records.resize(write);
}

RateBins::Bin RateBins::bin(int level, std::int64_t index) const
{
    const auto &chunks = m_levels[size_t(level)];
    const std::int64_t chunk = floorDiv(index, kChunk);
    const auto it = chunks.find(chunk);
    return it == chunks.end() ? Bin{} : (*it->second)[size_t(index - chunk * kChunk)];
}

std::int64_t RateBins::flightBefore(int level, std::int64_t index) const
{
    // The coarsest bins before the boundary, then each finer level between its parent's boundary and it.
    const std::int64_t t = index * levelNs(level); // from the origin; a multiple of every finer level's width
    constexpr int top = kLevels - 1;
    std::int64_t parent = floorDiv(t, levelNs(top));
    std::int64_t sum = 0;
    for (const auto &[chunk, bins] : m_levels[top]) {
        if (chunk * kChunk >= parent) break;
        const std::int64_t n = std::min<std::int64_t>(kChunk, parent - chunk * kChunk);
        for (std::int64_t i = 0; i < n; ++i)
            sum += (*bins)[size_t(i)].flightDelta;
    }
    for (int l = top - 1; l >= level; --l) {
        const std::int64_t to = floorDiv(t, levelNs(l));
        for (std::int64_t i = parent * 10; i < to; ++i)
            sum += bin(l, i).flightDelta;
        parent = to;
    }
    return sum;
}

std::int64_t RateBins::bucketWidth(double minNs)
{
    std::int64_t decade = kBaseNs;
    while (true) {
        for (const std::int64_t m : {1, 2, 5})
            if (double(decade * m) >= minNs) return decade * m;
        if (decade > INT64_MAX / 100) return decade * 10;
        decade *= 10;
    }
}

std::vector<RateBins::Bucket> RateBins::buckets(std::int64_t fromNs, std::int64_t toNs,
                                                std::int64_t widthNs) const
{
    std::vector<Bucket> out;
    if (widthNs < kBaseNs || widthNs % kBaseNs != 0 || toNs <= fromNs) return out;
    // The coarsest level whose bins tile a bucket.
    int level = 0;
    while (level + 1 < kLevels && widthNs % levelNs(level + 1) == 0)
        ++level;
    const std::int64_t binNs = levelNs(level);
    const std::int64_t perBucket = widthNs / binNs;
    const std::int64_t first = floorDiv(fromNs - m_originNs, widthNs);
    const std::int64_t last = floorDiv(toNs - 1 - m_originNs, widthNs);
    if (last - first > 1'000'000) return out; // a caller's mistake, not a picture
    std::int64_t inFlight = flightBefore(level, first * perBucket);
    out.reserve(size_t(last - first + 1));
    for (std::int64_t j = first; j <= last; ++j) {
        Bucket b;
        b.startNs = m_originNs + j * widthNs;
        b.widthNs = widthNs;
        const std::int64_t endRel = (j + 1) * widthNs;
        // Calls in flight at the bucket's start are in flight all through it, less what the bins say.
        double flightNs = double(inFlight) * double(widthNs);
        for (std::int64_t i = j * perBucket; i < (j + 1) * perBucket; ++i) {
            const Bin x = bin(level, i);
            b.calls += x.calls;
            b.failures += x.failures;
            b.failedCalls += x.failedCalls;
            b.retries += x.retries;
            b.transparent += x.transparent;
            flightNs += double(x.flightNs) + double(x.flightDelta) * double(endRel - (i + 1) * binNs);
            inFlight += x.flightDelta;
        }
        b.inFlight = flightNs / double(widthNs);
        out.push_back(b);
    }
    return out;
}

} // namespace rpcscope
