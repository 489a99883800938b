#pragma once

// A gRPC server reflection client (grpc.reflection.v1alpha): asks a server which services it offers and for
// the .proto files that define them, as serialized FileDescriptorProtos for MessageDecoder. No Qt; blocking,
// so the GUI runs it off its thread.

#include <string>
#include <vector>

namespace rpcscope {

struct ReflectionResult
{
    std::vector<std::string> services;  // as list_services named them
    std::vector<std::string> files;     // serialized FileDescriptorProtos, one per file, imports included
    std::vector<std::string> fileNames; // their names, in the same order
    std::vector<std::string> problems;  // symbols the server could not describe, files it did not send
    std::string error;                  // empty when the server answered; otherwise one line saying why not
    bool ok() const { return error.empty(); }
};

// Asks `target` (HOST:PORT, plaintext) for every service it lists and for the files defining `symbols`
// too (fully qualified services or messages, say the services of captured :paths), each with the files it
// imports. Takes at most about timeoutMs.
ReflectionResult fetchByReflection(const std::string &target, const std::vector<std::string> &symbols = {},
                                   int timeoutMs = 5000);

} // namespace rpcscope
