#include "messagedecoder.h"

#include "inflate.h"
#include "protoimport.h"
#include "schemapool.h"
#include "typedjson.h"

namespace rpcscope {

MessageDecoder::MessageDecoder() : m_schemas(std::make_unique<SchemaPool>()) {}
MessageDecoder::~MessageDecoder() = default;

bool MessageDecoder::loadProtoFiles(const std::vector<std::string> &files,
                                    const std::vector<std::string> &importPaths,
                                    std::vector<std::string> *errorsOut)
{
    std::vector<std::string> dummy;
    std::vector<std::string> &errors = errorsOut ? *errorsOut : dummy;
    const std::size_t errorsBefore = errors.size();
    if (auto imported = importProtoFiles(files, importPaths, &errors)) {
        m_schemas->add(std::move(*imported), &errors);
        ++m_generation;
    }
    return errors.size() == errorsBefore;
}

bool MessageDecoder::addFileDescriptors(const std::vector<std::string> &serialized,
                                        std::vector<std::string> *errorsOut)
{
    std::vector<std::string> dummy;
    std::vector<std::string> &errors = errorsOut ? *errorsOut : dummy;
    const std::size_t errorsBefore = errors.size();
    if (m_schemas->addSerialized(serialized, &errors)) ++m_generation;
    return errors.size() == errorsBefore;
}

void MessageDecoder::clear()
{
    m_schemas->clear();
    ++m_generation;
}

std::size_t MessageDecoder::fileCount() const
{
    return m_schemas->fileCount();
}

std::vector<std::string> MessageDecoder::fileNames() const
{
    return m_schemas->fileNames();
}

std::vector<std::string> MessageDecoder::serviceNames() const
{
    return m_schemas->serviceNames();
}

std::optional<std::pair<std::string, std::string>> MessageDecoder::methodTypes(std::string_view path) const
{
    return m_schemas->methodTypes(path);
}

DecodedMessage MessageDecoder::decode(std::string_view path, bool request, std::string_view bytes,
                                      bool truncated, bool compressed, std::string_view encoding) const
{
    DecodedMessage out;
    std::string compressionNote;
    if (compressed) {
        std::string inflated, why;
        bool complete = false;
        if ((encoding == "gzip" || encoding == "deflate") &&
            inflateBytes(bytes, &inflated, &complete, &why)) {
            compressionNote =
                "inflated from " + std::to_string(bytes.size()) + " B of " + std::string(encoding);
            if (!why.empty()) compressionNote += " (" + why + ")";
            truncated = truncated || !complete;
            out.bytes = std::move(inflated);
        } else {
            out.bytes = std::string(bytes);
            out.note = "compressed (" +
                       (encoding.empty() ? std::string("no grpc-encoding seen") : std::string(encoding)) +
                       "), which rpcscope cannot inflate: the bytes as captured";
            return out;
        }
    } else {
        out.bytes = std::string(bytes);
    }
    out.raw = scanRawFields(out.bytes);
    if (const auto types = methodTypes(path)) {
        decodeTyped(*m_schemas, request ? types->first : types->second, out.bytes, truncated, &out);
    } else {
        out.note = path.empty() ? "the stream's method is not known: raw protobuf fields"
                                : "no schema for " + std::string(path) + ": raw protobuf fields";
        if (truncated) out.note += "; cut at the capture's keep limit";
    }
    if (!compressionNote.empty()) out.note = compressionNote + (out.note.empty() ? "" : "; " + out.note);
    return out;
}

DecodedMessage MessageDecoder::decodeAs(std::string_view typeName, std::string_view bytes,
                                        bool truncated) const
{
    DecodedMessage out;
    out.bytes = std::string(bytes);
    out.raw = scanRawFields(out.bytes);
    decodeTyped(*m_schemas, typeName, out.bytes, truncated, &out);
    return out;
}

} // namespace rpcscope
