#include "typedjson.h"

#include "schemapool.h"

#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>
#include <memory>
#include <string>
#include <vector>

namespace rpcscope {

namespace pb = google::protobuf;

namespace {

// Fields the schema does not know, anywhere in the message: the JSON leaves them out.
std::size_t countUnknownFields(const pb::Message &m, int depth = 0)
{
    const pb::Reflection *r = m.GetReflection();
    std::size_t n = std::size_t(r->GetUnknownFields(m).field_count());
    if (depth > 100) return n;
    std::vector<const pb::FieldDescriptor *> fields;
    r->ListFields(m, &fields);
    for (const pb::FieldDescriptor *f : fields) {
        if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
        if (f->is_repeated()) {
            for (int i = 0; i < r->FieldSize(m, f); ++i)
                n += countUnknownFields(r->GetRepeatedMessage(m, f, i), depth + 1);
        } else {
            n += countUnknownFields(r->GetMessage(m, f), depth + 1);
        }
    }
    return n;
}

// Protobuf's JSON printer indents by one space per level; two read better. String values hold no raw line
// breaks (JSON escapes them), so leading spaces are indentation only.
std::string reindent(const std::string &json)
{
    std::string out;
    out.reserve(json.size() + json.size() / 4);
    std::size_t i = 0;
    while (i < json.size()) {
        std::size_t eol = json.find('\n', i);
        if (eol == std::string::npos) eol = json.size();
        std::size_t spaces = 0;
        while (i + spaces < eol && json[i + spaces] == ' ')
            ++spaces;
        out.append(2 * spaces, ' ');
        out.append(json, i + spaces, eol - i - spaces);
        if (eol < json.size()) out += '\n';
        i = eol + 1;
    }
    while (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

} // namespace

void decodeTyped(const SchemaPool &schemas, std::string_view typeName, std::string_view data, bool truncated,
                 DecodedMessage *out)
{
    out->typeName = std::string(typeName);
    const pb::Descriptor *type = schemas.findMessageType(std::string(typeName));
    if (!type) {
        out->note = "message type " + out->typeName + " is not in the loaded schemas: raw protobuf fields";
        return;
    }
    // Captured bytes fail to parse all the time (a proto3 string that is not UTF-8, say); the note says
    // so instead of protobuf's log on stderr.
    pb::LogSilencer quiet;
    std::unique_ptr<pb::Message> m = schemas.newMessage(type);
    // A cut message: the complete fields before the cut still make a valid (partial) message.
    const std::string_view parse = truncated ? data.substr(0, out->raw.consumed) : data;
    if (!m->ParsePartialFromArray(parse.data(), int(parse.size()))) {
        out->note = "does not parse as " + out->typeName + " (a different schema?): raw protobuf fields";
        return;
    }
    pb::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.preserve_proto_field_names = true;
    std::string json;
    const auto status = pb::util::MessageToJsonString(*m, &json, options);
    if (!status.ok()) {
        out->note =
            "cannot print " + out->typeName + " as JSON (" + status.ToString() + "): raw protobuf fields";
        return;
    }
    out->typed = true;
    out->json = reindent(json);
    std::vector<std::string> notes;
    if (truncated) {
        out->partial = true;
        notes.push_back("cut at the capture's keep limit: the JSON holds the complete fields in the first " +
                        std::to_string(parse.size()) + " of the " + std::to_string(data.size()) +
                        " bytes kept");
    }
    if (const std::size_t unknown = countUnknownFields(*m))
        notes.push_back(std::to_string(unknown) +
                        " field(s) not in the schema are left out of the JSON (see " + "the raw fields)");
    for (const std::string &n : notes)
        out->note += (out->note.empty() ? "" : "; ") + n;
}

} // namespace rpcscope
