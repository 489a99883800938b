#include "capturestats.h"

#include "captureio.h"

namespace rpcscope {

void replayForStats(const CaptureData &data, TimelineStore &store, CallStats *stats)
{
    store.clear();
    store.setRecordFrames(false);
    if (data.info.hasOrigin) store.setOrigin(data.info.originNs, data.info.originWallNs);
    for (const EventBatch &batch : data.batches)
        store.apply(batch);
    if (stats) stats->rebuild(store);
}

bool loadCaptureStats(const QString &path, TimelineStore *store, CallStats *stats, std::string *error,
                      std::vector<std::string> *notes)
{
    CaptureData data;
    const CaptureReadResult read = loadCapture(path, &data);
    if (!read.usable()) {
        *error = read.message;
        return false;
    }
    if (notes) {
        if (read.status == CaptureReadResult::Truncated) notes->push_back(read.message);
        notes->insert(notes->end(), read.notes.begin(), read.notes.end());
    }
    replayForStats(data, *store, stats);
    if (stats && stats->total().calls == 0) {
        *error = path.toStdString() + " holds no calls: there are no statistics to show";
        return false;
    }
    return true;
}

} // namespace rpcscope
