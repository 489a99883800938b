#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rpcscope {

// What a TLS ClientHello says in the clear: the server name the client asked for and the application
// protocols it offers. Enough to name an encrypted connection without decrypting it.
struct ClientHelloInfo
{
    std::string sni;               // empty when the client sent no server_name
    std::vector<std::string> alpn; // in the client's order
    std::uint16_t recordVersion = 0;
    bool offersTls13 = false;              // supported_versions lists 0x0304
    std::array<std::uint8_t, 32> random{}; // keys the connection's secrets in a key log
};

// Parses the first TLS record of a connection. Only the first record is read: a ClientHello larger than one
// record (16 KiB) is named from what that record holds.
class TlsClientHello
{
public:
    enum Result
    {
        NeedMore, // a ClientHello so far, cut short: feed more bytes
        Parsed,   // *info is filled in
        NotTls,   // the bytes are no TLS handshake record
        Malformed // a TLS handshake record, but no readable ClientHello; *error says why
    };

    // True when the first bytes could start a TLS handshake record (0x16 0x03 ...), from two bytes on.
    static bool looksLikeTls(const std::uint8_t *data, size_t len);
    // How many bytes the first record needs at most (header + body); 5 until the header is there.
    static size_t recordSize(const std::uint8_t *data, size_t len);
    static Result parse(const std::uint8_t *data, size_t len, ClientHelloInfo *info, std::string *error);
    // "TLS, not decrypted: SNI example.com, ALPN h2": a connection's note for TLS relayed without
    // interception.
    static std::string describe(const ClientHelloInfo &info);
};

} // namespace rpcscope
