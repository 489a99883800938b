#pragma once

// gzip and deflate (grpc-encoding) messages, inflated for decoding; the result is capped, since a few
// kilobytes of captured gzip may claim gigabytes.

#include <string>
#include <string_view>

namespace rpcscope {

// Inflates zlib or gzip data. false when it is not such data at all; *complete says whether its end was seen.
bool inflateBytes(std::string_view in, std::string *out, bool *complete, std::string *why);

} // namespace rpcscope
