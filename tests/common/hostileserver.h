#pragma once

// The real grpc++ server behind the capture in the hostile-traffic suite and its benchmark: the lab's, set up
// so that each flood reaches the proxy in its worst form rather than being cut short by the server.

#include "labserver.h"

namespace hostile {

inline rpcscope::lab::LabServerOptions serverOptions()
{
    rpcscope::lab::LabServerOptions o;
    // A PING flood stays on one connection instead of ending in GOAWAY too_many_pings after three.
    o.permitIdlePings = true;
    // Header lists of ~64 KiB are taken and their streams stay in flight, instead of being reset with the
    // connection dropped past gRPC's default 8 KiB.
    o.maxMetadataBytes = 256 * 1024;
    o.reflection = false;
    return o;
}

} // namespace hostile
