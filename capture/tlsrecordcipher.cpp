#include "tlsrecordcipher.h"

#include <openssl/evp.h>

namespace rpcscope {

namespace {
constexpr size_t kTag = 16;
constexpr size_t kExplicitNonce = 8; // TLS 1.2 AES-GCM
} // namespace

TlsRecordCipher::TlsRecordCipher() : m_ctx(EVP_CIPHER_CTX_new()) {}

TlsRecordCipher::~TlsRecordCipher()
{
    EVP_CIPHER_CTX_free(m_ctx);
}

void TlsRecordCipher::reset(const TlsSuite &suite, const std::string &key, const std::string &iv)
{
    const EVP_CIPHER *cipher = suite.cipher == TlsSuite::Aes128Gcm   ? EVP_aes_128_gcm()
                               : suite.cipher == TlsSuite::Aes256Gcm ? EVP_aes_256_gcm()
                                                                     : EVP_chacha20_poly1305();
    EVP_CIPHER_CTX_reset(m_ctx);
    m_suite = nullptr;
    if (key.size() != suite.keyLength() || iv.size() != suite.fixedIvLength() ||
        EVP_DecryptInit_ex(m_ctx, cipher, nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(m_ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) != 1 ||
        EVP_DecryptInit_ex(m_ctx, nullptr, nullptr, reinterpret_cast<const unsigned char *>(key.data()),
                           nullptr) != 1)
        return;
    m_suite = &suite;
    m_iv = iv;
    m_seq = 0;
}

bool TlsRecordCipher::open(const std::uint8_t *header, const std::uint8_t *body, size_t len,
                           std::string *plain, std::uint8_t *type)
{
    if (!m_suite) return false;
    const bool explicitNonce = !m_suite->tls13 && m_suite->cipher != TlsSuite::ChaCha20Poly1305;
    if (len < kTag + (explicitNonce ? kExplicitNonce : 0)) return false;
    std::uint8_t nonce[12];
    std::uint8_t seq[8];
    for (int i = 0; i < 8; ++i)
        seq[i] = std::uint8_t(m_seq >> (56 - 8 * i));
    if (explicitNonce) {
        std::copy(m_iv.begin(), m_iv.end(), nonce);
        std::copy(body, body + kExplicitNonce, nonce + 4);
        body += kExplicitNonce;
        len -= kExplicitNonce;
    } else { // the IV XOR the sequence number, left-padded to 12 bytes
        std::copy(m_iv.begin(), m_iv.end(), nonce);
        for (int i = 0; i < 8; ++i)
            nonce[4 + i] ^= seq[i];
    }
    const size_t cipherLen = len - kTag;
    std::uint8_t aad[13];
    size_t aadLen;
    if (m_suite->tls13) { // the record header itself
        std::copy(header, header + 5, aad);
        aadLen = 5;
    } else { // seq_num + type + version + the plaintext's length
        std::copy(seq, seq + 8, aad);
        aad[8] = header[0];
        aad[9] = header[1];
        aad[10] = header[2];
        aad[11] = std::uint8_t(cipherLen >> 8);
        aad[12] = std::uint8_t(cipherLen);
        aadLen = 13;
    }
    plain->resize(cipherLen);
    auto *out = reinterpret_cast<unsigned char *>(plain->data());
    int n = 0, tail = 0;
    if (EVP_DecryptInit_ex(m_ctx, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_DecryptUpdate(m_ctx, nullptr, &n, aad, int(aadLen)) != 1 ||
        EVP_DecryptUpdate(m_ctx, out, &n, body, int(cipherLen)) != 1 ||
        EVP_CIPHER_CTX_ctrl(m_ctx, EVP_CTRL_AEAD_SET_TAG, int(kTag),
                            const_cast<std::uint8_t *>(body + cipherLen)) != 1 ||
        EVP_DecryptFinal_ex(m_ctx, out + n, &tail) != 1)
        return false;
    ++m_seq;
    if (!m_suite->tls13) {
        *type = header[0];
        return true;
    }
    // TLSInnerPlaintext: content, the real type, then zeros.
    size_t end = plain->size();
    while (end > 0 && (*plain)[end - 1] == 0)
        --end;
    if (end == 0) return false;
    *type = std::uint8_t((*plain)[end - 1]);
    plain->resize(end - 1);
    return true;
}

} // namespace rpcscope
