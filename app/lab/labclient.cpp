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

namespace {
void prepare(grpc::ClientContext &ctx, const std::string &callId,
             std::optional<std::chrono::milliseconds> timeout)
{
    ctx.AddMetadata("rpcscope-call-id", callId);
    if (timeout)
        ctx.set_deadline(std::chrono::system_clock::now() + *timeout);
}

void finishResult(StreamResult &r, const grpc::Status &status)
{
    r.endNs = steadyNowNs();
    r.code = status.error_code();
    r.message = status.error_message();
}
} // namespace

CallResult LabClient::call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    prepare(ctx, request.call_id(), timeout);
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

StreamResult LabClient::serverStream(const StreamRequest &request,
                                     std::optional<std::chrono::milliseconds> timeout)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    prepare(ctx, request.call_id(), timeout);
    StreamResult r;
    r.callId = request.call_id();
    r.startNs = steadyNowNs();
    auto reader = stub->ServerStream(&ctx, request);
    CallReply reply;
    while (reader->Read(&reply)) {
        if (r.messages++ == 0)
            r.firstMessageNs = steadyNowNs();
        r.bytes += reply.payload().size();
    }
    finishResult(r, reader->Finish());
    return r;
}

StreamResult LabClient::clientStream(const CallRequest &request, int count,
                                     std::optional<std::chrono::milliseconds> timeout)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    prepare(ctx, request.call_id(), timeout);
    StreamResult r;
    r.callId = request.call_id();
    r.startNs = steadyNowNs();
    CallReply reply;
    auto writer = stub->ClientStream(&ctx, &reply);
    while (r.sent < count && writer->Write(request))
        ++r.sent;
    writer->WritesDone();
    const grpc::Status status = writer->Finish();
    if (status.ok()) {
        r.firstMessageNs = steadyNowNs();
        r.messages = reply.messages();
        r.bytes = std::uint64_t(reply.bytes());
    }
    finishResult(r, status);
    return r;
}

StreamResult LabClient::bidi(const CallRequest &request, int count,
                             std::optional<std::chrono::milliseconds> timeout)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    prepare(ctx, request.call_id(), timeout);
    StreamResult r;
    r.callId = request.call_id();
    r.startNs = steadyNowNs();
    auto stream = stub->Bidi(&ctx);
    CallReply reply;
    while (r.sent < count) {
        if (!stream->Write(request))
            break;
        ++r.sent;
        if (!stream->Read(&reply))
            break;
        if (r.messages++ == 0)
            r.firstMessageNs = steadyNowNs();
        r.bytes += reply.payload().size();
    }
    stream->WritesDone();
    // Drain whatever the server still sends so Finish() sees the status, not a pending message.
    while (stream->Read(&reply)) {
        ++r.messages;
        r.bytes += reply.payload().size();
    }
    finishResult(r, stream->Finish());
    return r;
}

} // namespace rpcscope::lab
