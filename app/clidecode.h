#pragma once

#include <string>
#include <vector>

namespace rpcscope {

// rpcscope-cli decode IN [--proto FILE ...] [--proto-path DIR ...] [--reflect HOST:PORT ...] [--out FILE]
//                        [--port PORT]
// rpcscope-cli decode --method /PKG.SERVICE/METHOD [--response] --hex HEX [schemas as above]
// Writes the decoded messages as one JSON document. Returns the exit code: 0; 1 when a --reflect server
// cannot be asked or OUT cannot be written; 2 for bad arguments, .proto files that do not load or an input
// that cannot be read.
int cmdDecode(const std::vector<std::string> &args);

} // namespace rpcscope
