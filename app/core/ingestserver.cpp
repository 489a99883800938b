#include "ingestserver.h"

#include "clock.h"
#include "ingest.grpc.pb.h"
#include "ingestmessage.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/method_handler.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpcscope {

namespace {

constexpr std::int64_t kDayNs = 86'400'000'000'000;
constexpr size_t kMaxDetail = 1024, kMaxLabel = 128, kMaxCallId = 256, kMaxSource = 128;

bool isHex(const std::string &s, size_t from, size_t n)
{
    for (size_t i = from; i < from + n; ++i)
        if (!std::isxdigit(static_cast<unsigned char>(s[i])) ||
            std::isupper(static_cast<unsigned char>(s[i])))
            return false;
    return true;
}

// version-traceid-parentid-flags, lower-case hex (W3C Trace Context).
bool validTraceparent(const std::string &t)
{
    return t.size() == 55 && t[2] == '-' && t[35] == '-' && t[52] == '-' && isHex(t, 0, 2) &&
           isHex(t, 3, 32) && isHex(t, 36, 16) && isHex(t, 53, 2) &&
           t.compare(3, 32, std::string(32, '0')) != 0;
}

bool validState(const std::string &s)
{
    return s == "closed" || s == "open" || s == "half-open";
}

// 2^63: the first double past int64's range (INT64_MAX itself is not a double).
constexpr double kInt64Limit = 9223372036854775808.0;

// A JSON value as the line gave it, for a message: a string in quotes, a number in full.
std::string quoted(const QJsonValue &v)
{
    if (v.isString()) return "\"" + v.toString().left(40).toStdString() + "\"";
    return QString::number(v.toDouble(), 'g', 17).toStdString();
}

std::string tooLong(const char *field, size_t limit)
{
    return std::string(field) + " is longer than " + std::to_string(limit) + " bytes";
}

} // namespace

bool toWireEvent(const ReportedEvent &in, std::int64_t steadyNow, std::int64_t wallNow, WireEvent *out,
                 std::string *error)
{
    if (in.detail.size() > kMaxDetail) return *error = tooLong("detail", kMaxDetail), false;
    if (in.label.size() > kMaxLabel) return *error = tooLong("label", kMaxLabel), false;
    if (in.callId.size() > kMaxCallId) return *error = tooLong("call_id", kMaxCallId), false;
    if (in.source.size() > kMaxSource) return *error = tooLong("source", kMaxSource), false;
    if (!in.traceparent.empty() && !validTraceparent(in.traceparent))
        return *error =
                   "traceparent is not W3C version-traceid-parentid-flags (00-<32 hex>-<16 hex>-<2 hex>)",
               false;
    if (in.timeUnixNanos < 0 || (in.timeUnixNanos != 0 && std::llabs(in.timeUnixNanos - wallNow) > kDayNs))
        return *error = "time_unix_nanos " + std::to_string(in.timeUnixNanos) +
                        " is more than a day away from now (ns since the Unix epoch, or 0 for now)",
               false;

    WireEvent e;
    e.kind = EventKind::LabEvent;
    e.tNs = in.timeUnixNanos == 0 ? steadyNow : steadyNow - (wallNow - in.timeUnixNanos);
    LabDecision decision;
    if (in.kind == "breaker") {
        const auto arrow = in.detail.find("->");
        auto trim = [](std::string s) {
            while (!s.empty() && s.front() == ' ')
                s.erase(s.begin());
            while (!s.empty() && s.back() == ' ')
                s.pop_back();
            return s;
        };
        const std::string from = arrow == std::string::npos ? "" : trim(in.detail.substr(0, arrow));
        const std::string to = arrow == std::string::npos ? "" : trim(in.detail.substr(arrow + 2));
        if (!validState(from) || !validState(to))
            return *error =
                       "a breaker event's detail must be \"FROM -> TO\" with states closed, open, half-open; "
                       "got \"" +
                       in.detail + "\"",
                   false;
        decision.kind = "breaker";
        decision.detail = from + " -> " + to;
    } else if (in.kind == "rejection") {
        decision.kind = "bulkhead-rejected";
        decision.detail = in.detail;
    } else if (in.kind == "retry-suppressed") {
        decision.kind = "retry-suppressed";
        decision.detail = in.detail;
    } else if (in.kind == "custom") {
        if (in.label.empty()) return *error = "a custom event needs a label", false;
        decision.kind = "custom";
        decision.detail = in.label + (in.detail.empty() ? "" : ": " + in.detail);
    } else {
        return *error =
                   "unknown kind \"" + in.kind + "\" (known: breaker, rejection, retry-suppressed, custom)",
               false;
    }
    if (!in.source.empty()) decision.detail += " [" + in.source + "]";
    e.about = std::move(decision);
    e.grpc.callId = in.callId;
    if (!in.traceparent.empty()) e.headers.push_back({"traceparent", in.traceparent});
    *out = std::move(e);
    return true;
}

