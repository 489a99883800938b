#include "messagedecoder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>
#include <map>
#include <set>
#include <zlib.h>

namespace rpcscope {

namespace pb = google::protobuf;

namespace {

// Decompressed messages beyond this are cut: a few kilobytes of captured gzip may claim gigabytes.
constexpr std::size_t kMaxInflatedBytes = std::size_t(4) << 20;
// A JSON line or a string value shown longer than this is cut in the one-line renderings.
constexpr std::size_t kMaxValueChars = 200;

// ---- raw protobuf fields ----

enum class Stop
{
    None,
    Cut,
    Malformed
};

struct LevelResult
{
    std::size_t consumed = 0; // up to the end of the last complete field (and a closing end-group tag)
    bool closed = false;      // a group level ended at its end-group tag
    Stop stop = Stop::None;
    std::string why;
};

bool isPrintableUtf8(std::string_view s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return false;
            ++i;
            continue;
        }
        int extra = 0;
        std::uint32_t cp = 0;
        if ((c & 0xe0) == 0xc0) {
            extra = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + std::size_t(extra) >= s.size()) return false;
        for (int k = 1; k <= extra; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + std::size_t(k)]);
            if ((cc & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
            return false;
        i += std::size_t(extra) + 1;
    }
    return true;
}

class Walker
{
public:
    Walker(int maxDepth, std::size_t maxFields) : m_maxDepth(maxDepth), m_budget(maxFields) {}
    bool capped() const { return m_capped; }

