#pragma once

#include <string>
#include <vector>

namespace rpcscope {

// rpcscope-cli merge IN... --out OUT [--to FORMAT] [--offset FILE=OFFSET ...] [--label FILE=NAME ...]
//                   [--png FILE] [--svg FILE] [--frames] [--no-redact] [--redact NAME ...] [--port PORT]
// Returns the exit code: 0, 1 when OUT cannot be written, 2 for bad arguments or an input that cannot be
// read.
int cmdMerge(const std::vector<std::string> &args);

} // namespace rpcscope