bool parseEventLine(const std::string &line, ReportedEvent *out, std::string *error)
{
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(line), &pe);
    if (pe.error != QJsonParseError::NoError)
        return *error =
                   "not JSON: " + pe.errorString().toStdString() + " at offset " + std::to_string(pe.offset),
               false;
    if (!doc.isObject()) return *error = "a line must be one JSON object", false;
    const QJsonObject o = doc.object();
    static const char *const known[] = {"time_unix_nanos", "time_unix_ms", "kind",        "detail",
                                        "label",           "call_id",      "traceparent", "source"};
    for (auto it = o.begin(); it != o.end(); ++it) {
        bool ok = false;
        for (const char *k : known)
            ok = ok || it.key() == QLatin1String(k);
        if (!ok) return *error = "unknown field \"" + it.key().toStdString() + "\"", false;
        if (it.key().startsWith(QLatin1String("time_unix")) ? !it->isDouble() && !it->isString()
                                                            : !it->isString())
            return *error = "field \"" + it.key().toStdString() + "\" has the wrong type", false;
    }
    ReportedEvent e;
    // Nanoseconds since the epoch need more than a double's 53 bits, so a string of digits is exact. Either
    // way the value is checked against int64's range before it is converted: beyond it the conversion is
    // undefined behaviour, not a wrong number.
    if (o.contains("time_unix_nanos")) {
        const QJsonValue v = o.value("time_unix_nanos");
        bool ok = true;
        if (v.isString()) {
            e.timeUnixNanos = v.toString().toLongLong(&ok);
        } else {
            const double ns = v.toDouble();
            ok = ns >= 0 && ns < kInt64Limit; // false for NaN
            if (ok) e.timeUnixNanos = std::int64_t(ns);
        }
        if (!ok || e.timeUnixNanos < 0)
            return *error = "time_unix_nanos " + quoted(v) +
                            " is not an integer from 0 to 9223372036854775807 (ns since the Unix epoch, or "
                            "0 for now)",
                   false;
    } else if (o.contains("time_unix_ms")) {
        const QJsonValue v = o.value("time_unix_ms");
        bool ok = true;
        const double ms = v.isString() ? v.toString().toDouble(&ok) : v.toDouble();
        if (!ok || !(ms >= 0 && ms * 1e6 < kInt64Limit))
            return *error = "time_unix_ms " + quoted(v) +
                            " is not a number from 0 to 9223372036854 (ms since the Unix epoch, or 0 for "
                            "now)",
                   false;
        e.timeUnixNanos = std::int64_t(ms * 1e6);
    }
    e.kind = o.value("kind").toString().toStdString();
    e.detail = o.value("detail").toString().toStdString();
    e.label = o.value("label").toString().toStdString();
    e.callId = o.value("call_id").toString().toStdString();
    e.traceparent = o.value("traceparent").toString().toStdString();
    e.source = o.value("source").toString().toStdString();
    if (e.kind.empty()) return *error = "missing \"kind\"", false;
    *out = std::move(e);
    return true;
}

struct IngestServer::Impl
{
    // A fresh service object per start(): a grpc++ service can be registered with one server only.
    // ReportEvents reads each event as raw bytes: the generated handler parses them itself and, when they do
    // not parse, ends the read loop as if the client had finished, so a malformed event would be answered OK.
    // Here parseEventMessage names what is wrong, for an INVALID_ARGUMENT.
    struct Service final : grpc::Service
    {
        Impl *impl;
        explicit Service(Impl *i) : impl(i)
        {
            static const std::string method = std::string("/") + ingest::Ingest::service_full_name() +
                                              "/ReportEvents"; // RpcMethod keeps the pointer
            AddMethod(new grpc::internal::RpcServiceMethod(
                method.c_str(), grpc::internal::RpcMethod::CLIENT_STREAMING,
                new grpc::internal::ClientStreamingHandler<Service, grpc::ByteBuffer, ingest::ReportReply>(
                    [](Service *s, grpc::ServerContext *, grpc::ServerReader<grpc::ByteBuffer> *reader,
                       ingest::ReportReply *reply) { return s->impl->reportEvents(reader, reply); },
                    this)));
        }
    };

