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
// Pulls the gRPC fields out of a decoded header list.
GrpcFields extractGrpcFields(const std::vector<Header> &headers);

} // namespace rpcscope
