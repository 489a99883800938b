#pragma once

#include "events.h"
#include "tlskeylog.h"
#include "tlsrecordcipher.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rpcscope {

// One TLS connection seen from the outside (a packet capture), decrypted with the secrets of a key log: it
// splits each direction's bytes into records, reads the ClientHello (random, SNI) and ServerHello (version,
// cipher suite), derives the record keys (TLS 1.2 key expansion from CLIENT_RANDOM's master secret; TLS 1.3
// from the handshake and traffic secrets, following Finished and KeyUpdate) and hands out the application
// data's plaintext. What it cannot decrypt (no key in the log, a suite it does not know, a record that does
// not authenticate) becomes one note and the rest of that connection, or direction, is skipped.
class TlsDecryptor
{
public:
    explicit TlsDecryptor(const TlsKeyLog &keys);

    // True when these first bytes of a direction could be TLS records (a record type 20..23, version 3.x).
    static bool looksLikeTls(const std::uint8_t *data, size_t len);

    // Feeds bytes of one direction in order; application data's plaintext is appended to *plain.
    void feed(Direction dir, const std::uint8_t *data, size_t len, std::string *plain);
    struct Note
    {
        std::string text;
        bool problem = false; // something was not decrypted (else: the keys found, a key update followed)
    };
    // The notes since the last call: the keys found (version, suite, SNI) or why decrypting stopped.
    std::vector<Note> takeNotes();
    // Keys are set and nothing has stopped the decryption (yet).
    bool decrypting() const { return m_version != 0 && !m_stopped; }

private:
    struct Side
    {
        std::string buffer;    // a record not yet whole
        std::string handshake; // handshake messages not yet whole
        TlsRecordCipher cipher;
        std::string secret;     // TLS 1.3: the current traffic secret
        std::string nextSecret; // TLS 1.3: the application traffic secret after Finished
        bool encrypted = false; // records are protected from here on
        bool stopped = false;
        std::uint64_t records = 0;
    };

    void record(Direction dir, const std::uint8_t *header, const std::uint8_t *body, size_t len,
                std::string *plain);
    void handshakeBytes(Direction dir, const char *data, size_t len);
    void handshakeMessage(Direction dir, std::uint8_t type, const std::uint8_t *body, size_t len);
    void clientHello(const std::uint8_t *record, size_t len);
    void serverHello(const std::uint8_t *body, size_t len);
    void stop(const std::string &note);
    void stopSide(Direction dir, const std::string &note);
    std::string who() const; // "SNI localhost, client random 1a2b3c4d…"

    const TlsKeyLog &m_keys;
    Side m_side[2];
    TlsKeyLog::Random m_clientRandom{};
    std::string m_sni;
    bool m_haveClientHello = false;
    const TlsSecrets *m_secrets = nullptr;
    const TlsSuite *m_suite = nullptr;
    std::uint16_t m_version = 0; // 0x0303 or 0x0304 once the keys are set
    bool m_stopped = false;
    bool m_keyUpdateNoted = false;
    std::vector<Note> m_notes;
};

} // namespace rpcscope