    // The fields of [data, data + size) at `depth`; inside a group `group` is its field number (0 otherwise).
    LevelResult level(const std::uint8_t *data, std::size_t size, std::size_t base, int depth,
                      std::uint32_t group, std::vector<RawField> *out)
    {
        LevelResult r;
        const std::uint8_t *p = data, *end = data + size;
        auto stop = [&](Stop s, std::string why) {
            r.stop = s;
            r.why = std::move(why);
            return r;
        };
        while (p < end) {
            if (m_budget == 0) {
                m_capped = true;
                return stop(Stop::None, {});
            }
            const std::uint8_t *start = p;
            const std::size_t at = base + std::size_t(start - data);
            std::uint64_t tag = 0;
            if (const Stop s = varint(p, end, &tag); s != Stop::None)
                return stop(s, s == Stop::Cut
                                   ? "the bytes end inside a field's tag at byte " + std::to_string(at)
                                   : "malformed tag at byte " + std::to_string(at));
            RawField f;
            f.number = std::uint32_t(std::min<std::uint64_t>(tag >> 3, UINT32_MAX));
            f.wireType = std::uint8_t(tag & 7);
            f.offset = at;
            if ((tag >> 3) == 0 || (tag >> 3) > 536870911)
                return stop(Stop::Malformed, "field number " + std::to_string(tag >> 3) + " at byte " +
                                                 std::to_string(at) + " is not valid");
            switch (f.wireType) {
            case WireVarint:
                if (const Stop s = varint(p, end, &f.value); s != Stop::None)
                    return stop(s, s == Stop::Cut ? "the bytes end inside field " + std::to_string(f.number)
                                                  : "malformed varint in field " + std::to_string(f.number));
                break;
            case WireFixed64:
            case WireFixed32: {
                const std::size_t n = f.wireType == WireFixed64 ? 8 : 4;
                if (std::size_t(end - p) < n)
                    return stop(Stop::Cut, "the bytes end inside field " + std::to_string(f.number));
                for (std::size_t k = 0; k < n; ++k)
                    f.value |= std::uint64_t(p[k]) << (8 * k);
                p += n;
                break;
            }
            case WireLen: {
                std::uint64_t len = 0;
                if (const Stop s = varint(p, end, &len); s != Stop::None)
                    return stop(s, s == Stop::Cut ? "the bytes end inside field " + std::to_string(f.number)
                                                  : "malformed length in field " + std::to_string(f.number));
                const std::size_t left = std::size_t(end - p);
                if (len > left) {
                    // A cut payload: keep what is there, it is usually the part worth seeing.
                    f.bytes.assign(reinterpret_cast<const char *>(p), left);
                    f.cut = true;
                    f.text = isPrintableUtf8(f.bytes);
                    out->push_back(std::move(f));
                    --m_budget;
                    return stop(Stop::Cut, "field " + std::to_string(out->back().number) + " claims " +
                                               std::to_string(len) + " bytes, " + std::to_string(left) +
                                               " are there");
                }
                f.bytes.assign(reinterpret_cast<const char *>(p), std::size_t(len));
                f.text = isPrintableUtf8(f.bytes);
                if (!f.text && len > 0 && depth + 1 < m_maxDepth) {
                    // Tried as a message; a failed try gives its field budget back.
                    const std::size_t budget = m_budget;
                    std::vector<RawField> children;
                    const LevelResult sub =
                        level(p, std::size_t(len), at + std::size_t(p - start), depth + 1, 0, &children);
                    if (sub.stop == Stop::None && !sub.closed && !m_capped && !children.empty()) {
                        f.nested = true;
                        f.children = std::move(children);
                    } else if (!m_capped) {
                        m_budget = budget;
                    }
                }
                p += len;
                break;
            }
            case WireStartGroup: {
                if (depth + 1 >= m_maxDepth)
                    return stop(Stop::Malformed, "groups nested deeper than " + std::to_string(m_maxDepth));
                const std::size_t offset = std::size_t(p - data);
                LevelResult sub =
                    level(p, std::size_t(end - p), base + offset, depth + 1, f.number, &f.children);
                if (!sub.closed) {
                    out->push_back(std::move(f));
                    --m_budget;
                    if (sub.stop == Stop::None && !m_capped)
                        return stop(Stop::Cut,
                                    "the bytes end inside group " + std::to_string(out->back().number));
                    return stop(sub.stop, sub.why);
                }
                p += sub.consumed;
                break;
            }
            case WireEndGroup:
                if (group == f.number) {
                    r.closed = true;
                    r.consumed = std::size_t(p - data);
                    return r;
                }
                return stop(Stop::Malformed, "unexpected end of group " + std::to_string(f.number) +
                                                 " at byte " + std::to_string(at));
            default:
                return stop(Stop::Malformed, "wire type " + std::to_string(f.wireType) + " at byte " +
                                                 std::to_string(at) + " does not exist");
            }
            out->push_back(std::move(f));
            --m_budget;
            r.consumed = std::size_t(p - data);
        }
        return r;
    }

private:
    static Stop varint(const std::uint8_t *&p, const std::uint8_t *end, std::uint64_t *v)
    {
        std::uint64_t r = 0;
        for (int i = 0; i < 10; ++i) {
            if (p == end) return Stop::Cut;
            const std::uint8_t b = *p++;
            r |= std::uint64_t(b & 0x7f) << (7 * i);
            if (!(b & 0x80)) {
                *v = r;
                return Stop::None;
            }
        }
        return Stop::Malformed;
    }

    int m_maxDepth;
    std::size_t m_budget;
    bool m_capped = false;
};

std::string quoted(std::string_view s, std::size_t maxChars)
{
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (out.size() >= maxChars) {
            out += "…";
            break;
        }
        const char c = s[i];
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            out += c;
        }
    }
    return out + "\"";
}

std::string number(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// ---- gzip / deflate (grpc-encoding) ----

// Inflates zlib or gzip data. false when it is not such data at all; *complete says whether its end was seen.
bool inflateBytes(std::string_view in, std::string *out, bool *complete, std::string *why)
{
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) // 32: detect the zlib or gzip header
        return false;
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
    z.avail_in = uInt(in.size());
    char buf[16384];
    int rc = Z_OK;
    *complete = false;
    while (true) {
        z.next_out = reinterpret_cast<Bytef *>(buf);
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out->append(buf, sizeof buf - z.avail_out);
        if (rc == Z_STREAM_END) {
            *complete = true;
            break;
        }
        if (out->size() > kMaxInflatedBytes) {
            out->resize(kMaxInflatedBytes);
            *why =
                "inflated beyond " + std::to_string(kMaxInflatedBytes >> 20) + " MiB, the rest is not shown";
            break;
        }
        if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) {
            if (rc != Z_OK && rc != Z_BUF_ERROR) *why = z.msg ? z.msg : "not valid compressed data";
            break;
        }
    }
    inflateEnd(&z);
    return *complete || !out->empty() || why->empty();
}

