#pragma once

// grpc++ TLS clients of the tests' Lab service (tlstestserver.h), through an intercepting hop or directly.

#include "lab.grpc.pb.h"

#include <chrono>
#include <cstdint>
#include <grpcpp/grpcpp.h>
#include <memory>
#include <string>

namespace tlstest {

// Retries UNAVAILABLE, three attempts with short backoffs: FlakyLab's failed first attempt is retried at
// once.
inline constexpr char kLabRetry[] = R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],
    "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.05s","backoffMultiplier":2,
    "retryableStatusCodes":["UNAVAILABLE"]}}]})";

// A channel to `address` that trusts `roots` only and checks the name localhost; `serviceConfig` null: none.
inline std::shared_ptr<grpc::Channel> tlsChannelTo(const std::string &address, const std::string &roots,
                                                   const char *serviceConfig = kLabRetry)
{
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = roots;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    if (serviceConfig) args.SetServiceConfigJSON(serviceConfig);
    return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

inline std::shared_ptr<grpc::Channel> tlsChannel(std::uint16_t port, const std::string &roots, bool retry,
                                                 const char *serviceConfig = kLabRetry)
{
    return tlsChannelTo("127.0.0.1:" + std::to_string(port), roots, retry ? serviceConfig : nullptr);
}

// A TLS client as its own code has it: the server's name and the default roots. Only the environment (the
// process's roots file, grpc_proxy) sends it through rpcscope.
inline std::shared_ptr<grpc::Channel> unchangedClient(const std::string &target)
{
    grpc::ChannelArguments args;
    args.SetServiceConfigJSON(kLabRetry);
    return grpc::CreateCustomChannel(target, grpc::SslCredentials({}), args);
}

// One Lab/Call with a deadline (10 s unless given). A non-empty `id` is sent as rpcscope-call-id (the
// timeline's key for the call, as the lab client sends it); `payload` bytes go in the request; the server
// takes `delayMs` to answer.
inline grpc::Status labCall(const std::shared_ptr<grpc::Channel> &channel, const std::string &id = {},
                            size_t payload = 0, int delayMs = 0,
                            std::chrono::milliseconds deadline = std::chrono::seconds(10))
{
    auto stub = rpcscope::lab::Lab::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    if (!id.empty()) ctx.AddMetadata("rpcscope-call-id", id);
    rpcscope::lab::CallRequest req;
    req.set_call_id(id);
    if (payload) req.set_payload(std::string(payload, 'p'));
    req.set_delay_ms(delayMs);
    rpcscope::lab::CallReply reply;
    return stub->Call(&ctx, req, &reply);
}

} // namespace tlstest
