#pragma once

// The protobuf wire walker: any bytes as protobuf fields (number, wire type, value), with no schema, as
// protoc --decode_raw shows them. Captured bytes are untrusted: nesting and field counts are bounded, and a
// payload cut at the capture's keep limit walks as far as its complete fields go.

#include <cstddef>
#include <cstdint>
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

} // namespace rpcscope
