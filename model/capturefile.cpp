#include "capturefile.h"

namespace rpcscope {

CaptureInfo captureInfoOf(const TimelineStore &store)
{
    CaptureInfo info;
    info.hasOrigin = store.hasOrigin();
    info.originNs = store.originNs();
    info.originWallNs = store.originWallNs();
    info.recordFrames = store.recordFrames();
    info.writer = "rpcscope";
    return info;
}

CaptureData captureFromLog(const TimelineStore &store, const EventLog &log)
{
    CaptureData data;
    data.info = captureInfoOf(store);
    data.batches.reserve(log.batchCount());
    for (size_t i = 0; i < log.batchCount(); ++i)
        data.batches.push_back(log.batch(i));
    return data;
}

void replayCapture(const CaptureData &data, TimelineStore &store)
{
    store.clear();
    store.setRecordFrames(data.info.recordFrames);
    if (data.info.hasOrigin) store.setOrigin(data.info.originNs, data.info.originWallNs);
    for (const EventBatch &batch : data.batches)
        store.apply(batch);
}

} // namespace rpcscope
