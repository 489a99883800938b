#pragma once

#include "podarray.h"
#include "ratebins.h"
#include "timelinelayout.h"
#include "timelinestore.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rpcscope {

// Everything the painter needs that depends on the whole store, cached and keyed on the store's generation:
// the lane layout, the trace's extent, a flat array of attempt spans for the overview, lab events by where
// they are drawn, per-connection marker lists and what the legend has to explain. After one applied batch
// (noteChanges) or one eviction (prepareEviction / applyEviction) it follows the calls that changed instead
// of rebuilding from every call (~40 ms at 100,000 calls, far more than the 16 ms between batches).
class TimelineIndex
{
public:
    // Flat copy of every attempt's span for the overview: 24 bytes each instead of walking ~200-byte
    // Attempts spread over 100,000 call vectors.
    struct Span
    {
        qint64 start = 0;
        qint64 end = 0;
        std::uint8_t group = 0;
    };
    struct ConnIndex
    {
        std::vector<std::uint32_t> marks; // frame indices: SETTINGS (not ACK), RST_STREAM, GOAWAY
        std::vector<std::uint32_t> pings;
        std::vector<std::uint32_t> stalls;
    };

    explicit TimelineIndex(const TimelineStore *store) : m_store(store) {}

    // What decides the lanes; changed says whether the layout must be built again.
    void setLayoutOptions(LaneGrouping grouping, const LaneFilter &filter, bool connectionLanes,
                          const LaneMetrics &metrics, bool changed);
    // How many connections may get a lane each (TimelineLayout::build); more share one lane.
    void setMaxConnectionLanes(size_t n);
    // Drops every cache (a cleared store can reuse its memory).
    void invalidate();
    // Forgets the rates too, evicted calls' counts included (the store was cleared or replaced): invalidate()
    // keeps them, since an eviction the caches cannot follow invalidates too.
    void resetRates() { m_rates.clear(); }
    // Whether rates() follows the store (the strip is shown). Off, batches cost nothing for it; turned on, it
    // counts every call the store holds at once (calls evicted while it was off are not among them).
    void setRatesEnabled(bool on);
    // See TimelinePainter::noteChanges.
    void noteChanges(std::uint64_t previousGeneration, const StoreChanges &changes);
    // `evicted`: the calls about to go (TimelineModel::aboutToEvictCalls), in index order.
    void prepareEviction(const std::vector<size_t> &evicted);
    void applyEviction(const std::vector<size_t> &evicted);

    // Brings the caches up to the store's generation; cheap when they are.
    void refresh();
    // The lane layout, brought up to date first.
    const TimelineLayout &layout();
    // True until the next layout() after an option change made the layout stale.
    bool layoutDirty() const { return m_layoutDirty; }

    // Read after refresh().
    std::pair<qint64, qint64> fullRange() const { return m_fullRange; }
    bool hasBreaker() const { return m_hasBreaker; }
    // The breaker's transitions and the calls that failed fast, in the store's order: the band walks these,
    // not every lab event.
    using LabSpan = std::span<const LabEventRecord *const>;
    LabSpan breakerEvents() const { return m_breakerEvents.events(); }
    LabSpan fastFails() const { return m_fastFails.events(); }
    // Lab events drawn on the policy band: markers of calls without a lane.
    LabSpan bandMarkers() const { return m_bandMarkers.events(); }
    // The band markers are in time order and hold no suppressed retry (MarkersPass::clusters need not check).
    bool bandMarkersInOrder() const { return m_bandInOrder; }
    // Lab events drawn on a call's lane (markers and suppressed retries); empty for none.
    LabSpan labEventsOfCall(const std::string &key) const
    {
        const auto it = m_labByCall.find(key);
        return it == m_labByCall.end() ? LabSpan() : it->second.events();
    }
    const std::vector<Span> &spans() const { return m_spans; }
    // Calls, failures, retries and in flight over time, evicted calls included (the rates strip).
    const RateBins &rates() const { return m_rates; }
    // A connection's marker lists by connection id, or null.
    const ConnIndex *connection(std::uint32_t id) const
    {
        const auto it = m_connIndex.find(id);
        return it == m_connIndex.end() ? nullptr : &it->second;
    }
    // LegendUse and status-group bits of what a picture of the store may contain: the room the legend takes.
    // What one picture did draw, the legend's entries, the paint passes say (PaintContext::drawn).
    std::uint32_t legendUse() const { return m_legendUse; }
    // Lab events placed so far, every rebuild included: a burst under retention places each one once.
    std::uint64_t labEventsPlaced() const { return m_labPlaced; }
    // Entries retention's cuts looked at in the lists of lab events by call (the lanes' and the band markers
    // waiting for their call), every cut so far: a cut looks at what it drops, not at every call listed.
    std::uint64_t labCutWork() const { return m_labCutWork; }

private:
    // Lab events in the store's order, with each one's position among all ever recorded
    // (TimelineStore::labEventsCut), so a cut of the store's oldest drops a prefix here instead of a rebuild.
    // A dropped prefix only moves the start (`head`); the entries before it go once they are as many as the
    // ones kept, so a cut costs what it drops, not a move of everything kept.
    // Both grow without a copy of what they hold (PodArray): a burst lists millions.
    struct LabRefs
    {
        PodArray<const LabEventRecord *> refs;
        PodArray<std::uint64_t> at;
        size_t head = 0;
        LabSpan events() const { return LabSpan(refs.data() + head, refs.size() - head); }
        bool empty() const { return head == refs.size(); }
        size_t size() const { return refs.size() - head; }
        void push(const LabEventRecord *e, std::uint64_t pos);
        size_t insertInOrder(const LabEventRecord *e, std::uint64_t pos); // where it went
        void dropBefore(std::uint64_t pos);
        void eraseAt(const std::vector<std::uint64_t> &sorted);
        void clear();
    };
    struct PendingChanges
    {
        std::uint64_t previous = 0;
        std::uint64_t generation = 0;
        StoreChanges changes;
    };

