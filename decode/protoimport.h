#pragma once

// .proto files from disk, through protobuf's compiler Importer with import paths (as protoc's -I), for the
// schema pool. Inside the decode room only: messagedecoder.h is what other code calls.

#include <google/protobuf/descriptor.pb.h>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

// The files and everything they import, dependencies first, as FileDescriptorProtos. A file is found in the
// import paths, or as a path on disk, whose directory is then searched too. google/protobuf/*.proto need no
// path and are left out (the pool takes them from the protobuf library). Appends one
// "file:line:column: message" per problem to `errors`; nullopt when no file loaded at all.
std::optional<std::vector<google::protobuf::FileDescriptorProto>>
importProtoFiles(const std::vector<std::string> &files, const std::vector<std::string> &importPaths,
                 std::vector<std::string> *errors);

} // namespace rpcscope
