#pragma once

#include "relaychunk.h"
#include "streamfaults.h"

#include <cstdint>
#include <functional>
#include <string>

namespace rpcscope {

// What a relay does with what a connection's StreamFaults wrote, the plain relay and the TLS relay alike:
// each injection becomes a FaultInjection note for the decoder (`note`), what the client is to get is
// appended to `toClient` and, when `decode` is given, copied to the decoder as the server's bytes (the
// decoder sees what the client saw, injected answers included), what the server is to get is appended to
// `toServer`. Leaves the StreamFaults' outputs empty. False when the connection cannot be relayed any more
// (s.failure says why).
bool takeStreamOutput(StreamFaults &s, std::uint32_t conn, std::int64_t t, std::string &toServer,
                      std::string &toClient, const std::function<void(RelayChunk &&)> &note,
                      const std::function<void(RelayChunk &&)> &decode);

// A chunk of bytes for the decoder, copied from `data`.
RelayChunk copiedBytes(std::uint32_t conn, Direction dir, std::int64_t t, const void *data, size_t size);

} // namespace rpcscope
