#pragma once

// A capture's statistics (callstats.h) for `rpcscope-cli stats` and `compare` and the GUI's Compare window:
// the calls replayed into a store of their own, without frames (statistics never need them, and a large
// capture replays faster without).

#include "callstats.h"
#include "capturedata.h"
#include "timelinestore.h"

#include <QString>
#include <string>
#include <vector>

namespace rpcscope {

// Replays `data` into `store` (cleared first) without its frames, then `stats` from it when given.
void replayForStats(const CaptureData &data, TimelineStore &store, CallStats *stats = nullptr);

// Reads a capture file (anything loadCapture() reads) into `store` and `stats`. False with a one-line error
// naming the file when it cannot be read, is damaged beyond its intact part, or holds no calls; `notes` gets
// what is worth a warning (a truncated file, lost pcap segments).
bool loadCaptureStats(const QString &path, TimelineStore *store, CallStats *stats, std::string *error,
                      std::vector<std::string> *notes = nullptr);

} // namespace rpcscope