// ---- protobuf schemas ----

// Well-known imports (google/protobuf/*.proto) come from the protobuf library itself when no import path
// has them, so a .proto that imports timestamp.proto loads with no set-up.
class FallbackSourceTree : public pb::compiler::SourceTree
{
public:
    explicit FallbackSourceTree(pb::compiler::DiskSourceTree *disk) : m_disk(disk) {}
    pb::io::ZeroCopyInputStream *Open(const std::string &filename) override
    {
        if (pb::io::ZeroCopyInputStream *s = m_disk->Open(filename)) return s;
        if (filename.rfind("google/protobuf/", 0) == 0)
            if (const pb::FileDescriptor *f =
                    pb::DescriptorPool::generated_pool()->FindFileByName(filename)) {
                m_texts.push_back(f->DebugString());
                return new pb::io::ArrayInputStream(m_texts.back().data(), int(m_texts.back().size()));
            }
        return nullptr;
    }
    std::string GetLastErrorMessage() override { return m_disk->GetLastErrorMessage(); }

private:
    pb::compiler::DiskSourceTree *m_disk;
    std::deque<std::string> m_texts; // the streams point into these
};

class ImportErrors : public pb::compiler::MultiFileErrorCollector
{
public:
    explicit ImportErrors(pb::compiler::DiskSourceTree *disk) : m_disk(disk) {}
    void AddError(const std::string &filename, int line, int column, const std::string &message) override
    {
        // The file as the user knows it: its path on disk, when it has one.
        std::string shown = filename, disk;
        if (m_disk->VirtualFileToDiskFile(filename, &disk)) shown = disk;
        if (line >= 0) shown += ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
        errors.push_back(shown + ": " + message);
    }
    std::vector<std::string> errors;

private:
    pb::compiler::DiskSourceTree *m_disk;
};

class BuildErrors : public pb::DescriptorPool::ErrorCollector
{
public:
    void AddError(const std::string &filename, const std::string &element, const pb::Message *, ErrorLocation,
                  const std::string &message) override
    {
        errors.push_back(filename + ": " + (element.empty() ? std::string() : element + ": ") + message);
    }
    std::vector<std::string> errors;
};

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

std::string absolutePath(const std::string &path)
{
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
}

} // namespace

// ---- public helpers ----

const char *wireTypeName(int wireType)
{
    switch (wireType) {
    case WireVarint:
        return "varint";
    case WireFixed64:
        return "i64";
    case WireLen:
        return "len";
    case WireStartGroup:
        return "sgroup";
    case WireEndGroup:
        return "egroup";
    case WireFixed32:
        return "i32";
    default:
        return "invalid";
    }
}

RawFields scanRawFields(std::string_view bytes, int maxDepth, std::size_t maxFields)
{
    RawFields out;
    Walker w(std::max(1, maxDepth), maxFields);
    const LevelResult r =
        w.level(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size(), 0, 0, 0, &out.fields);
    out.consumed = r.consumed;
    out.stopped = r.why;
    out.capped = w.capped();
    if (out.capped && out.stopped.empty())
        out.stopped = "more than " + std::to_string(maxFields) + " fields: the rest are not listed";
    return out;
}

