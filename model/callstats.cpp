#include "callstats.h"

#include "clientoutcome.h"
#include "timelinestore.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rpcscope {

namespace {

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

void LatencyRecorder::add(std::int64_t ns)
{
    ++m_count;
    ++m_buckets[size_t(LatencyBuckets::bucketOf(ns))];
    m_added.push_back(ns);
}

void LatencyRecorder::remove(std::int64_t ns)
{
    if (m_count == 0) return;
    --m_count;
    --m_buckets[size_t(LatencyBuckets::bucketOf(ns))];
    m_removed.push_back(ns);
}

void LatencyRecorder::clear()
{
    *this = LatencyRecorder();
}

void LatencyRecorder::settle() const
{
    if (m_added.empty() && m_removed.empty()) return;
    std::sort(m_added.begin(), m_added.end());
    std::sort(m_removed.begin(), m_removed.end());
    std::vector<std::int64_t> merged;
    merged.reserve(m_sorted.size() + m_added.size());
    std::merge(m_sorted.begin(), m_sorted.end(), m_added.begin(), m_added.end(), std::back_inserter(merged));
    if (!m_removed.empty()) {
        // A multiset difference: each removed value takes one equal value out.
        size_t out = 0, r = 0;
        for (size_t i = 0; i < merged.size(); ++i) {
            while (r < m_removed.size() && m_removed[r] < merged[i])
                ++r; // removing a value never added: nothing to take out
            if (r < m_removed.size() && m_removed[r] == merged[i]) {
                ++r;
                continue;
            }
            merged[out++] = merged[i];
        }
        merged.resize(out);
    }
    m_sorted = std::move(merged);
    m_added.clear();
    m_removed.clear();
}

std::optional<std::int64_t> LatencyRecorder::percentile(double q) const
{
    settle();
    if (m_sorted.empty() || !(q > 0)) return std::nullopt;
    const size_t n = m_sorted.size();
    // Nearest rank, ceil(q * n), without letting 0.9 * 10 = 9.000000000000002 round up to 10.
    const double r = std::min(1.0, q) * double(n);
    size_t rank = size_t(r);
    if (r - double(rank) > 1e-9) ++rank;
    rank = std::clamp<size_t>(rank, 1, n);
    return m_sorted[rank - 1];
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

CallCategory CallStats::categoryOf(const Call &call, const TimelineStore &store)
{
    if (call.attempts.empty()) return CallCategory::InFlight;
    const ClientOutcome co = clientOutcome(call, store);
    if (co.source == ClientOutcome::Source::InFlight) return CallCategory::InFlight;
    if (co.status == kStatusDeadlineExceeded) return CallCategory::DeadlineExceeded;
    const bool retried = call.attempts.size() > 1;
    if (co.status == kStatusOk) return retried ? CallCategory::OkAfterRetry : CallCategory::OkFirstTry;
    return retried ? CallCategory::FailedAfterRetries : CallCategory::FailedNoRetry;
}

std::optional<std::int64_t> CallStats::callLatencyNs(const Call &call, const TimelineStore &store)
{
    if (call.attempts.empty()) return std::nullopt;
    const ClientOutcome co = clientOutcome(call, store);
    if (co.source == ClientOutcome::Source::InFlight) return std::nullopt;
    const auto end = co.atNs ? co.atNs : call.endNs();
    if (!end) return std::nullopt;
    return std::max<std::int64_t>(0, *end - call.startNs());
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

StatsRow &CallStats::row(std::map<std::string, StatsRow> &rows, StatsRow::Kind kind, const std::string &key)
{
    auto [it, fresh] = rows.try_emplace(key);
    if (fresh) {
        it->second.kind = kind;
        it->second.key = key;
    }
    return it->second;
}

void CallStats::clear()
{
    m_total = StatsRow();
    m_methods.clear();
    m_hops.clear();
    m_byCall.clear();
    m_labEventsSeen = 0;
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
    for (size_t i : calls)
        if (i < store.calls().size()) m_byCall.erase(store.calls()[i].serial);
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
        if (events[m_labEventsSeen].kind != "fast-fail") continue;
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
    auto [it, fresh] = m_byCall.try_emplace(call.serial);
    Contribution &c = it->second;
    if (fresh) {
        c.method = &row(m_methods, StatsRow::Kind::Method, call.method);
        c.hop = &row(m_hops, StatsRow::Kind::Hop, call.hop);
    } else {
        apply(c, -1);
    }
    c.category = categoryOf(call, store);
    c.attempts = std::uint32_t(call.attempts.size());
    c.latencyNs = c.category == CallCategory::InFlight ? std::nullopt : callLatencyNs(call, store);
    c.transparent = 0;
    c.gaps = {};
    for (size_t k = 1; k < call.attempts.size(); ++k) {
        const bool transparent = call.transparentRetry(k);
        c.transparent += transparent;
        const auto &prev = call.attempts[k - 1];
        if (!prev.endNs) continue;
        const std::int64_t gap = call.attempts[k].startNs - *prev.endNs;
        if (transparent) {
            ++c.gaps.transparent;
        } else if (const auto range = call.expectedGapNs(k - 1)) {
            if (gap < range->first)
                ++c.gaps.early;
            else if (gap > range->second)
                ++c.gaps.late;
            else
                ++c.gaps.within;
        } else {
            ++c.gaps.noPolicy;
        }
    }
    apply(c, +1);
    // An ended attempt's duration never changes: each is added once.
    for (size_t k = 0; k < call.attempts.size() && k < 64; ++k) {
        const Attempt &a = call.attempts[k];
        if (!a.endNs || (c.attemptsCounted >> k & 1)) continue;
        c.attemptsCounted |= std::uint64_t(1) << k;
        const std::int64_t d = std::max<std::int64_t>(0, *a.endNs - a.startNs);
        for (StatsRow *r : {&m_total, c.method, c.hop})
            r->attemptLatency.add(d);
    }
    ++m_generation;
}

} // namespace rpcscope
