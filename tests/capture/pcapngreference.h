#pragma once

// The pcapng export as a writer holding the whole capture made it: what the streamed writer is compared with.

#include "capturedata.h"

#include <string>

namespace rpcscope::reference {

std::string wholeCapturePcapng(const CaptureData &data);

} // namespace rpcscope::reference
