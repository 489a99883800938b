#pragma once

// Typed JSON: a message decoded with its type from the schema pool and printed as JSON (proto field names,
// two-space indentation), with a note on what the JSON leaves out.

#include "decodedmessage.h"

#include <string_view>

namespace rpcscope {

class SchemaPool;

// Fills out->typeName and, when `typeName` is known and `data` parses as it, out->typed and out->json; else
// out->note says why the raw fields are all there is. out->raw must already hold the raw fields of `data`:
// a `truncated` message is parsed up to its last complete field.
void decodeTyped(const SchemaPool &schemas, std::string_view typeName, std::string_view data, bool truncated,
                 DecodedMessage *out);

} // namespace rpcscope
