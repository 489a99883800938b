#include "capturestats.h"

#include "captureio.h"

namespace rpcscope {

bool loadCaptureStats(const QString &path, StatsFeed *feed, std::string *error,
                      std::vector<std::string> *notes)
{
    CaptureInfo info;
    bool started = false;
    // The header is read before the first batch, so the feed has its origin before any call.
    const CaptureReadResult read = loadCaptureBatches(path, &info, [&](EventBatch &&batch) {
        if (!started) feed->setInfo(info);
        started = true;
        feed->apply(batch);
    });
    if (!read.usable()) {
        *error = read.message;
        return false;
    }
    if (notes) {
        if (read.status == CaptureReadResult::Truncated) notes->push_back(read.message);
        notes->insert(notes->end(), read.notes.begin(), read.notes.end());
    }
    if (feed->stats().total().calls == 0) {
        *error = path.toStdString() + " holds no calls: there are no statistics to show";
        return false;
    }
    return true;
}

} // namespace rpcscope
