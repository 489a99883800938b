#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

// What a connection's TLS note says, in fields: the capture layer writes one note per TLS connection ("TLS
// intercepted: ..." or "TLS, not decrypted: ..."), and the views show a short line of it without knowing the
// capture layer.
struct TlsSummary
{
    bool intercepted = false; // false: passed through encrypted, named from its ClientHello
    std::string sni;
    std::string alpn;
    std::string version;       // the client side's, e.g. "TLSv1.3"; empty when not decrypted
    std::string cipher;        // the client side's
    std::string targetVersion; // the target side's
    std::string targetCipher;
    std::string certificate; // the target's certificate subject, e.g. "CN=api.example.com"
    bool targetUnverified = false;

    // Parses one note; nullopt when it is not a TLS note.
    static std::optional<TlsSummary> parse(const std::string &note);
    // The first TLS note among a connection's notes.
    static std::optional<TlsSummary> find(const std::vector<std::string> &notes);
    // "TLS 1.3 · h2 · SNI api.example.com", or "TLS, not decrypted · SNI api.example.com".
    std::string shortLine() const;
};

} // namespace rpcscope
