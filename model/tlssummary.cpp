#include "tlssummary.h"

namespace rpcscope {

namespace {

std::string between(const std::string &s, const std::string &from, const std::string &to)
{
    const size_t a = s.find(from);
    if (a == std::string::npos) return {};
    const size_t start = a + from.size();
    const size_t b = to.empty() ? std::string::npos : s.find(to, start);
    return s.substr(start, b == std::string::npos ? std::string::npos : b - start);
}

// "TLSv1.3 TLS_AES_128_GCM_SHA256" into its version and cipher.
void splitVersion(const std::string &s, std::string *version, std::string *cipher)
{
    const size_t space = s.find(' ');
    *version = s.substr(0, space);
    *cipher = space == std::string::npos ? std::string() : s.substr(space + 1);
}

std::string none(const std::string &s)
{
    return s == "(none)" ? std::string() : s;
}

} // namespace

std::optional<TlsSummary> TlsSummary::parse(const std::string &note)
{
    static const std::string kIntercepted = "TLS intercepted: ";
    static const std::string kPassed = "TLS, not decrypted: ";
    TlsSummary t;
    if (note.starts_with(kIntercepted)) {
        t.intercepted = true;
        t.sni = none(between(note, "SNI ", ", ALPN "));
        t.alpn = none(between(note, ", ALPN ", "; "));
        splitVersion(between(note, "; client side ", "; target side "), &t.version, &t.cipher);
        splitVersion(between(note, "; target side ", ", certificate "), &t.targetVersion, &t.targetCipher);
        std::string cert = between(note, ", certificate ", "");
        const std::string unverified = " (not verified: --target-insecure)";
        if (cert.ends_with(unverified)) {
            t.targetUnverified = true;
            cert.resize(cert.size() - unverified.size());
        }
        t.certificate = cert;
        return t;
    }
    if (note.starts_with(kPassed)) {
        t.sni = none(between(note, "SNI ", ", ALPN "));
        t.alpn = none(between(note, ", ALPN ", ""));
        return t;
    }
    return std::nullopt;
}

std::optional<TlsSummary> TlsSummary::find(const std::vector<std::string> &notes)
{
    for (const std::string &n : notes)
        if (auto t = parse(n)) return t;
    return std::nullopt;
}

std::string TlsSummary::shortLine() const
{
    std::string s;
    if (intercepted) {
        // "TLSv1.3" reads as "TLS 1.3".
        s = version.starts_with("TLSv") ? "TLS " + version.substr(4) : (version.empty() ? "TLS" : version);
        if (!alpn.empty()) s += " · " + alpn;
    } else {
        s = "TLS, not decrypted";
    }
    if (!sni.empty()) s += " · SNI " + sni;
    return s;
}

} // namespace rpcscope
