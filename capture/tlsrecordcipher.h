#pragma once

#include "tlskeyschedule.h"

#include <cstddef>
#include <cstdint>
#include <string>

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

namespace rpcscope {

// One direction's record protection under one key: opens TLS 1.2 AEAD records (AES-GCM with its explicit
// nonce, ChaCha20-Poly1305 per RFC 7905) or TLS 1.3 records, counting their sequence numbers.
class TlsRecordCipher
{
public:
    TlsRecordCipher();
    ~TlsRecordCipher();
    TlsRecordCipher(const TlsRecordCipher &) = delete;
    TlsRecordCipher &operator=(const TlsRecordCipher &) = delete;

    // A new key (and fixed IV); the sequence number starts again at 0.
    void reset(const TlsSuite &suite, const std::string &key, const std::string &iv);
    bool active() const { return m_suite != nullptr; }

    // Opens the record whose 5-byte header is `header` and body `body`. *plain gets the plaintext and *type
    // its content type (TLS 1.3: the inner type, padding stripped). False when it does not authenticate.
    bool open(const std::uint8_t *header, const std::uint8_t *body, size_t len, std::string *plain,
              std::uint8_t *type);

private:
    EVP_CIPHER_CTX *m_ctx;
    const TlsSuite *m_suite = nullptr;
    std::string m_iv;
    std::uint64_t m_seq = 0;
};

} // namespace rpcscope