std::string rawFieldValue(const RawField &f)
{
    char hex[32];
    switch (f.wireType) {
    case WireVarint: {
        std::string s = std::to_string(f.value);
        if (std::int64_t(f.value) < 0) s += " (int64 " + std::to_string(std::int64_t(f.value)) + ")";
        return s;
    }
    case WireFixed32: {
        float fl;
        const std::uint32_t u = std::uint32_t(f.value);
        std::memcpy(&fl, &u, sizeof fl);
        std::snprintf(hex, sizeof hex, "0x%08x", u);
        return std::to_string(u) + " (float " + number(fl) + ", " + hex + ")";
    }
    case WireFixed64: {
        double db;
        std::memcpy(&db, &f.value, sizeof db);
        std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(f.value));
        char d[64];
        std::snprintf(d, sizeof d, "%.17g", db);
        return std::to_string(f.value) + " (double " + d + ", " + hex + ")";
    }
    case WireStartGroup:
        return "group, " + std::to_string(f.children.size()) + " field(s)";
    case WireLen: {
        std::string s;
        if (f.text) {
            s = quoted(f.bytes, kMaxValueChars);
        } else if (f.nested) {
            s = "message, " + std::to_string(f.bytes.size()) + " B";
        } else {
            s = std::to_string(f.bytes.size()) + " B:";
            const std::size_t n = std::min<std::size_t>(f.bytes.size(), 24);
            for (std::size_t i = 0; i < n; ++i) {
                std::snprintf(hex, sizeof hex, " %02x", static_cast<unsigned char>(f.bytes[i]));
                s += hex;
            }
            if (n < f.bytes.size()) s += " …";
        }
        if (f.cut) s += " (cut: only " + std::to_string(f.bytes.size()) + " B kept)";
        return s;
    }
    default:
        return {};
    }
}

std::string formatRawFields(const std::vector<RawField> &fields, int indent)
{
    std::string out;
    for (const RawField &f : fields) {
        out.append(std::size_t(indent), ' ');
        out += std::to_string(f.number) + " (" + wireTypeName(f.wireType) + "): " + rawFieldValue(f) + "\n";
        if (!f.children.empty()) out += formatRawFields(f.children, indent + 2);
    }
    return out;
}

std::vector<std::string> hexDumpLines(std::string_view bytes, std::size_t maxBytes)
{
    std::vector<std::string> lines;
    const std::size_t n = std::min(bytes.size(), maxBytes);
    char buf[32];
    for (std::size_t row = 0; row < n; row += 16) {
        std::snprintf(buf, sizeof buf, "%04zx ", row);
        std::string line = buf;
        std::string ascii;
        for (std::size_t i = row; i < row + 16; ++i) {
            if (i - row == 8) line += ' ';
            if (i < n) {
                const auto c = static_cast<unsigned char>(bytes[i]);
                std::snprintf(buf, sizeof buf, " %02x", c);
                line += buf;
                ascii += (c >= 0x20 && c < 0x7f) ? char(c) : '.';
            } else {
                line += "   ";
            }
        }
        lines.push_back(line + "  |" + ascii + "|");
    }
    if (n < bytes.size()) lines.push_back("… " + std::to_string(bytes.size() - n) + " more bytes");
    return lines;
}

std::string hexString(std::string_view bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        out += digits[(static_cast<unsigned char>(c) >> 4) & 0xf];
        out += digits[static_cast<unsigned char>(c) & 0xf];
    }
    return out;
}

// ---- MessageDecoder ----

struct MessageDecoder::Impl
{
    // Every file known, by name, in the order first added; the pool is rebuilt from them on every change.
    std::map<std::string, pb::FileDescriptorProto> files;
    std::vector<std::string> order;
    std::unique_ptr<pb::DescriptorPool> pool;
    std::unique_ptr<pb::DynamicMessageFactory> factory;

    void put(pb::FileDescriptorProto proto)
    {
        const std::string name = proto.name();
        if (!files.count(name)) order.push_back(name);
        files[name] = std::move(proto);
    }

