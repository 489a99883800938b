#include "labclient.h"

#include "clock.h"
#include "lab.grpc.pb.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <grpcpp/grpcpp.h>

namespace rpcscope::lab {

namespace {
// "0.05s" -> 50
double durationMs(const QJsonValue &v)
{
    QString s = v.toString();
    if (!s.endsWith('s')) return -1;
    s.chop(1);
    bool ok = false;
    const double seconds = s.toDouble(&ok);
    return ok ? seconds * 1000 : -1;
}

// The client's own retryPolicy, told to the capture as rpcscope-retry-policy metadata so the timeline can
// shade each backoff's expected range. Empty when the config has no retryPolicy.
std::string retryHint(const std::string &serviceConfigJson)
{
    const QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(serviceConfigJson)).object();
    for (const QJsonValue &mc : config.value("methodConfig").toArray()) {
        const QJsonObject policy = mc.toObject().value("retryPolicy").toObject();
        if (policy.isEmpty()) continue;
        const double initial = durationMs(policy.value("initialBackoff"));
        const double max = durationMs(policy.value("maxBackoff"));
        const double multiplier = policy.value("backoffMultiplier").toDouble(-1);
        if (initial < 0 || max < 0 || multiplier <= 0) return {};
        return QStringLiteral("initial_ms=%1;multiplier=%2;max_ms=%3")
            .arg(initial)
            .arg(multiplier)
            .arg(max)
            .toStdString();
    }
    return {};
}
} // namespace

LabClient::LabClient(const std::string &target, const std::string &serviceConfigJson)
    : m_retryHint(retryHint(serviceConfigJson))
{
    grpc::ChannelArguments args;
    if (!serviceConfigJson.empty()) args.SetServiceConfigJSON(serviceConfigJson);
    // Service-config resolution from DNS would override ours; the lab's config is the experiment.
    args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
    args.SetMaxSendMessageSize(64 << 20);
    args.SetMaxReceiveMessageSize(64 << 20);
    m_channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

LabClient::~LabClient() = default;

namespace {
void prepare(grpc::ClientContext &ctx, const std::string &callId,
             std::optional<std::chrono::milliseconds> timeout, const std::string &retryHint)
{
    ctx.AddMetadata("rpcscope-call-id", callId);
    if (!retryHint.empty()) ctx.AddMetadata("rpcscope-retry-policy", retryHint);
    if (timeout) ctx.set_deadline(std::chrono::system_clock::now() + *timeout);
}

StreamResult started(const std::string &callId)
{
    StreamResult r;
    r.callId = callId;
    r.startNs = steadyNowNs();
    return r;
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
    return call(request, timeout, {});
}

CallResult LabClient::call(const CallRequest &request, std::optional<std::chrono::milliseconds> timeout,
                           const Metadata &metadata, bool search)
{
    auto stub = Lab::NewStub(m_channel);
    grpc::ClientContext ctx;
    prepare(ctx, request.call_id(), timeout, m_retryHint);
    for (const auto &[key, value] : metadata)
        ctx.AddMetadata(key, value);
    CallReply reply;
    CallResult r;
    r.callId = request.call_id();
    r.startNs = steadyNowNs();
    const grpc::Status status =
        search ? stub->Search(&ctx, request, &reply) : stub->Call(&ctx, request, &reply);
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
    prepare(ctx, request.call_id(), timeout, m_retryHint);
    StreamResult r = started(request.call_id());
    auto reader = stub->ServerStream(&ctx, request);
    CallReply reply;
    while (reader->Read(&reply)) {
        if (r.messages++ == 0) r.firstMessageNs = steadyNowNs();
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
    prepare(ctx, request.call_id(), timeout, m_retryHint);
    StreamResult r = started(request.call_id());
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
    prepare(ctx, request.call_id(), timeout, m_retryHint);
    StreamResult r = started(request.call_id());
    auto stream = stub->Bidi(&ctx);
    CallReply reply;
    while (r.sent < count) {
        if (!stream->Write(request)) break;
        ++r.sent;
        if (!stream->Read(&reply)) break;
        if (r.messages++ == 0) r.firstMessageNs = steadyNowNs();
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
