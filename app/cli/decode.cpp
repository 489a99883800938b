// rpcscope-cli decode: a capture's gRPC messages as JSON, with schemas from .proto files or server
// reflection.

#include "captureio.h"
#include "commands.h"
#include "filewrite.h"
#include "messagedecoder.h"
#include "reflectionclient.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdio>
#include <map>
#include <set>

namespace rpcscope {

namespace {

int fail(int code, const std::string &message)
{
    std::fprintf(stderr, "rpcscope-cli: %s\n", message.c_str());
    return code;
}

// Integers a JSON double holds exactly stay numbers; larger ones become strings.
QJsonValue integer(std::uint64_t v)
{
    return v <= (std::uint64_t(1) << 53) ? QJsonValue(double(v)) : QJsonValue(QString::number(v));
}

QJsonArray rawJson(const std::vector<RawField> &fields)
{
    QJsonArray out;
    for (const RawField &f : fields) {
        QJsonObject o{{"field", double(f.number)}, {"wire_type", wireTypeName(f.wireType)}};
        if (f.wireType == WireLen) {
            if (f.nested)
                o["message"] = rawJson(f.children);
            else if (f.text)
                o["string"] = QString::fromStdString(f.bytes);
            else
                o["hex"] = QString::fromStdString(hexString(f.bytes));
        } else if (f.wireType == WireStartGroup) {
            o["group"] = rawJson(f.children);
        } else {
            o["value"] = integer(f.value);
        }
        if (f.cut) o["cut"] = true;
        out.append(o);
    }
    return out;
}

QJsonObject messageJson(const DecodedMessage &m)
{
    QJsonObject o;
    if (!m.typeName.empty()) o["type"] = QString::fromStdString(m.typeName);
    if (m.typed) {
        o["json"] = QJsonDocument::fromJson(QByteArray::fromStdString(m.json)).object();
        if (m.partial) o["partial"] = true;
    } else {
        o["raw"] = rawJson(m.raw.fields);
        if (!m.raw.stopped.empty()) o["raw_stopped"] = QString::fromStdString(m.raw.stopped);
        o["hex"] = QString::fromStdString(hexString(m.bytes));
    }
    if (!m.note.empty()) o["note"] = QString::fromStdString(m.note);
    return o;
}

bool fromHex(const std::string &hex, std::string *out)
{
    if (hex.size() % 2) return false;
    auto digit = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    for (size_t i = 0; i < hex.size(); i += 2) {
        const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out->push_back(char(hi * 16 + lo));
    }
    return true;
}

} // namespace

int cmdDecode(const std::vector<std::string> &args)
{
    std::vector<std::string> protos, paths, reflect, inputs;
    std::map<std::string, std::string> opts;
    bool response = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        const bool valued = a == "--proto" || a == "--proto-path" || a == "--reflect" || a == "--out" ||
                            a == "--port" || a == "--method" || a == "--hex";
        if (valued) {
            if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0 || args[i + 1].empty())
                return fail(2, "option " + a + " needs a value\n(rpcscope-cli --help shows the usage)");
            const std::string &v = args[++i];
            if (a == "--proto")
                protos.push_back(v);
            else if (a == "--proto-path")
                paths.push_back(v);
            else if (a == "--reflect")
                reflect.push_back(v);
            else
                opts[a] = v;
        } else if (a == "--response") {
            response = true;
        } else if (a.rfind("--", 0) == 0) {
            return fail(2, "unknown option '" + a + "'\n(rpcscope-cli --help shows the usage)");
        } else {
            inputs.push_back(a);
        }
    }
    const bool single = opts.count("--hex") || opts.count("--method");
    if (single && (!opts.count("--hex") || !opts.count("--method") || !inputs.empty()))
        return fail(
            2, "decode of one message needs --method /PKG.SERVICE/METHOD and --hex HEX, and no capture file");
    if (!single && inputs.size() != 1)
        return fail(2, "decode needs one capture file (or --method and --hex), got " +
                           std::to_string(inputs.size()));
    std::string singleBytes;
    if (single && !fromHex(opts["--hex"], &singleBytes)) {
        const std::string &hex = opts["--hex"];
        const size_t bad = hex.find_first_not_of("0123456789abcdefABCDEF");
        return fail(2, bad != std::string::npos
                           ? "--hex takes hex digits (0-9, a-f), got '" + hex.substr(bad, 1) +
                                 "' at position " + std::to_string(bad + 1)
                           : "--hex needs an even number of hex digits, got " + std::to_string(hex.size()));
    }

    MessageDecoder decoder;
    if (!protos.empty()) {
        std::vector<std::string> errors;
        if (!decoder.loadProtoFiles(protos, paths, &errors))
            return fail(
                2, "cannot load the .proto files: " + errors.front() +
                       (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
    } else if (!paths.empty()) {
        return fail(2, "--proto-path needs --proto FILE too");
    }

    CaptureData data;
    if (!single) {
        LoadOptions load;
        if (opts.count("--port")) {
            bool ok = false;
            const uint port = QString::fromStdString(opts["--port"]).toUInt(&ok);
            if (!ok || port == 0 || port > 65535)
                return fail(2, "--port needs a TCP port (1-65535), got '" + opts["--port"] + "'");
            load.serverPort = std::uint16_t(port);
        }
        const CaptureReadResult read = loadCapture(QString::fromStdString(inputs[0]), &data, {}, load);
        if (!read.usable()) return fail(2, read.message);
        if (read.status == CaptureReadResult::Truncated)
            std::fprintf(stderr, "rpcscope-cli: warning: %s\n", read.message.c_str());
    }

    // Every stream's method and grpc-encoding per direction, from its header blocks.
    struct StreamInfo
    {
        std::string path;
        std::string encoding[2];
    };
    std::map<std::uint64_t, StreamInfo> streams;
    std::set<std::string> services;
    for (const EventBatch &b : data.batches)
        for (const WireEvent &e : b) {
            if (e.kind != EventKind::Headers) continue;
            StreamInfo &s = streams[(std::uint64_t(e.connection) << 32) | e.stream];
            if (!e.grpc.path.empty()) {
                s.path = e.grpc.path;
                const size_t slash = s.path.rfind('/');
                if (slash > 1) services.insert(s.path.substr(1, slash - 1));
            }
            if (!e.grpc.encoding.empty()) s.encoding[int(e.dir)] = e.grpc.encoding;
        }
    if (single) {
        const std::string &path = opts["--method"];
        const size_t slash = path.rfind('/');
        if (slash > 1) services.insert(path.substr(path[0] == '/' ? 1 : 0, slash - (path[0] == '/' ? 1 : 0)));
    }

    for (const std::string &target : reflect) {
        const ReflectionResult r =
            fetchByReflection(target, std::vector<std::string>(services.begin(), services.end()));
        if (!r.ok()) return fail(1, r.error);
        std::vector<std::string> errors;
        decoder.addFileDescriptors(r.files, &errors);
        for (const std::string &p : r.problems)
            std::fprintf(stderr, "rpcscope-cli: note: %s: %s\n", target.c_str(), p.c_str());
        for (const std::string &e : errors)
            std::fprintf(stderr, "rpcscope-cli: note: %s: %s\n", target.c_str(), e.c_str());
    }

    QJsonArray messages;
    if (single) {
        QJsonObject o = messageJson(decoder.decode(opts["--method"], !response, singleBytes));
        o["method"] = QString::fromStdString(opts["--method"]);
        o["direction"] = response ? "response" : "request";
        o["length"] = double(singleBytes.size());
        messages.append(o);
    }
    for (const EventBatch &b : data.batches)
        for (const WireEvent &e : b) {
            if (e.kind != EventKind::Message) continue;
            const auto it = streams.find((std::uint64_t(e.connection) << 32) | e.stream);
            const std::string path = it == streams.end() ? std::string() : it->second.path;
            const bool request = e.dir == Direction::ClientToServer;
            const DecodedMessage m =
                decoder.decode(path, request, e.payload, e.truncated, e.compressed,
                               it == streams.end() ? std::string() : it->second.encoding[int(e.dir)]);
            QJsonObject o{{"connection", double(e.connection)},
                          {"stream", double(e.stream)},
                          {"method", QString::fromStdString(path)},
                          {"direction", request ? "request" : "response"},
                          {"t_ns", double(e.tNs - data.info.originNs)},
                          {"length", double(e.length)},
                          {"kept", double(e.payload.size())}};
            if (e.truncated) o["truncated"] = true;
            if (e.compressed) o["compressed"] = true;
            const QJsonObject decoded = messageJson(m);
            for (auto kv = decoded.constBegin(); kv != decoded.constEnd(); ++kv)
                o[kv.key()] = kv.value();
            messages.append(o);
        }

    QJsonArray files, serviceList;
    for (const std::string &f : decoder.fileNames())
        files.append(QString::fromStdString(f));
    for (const std::string &s : decoder.serviceNames())
        serviceList.append(QString::fromStdString(s));
    const QJsonObject doc{{"format", "rpcscope-messages"},
                          {"version", 1},
                          {"schemas", QJsonObject{{"files", files}, {"services", serviceList}}},
                          {"messages", messages}};
    const QByteArray bytes = QJsonDocument(doc).toJson(QJsonDocument::Indented);
    if (auto out = opts.find("--out"); out != opts.end()) {
        std::string error;
        if (!saveFileAtomically(QString::fromStdString(out->second), bytes, &error)) return fail(1, error);
        std::printf("decoded %lld message(s) into %s\n", static_cast<long long>(messages.size()),
                    out->second.c_str());
    } else {
        std::fwrite(bytes.constData(), 1, size_t(bytes.size()), stdout);
    }
    return 0;
}

} // namespace rpcscope
