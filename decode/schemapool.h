#pragma once

// The schema pool: every message type known, from .proto files (protoimport.h) and from server reflection's
// FileDescriptorProtos, in one descriptor pool that is rebuilt, dependencies first, whenever files come or
// go. Inside the decode room only: it shows protobuf's types, which messagedecoder.h keeps from its users.

#include <cstddef>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpcscope {

class SchemaPool
{
public:
    SchemaPool();
    ~SchemaPool();
    SchemaPool(const SchemaPool &) = delete;
    SchemaPool &operator=(const SchemaPool &) = delete;

    // Adds the files (one with the name of a file already known replaces it) and rebuilds the pool. Files
    // that do not build (missing imports, clashing names) are dropped, with a message each in `errors`.
    void add(std::vector<google::protobuf::FileDescriptorProto> files, std::vector<std::string> *errors);
    // Serialized FileDescriptorProtos, as server reflection sends them, added as add() does; one that does
    // not parse is left out with a message. False when none parsed: the pool is then as it was.
    bool addSerialized(const std::vector<std::string> &serialized, std::vector<std::string> *errors);
    void clear();

    std::size_t fileCount() const { return m_files.size(); }
    std::vector<std::string> fileNames() const { return m_order; }
    std::vector<std::string> serviceNames() const; // fully qualified, sorted
    // The message types of ":path" "/package.Service/Method": {request type, response type}.
    std::optional<std::pair<std::string, std::string>> methodTypes(std::string_view path) const;
    // Null when no file known defines it.
    const google::protobuf::Descriptor *findMessageType(const std::string &fullName) const;
    // A new, empty message of a type from findMessageType().
    std::unique_ptr<google::protobuf::Message> newMessage(const google::protobuf::Descriptor *type) const;

private:
    void put(google::protobuf::FileDescriptorProto proto);
    void rebuild(std::vector<std::string> *errors);

    // Every file known, by name, in the order first added; the pool is rebuilt from them on every change.
    std::map<std::string, google::protobuf::FileDescriptorProto> m_files;
    std::vector<std::string> m_order;
    std::unique_ptr<google::protobuf::DescriptorPool> m_pool;
    std::unique_ptr<google::protobuf::DynamicMessageFactory> m_factory;
};

} // namespace rpcscope
