#include "statsfeed.h"

namespace rpcscope {

void StatsFeed::setInfo(const CaptureInfo &info)
{
    m_store.setRecordFrames(false); // statistics never read frames
    if (info.hasOrigin) m_store.setOrigin(info.originNs, info.originWallNs);
}

void StatsFeed::apply(const EventBatch &batch)
{
    StoreChanges changes;
    m_store.apply(batch, &changes);
    m_stats.update(m_store, changes);
    m_sinceCheck += m_store.calls().size() - changes.firstNewCall;
    if (m_store.calls().size() <= kKeepCalls + kKeepCalls / 4 || m_sinceCheck < kKeepCalls / 8) return;
    // In chunks of an eighth: eviction is O(calls kept).
    m_sinceCheck = 0;
    RetentionPolicy keep;
    keep.maxCalls = kKeepCalls;
    keep.evictTo = 1.0;
    const std::vector<size_t> evicted = m_store.planEviction(keep);
    if (evicted.empty()) return;
    m_stats.forget(m_store, evicted);
    m_store.evict(evicted);
    m_stats.afterEviction(m_store);
}

} // namespace rpcscope
