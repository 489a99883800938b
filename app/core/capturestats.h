#pragma once

// A capture file's statistics for `rpcscope-cli stats` and `compare`: read batch by batch into a StatsFeed
// (statsfeed.h), so a capture of any length is counted in bounded memory and without its frames.

#include "statsfeed.h"

#include <QString>
#include <string>
#include <vector>

namespace rpcscope {

// Counts the calls of a capture file (anything loadCapture() reads) into `feed`. False with a one-line error
// naming the file when it cannot be read, is damaged beyond its intact part, or holds no calls; `notes` gets
// what is worth a warning (a truncated file, lost pcap segments).
bool loadCaptureStats(const QString &path, StatsFeed *feed, std::string *error,
                      std::vector<std::string> *notes = nullptr);

} // namespace rpcscope