    // Builds a fresh pool, dependencies first. Files that fail are dropped, with their errors.
    void rebuild(std::vector<std::string> *errors)
    {
        auto next = std::make_unique<pb::DescriptorPool>();
        std::set<std::string> built, failed, building;
        std::function<bool(const std::string &, const std::string &)> build = [&](const std::string &name,
                                                                                  const std::string &by) {
            if (built.count(name)) return true;
            if (failed.count(name)) return false;
            if (building.count(name)) {
                errors->push_back(name + ": imports itself (an import cycle)");
                return false;
            }
            pb::FileDescriptorProto proto;
            if (auto it = files.find(name); it != files.end()) {
                proto = it->second;
            } else if (const pb::FileDescriptor *f =
                           pb::DescriptorPool::generated_pool()->FindFileByName(name);
                       f && name.rfind("google/protobuf/", 0) == 0) {
                f->CopyTo(&proto);
                f->CopyJsonNameTo(&proto);
            } else {
                errors->push_back(by + ": imports " + name + ", which is not loaded");
                failed.insert(name);
                return false;
            }
            building.insert(name);
            bool depsOk = true;
            for (const std::string &dep : proto.dependency())
                depsOk = build(dep, name) && depsOk;
            building.erase(name);
            if (!depsOk) {
                failed.insert(name);
                return false;
            }
            BuildErrors collector;
            if (!next->BuildFileCollectingErrors(proto, &collector)) {
                errors->insert(errors->end(), collector.errors.begin(), collector.errors.end());
                failed.insert(name);
                return false;
            }
            built.insert(name);
            return true;
        };
        for (const std::string &name : order)
            build(name, name);
        for (const std::string &name : failed)
            files.erase(name);
        std::erase_if(order, [&](const std::string &n) { return !files.count(n); });
        factory.reset(); // before the pool its prototypes point into
        pool = std::move(next);
        factory = std::make_unique<pb::DynamicMessageFactory>(pool.get());
    }

    void decodeTyped(std::string_view typeName, std::string_view data, bool truncated,
                     DecodedMessage *out) const
    {
        out->typeName = std::string(typeName);
        const pb::Descriptor *type = pool ? pool->FindMessageTypeByName(std::string(typeName)) : nullptr;
        if (!type) {
            out->note =
                "message type " + out->typeName + " is not in the loaded schemas: raw protobuf fields";
            return;
        }
        // Captured bytes fail to parse all the time (a proto3 string that is not UTF-8, say); the note says
        // so instead of protobuf's log on stderr.
        pb::LogSilencer quiet;
        std::unique_ptr<pb::Message> m(factory->GetPrototype(type)->New());
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
            notes.push_back(
                "cut at the capture's keep limit: the JSON holds the complete fields in the first " +
                std::to_string(parse.size()) + " of the " + std::to_string(data.size()) + " bytes kept");
        }
        if (const std::size_t unknown = countUnknownFields(*m))
            notes.push_back(std::to_string(unknown) +
                            " field(s) not in the schema are left out of the JSON (see " + "the raw fields)");
        for (const std::string &n : notes)
            out->note += (out->note.empty() ? "" : "; ") + n;
    }
};

MessageDecoder::MessageDecoder() : d(std::make_unique<Impl>()) {}
MessageDecoder::~MessageDecoder() = default;

