#pragma once

// gRPC message decoding for the inspector and the CLI: schemas come from .proto files (protobuf's compiler
// Importer, with import paths) and from serialized FileDescriptorProtos (what server reflection answers);
// both end up in one descriptor pool. A message whose method is known decodes to JSON; any other shows its
// raw protobuf fields (number, wire type, value) and hex.
//
// Captured bytes are untrusted: everything here takes arbitrary input without crashing, with nesting and
// field counts bounded. A payload cut at the capture's keep limit decodes as far as its complete fields go.
// No Qt: the headless CLI and the GUI share it. Not thread-safe: use one decoder on one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpcscope {

// Protobuf wire types (the low 3 bits of a field's tag).
enum WireType : std::uint8_t
{
    WireVarint = 0,
    WireFixed64 = 1,
    WireLen = 2,
    WireStartGroup = 3,
    WireEndGroup = 4,
    WireFixed32 = 5,
};
// "varint", "i64", "len", "sgroup", "egroup", "i32" (the names of the protobuf encoding guide)
const char *wireTypeName(int wireType);

struct RawField
{
    std::uint32_t number = 0;
    std::uint8_t wireType = WireVarint;
    std::uint64_t value = 0;        // varint, i64, i32: the number as it is on the wire
    std::string bytes;              // len: the bytes (only those present when cut)
    std::vector<RawField> children; // len that parses as a message (nested), or a group's fields
    bool nested = false;            // len: children hold the bytes parsed as a message
    bool text = false;              // len: printable UTF-8, shown as a string
    bool cut = false;               // the payload ended inside this field
    std::size_t offset = 0;         // where its tag starts, from the start of the message
};

struct RawFields
{
    std::vector<RawField> fields;
    std::size_t consumed = 0; // bytes of the complete top-level fields, from the start
    std::string stopped;      // why the walk stopped before the end; empty when every byte was read
    bool capped = false;      // the field budget ran out: more fields follow than are listed
};

// Walks the bytes as protobuf fields. Length-delimited fields are tried as nested messages down to maxDepth.
RawFields scanRawFields(std::string_view bytes, int maxDepth = 12, std::size_t maxFields = 5000);
// One line: "150", "0x3f800000 (i32 1065353216, float 1)", "\"hello\"", "message (12 B)", "3 B: 01 02 03".
std::string rawFieldValue(const RawField &f);
// An indented listing as protoc --decode_raw would give, with wire types: "1 (varint): 150".
std::string formatRawFields(const std::vector<RawField> &fields, int indent = 0);
// "0000  0a 03 61 62 63 ...  |..abc|" lines, at most maxBytes of input (then a line saying how many more).
std::vector<std::string> hexDumpLines(std::string_view bytes, std::size_t maxBytes = 4096);
std::string hexString(std::string_view bytes); // "0a0361..."

struct DecodedMessage
{
    bool typed = false;   // decoded with its message type: json holds it
    std::string typeName; // the type the method names, when the method is known (also when decoding failed)
    std::string json;     // typed: the message as JSON (proto field names, two-space indentation)
    RawFields raw;        // always: the raw fields of the (decompressed) bytes
    std::string bytes;    // the bytes decoded: the payload, or what it decompressed to
    std::string note;     // what to know: no schema, cut at the keep limit, does not parse, compressed...
    bool partial = false; // the JSON holds only the fields before the cut
};

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
    struct Impl;
    std::unique_ptr<Impl> d;
    std::uint64_t m_generation = 0;
};

} // namespace rpcscope
