#pragma once

#include "ingestserver.h"

#include <string>
#include <string_view>

namespace rpcscope {

// Parses one serialized ingest.Event (ingest.proto) into a ReportedEvent. Bytes that are not a valid Event,
// or a string field that is not UTF-8, are refused with a one-line reason naming the field and the byte, and
// nothing reaches stderr: protobuf's own parser would only say false, and log the UTF-8 case as a library
// line.
bool parseEventMessage(std::string_view bytes, ReportedEvent *out, std::string *error);

} // namespace rpcscope
