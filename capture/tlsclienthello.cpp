#include "tlsclienthello.h"

#include <algorithm>

namespace rpcscope {

namespace {
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxRecordBody = 16384 + 2048; // TLSCiphertext may exceed 2^14 by 2048

// A bounds-checked cursor over the record: every read says whether it fit.
struct Reader
{
    const std::uint8_t *p;
    size_t left;
    bool u8(std::uint8_t *v)
    {
        if (left < 1) return false;
        *v = *p++;
        --left;
        return true;
    }
    bool u16(std::uint16_t *v)
    {
        if (left < 2) return false;
        *v = std::uint16_t(p[0] << 8 | p[1]);
        p += 2;
        left -= 2;
        return true;
    }
    bool u24(std::uint32_t *v)
    {
        if (left < 3) return false;
        *v = std::uint32_t(p[0]) << 16 | std::uint32_t(p[1]) << 8 | p[2];
        p += 3;
        left -= 3;
        return true;
    }
    bool skip(size_t n)
    {
        if (left < n) return false;
        p += n;
        left -= n;
        return true;
    }
    // A vector with a length prefix of `width` bytes, as its own reader.
    bool sub(int width, Reader *out)
    {
        std::uint32_t n = 0;
        if (width == 1) {
            std::uint8_t v;
            if (!u8(&v)) return false;
            n = v;
        } else {
            std::uint16_t v;
            if (!u16(&v)) return false;
            n = v;
        }
        if (left < n) return false;
        *out = Reader{p, n};
        p += n;
        left -= n;
        return true;
    }
};

// Names shown in a note: printable ASCII only, at most 255 bytes, so a hostile hello cannot garble it.
std::string printable(const std::uint8_t *p, size_t n)
{
    std::string s;
    for (size_t i = 0; i < n && i < 255; ++i)
        s += (p[i] >= 0x20 && p[i] < 0x7f) ? char(p[i]) : '?';
    return s;
}

bool parseExtensions(Reader exts, ClientHelloInfo *info, std::string *error)
{
    while (exts.left > 0) {
        std::uint16_t type;
        Reader body{nullptr, 0};
        if (!exts.u16(&type) || !exts.sub(2, &body)) {
            *error = "ClientHello extension cut short";
            return false;
        }
        if (type == 0) { // server_name
            Reader list{nullptr, 0};
            if (!body.sub(2, &list)) {
                *error = "malformed server_name extension";
                return false;
            }
            while (list.left > 0) {
                std::uint8_t nameType;
                Reader name{nullptr, 0};
                if (!list.u8(&nameType) || !list.sub(2, &name)) {
                    *error = "malformed server_name extension";
                    return false;
                }
                if (nameType == 0 && info->sni.empty()) info->sni = printable(name.p, name.left);
            }
        } else if (type == 16) { // application_layer_protocol_negotiation
            Reader list{nullptr, 0};
            if (!body.sub(2, &list)) {
                *error = "malformed ALPN extension";
                return false;
            }
            while (list.left > 0) {
                Reader proto{nullptr, 0};
                if (!list.sub(1, &proto)) {
                    *error = "malformed ALPN extension";
                    return false;
                }
                if (info->alpn.size() < 16) info->alpn.push_back(printable(proto.p, proto.left));
            }
        } else if (type == 43) { // supported_versions
            Reader list{nullptr, 0};
            if (!body.sub(1, &list)) {
                *error = "malformed supported_versions extension";
                return false;
            }
            std::uint16_t v;
            while (list.u16(&v))
                if (v == 0x0304) info->offersTls13 = true;
        }
    }
    return true;
}
} // namespace

bool TlsClientHello::looksLikeTls(const std::uint8_t *data, size_t len)
{
    return len >= 2 && data[0] == 0x16 && data[1] == 0x03;
}

size_t TlsClientHello::recordSize(const std::uint8_t *data, size_t len)
{
    if (len < kRecordHeader) return kRecordHeader;
    return kRecordHeader + (size_t(data[3]) << 8 | data[4]);
}

TlsClientHello::Result TlsClientHello::parse(const std::uint8_t *data, size_t len, ClientHelloInfo *info,
                                             std::string *error)
{
    *info = ClientHelloInfo();
    error->clear();
    if (len < 2) return NeedMore;
    if (!looksLikeTls(data, len)) return NotTls;
    if (len < kRecordHeader) return NeedMore;
    info->recordVersion = std::uint16_t(data[1] << 8 | data[2]);
    const size_t body = size_t(data[3]) << 8 | data[4];
    if (body == 0 || body > kMaxRecordBody) {
        *error = "TLS record of " + std::to_string(body) + " bytes";
        return Malformed;
    }
    // The hello's first fields are read as soon as they are there, so garbage is named before a whole
    // record of it has arrived.
    Reader r{data + kRecordHeader, std::min(len - kRecordHeader, body)};
    const bool whole = len >= kRecordHeader + body;
    std::uint8_t type;
    if (!r.u8(&type)) return NeedMore;
    if (type != 1) {
        *error = "TLS handshake of type " + std::to_string(type) + ", not a ClientHello";
        return Malformed;
    }
    std::uint32_t helloLen;
    if (!r.u24(&helloLen)) return whole ? (*error = "ClientHello cut short", Malformed) : NeedMore;
    // A hello longer than its record continues in the next one; what this record holds is parsed.
    if (helloLen < r.left) r.left = helloLen;
    std::uint16_t version;
    Reader skip{nullptr, 0};
    Reader ciphers{nullptr, 0};
    Reader compression{nullptr, 0};
    Reader exts{nullptr, 0};
    auto cut = [&](const char *what) {
        if (!whole) return NeedMore;
        *error = std::string("ClientHello cut short in its ") + what;
        return Malformed;
    };
    if (!r.u16(&version) || r.left < 32) return cut("random");
    std::copy(r.p, r.p + 32, info->random.begin());
    r.skip(32);
    if (!r.sub(1, &skip)) return cut("session id");
    if (!r.sub(2, &ciphers)) return cut("cipher suites");
    if (!r.sub(1, &compression)) return cut("compression methods");
    if (r.left == 0) return whole ? Parsed : NeedMore; // no extensions (yet)
    if (!r.sub(2, &exts)) return cut("extensions");
    if (!parseExtensions(exts, info, error)) return Malformed;
    return Parsed;
}

std::string TlsClientHello::describe(const ClientHelloInfo &info)
{
    std::string s =
        "TLS, not decrypted: SNI " + (info.sni.empty() ? std::string("(none)") : info.sni) + ", ALPN ";
    if (info.alpn.empty()) s += "(none)";
    for (size_t i = 0; i < info.alpn.size(); ++i)
        s += (i ? ", " : "") + info.alpn[i];
    return s;
}

} // namespace rpcscope
