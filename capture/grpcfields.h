#pragma once

#include "events.h"

#include <optional>
#include <string>
#include <string_view>

namespace rpcscope {

// grpc-timeout: 1-8 digits and a unit (H M S m u n). nullopt when malformed.
std::optional<std::int64_t> parseGrpcTimeout(std::string_view value);
// grpc-message is percent-encoded (gRPC over HTTP/2 spec); undecodable escapes pass through unchanged.
std::string percentDecode(std::string_view value);
// W3C Trace Context `traceparent` ("00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>"). False, leaving
// the outputs untouched, when malformed: wrong lengths, upper-case or non-hex digits, an all-zero id, version
// ff.
bool parseTraceparent(std::string_view value, std::string *traceId, std::string *parentId);
// Pulls the gRPC fields out of a decoded header list.
GrpcFields extractGrpcFields(const std::vector<Header> &headers);
// Whether a header is one the timeline reads (a pseudo-header, content-type, user-agent or one of the fields
// above): the decoder keeps these past its header-list limit, so a long custom header cannot hide a status.
bool isTimelineHeader(std::string_view name);

} // namespace rpcscope
