#include "callstats.h"

#include "clientoutcome.h"
#include "timelinestore.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rpcscope {

namespace {

// A gap is early or late only when it misses the policy's range by more than this, as on the timeline
// (views/calllanepass.cpp, kGapSlackNs): the wire adds the client's reaction time, and C-core's timer wakes
// up to a few ms late. Strictly, retry-storm's first gaps (50 ms exactly, seen as 48 ms between the frames)
// all counted as early while their lanes showed them as fine.
constexpr std::int64_t kGapSlackNs = 5'000'000;

constexpr std::array<std::int64_t, LatencyBuckets::kEdges> kEdgesNs = [] {
    std::array<std::int64_t, LatencyBuckets::kEdges> e{};
    std::int64_t decade = 10'000; // 10 µs
    for (int i = 0; i < LatencyBuckets::kEdges; ++i) {
        const int step = i % 3;
        e[size_t(i)] = decade * (step == 0 ? 1 : step == 1 ? 2 : 5);
        if (step == 2) decade *= 10;
    }
    return e;
}();
static_assert(kEdgesNs.back() == 200'000'000'000, "the last edge is 200 s");

constexpr int kStatusOk = 0;
constexpr int kStatusDeadlineExceeded = 4;

void bump(std::uint64_t &v, int sign, std::uint64_t n = 1)
{
    v = sign > 0 ? v + n : v - n;
}

} // namespace

std::int64_t LatencyBuckets::edgeNs(int i)
{
    return kEdgesNs[size_t(std::clamp(i, 0, kEdges - 1))];
}

int LatencyBuckets::bucketOf(std::int64_t ns)
{
    return int(std::upper_bound(kEdgesNs.begin(), kEdgesNs.end(), ns) - kEdgesNs.begin());
}

std::pair<std::int64_t, std::int64_t> LatencyBuckets::rangeNs(int i)
{
    const std::int64_t lo = i <= 0 ? 0 : edgeNs(i - 1);
    const std::int64_t hi = i >= kEdges ? std::numeric_limits<std::int64_t>::max() : edgeNs(i);
    return {lo, hi};
}

void LatencyRecorder::locate(std::int64_t ns, int *octave, int *bin, std::int64_t *lower)
{
    const std::uint64_t v = std::uint64_t(std::max<std::int64_t>(0, ns));
    if (v < (std::uint64_t(1) << kSubBits)) {
        *octave = 0;
        *bin = int(v);
        *lower = std::int64_t(v);
        return;
    }
    // Octave k >= 1 holds [2^(k+kSubBits-1), 2^(k+kSubBits)), in 2^kSubBits bins of 2^(k-1) ns each.
    const int top = 63 - __builtin_clzll(v); // >= kSubBits
    const int shift = top - kSubBits + 1;
    *octave = shift;
    *bin = int((v >> shift) - (std::uint64_t(1) << (kSubBits - 1))) * 2 + int(v >> (shift - 1) & 1);
    *lower = std::int64_t((v >> (shift - 1)) << (shift - 1));
}

void LatencyRecorder::change(std::int64_t ns, int sign)
{
    // Over 13 days counts as 13 days: a bin's offsets then stay below 2^42, so its sum cannot overflow
    // before two million such values share one bin.
    ns = std::clamp<std::int64_t>(ns, 0, kMaxValueNs);
    int octave = 0, bin = 0;
    std::int64_t lower = 0;
    locate(ns, &octave, &bin, &lower);
    if (size_t(octave) >= m_octaves.size()) {
        if (sign < 0) return;
        m_octaves.resize(size_t(octave) + 1);
    }
    Octave &o = m_octaves[size_t(octave)];
    if (o.blocks.empty()) {
        if (sign < 0) return;
        o.blocks.resize((size_t(1) << kSubBits) / kBlockBins);
    }
    std::vector<Bin> &block = o.blocks[size_t(bin / kBlockBins)];
    if (block.empty()) {
        if (sign < 0) return;
        block.resize(kBlockBins);
    }
    Bin &b = block[size_t(bin % kBlockBins)];
    if (sign < 0 && b.count == 0) return; // never added: nothing to take out
    const std::int64_t offset = std::max<std::int64_t>(0, ns) - lower;
    if (sign > 0) {
        ++b.count;
        b.offsetSum += offset;
        ++o.count;
        ++m_count;
        ++m_buckets[size_t(LatencyBuckets::bucketOf(ns))];
    } else {
        --b.count;
        b.offsetSum -= offset;
        --o.count;
        --m_count;
        --m_buckets[size_t(LatencyBuckets::bucketOf(ns))];
    }
}

void LatencyRecorder::add(std::int64_t ns)
{
    m_pendingAdd.push_back(ns);
    if (m_pendingAdd.size() >= kPendingLimit) fold();
}

void LatencyRecorder::remove(std::int64_t ns)
{
    m_pendingRemove.push_back(ns);
    if (m_pendingRemove.size() >= kPendingLimit) fold();
}

void LatencyRecorder::fold() const
{
    if (m_pendingAdd.empty() && m_pendingRemove.empty()) return;
    // Adds first: a value removed in the same window was added before it.
    auto *self = const_cast<LatencyRecorder *>(this);
    for (std::int64_t v : m_pendingAdd)
        self->change(v, +1);
    for (std::int64_t v : m_pendingRemove)
        self->change(v, -1);
    m_pendingAdd.clear();
    m_pendingRemove.clear();
}

namespace {
// What glibc's malloc takes for a block of n bytes: an 8-byte header, 16-byte steps, 32 at least.
size_t heapBlock(size_t n)
{
    return n ? std::max<size_t>(32, (n + 8 + 15) & ~size_t(15)) : 0;
}
} // namespace

size_t LatencyRecorder::memoryBytes() const
{
    fold(); // what a read would allocate, counted now
    size_t n = heapBlock(m_octaves.capacity() * sizeof(Octave)) +
               heapBlock(m_pendingAdd.capacity() * sizeof(std::int64_t)) +
               heapBlock(m_pendingRemove.capacity() * sizeof(std::int64_t));
    for (const Octave &o : m_octaves) {
        n += heapBlock(o.blocks.capacity() * sizeof(std::vector<Bin>));
        for (const std::vector<Bin> &block : o.blocks)
            n += heapBlock(block.capacity() * sizeof(Bin));
    }
    return n;
}

size_t CallStats::callRecordBytes() const
{
    // A record per call kept, in a deque's 512-byte blocks (a block header and a map slot each), and the
    // stragglers' hash nodes with their bucket array: a timeline of many calls in flight holds mostly these.
    const size_t perBlock = std::max<size_t>(1, 512 / sizeof(Contribution));
    return m_byCall.size() * sizeof(Contribution) + (m_byCall.size() / perBlock + 1) * (16 + sizeof(void *)) +
           m_stragglers.size() *
               heapBlock(sizeof(void *) + sizeof(std::uint64_t) + sizeof(Contribution) + sizeof(size_t)) +
           heapBlock(m_stragglers.bucket_count() * sizeof(void *));
}

size_t CallStats::rowBytes() const
{
    size_t n = 0;
    auto row = [&n](const StatsRow &r, bool node) {
        // A map node: its links and colour (32 bytes) and the key-row pair.
        n += (node ? heapBlock(32 + sizeof(std::string) + sizeof(StatsRow)) : 0) +
             r.callLatency.memoryBytes() + r.attemptLatency.memoryBytes() +
             heapBlock(r.attemptsPerCall.capacity() * sizeof(std::uint64_t)) +
             (r.key.capacity() > 15 ? heapBlock(r.key.capacity() + 1) : 0);
        // The map's key is a string of its own.
        if (node && r.key.capacity() > 15) n += heapBlock(r.key.capacity() + 1);
    };
    row(m_total, false);
    for (const auto &[key, r] : m_methods)
        row(r, true);
    for (const auto &[key, r] : m_hops)
        row(r, true);
    return n;
}

void LatencyRecorder::clear()
{
    *this = LatencyRecorder();
}

std::optional<std::int64_t> LatencyRecorder::percentile(double q) const
{
    fold();
    if (m_count == 0 || !(q > 0)) return std::nullopt;
    const std::uint64_t n = m_count;
    // Nearest rank, ceil(q * n), without letting 0.9 * 10 = 9.000000000000002 round up to 10.
    const double r = std::min(1.0, q) * double(n);
    std::uint64_t rank = std::uint64_t(r);
    if (r - double(rank) > 1e-9) ++rank;
    rank = std::clamp<std::uint64_t>(rank, 1, n);
    std::uint64_t seen = 0;
    for (size_t k = 0; k < m_octaves.size(); ++k) {
        const Octave &o = m_octaves[k];
        if (seen + o.count < rank) {
            seen += o.count;
            continue;
        }
        for (size_t i = 0; i < o.blocks.size() * kBlockBins; ++i) {
            const std::vector<Bin> &block = o.blocks[i / kBlockBins];
            if (block.empty()) {
                i += kBlockBins - 1;
                continue;
            }
            const Bin &b = block[i % kBlockBins];
            if (seen + b.count < rank) {
                seen += b.count;
                continue;
            }
            const int shift = int(k);
            const std::int64_t lower =
                k == 0 ? std::int64_t(i) : std::int64_t(((std::uint64_t(1) << kSubBits) + i) << (shift - 1));
            // The mean of the bin's values, rounded to the nearest ns.
            return lower + (b.offsetSum + std::int64_t(b.count / 2)) / std::int64_t(b.count);
        }
    }
    return std::nullopt; // counts out of step: cannot happen
}

const char *categoryLabel(CallCategory c)
{
    switch (c) {
    case CallCategory::OkFirstTry:
        return "OK first try";
    case CallCategory::OkAfterRetry:
        return "OK after retry";
    case CallCategory::FailedAfterRetries:
        return "failed after retries";
    case CallCategory::FailedNoRetry:
        return "failed, no retry";
    case CallCategory::FailedFast:
        return "failed fast";
    case CallCategory::DeadlineExceeded:
        return "deadline exceeded";
    case CallCategory::InFlight:
        return "in flight";
    }
    return "?";
}

const char *categoryKey(CallCategory c)
{
    switch (c) {
    case CallCategory::OkFirstTry:
        return "ok_first_try";
    case CallCategory::OkAfterRetry:
        return "ok_after_retry";
    case CallCategory::FailedAfterRetries:
        return "failed_after_retries";
    case CallCategory::FailedNoRetry:
        return "failed_no_retry";
    case CallCategory::FailedFast:
        return "failed_fast";
    case CallCategory::DeadlineExceeded:
        return "deadline_exceeded";
    case CallCategory::InFlight:
        return "in_flight";
    }
    return "?";
}

double StatsRow::amplification() const
{
    const std::uint64_t onWire = calls - count(CallCategory::FailedFast);
    return onWire ? double(attempts) / double(onWire) : 0.0;
}

namespace {
CallCategory categoryFrom(const Call &call, const ClientOutcome &co)
{
    if (call.attempts.empty() || co.source == ClientOutcome::Source::InFlight) return CallCategory::InFlight;
    if (co.status == kStatusDeadlineExceeded) return CallCategory::DeadlineExceeded;
    const bool retried = call.attempts.size() > 1;
    if (co.status == kStatusOk) return retried ? CallCategory::OkAfterRetry : CallCategory::OkFirstTry;
    return retried ? CallCategory::FailedAfterRetries : CallCategory::FailedNoRetry;
}

std::optional<std::int64_t> latencyFrom(const Call &call, const ClientOutcome &co)
{
    if (call.attempts.empty() || co.source == ClientOutcome::Source::InFlight) return std::nullopt;
    const auto end = co.atNs ? co.atNs : call.endNs();
    if (!end) return std::nullopt;
    return std::max<std::int64_t>(0, *end - call.startNs());
}
} // namespace

CallCategory CallStats::categoryOf(const Call &call, const TimelineStore &store)
{
    return categoryFrom(call, clientOutcome(call, store));
}

std::optional<std::int64_t> CallStats::callLatencyNs(const Call &call, const TimelineStore &store)
{
    return latencyFrom(call, clientOutcome(call, store));
}

bool CallStats::rowMatches(StatsRow::Kind kind, const std::string &key, const Call &call)
{
    switch (kind) {
    case StatsRow::Kind::Total:
        return true;
    case StatsRow::Kind::Method:
        return call.method == key;
    case StatsRow::Kind::Hop:
        return call.hop == key;
    }
    return false;
}

const StatsRow *CallStats::find(StatsRow::Kind kind, const std::string &key) const
{
    if (kind == StatsRow::Kind::Total) return &m_total;
    const auto &rows = kind == StatsRow::Kind::Method ? m_methods : m_hops;
    const auto it = rows.find(key);
    return it == rows.end() ? nullptr : &it->second;
}

StatsRow &CallStats::row(std::map<std::string, StatsRow> &rows, StatsRow::Kind kind, const std::string &key,
                         bool *folded)
{
    auto it = rows.find(key);
    if (it != rows.end()) return it->second;
    const std::string other = kind == StatsRow::Kind::Hop ? kOtherHops : kOtherMethods;
    const bool past = !key.empty() && key != other && rows.size() >= m_maxKeyedRows;
    if (past && folded) *folded = true;
    const std::string &k = past ? other : key;
    auto [at, fresh] = rows.try_emplace(k);
    if (fresh) {
        at->second.kind = kind;
        at->second.key = k;
    }
    return at->second;
}

void CallStats::clear()
{
    m_total = StatsRow();
    m_methods.clear();
    m_hops.clear();
    m_byCall.clear();
    m_stragglers.clear();
    m_firstSerial = 0;
    m_labEventsSeen = 0;
    m_foldedMethodCalls = m_foldedHopCalls = 0;
    ++m_generation;
}

void CallStats::rebuild(const TimelineStore &store)
{
    clear();
    for (const Call &call : store.calls())
        account(store, call);
    countFastFails(store);
}

void CallStats::update(const TimelineStore &store, const StoreChanges &changes)
{
    const auto &calls = store.calls();
    // An attempt placed before others moved them up by one: so does what each of them counted.
    for (const StoreChanges::Placed &p : changes.attemptsPlacedBefore) {
        if (p.call >= calls.size() || p.call >= changes.firstNewCall || p.at >= 64) continue;
        Contribution *c = slot(calls[p.call].serial);
        if (!c) continue;
        const std::uint64_t below = p.at ? c->attemptsCounted & (~std::uint64_t(0) >> (64 - p.at)) : 0;
        c->attemptsCounted = below | (c->attemptsCounted >> p.at << (p.at + 1));
    }
    for (size_t i : changes.callsWithNewAttempts)
        if (i < changes.firstNewCall && i < calls.size()) account(store, calls[i]);
    for (size_t i : changes.changedCalls)
        if (i < changes.firstNewCall && i < calls.size()) account(store, calls[i]);
    for (size_t i = changes.firstNewCall; i < calls.size(); ++i)
        account(store, calls[i]);
    countFastFails(store);
}

void CallStats::forget(const TimelineStore &store, const std::vector<size_t> &calls)
{
    std::uint64_t upTo = 0; // slots below this go
    for (size_t i : calls) {
        if (i >= store.calls().size()) continue;
        const std::uint64_t serial = store.calls()[i].serial;
        if (serial >= m_firstSerial && serial - m_firstSerial < m_byCall.size()) {
            m_byCall[serial - m_firstSerial].gone = true;
            upTo = std::max(upTo, serial - m_firstSerial + 1);
        } else {
            m_stragglers.erase(serial);
        }
    }
    // Eviction takes the oldest calls, and serials rise with them: the front of the deque goes. The calls
    // among them that stay (in flight, pinned) move aside, so one call that never ends holds nothing up.
    for (std::uint64_t k = 0; k < upTo; ++k) {
        if (!m_byCall.front().gone && m_byCall.front().method)
            m_stragglers.emplace(m_firstSerial, m_byCall.front());
        m_byCall.pop_front();
        ++m_firstSerial;
    }
}

CallStats::Contribution *CallStats::slot(std::uint64_t serial)
{
    if (m_byCall.empty() && m_stragglers.empty()) m_firstSerial = serial;
    if (serial < m_firstSerial) {
        const auto it = m_stragglers.find(serial);
        return it == m_stragglers.end() ? nullptr : &it->second;
    }
    const std::uint64_t k = serial - m_firstSerial;
    if (k >= m_byCall.size()) m_byCall.resize(k + 1);
    return &m_byCall[k];
}

void CallStats::afterEviction(const TimelineStore &store)
{
    // Every lab event was counted when it arrived; eviction only drops old ones from the front.
    m_labEventsSeen = store.labEvents().size();
}

void CallStats::countFastFails(const TimelineStore &store)
{
    const auto &events = store.labEvents();
    if (m_labEventsSeen > events.size()) m_labEventsSeen = events.size();
    for (; m_labEventsSeen < events.size(); ++m_labEventsSeen) {
        const std::string &kind = events[m_labEventsSeen].kind;
        if (kind != "fast-fail" && kind != "bulkhead-rejected") continue;
        // Never sent: no method or hop on the wire. It counts in the total and in the method row "".
        StatsRow &m = row(m_methods, StatsRow::Kind::Method, {});
        for (StatsRow *r : {&m_total, &m}) {
            ++r->calls;
            ++r->outcomes[size_t(CallCategory::FailedFast)];
        }
        ++m_generation;
    }
}

void CallStats::apply(const Contribution &c, int sign)
{
    for (StatsRow *r : {&m_total, c.method, c.hop}) {
        bump(r->calls, sign);
        bump(r->attempts, sign, c.attempts);
        bump(r->transparentRetries, sign, c.transparent);
        bump(r->outcomes[size_t(c.category)], sign);
        if (c.latencyNs) {
            if (sign > 0)
                r->callLatency.add(*c.latencyNs);
            else
                r->callLatency.remove(*c.latencyNs);
        }
        if (r->attemptsPerCall.size() <= c.attempts) r->attemptsPerCall.resize(c.attempts + 1, 0);
        bump(r->attemptsPerCall[c.attempts], sign);
        bump(r->gaps.within, sign, c.gaps.within);
        bump(r->gaps.early, sign, c.gaps.early);
        bump(r->gaps.late, sign, c.gaps.late);
        bump(r->gaps.noPolicy, sign, c.gaps.noPolicy);
        bump(r->gaps.transparent, sign, c.gaps.transparent);
    }
}

void CallStats::account(const TimelineStore &store, const Call &call)
{
    Contribution *slotOf = slot(call.serial);
    if (!slotOf) return; // forgotten: evicted, it cannot change
    Contribution &c = *slotOf;
    Contribution now;
    now.method = c.method;
    now.hop = c.hop;
    now.attemptsCounted = c.attemptsCounted;
    if (!now.method) {
        bool foldedMethod = false, foldedHop = false;
        now.method = &row(m_methods, StatsRow::Kind::Method, call.method, &foldedMethod);
        now.hop = &row(m_hops, StatsRow::Kind::Hop, call.hop, &foldedHop);
        m_foldedMethodCalls += foldedMethod;
        m_foldedHopCalls += foldedHop;
    }
    const ClientOutcome co = clientOutcome(call, store);
    now.category = categoryFrom(call, co);
    now.attempts = std::uint32_t(call.attempts.size());
    now.latencyNs = latencyFrom(call, co);
    for (size_t k = 1; k < call.attempts.size(); ++k) {
        const bool transparent = call.transparentRetry(k);
        now.transparent += transparent;
        const auto &prev = call.attempts[k - 1];
        if (!prev.endNs) continue;
        const std::int64_t gap = call.attempts[k].startNs - *prev.endNs;
        if (transparent) {
            ++now.gaps.transparent;
        } else if (const auto range = call.expectedGapNs(k - 1)) {
            if (gap < range->first - kGapSlackNs)
                ++now.gaps.early;
            else if (gap > range->second + kGapSlackNs)
                ++now.gaps.late;
            else
                ++now.gaps.within;
        } else {
            ++now.gaps.noPolicy;
        }
    }
    // Most changes (a message, response headers) leave what the call counts as it was.
    const bool fresh = !c.method;
    const bool same = !fresh && now.category == c.category && now.attempts == c.attempts &&
                      now.latencyNs == c.latencyNs && now.transparent == c.transparent &&
                      now.gaps.within == c.gaps.within && now.gaps.early == c.gaps.early &&
                      now.gaps.late == c.gaps.late && now.gaps.noPolicy == c.gaps.noPolicy &&
                      now.gaps.transparent == c.gaps.transparent;
    if (!same) {
        if (!fresh) apply(c, -1);
        c = now;
        apply(c, +1);
        ++m_generation;
    }
    // An ended attempt's duration never changes: each is added once.
    for (size_t k = 0; k < call.attempts.size() && k < 64; ++k) {
        const Attempt &a = call.attempts[k];
        if (!a.endNs || (c.attemptsCounted >> k & 1)) continue;
        c.attemptsCounted |= std::uint64_t(1) << k;
        const std::int64_t d = std::max<std::int64_t>(0, *a.endNs - a.startNs);
        for (StatsRow *r : {&m_total, c.method, c.hop})
            r->attemptLatency.add(d);
        ++m_generation;
    }
}

} // namespace rpcscope