bool MessageDecoder::loadProtoFiles(const std::vector<std::string> &files,
                                    const std::vector<std::string> &importPaths,
                                    std::vector<std::string> *errorsOut)
{
    std::vector<std::string> dummy;
    std::vector<std::string> &errors = errorsOut ? *errorsOut : dummy;
    const std::size_t errorsBefore = errors.size();
    pb::compiler::DiskSourceTree disk;
    for (const std::string &dir : importPaths) {
        if (!std::filesystem::is_directory(dir)) {
            errors.push_back(dir + ": import path is not a directory");
            continue;
        }
        disk.MapPath("", absolutePath(dir));
    }
    std::vector<std::string> virtualNames;
    for (const std::string &file : files) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) {
            // Not a file here: a name relative to the import paths, as protoc takes it.
            virtualNames.push_back(file);
            continue;
        }
        const std::string full = absolutePath(file);
        std::string virtualName, shadow;
        auto r = disk.DiskFileToVirtualFile(full, &virtualName, &shadow);
        if (r == pb::compiler::DiskSourceTree::NO_MAPPING) {
            // Outside every import path: its own directory is searched too (after the import paths).
            disk.MapPath("", std::filesystem::path(full).parent_path().string());
            r = disk.DiskFileToVirtualFile(full, &virtualName, &shadow);
        }
        switch (r) {
        case pb::compiler::DiskSourceTree::SUCCESS:
            virtualNames.push_back(virtualName);
            break;
        case pb::compiler::DiskSourceTree::SHADOWED:
            errors.push_back(file + ": shadowed by " + shadow + " (an earlier import path has a file named " +
                             virtualName + ")");
            break;
        case pb::compiler::DiskSourceTree::CANNOT_OPEN:
            errors.push_back(file + ": cannot read it");
            break;
        case pb::compiler::DiskSourceTree::NO_MAPPING:
            errors.push_back(file + ": not inside any import path");
            break;
        }
    }
    FallbackSourceTree tree(&disk);
    ImportErrors importErrors(&disk);
    pb::compiler::Importer importer(&tree, &importErrors);
    std::vector<const pb::FileDescriptor *> imported;
    for (const std::string &name : virtualNames) {
        const std::size_t before = importErrors.errors.size();
        if (const pb::FileDescriptor *f = importer.Import(name))
            imported.push_back(f);
        else if (importErrors.errors.size() == before)
            importErrors.errors.push_back(name + ": cannot load it");
    }
    errors.insert(errors.end(), importErrors.errors.begin(), importErrors.errors.end());
    // The files and everything they import, copied out of the importer's pool into ours.
    std::set<std::string> seen;
    std::function<void(const pb::FileDescriptor *)> take = [&](const pb::FileDescriptor *f) {
        if (!seen.insert(f->name()).second) return;
        for (int i = 0; i < f->dependency_count(); ++i)
            take(f->dependency(i));
        if (f->name().rfind("google/protobuf/", 0) == 0 &&
            pb::DescriptorPool::generated_pool()->FindFileByName(f->name()))
            return; // taken from the library when the pool is built
        pb::FileDescriptorProto proto;
        f->CopyTo(&proto);
        f->CopyJsonNameTo(&proto);
        d->put(std::move(proto));
    };
    for (const pb::FileDescriptor *f : imported)
        take(f);
    if (!imported.empty()) {
        d->rebuild(&errors);
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
    bool any = false;
    for (std::size_t i = 0; i < serialized.size(); ++i) {
        pb::FileDescriptorProto proto;
        if (!proto.ParseFromString(serialized[i]) || proto.name().empty()) {
            errors.push_back("file descriptor " + std::to_string(i + 1) + " of " +
                             std::to_string(serialized.size()) + " does not parse");
            continue;
        }
        d->put(std::move(proto));
        any = true;
    }
    if (any) {
        d->rebuild(&errors);
        ++m_generation;
    }
    return errors.size() == errorsBefore;
}

void MessageDecoder::clear()
{
    d->factory.reset();
    d->pool.reset();
    d->files.clear();
    d->order.clear();
    ++m_generation;
}

std::size_t MessageDecoder::fileCount() const
{
    return d->files.size();
}

std::vector<std::string> MessageDecoder::fileNames() const
{
    return d->order;
}

std::vector<std::string> MessageDecoder::serviceNames() const
{
    std::vector<std::string> out;
    if (!d->pool) return out;
    for (const std::string &name : d->order)
        if (const pb::FileDescriptor *f = d->pool->FindFileByName(name))
            for (int i = 0; i < f->service_count(); ++i)
                out.push_back(f->service(i)->full_name());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::optional<std::pair<std::string, std::string>> MessageDecoder::methodTypes(std::string_view path) const
{
    if (!d->pool) return std::nullopt;
    if (!path.empty() && path.front() == '/') path.remove_prefix(1);
    const std::size_t slash = path.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) return std::nullopt;
    const pb::ServiceDescriptor *service = d->pool->FindServiceByName(std::string(path.substr(0, slash)));
    const pb::MethodDescriptor *method =
        service ? service->FindMethodByName(std::string(path.substr(slash + 1))) : nullptr;
    if (!method) return std::nullopt;
    return std::pair{method->input_type()->full_name(), method->output_type()->full_name()};
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
        d->decodeTyped(request ? types->first : types->second, out.bytes, truncated, &out);
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
    d->decodeTyped(typeName, out.bytes, truncated, &out);
    return out;
}

} // namespace rpcscope
