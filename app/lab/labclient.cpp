#include "labclient.h"

#include "clock.h"
#include "lab.grpc.pb.h"

#include <grpcpp/grpcpp.h>

namespace rpcscope::lab {

LabClient::LabClient(const std::string &target, const std::string &serviceConfigJson)
{
    grpc::ChannelArguments args;
    if (!serviceConfigJson.empty())
        args.SetServiceConfigJSON(serviceConfigJson);
    // Service-config resolution from DNS would override ours; the lab's config is the experiment.
    args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
    args.SetMaxSendMessageSize(64 << 20);
    args.SetMaxReceiveMessageSize(64 << 20);
    m_channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

LabClient::~LabClient() = default;

CallResult LabClient::call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    ctx.AddMetadata("rpcscope-call-id", request.call_id());
    if (timeout)
        ctx.set_deadline(std::chrono::system_clock::now() + *timeout);
    CallReply reply;
    CallResult r;
    r.callId = request.call_id();
    r.startNs = steadyNowNs();
    const grpc::Status status = stub->Call(&ctx, request, &reply);
    r.endNs = steadyNowNs();
    r.code = status.error_code();
    r.message = status.error_message();
    return r;
}

} // namespace rpcscope::lab
