#include "wirewalker.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace rpcscope {

namespace {

// A JSON line or a string value shown longer than this is cut in the one-line renderings.
constexpr std::size_t kMaxValueChars = 200;

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

} // namespace

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

} // namespace rpcscope
