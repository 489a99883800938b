#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rpcscope {

// An AEAD cipher suite this import can decrypt.
struct TlsSuite
{
    enum Cipher
    {
        Aes128Gcm,
        Aes256Gcm,
        ChaCha20Poly1305
    };
    std::uint16_t id = 0;
    const char *name = "";
    Cipher cipher = Aes128Gcm;
    bool sha384 = false; // the PRF's / HKDF's hash: SHA-384, else SHA-256
    bool tls13 = false;

    size_t keyLength() const { return cipher == Aes128Gcm ? 16 : 32; }
    // TLS 1.2's fixed IV: AES-GCM's 4-byte salt (the rest of the nonce is explicit in each record), or
    // ChaCha20-Poly1305's 12 bytes (RFC 7905). TLS 1.3: always 12.
    size_t fixedIvLength() const { return tls13 || cipher == ChaCha20Poly1305 ? 12 : 4; }
};

// The key derivations of TLS 1.2 (RFC 5246 section 5, PRF and key expansion) and TLS 1.3 (RFC 8446 section
// 7, HKDF-Expand-Label), with OpenSSL's HMAC.
class TlsKeySchedule
{
public:
    // The suite with this id, or null when it is not an AEAD suite decrypted here (CBC, CCM, NULL ...).
    static const TlsSuite *suite(std::uint16_t id);

    // TLS 1.2 PRF: P_hash(secret, label + seed) cut to `length`.
    static std::string prf12(bool sha384, std::string_view secret, std::string_view label,
                             std::string_view seed, size_t length);
    // HKDF-Expand-Label(secret, label, context, length), "tls13 " prefixed to the label.
    static std::string expandLabel(bool sha384, std::string_view secret, std::string_view label,
                                   std::string_view context, size_t length);

    struct Keys
    {
        std::string clientKey, serverKey, clientIv, serverIv;
    };
    // TLS 1.2: the key block from the master secret and both hellos' randoms (AEAD suites have no MAC key).
    static Keys expand12(const TlsSuite &suite, std::string_view masterSecret, std::string_view clientRandom,
                         std::string_view serverRandom);
    // TLS 1.3: a traffic secret's write key and IV.
    static void traffic13(const TlsSuite &suite, std::string_view secret, std::string *key, std::string *iv);
    // TLS 1.3 KeyUpdate: the next generation of a traffic secret.
    static std::string nextSecret13(const TlsSuite &suite, std::string_view secret);
};

} // namespace rpcscope
