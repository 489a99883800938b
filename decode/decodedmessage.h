#pragma once

// What decoding one gRPC message gives: typed JSON when its type is known, raw fields always.

#include "wirewalker.h"

#include <string>

namespace rpcscope {

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

} // namespace rpcscope
