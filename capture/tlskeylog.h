#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rpcscope {

// One connection's secrets from a key log; empty when the log has no line of that label for it.
struct TlsSecrets
{
    std::string masterSecret;    // CLIENT_RANDOM (TLS 1.2 and older)
    std::string clientHandshake; // CLIENT_HANDSHAKE_TRAFFIC_SECRET (TLS 1.3)
    std::string serverHandshake; // SERVER_HANDSHAKE_TRAFFIC_SECRET
    std::string clientTraffic0;  // CLIENT_TRAFFIC_SECRET_0
    std::string serverTraffic0;  // SERVER_TRAFFIC_SECRET_0
};

// An NSS key-log file (what SSLKEYLOGFILE, SSL_CTX_set_keylog_callback and `capture --keylog` write): lines
// of "LABEL <client random, hex> <secret, hex>", keyed by the ClientHello's random. Labels this import does
// not use (early traffic, exporter secrets) and comment lines are skipped.
class TlsKeyLog
{
public:
    using Random = std::array<std::uint8_t, 32>;

    // False with a one-line reason when the file cannot be read, holds no key line at all, or a key line is
    // malformed (its line number says which).
    bool load(const std::string &path, std::string *error);
    bool parse(std::string_view text, std::string *error);

    const TlsSecrets *find(const Random &clientRandom) const;
    size_t size() const { return m_byRandom.size(); }

private:
    struct RandomHash
    {
        size_t operator()(const Random &r) const;
    };
    std::unordered_map<Random, TlsSecrets, RandomHash> m_byRandom;
};

} // namespace rpcscope