    Sink sink;
    RoomProbe room;
    std::unique_ptr<Service> service;
    std::unique_ptr<grpc::Server> server;
    int grpcPort = 0;
    int listenFd = -1;
    std::uint16_t jsonPort = 0;
    int wake[2] = {-1, -1};
    std::thread jsonThread;
    std::atomic<std::uint64_t> accepted{0}, rejected{0}, pushedBack{0};

    // Hands the event to the sink, or adds it to `batch` for the caller to hand over with others.
    bool take(const ReportedEvent &r, std::string *error, EventBatch *batch = nullptr)
    {
        WireEvent e;
        if (!toWireEvent(r, steadyNowNs(), wallNowNs(), &e, error)) {
            ++rejected;
            return false;
        }
        ++accepted;
        if (batch)
            batch->push_back(std::move(e));
        else if (sink)
            sink({std::move(e)});
        return true;
    }

    static bool parseEvent(const grpc::ByteBuffer &buffer, ReportedEvent *out, std::string *error)
    {
        std::vector<grpc::Slice> slices;
        if (!buffer.Dump(&slices).ok()) return *error = "unreadable message", false;
        std::string bytes;
        for (const grpc::Slice &s : slices)
            bytes.append(reinterpret_cast<const char *>(s.begin()), s.size());
        return parseEventMessage(bytes, out, error);
    }

    grpc::Status reportEvents(grpc::ServerReader<grpc::ByteBuffer> *reader, ingest::ReportReply *reply)
    {
        grpc::ByteBuffer in;
        std::int64_t index = 0;
        while (reader->Read(&in)) {
            // A stream cannot be paused from here: when the model stays behind, the client is told to retry.
            if (room && !room(std::chrono::milliseconds(500))) {
                ++pushedBack;
                return {grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the timeline is behind on applying events; event " + std::to_string(index) +
                            " and the rest of this stream were not taken (accepted says how many were): "
                            "send them again later"};
            }
            ReportedEvent r;
            std::string error;
            if (!parseEvent(in, &r, &error)) {
                ++rejected;
                return {grpc::StatusCode::INVALID_ARGUMENT, "event " + std::to_string(index) + ": " + error};
            }
            if (!take(r, &error))
                return {grpc::StatusCode::INVALID_ARGUMENT, "event " + std::to_string(index) + ": " + error};
            reply->set_accepted(++index);
        }
        return grpc::Status::OK;
    }

    void serveJson()
    {
        struct Client
        {
            int fd;
            std::string in, out;
            bool discarding = false; // inside a line that was too long
        };
        std::vector<Client> clients;
        for (;;) {
            if (room && !room(std::chrono::milliseconds(5))) {
                // The model is behind: nothing is read until it has room, so TCP holds the senders back.
                pollfd w{wake[0], POLLIN, 0};
                if (::poll(&w, 1, 0) > 0) break;
                continue;
            }
            std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listenFd, POLLIN, 0}};
            for (const Client &c : clients)
                fds.push_back({c.fd, short(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
            if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
            if (fds[0].revents) break;
            // Only the clients that were polled: a client accepted below has no entry in fds yet.
            for (size_t i = 0; i + 2 < fds.size() && i < clients.size(); ++i) {
                Client &c = clients[i];
                const short re = fds[i + 2].revents;
                bool dead = false;
                if (re & (POLLIN | POLLHUP | POLLERR)) {
                    char buf[4096];
                    const ssize_t n = ::read(c.fd, buf, sizeof buf);
                    // The lines of one read go to the model as one batch: one push (one lock, one
                    // allocation) instead of one per line, and the model's thread takes them as they are.
                    EventBatch batch;
                    if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) dead = true;
                    for (ssize_t k = 0; k < n; ++k) {
                        if (buf[k] != '\n') {
                            if (c.discarding) continue;
                            c.in.push_back(buf[k]);
                            if (c.in.size() > kMaxLineBytes) {
                                c.in.clear();
                                c.discarding = true;
                                ++rejected;
                                c.out +=
                                    "error: line longer than " + std::to_string(kMaxLineBytes) + " bytes\n";
                            }
                            continue;
                        }
                        if (c.discarding) {
                            c.discarding = false;
                            continue;
                        }
                        std::string line;
                        line.swap(c.in);
                        if (!line.empty() && line.back() == '\r') line.pop_back();
                        if (line.find_first_not_of(" \t\r") == std::string::npos) {
                            ++rejected;
                            c.out += "error: empty line (one JSON object per line)\n";
                            continue;
                        }
                        ReportedEvent r;
                        std::string error;
                        bool ok = parseEventLine(line, &r, &error);
                        if (!ok)
                            ++rejected;
                        else
                            ok = take(r, &error, &batch);
                        c.out += ok ? "ok\n" : "error: " + error + "\n";
                    }
                    // Before the answers go out: an "ok" is an event queued.
                    if (!batch.empty() && sink) sink(std::move(batch));
                }
                if (!c.out.empty() && !dead) {
                    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
                    if (n > 0)
                        c.out.erase(0, size_t(n));
                    else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        dead = true;
                    if (c.out.size() > 1 << 20) // a client that never reads its answers
                        dead = true;
                }
                if (dead) {
                    ::close(c.fd);
                    clients.erase(clients.begin() + std::ptrdiff_t(i));
                    fds.erase(fds.begin() + std::ptrdiff_t(i) + 2);
                    --i;
                }
            }
            if (fds[1].revents & POLLIN) {
                const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd >= 0 && clients.size() < 64)
                    clients.push_back({fd, {}, {}});
                else if (fd >= 0)
                    ::close(fd);
            }
        }
        for (Client &c : clients)
            ::close(c.fd);
    }
};

