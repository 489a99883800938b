#pragma once

#include "lab.pb.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace grpc {
class Channel;
}

namespace rpcscope::lab {

struct CallResult
{
    std::string callId;
    int code = 0; // grpc::StatusCode
    std::string message;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
};

// The outcome of one streaming call. Times are steady ns (model/events/clock.h).
struct StreamResult
{
    std::string callId;
    int code = 0; // grpc::StatusCode
    std::string message;
    int sent = 0;            // request messages written (ClientStream, Bidi)
    int messages = 0;        // replies read (ServerStream, Bidi); ClientStream: requests the server counted
    std::uint64_t bytes = 0; // payload bytes of those messages
    std::int64_t startNs = 0;
    std::int64_t firstMessageNs = 0; // first reply read; 0 when none arrived
    std::int64_t endNs = 0;          // status received
};

// A grpc++ channel with a service config (retryPolicy and friends) to a target, usually the capture proxy.
// Each client owns its own channel and so its own connection.
class LabClient
{
public:
    LabClient(const std::string &target, const std::string &serviceConfigJson);
    ~LabClient();

    // Blocking unary call; the call id goes into both the request and the rpcscope-call-id metadata.
    CallResult call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout = {});
    // The same with extra metadata entries (an idempotency-key, say); to Lab/Search when `search` is set.
    using Metadata = std::vector<std::pair<std::string, std::string>>;
    CallResult call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout,
                    const Metadata &metadata, bool search = false);

    // Blocking streaming calls; each also sends the call id as rpcscope-call-id metadata.
    // ServerStream: reads every reply until the status.
    StreamResult serverStream(const StreamRequest &request,
                              std::optional<std::chrono::milliseconds> timeout = {});
    // ClientStream: writes `count` copies of request, half-closes, then reads the one reply.
    StreamResult clientStream(const CallRequest &request, int count,
                              std::optional<std::chrono::milliseconds> timeout = {});
    // Bidi: `count` rounds of one request written, one reply read (ping-pong), then half-close.
    StreamResult bidi(const CallRequest &request, int count,
                      std::optional<std::chrono::milliseconds> timeout = {});

private:
    std::shared_ptr<grpc::Channel> m_channel;
    std::string m_retryHint; // rpcscope-retry-policy metadata, from the service config's retryPolicy
};

} // namespace rpcscope::lab
