#pragma once

#include "lab.pb.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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

// A grpc++ channel with a service config (retryPolicy and friends) to a target, usually the capture proxy.
// Each client owns its own channel and so its own connection.
class LabClient
{
public:
    LabClient(const std::string &target, const std::string &serviceConfigJson);
    ~LabClient();

    // Blocking unary call; the call id goes into both the request and the rpcscope-call-id metadata.
    CallResult call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout = {});

private:
    std::shared_ptr<grpc::Channel> m_channel;
};

} // namespace rpcscope::lab
