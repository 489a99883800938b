#pragma once

// gRPC message decoding for the inspector and the CLI: schemas come from .proto files (protobuf's compiler
// Importer, with import paths) and from serialized FileDescriptorProtos (what server reflection answers);
// both end up in one descriptor pool. A message whose method is known decodes to JSON; any other shows its
// raw protobuf fields (number, wire type, value) and hex.
//
// Captured bytes are untrusted: everything here takes arbitrary input without crashing, with nesting and
// field counts bounded. A payload cut at the capture's keep limit decodes as far as its complete fields go.
// No Qt: the headless CLI and the GUI share it. Not thread-safe: use one decoder on one thread.
//
// The decode room, one job per file: wirewalker (raw protobuf fields), hexdump, inflate (grpc-encoding),
// schemapool and protoimport (the schemas), typedjson; this class joins them for one gRPC message.

#include "decodedmessage.h"
#include "hexdump.h"
#include "wirewalker.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpcscope {

class SchemaPool;

class MessageDecoder
{
public:
    MessageDecoder();
    ~MessageDecoder();
    MessageDecoder(const MessageDecoder &) = delete;
    MessageDecoder &operator=(const MessageDecoder &) = delete;

    // Loads .proto files and everything they import. A file is found in the import paths (as protoc's -I),
    // or as a path on disk, whose directory is then searched too. google/protobuf/*.proto need no path.
    // Returns false with one "file:line:column: message" per problem; what did load stays loaded.
    bool loadProtoFiles(const std::vector<std::string> &files, const std::vector<std::string> &importPaths,
                        std::vector<std::string> *errors);
    // Serialized FileDescriptorProtos, for instance from server reflection. A file with the name of one
    // already known replaces it. Files that do not build (missing imports, clashing names) are left out, with
    // a message each.
    bool addFileDescriptors(const std::vector<std::string> &serialized, std::vector<std::string> *errors);
    void clear();

    std::size_t fileCount() const;
    std::vector<std::string> fileNames() const;
    std::vector<std::string> serviceNames() const; // fully qualified, sorted
    // Bumps whenever the schemas change, so views know to decode again.
    std::uint64_t generation() const { return m_generation; }

    // The message types of ":path" "/package.Service/Method": {request type, response type}.
    std::optional<std::pair<std::string, std::string>> methodTypes(std::string_view path) const;
    // Decodes one gRPC message of the method at `path`. `truncated`: the bytes are only the first part of the
    // message. `encoding` (grpc-encoding) matters when `compressed`: gzip and deflate are inflated.
    DecodedMessage decode(std::string_view path, bool request, std::string_view bytes, bool truncated = false,
                          bool compressed = false, std::string_view encoding = {}) const;
    // Decodes as the named message type (fully qualified); raw fields when it is not known.
    DecodedMessage decodeAs(std::string_view typeName, std::string_view bytes, bool truncated = false) const;

private:
    std::unique_ptr<SchemaPool> m_schemas;
    std::uint64_t m_generation = 0;
};

} // namespace rpcscope
