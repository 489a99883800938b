#include "tlskeyschedule.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace rpcscope {

namespace {

constexpr TlsSuite kSuites[] = {
    // TLS 1.3 (RFC 8446 appendix B.4)
    {0x1301, "TLS_AES_128_GCM_SHA256", TlsSuite::Aes128Gcm, false, true},
    {0x1302, "TLS_AES_256_GCM_SHA384", TlsSuite::Aes256Gcm, true, true},
    {0x1303, "TLS_CHACHA20_POLY1305_SHA256", TlsSuite::ChaCha20Poly1305, false, true},
    // TLS 1.2 AES-GCM (RFC 5288, 5289) and ChaCha20-Poly1305 (RFC 7905)
    {0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", TlsSuite::Aes128Gcm, false, false},
    {0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", TlsSuite::Aes256Gcm, true, false},
    {0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", TlsSuite::Aes128Gcm, false, false},
    {0x009F, "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", TlsSuite::Aes256Gcm, true, false},
    {0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", TlsSuite::Aes128Gcm, false, false},
    {0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", TlsSuite::Aes256Gcm, true, false},
    {0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", TlsSuite::Aes128Gcm, false, false},
    {0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", TlsSuite::Aes256Gcm, true, false},
    {0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", TlsSuite::ChaCha20Poly1305, false, false},
    {0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", TlsSuite::ChaCha20Poly1305, false, false},
    {0xCCAA, "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", TlsSuite::ChaCha20Poly1305, false, false},
};

std::string hmac(bool sha384, std::string_view key, std::string_view data)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(sha384 ? EVP_sha384() : EVP_sha256(), key.data(), int(key.size()),
         reinterpret_cast<const unsigned char *>(data.data()), data.size(), out, &n);
    return std::string(reinterpret_cast<const char *>(out), n);
}

} // namespace

const TlsSuite *TlsKeySchedule::suite(std::uint16_t id)
{
    for (const TlsSuite &s : kSuites)
        if (s.id == id) return &s;
    return nullptr;
}

std::string TlsKeySchedule::prf12(bool sha384, std::string_view secret, std::string_view label,
                                  std::string_view seed, size_t length)
{
    const std::string labelSeed = std::string(label) + std::string(seed);
    std::string out, a = labelSeed;
    while (out.size() < length) {
        a = hmac(sha384, secret, a);
        out += hmac(sha384, secret, a + labelSeed);
    }
    out.resize(length);
    return out;
}

std::string TlsKeySchedule::expandLabel(bool sha384, std::string_view secret, std::string_view label,
                                        std::string_view context, size_t length)
{
    // HkdfLabel: uint16 length, opaque label<7..255> = "tls13 " + label, opaque context<0..255>.
    std::string info;
    info += char(length >> 8);
    info += char(length & 0xFF);
    const std::string fullLabel = "tls13 " + std::string(label);
    info += char(fullLabel.size());
    info += fullLabel;
    info += char(context.size());
    info += context;
    // HKDF-Expand (RFC 5869 section 2.3), with the secret as the PRK.
    std::string out, t;
    for (std::uint8_t i = 1; out.size() < length; ++i) {
        t = hmac(sha384, secret, t + info + char(i));
        out += t;
    }
    out.resize(length);
    return out;
}

TlsKeySchedule::Keys TlsKeySchedule::expand12(const TlsSuite &suite, std::string_view masterSecret,
                                              std::string_view clientRandom, std::string_view serverRandom)
{
    const size_t k = suite.keyLength(), iv = suite.fixedIvLength();
    const std::string block = prf12(suite.sha384, masterSecret, "key expansion",
                                    std::string(serverRandom) + std::string(clientRandom), 2 * k + 2 * iv);
    Keys keys;
    keys.clientKey = block.substr(0, k);
    keys.serverKey = block.substr(k, k);
    keys.clientIv = block.substr(2 * k, iv);
    keys.serverIv = block.substr(2 * k + iv, iv);
    return keys;
}

void TlsKeySchedule::traffic13(const TlsSuite &suite, std::string_view secret, std::string *key,
                               std::string *iv)
{
    *key = expandLabel(suite.sha384, secret, "key", {}, suite.keyLength());
    *iv = expandLabel(suite.sha384, secret, "iv", {}, 12);
}

std::string TlsKeySchedule::nextSecret13(const TlsSuite &suite, std::string_view secret)
{
    return expandLabel(suite.sha384, secret, "traffic upd", {}, secret.size());
}

} // namespace rpcscope