IngestServer::IngestServer() : d(std::make_unique<Impl>()) {}

IngestServer::~IngestServer()
{
    stop();
}

bool IngestServer::start(std::uint16_t grpcPort, std::uint16_t jsonPort, Sink sink, std::string *error)
{
    stop();
    d->sink = std::move(sink);

    d->listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(d->listenFd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(jsonPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(d->listenFd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::listen(d->listenFd, 16) != 0 ||
        ::getsockname(d->listenFd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        *error = "cannot listen for JSON events on 127.0.0.1:" + std::to_string(jsonPort) + ": " +
                 std::strerror(errno);
        ::close(d->listenFd);
        d->listenFd = -1;
        return false;
    }
    d->jsonPort = ntohs(a.sin_port);

    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(grpcPort), grpc::InsecureServerCredentials(),
                             &d->grpcPort);
    d->service = std::make_unique<Impl::Service>(d.get());
    builder.RegisterService(d->service.get());
    builder.SetMaxReceiveMessageSize(16 * 1024); // an oversized event is refused with RESOURCE_EXHAUSTED
    if (grpcPort != 0)
        builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0); // a port in use must fail, not be shared
    d->server = builder.BuildAndStart();
    if (!d->server || d->grpcPort == 0) {
        *error = "cannot serve the Ingest gRPC service on 127.0.0.1:" + std::to_string(grpcPort) +
                 " (port in use?)";
        d->server.reset();
        ::close(d->listenFd);
        d->listenFd = -1;
        return false;
    }
    if (::pipe2(d->wake, O_CLOEXEC) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        stop();
        return false;
    }
    d->jsonThread = std::thread([this] { d->serveJson(); });
    return true;
}

void IngestServer::stop()
{
    if (d->jsonThread.joinable()) {
        const char c = 'x';
        [[maybe_unused]] const auto n = ::write(d->wake[1], &c, 1);
        d->jsonThread.join();
    }
    for (int &fd : d->wake)
        if (fd >= 0) ::close(std::exchange(fd, -1));
    if (d->listenFd >= 0) ::close(std::exchange(d->listenFd, -1));
    if (d->server) {
        d->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
        d->server.reset();
    }
    d->service.reset();
    d->grpcPort = 0;
    d->jsonPort = 0;
}

std::uint16_t IngestServer::grpcPort() const
{
    return std::uint16_t(d->grpcPort);
}

std::uint16_t IngestServer::jsonPort() const
{
    return d->jsonPort;
}

std::uint64_t IngestServer::accepted() const
{
    return d->accepted;
}

std::uint64_t IngestServer::rejected() const
{
    return d->rejected;
}

std::uint64_t IngestServer::pushedBack() const
{
    return d->pushedBack;
}

void IngestServer::setRoomProbe(RoomProbe probe)
{
    d->room = std::move(probe);
}

} // namespace rpcscope
