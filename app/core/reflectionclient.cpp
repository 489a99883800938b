#include "reflectionclient.h"

#include "reflection.pb.h"

#include <chrono>
#include <deque>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/security/credentials.h>
#include <set>

namespace rpcscope {

namespace {

namespace refl = rpcscope::reflection::v1alpha;

// The method's name on the wire; reflection.proto says why the messages live in a package of our own.
const char kMethod[] = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
// Enough for any real schema set; a server answering forever is cut off here.
constexpr int kMaxRequests = 500;

class Stream
{
public:
    Stream(const std::string &target, int timeoutMs)
        : m_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeoutMs))
    {
        grpc::ChannelArguments args;
        args.SetMaxReceiveMessageSize(64 << 20);
        m_stub = std::make_unique<
            grpc::TemplatedGenericStub<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>(
            grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
        m_context.set_deadline(m_deadline);
    }

    ~Stream()
    {
        if (m_call && !m_finished) finish();
        m_cq.Shutdown();
        void *tag;
        bool ok;
        while (m_cq.Next(&tag, &ok)) {
        }
    }

    bool start()
    {
        m_call = m_stub->PrepareCall(&m_context, kMethod, &m_cq);
        if (!m_call) return false;
        m_call->StartCall(this);
        return wait();
    }

    // One request, one response; false when the stream ended (finish() says why).
    bool ask(const refl::ServerReflectionRequest &request, refl::ServerReflectionResponse *response)
    {
        m_call->Write(request, this);
        if (!wait()) return false;
        m_call->Read(response, this);
        return wait();
    }

    grpc::Status finish()
    {
        if (!m_call)
            return grpc::Status(grpc::StatusCode::INTERNAL, "the reflection call could not be set up");
        m_finished = true;
        m_call->WritesDone(this);
        wait();
        grpc::Status status;
        m_call->Finish(&status, this);
        wait();
        return status;
    }

private:
    // One operation is outstanding at a time. The context's deadline fails it in time; the extra second only
    // guards against a queue that never answers.
    bool wait()
    {
        void *tag = nullptr;
        bool ok = false;
        const auto status = m_cq.AsyncNext(&tag, &ok, m_deadline + std::chrono::seconds(1));
        if (status == grpc::CompletionQueue::TIMEOUT) {
            m_context.TryCancel();
            m_cq.Next(&tag, &ok);
            return false;
        }
        return status == grpc::CompletionQueue::GOT_EVENT && ok;
    }

    std::chrono::system_clock::time_point m_deadline;
    grpc::ClientContext m_context;
    grpc::CompletionQueue m_cq;
    std::unique_ptr<grpc::TemplatedGenericStub<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
        m_stub;
    std::unique_ptr<
        grpc::ClientAsyncReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
        m_call;
    bool m_finished = false;
};

std::string failure(const std::string &target, const grpc::Status &status, int timeoutMs)
{
    switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
        return "cannot reach " + target + ": " + status.error_message();
    case grpc::StatusCode::UNIMPLEMENTED:
        return target + " does not offer gRPC server reflection (grpc.reflection.v1alpha.ServerReflection is "
                        "not implemented there)";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
        return target + " did not answer the reflection requests within " + std::to_string(timeoutMs) + " ms";
    default:
        return "server reflection at " + target + " failed: status " +
               std::to_string(int(status.error_code())) +
               (status.error_message().empty() ? std::string() : " (" + status.error_message() + ")");
    }
}

} // namespace

ReflectionResult fetchByReflection(const std::string &target, const std::vector<std::string> &symbols,
                                   int timeoutMs)
{
    ReflectionResult result;
    if (target.empty() || target.find(':') == std::string::npos) {
        result.error = "'" + target + "' is not HOST:PORT";
        return result;
    }
    Stream stream(target, timeoutMs);
    if (!stream.start()) {
        result.error = failure(target, stream.finish(), timeoutMs);
        return result;
    }
    int requests = 0;
    auto ask = [&](const refl::ServerReflectionRequest &request, refl::ServerReflectionResponse *response) {
        if (++requests > kMaxRequests) {
            result.error =
                target + " needed more than " + std::to_string(kMaxRequests) + " reflection requests";
            return false;
        }
        if (stream.ask(request, response)) return true;
        result.error = failure(target, stream.finish(), timeoutMs);
        return false;
    };

    refl::ServerReflectionRequest request;
    refl::ServerReflectionResponse response;
    request.set_list_services("*");
    if (!ask(request, &response)) return result;
    if (response.has_error_response()) {
        result.error = "server reflection at " + target +
                       " could not list services: " + response.error_response().error_message();
        return result;
    }
    for (const refl::ServiceResponse &s : response.list_services_response().service())
        result.services.push_back(s.name());

    std::set<std::string> have;          // file names received
    std::deque<std::string> wantedFiles; // imported by a received file, not received yet
    auto take = [&](const refl::ServerReflectionResponse &r, const std::string &what) {
        if (r.has_error_response()) {
            result.problems.push_back(what + ": " + r.error_response().error_message());
            return;
        }
        for (const std::string &bytes : r.file_descriptor_response().file_descriptor_proto()) {
            google::protobuf::FileDescriptorProto file;
            if (!file.ParseFromString(bytes)) {
                result.problems.push_back(what + ": a file descriptor that does not parse");
                continue;
            }
            if (!have.insert(file.name()).second) continue;
            result.files.push_back(bytes);
            result.fileNames.push_back(file.name());
            for (const std::string &dep : file.dependency())
                wantedFiles.push_back(dep);
        }
    };

    std::vector<std::string> wantedSymbols = result.services;
    wantedSymbols.insert(wantedSymbols.end(), symbols.begin(), symbols.end());
    std::set<std::string> asked;
    for (const std::string &symbol : wantedSymbols) {
        if (symbol.empty() || !asked.insert(symbol).second) continue;
        request.Clear();
        request.set_file_containing_symbol(symbol);
        if (!ask(request, &response)) return result;
        take(response, symbol);
    }
    // Servers send a file's imports along with it, but need not: ask for any still missing.
    while (!wantedFiles.empty()) {
        const std::string name = wantedFiles.front();
        wantedFiles.pop_front();
        if (have.count(name) || !asked.insert("file:" + name).second) continue;
        request.Clear();
        request.set_file_by_filename(name);
        if (!ask(request, &response)) return result;
        take(response, name);
    }
    const grpc::Status end = stream.finish();
    if (!end.ok() && result.files.empty()) result.error = failure(target, end, timeoutMs);
    return result;
}

} // namespace rpcscope
