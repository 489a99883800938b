#pragma once

#include "timelinestore.h"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

namespace rpcscope {

// Calls started, failed and retried, and calls in flight, over time: the timeline's rates strip reads them.
// Counted in bins at five resolutions (1 ms, 10 ms, 100 ms, 1 s, 10 s, aligned to the capture's origin), so
// a picture sums at most a few bins per column however long the capture, and kept incrementally: one applied
// batch costs the calls it touched, never a walk over every call.
//
// What is counted, per call:
// - a call: at its first attempt's start;
// - a failure: every attempt that failed, the server's own failure and one the capturing proxy injected alike
//   (a retry storm or a policy check fails attempts while every call still ends OK). An attempt before the
//   last one counts at its end when it ended without OK, unless a transparent retry replaced it (the client
//   never saw that one, see below); the last attempt counts when the client got a status other than OK
//   (clientoutcome.h) or its call ended without any status, at the moment the client got it;
// - a failed call: the last of those, once a call (what the client saw fail);
// - a retry: every attempt after the first, at its start; transparent retries (Call::transparentRetry, a
//   stream the server never saw) are counted apart and are not retries;
// - in flight: from the call's start to when the client got its outcome (open calls stay in flight).
//
// Retention: calls evicted from the store stay counted (what happened still happened); only the record of
// what each call contributed goes, which a call needs to be counted again when it changes.
class RateBins
{
public:
    static constexpr int kLevels = 5;
    static constexpr std::int64_t kBaseNs = 1'000'000; // the finest bin: 1 ms
    // Level l's bins are kBaseNs * 10^l wide.
    static std::int64_t levelNs(int level);

    // One bin's counts. flightDelta: calls that started minus calls that ended in it; flightNs: the time
    // those calls spent in flight within the bin (negative for those that ended), so an average over any span
    // needs only the calls in flight at its start.
    struct Bin
    {
        std::int32_t calls = 0, failures = 0, retries = 0, transparent = 0, flightDelta = 0, failedCalls = 0;
        std::int64_t flightNs = 0;
        bool operator==(const Bin &) const = default;
    };

    // A span of time summed from the bins: counts, and calls in flight on average over the span.
    struct Bucket
    {
        std::int64_t startNs = 0, widthNs = 0; // absolute steady ns
        std::int64_t calls = 0, failures = 0, retries = 0, transparent = 0, failedCalls = 0;
        double inFlight = 0;
        double perSecond(std::int64_t n) const { return widthNs > 0 ? double(n) * 1e9 / double(widthNs) : 0; }
    };

    // Forgets everything (the store was cleared or replaced).
    void clear();
    // Brings the bins up to `store`. With `changes` (the batch applied since the last sync: the calls it
    // touched and its new calls), only those; otherwise every call, matched to what was counted before by
    // Call::serial, so a call counted earlier replaces its contribution and an evicted one stays counted.
    void sync(const TimelineStore &store, const StoreChanges *changes = nullptr);
    // Retention evicted these calls (store indices before the eviction, ascending): they stay counted.
    void evict(const std::vector<size_t> &evicted);

    // Where bins are aligned: the store's origin when the first call was counted.
    std::int64_t originNs() const { return m_originNs; }
    // Calls counted so far, evicted ones included.
    std::int64_t totalCalls() const { return m_totalCalls; }
    bool empty() const { return m_totalCalls == 0; }
    // Calls whose contribution is on record (the store's calls after a sync).
    size_t recordedCalls() const { return m_records.size(); }

    // The bin `index` (from the origin, may be negative) at `level`.
    Bin bin(int level, std::int64_t index) const;
    // A bucket width of 1, 2 or 5 times a power of ten ms, at least minNs (and at least kBaseNs).
    static std::int64_t bucketWidth(double minNs);
    // The buckets of widthNs (a multiple of kBaseNs, from bucketWidth) aligned to the origin that overlap
    // [fromNs, toNs), in order.
    std::vector<Bucket> buckets(std::int64_t fromNs, std::int64_t toNs, std::int64_t widthNs) const;

private:
    static constexpr std::int64_t kNone = INT64_MIN;
    static constexpr int kChunk = 1024;
    struct Record
    {
        std::uint64_t serial = 0;
        std::int64_t start = kNone, end = kNone, fail = kNone;
        std::uint32_t attempts = 0;
        std::uint64_t transparentMask = 0; // bit k: attempt k (k < 64) was a transparent retry
        // Bit k: attempt k (k < 64, not the last) failed and counts at its end, which never moves once set.
        std::uint64_t failMask = 0;
        bool operator==(const Record &) const = default;
    };
    using Chunk = std::array<Bin, kChunk>;

    Record recordOf(const Call &call, const TimelineStore &store) const;
    // Adds (sign +1) or takes back (-1) what `r` says `call` contributed.
    void contribute(const Record &r, const Call &call, int sign);
    void absorb(Record &slot, const Call &call, const TimelineStore &store);
    Bin &binAt(int level, std::int64_t tNs);
    // Sum of flightDelta over every bin of `level` before `index`: calls in flight at that bin's start.
    std::int64_t flightBefore(int level, std::int64_t index) const;

    std::array<std::map<std::int64_t, std::unique_ptr<Chunk>>, kLevels> m_levels;
    std::array<Chunk *, kLevels> m_lastChunk{}; // binAt()'s last chunk per level
    std::array<std::int64_t, kLevels> m_lastChunkIndex{};
    std::deque<Record> m_records; // in serial order: the store's calls after a sync
    std::int64_t m_originNs = 0;
    bool m_hasOrigin = false;
    std::int64_t m_totalCalls = 0;
};

} // namespace rpcscope