    void refreshLayout();
    void indexLabEvents();
    void compactSpans();
    void absorbCall(size_t call);
    void absorbAttempt(size_t call, size_t attempt);

    const TimelineStore *m_store;
    LaneGrouping m_grouping = LaneGrouping::None;
    LaneFilter m_filter;
    bool m_connectionLanes = true;
    size_t m_maxConnectionLanes = kMaxSeparateConnections;
    LaneMetrics m_metrics;

    std::uint64_t m_cacheGeneration = ~std::uint64_t(0);
    bool m_hasBreaker = false;
    LabRefs m_bandMarkers; // lab events drawn on the policy band
    std::unordered_map<std::string, LabRefs> m_labByCall;
    std::pair<qint64, qint64> m_fullRange;
    std::vector<Span> m_spans;
    // Where each call's spans are: its first attempts contiguous, attempts added later in m_extraSpans.
    std::vector<std::uint32_t> m_callFirstSpan, m_callSpanCount;
    std::unordered_map<std::uint64_t, std::uint32_t> m_extraSpans;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> m_openSpans; // (call, attempt) still open
    qint64 m_dataLo = 0, m_dataHi = 0;
    std::vector<qint64> m_deadlines; // sorted
    std::uint32_t m_callUse = 0;
    std::uint64_t m_labSeen = 0; // lab events in the extent so far, by position (LabRefs)
    // Lab events placed so far (a position), the calls looked at, and what tells that the store did not move
    // the lab events since.
    std::uint64_t m_labIndexed = 0;
    size_t m_labCalls = 0;
    std::uint64_t m_labMoved = ~std::uint64_t(0), m_labCut = 0;
    std::uint64_t m_lastMarker = 0; // position + 1 of the latest marker placed; 0 for none
    bool m_anyFastFail = false, m_anyMarker = false, m_bandInOrder = true;
    LabRefs m_breakerEvents, m_fastFails;
    // Band markers (by position) that move to their call's lane when it comes, or once resolved.
    std::unordered_map<std::string, std::vector<std::uint64_t>> m_bandByCall;
    std::vector<std::uint64_t> m_bandUnresolved; // a traceparent, no call yet
    // Every entry of m_labByCall and m_bandByCall by position, earliest first: a cut takes the ones before it
    // and looks only at their calls' lists.
    using CallRef = std::pair<std::uint64_t, std::string>;
    std::priority_queue<CallRef, std::vector<CallRef>, std::greater<CallRef>> m_callRefsByPos;
    void dropLabEventsBefore(std::uint64_t cut);
    std::uint64_t m_labPlaced = 0;
    std::uint64_t m_labCutWork = 0;
    std::optional<PendingChanges> m_pending;
    // Evictions: spans of evicted calls stay in m_spans, emptied, until they are half of it.
    size_t m_deadSpans = 0;
    std::uint64_t m_evictFrom = ~std::uint64_t(0); // the generation prepareEviction() saw
    // The keys of calls about to be evicted that have markers on their lanes: the next indexLabEvents(), once
    // it dropped what the store cut, moves those to the band, where the markers of calls without a lane are.
    std::vector<std::string> m_evictedWithMarkers;
    void markersOfEvictedCallsToBand();
    // A band marker of a call not (or no longer) in the store, found again by its key when the call comes.
    void listBandMarker(const std::string &key, std::uint64_t pos);
    std::uint64_t m_spansCurrent = ~std::uint64_t(0); // generation whose spans applyEviction() made
    std::optional<StoreChanges> m_layoutChanges;
    std::unordered_map<std::uint32_t, ConnIndex> m_connIndex;
    size_t m_framesIndexed = 0, m_pingsIndexed = 0, m_stallsIndexed = 0;
    std::uint32_t m_connUse = 0; // LegendUse bits of the connection marks indexed
    qint64 m_firstFrameNs = 0;
    RateBins m_rates;
    bool m_ratesEnabled = false;
    TimelineLayout m_layout;
    std::uint64_t m_layoutGeneration = ~std::uint64_t(0);
    bool m_layoutDirty = true;
    std::uint32_t m_legendUse = 0;
};

} // namespace rpcscope
