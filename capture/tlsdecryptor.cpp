#include "tlsdecryptor.h"

#include "tlsclienthello.h"

#include <algorithm>
#include <cstring>

namespace rpcscope {

namespace {

constexpr size_t kHeader = 5;
constexpr size_t kMaxRecord = 16384 + 2048;
// Handshake messages held while incomplete: a certificate chain fits many times over.
constexpr size_t kMaxHandshake = size_t(1) << 20;

enum ContentType : std::uint8_t
{
    ChangeCipherSpec = 20,
    Alert = 21,
    Handshake = 22,
    ApplicationData = 23
};

enum HandshakeType : std::uint8_t
{
    ServerHelloType = 2,
    FinishedType = 20,
    KeyUpdateType = 24
};

// SHA-256("HelloRetryRequest"): the random of a ServerHello that is a HelloRetryRequest (RFC 8446 4.1.3).
constexpr std::uint8_t kHelloRetry[32] = {0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C,
                                          0x02, 0x1E, 0x65, 0xB8, 0x91, 0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB,
                                          0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

std::string hex(const std::uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

std::string versionName(std::uint16_t v)
{
    switch (v) {
    case 0x0304:
        return "TLS 1.3";
    case 0x0303:
        return "TLS 1.2";
    case 0x0302:
        return "TLS 1.1";
    case 0x0301:
        return "TLS 1.0";
    default: {
        const std::uint8_t bytes[2] = {std::uint8_t(v >> 8), std::uint8_t(v)};
        return "version 0x" + hex(bytes, 2);
    }
    }
}

const char *sideName(Direction dir)
{
    return dir == Direction::ClientToServer ? "client" : "server";
}

} // namespace

TlsDecryptor::TlsDecryptor(const TlsKeyLog &keys) : m_keys(keys) {}

bool TlsDecryptor::looksLikeTls(const std::uint8_t *data, size_t len)
{
    return len >= 2 && data[0] >= ChangeCipherSpec && data[0] <= ApplicationData && data[1] == 3;
}

std::vector<TlsDecryptor::Note> TlsDecryptor::takeNotes()
{
    std::vector<Note> notes;
    notes.swap(m_notes);
    return notes;
}

std::string TlsDecryptor::who() const
{
    if (!m_haveClientHello) return "no ClientHello seen";
    return "SNI " + (m_sni.empty() ? std::string("(none)") : m_sni) + ", client random " +
           hex(m_clientRandom.data(), m_clientRandom.size());
}

void TlsDecryptor::stop(const std::string &note)
{
    if (m_stopped) return;
    m_stopped = true;
    m_notes.push_back({note, true});
    for (Side &s : m_side) {
        s.stopped = true;
        std::string().swap(s.buffer);
        std::string().swap(s.handshake);
    }
}

void TlsDecryptor::stopSide(Direction dir, const std::string &note)
{
    Side &side = m_side[int(dir)];
    if (side.stopped) return;
    side.stopped = true;
    std::string().swap(side.buffer);
    std::string().swap(side.handshake);
    m_notes.push_back({note, true});
}

void TlsDecryptor::feed(Direction dir, const std::uint8_t *data, size_t len, std::string *plain)
{
    Side &side = m_side[int(dir)];
    if (side.stopped || m_stopped) return;
    // Whole records straight from `data`; a record cut by the segment's end waits in the buffer.
    const std::uint8_t *p = data;
    size_t left = len;
    if (!side.buffer.empty()) {
        side.buffer.append(reinterpret_cast<const char *>(data), len);
        p = reinterpret_cast<const std::uint8_t *>(side.buffer.data());
        left = side.buffer.size();
    }
    size_t used = 0;
    while (left - used >= kHeader && !side.stopped && !m_stopped) {
        const std::uint8_t *h = p + used;
        const size_t body = size_t(h[3]) << 8 | h[4];
        if (h[0] < ChangeCipherSpec || h[0] > ApplicationData + 1 || h[1] != 3 || body > kMaxRecord) {
            stopSide(dir, std::string("TLS: the ") + sideName(dir) +
                              " sent bytes that are no TLS record (after " + std::to_string(side.records) +
                              " records): the rest of them is not decrypted");
            return;
        }
        if (left - used < kHeader + body) break;
        ++side.records;
        record(dir, h, h + kHeader, body, plain);
        used += kHeader + body;
    }
    if (side.stopped || m_stopped) return;
    if (side.buffer.empty())
        side.buffer.assign(reinterpret_cast<const char *>(p + used), left - used);
    else
        side.buffer.erase(0, used);
}

void TlsDecryptor::record(Direction dir, const std::uint8_t *header, const std::uint8_t *body, size_t len,
                          std::string *plain)
{
    Side &side = m_side[int(dir)];
    const std::uint8_t type = header[0];
    if (dir == Direction::ClientToServer && !m_haveClientHello) {
        if (type != Handshake) {
            stop("TLS connection without its ClientHello (it began before the capture): not decrypted");
            return;
        }
        // The hello is parsed from its first record (header included), which holds the random.
        std::string whole(reinterpret_cast<const char *>(header), kHeader);
        whole.append(reinterpret_cast<const char *>(body), len);
        clientHello(reinterpret_cast<const std::uint8_t *>(whole.data()), whole.size());
        return; // the rest of the hello (if it spans records) says nothing needed here
    }
    if (type == ChangeCipherSpec) {
        // TLS 1.2: this direction's records are protected from the next one on. TLS 1.3: only for
        // middleboxes. Either way its body is the one byte 1: anything else is a damaged record, said rather
        // than skipped.
        if (len != 1 || body[0] != 1) {
            stopSide(dir, std::string("TLS: record ") + std::to_string(side.records) + " from the " +
                              sideName(dir) +
                              " is no ChangeCipherSpec: the rest of this direction is not decrypted");
            return;
        }
        if (m_version == 0x0303) side.encrypted = true;
        return;
    }
    if (!side.encrypted || !side.cipher.active()) {
        // Of the handshake in the clear only the ServerHello matters; anything else (the client's other
        // messages, an alert, TLS 1.3 early data before the ServerHello) is not for us.
        if (type == Handshake && dir == Direction::ServerToClient && m_version == 0)
            handshakeBytes(dir, reinterpret_cast<const char *>(body), len);
        return;
    }
    std::string opened;
    std::uint8_t inner = 0;
    if (!side.cipher.open(header, body, len, &opened, &inner)) {
        stopSide(dir, std::string("TLS: record ") + std::to_string(side.records) + " from the " +
                          sideName(dir) + " does not decrypt with the key log's keys (" + who() +
                          "): the rest of this direction is not decrypted");
        return;
    }
    if (inner == ApplicationData)
        plain->append(opened);
    else if (inner == Handshake && m_version == 0x0304) // TLS 1.3 follows Finished and KeyUpdate
        handshakeBytes(dir, opened.data(), opened.size());
}

void TlsDecryptor::handshakeBytes(Direction dir, const char *data, size_t len)
{
    Side &side = m_side[int(dir)];
    side.handshake.append(data, len);
    size_t used = 0;
    const auto *p = reinterpret_cast<const std::uint8_t *>(side.handshake.data());
    while (side.handshake.size() - used >= 4) {
        const size_t n = size_t(p[used + 1]) << 16 | size_t(p[used + 2]) << 8 | p[used + 3];
        if (side.handshake.size() - used < 4 + n) break;
        handshakeMessage(dir, p[used], p + used + 4, n);
        if (side.stopped || m_stopped) return;
        used += 4 + n;
    }
    side.handshake.erase(0, used);
    if (m_version == 0x0303) side.handshake.clear(); // TLS 1.2 needs nothing after the ServerHello
    if (side.handshake.size() > kMaxHandshake)
        stopSide(dir, std::string("TLS: a handshake message of the ") + sideName(dir) +
                          " is over 1 MiB: the rest of this direction is not decrypted");
}

void TlsDecryptor::handshakeMessage(Direction dir, std::uint8_t type, const std::uint8_t *body, size_t len)
{
    Side &side = m_side[int(dir)];
    if (dir == Direction::ServerToClient && type == ServerHelloType && m_version == 0) {
        serverHello(body, len);
        return;
    }
    if (m_version != 0x0304 || !side.encrypted) return;
    if (type == FinishedType && !side.nextSecret.empty()) {
        // The handshake's end: the application traffic keys protect the next record.
        side.secret = std::move(side.nextSecret);
        side.nextSecret.clear();
        std::string key, iv;
        TlsKeySchedule::traffic13(*m_suite, side.secret, &key, &iv);
        side.cipher.reset(*m_suite, key, iv);
    } else if (type == KeyUpdateType && side.nextSecret.empty()) {
        side.secret = TlsKeySchedule::nextSecret13(*m_suite, side.secret);
        std::string key, iv;
        TlsKeySchedule::traffic13(*m_suite, side.secret, &key, &iv);
        side.cipher.reset(*m_suite, key, iv);
        if (!m_keyUpdateNoted) {
            m_keyUpdateNoted = true;
            m_notes.push_back({std::string("TLS key update by the ") + sideName(dir) + ": followed", false});
        }
    }
}

void TlsDecryptor::clientHello(const std::uint8_t *record, size_t len)
{
    ClientHelloInfo info;
    std::string error;
    const TlsClientHello::Result r = TlsClientHello::parse(record, len, &info, &error);
    if (r != TlsClientHello::Parsed) {
        stop("TLS: the ClientHello cannot be read (" + (error.empty() ? std::string("cut short") : error) +
             "): not decrypted");
        return;
    }
    m_haveClientHello = true;
    m_clientRandom = info.random;
    m_sni = info.sni;
    m_secrets = m_keys.find(m_clientRandom);
    if (!m_secrets) stop("TLS, no key in the key log for this connection: " + who());
}

void TlsDecryptor::serverHello(const std::uint8_t *body, size_t len)
{
    // legacy_version, random, legacy_session_id_echo<0..32>, cipher_suite, compression, extensions<0..2^16-1>
    // Its keys are found by the ClientHello's random: without one (a capture that began between the two, or
    // bytes that only look like a handshake) there is nothing to decrypt with.
    if (!m_haveClientHello || !m_secrets)
        return stop("TLS: a ServerHello without the ClientHello before it: not decrypted");
    if (len < 2 + 32 + 1) return stop("TLS: the ServerHello is cut short: not decrypted");
    std::uint16_t version = std::uint16_t(body[0] << 8 | body[1]);
    const std::uint8_t *random = body + 2;
    if (std::memcmp(random, kHelloRetry, 32) == 0) return; // a HelloRetryRequest: the real one follows
    size_t at = 34;
    at += 1 + body[at];
    if (len < at + 3) return stop("TLS: the ServerHello is cut short: not decrypted");
    const std::uint16_t suiteId = std::uint16_t(body[at] << 8 | body[at + 1]);
    at += 3;
    if (len >= at + 2) {
        size_t extEnd = std::min(len, at + 2 + (size_t(body[at]) << 8 | body[at + 1]));
        at += 2;
        while (at + 4 <= extEnd) {
            const std::uint16_t type = std::uint16_t(body[at] << 8 | body[at + 1]);
            const size_t n = size_t(body[at + 2]) << 8 | body[at + 3];
            at += 4;
            if (at + n > extEnd) break;
            if (type == 43 && n == 2)
                version = std::uint16_t(body[at] << 8 | body[at + 1]); // supported_versions
            at += n;
        }
    }
    if (version != 0x0303 && version != 0x0304)
        return stop("TLS: " + versionName(version) + " is not decrypted (TLS 1.2 and 1.3 are)");
    m_suite = TlsKeySchedule::suite(suiteId);
    if (!m_suite || m_suite->tls13 != (version == 0x0304)) {
        static const char digits[] = "0123456789ABCDEF";
        std::string id = "0x";
        for (int shift = 12; shift >= 0; shift -= 4)
            id += digits[(suiteId >> shift) & 15];
        return stop("TLS: cipher suite " + id +
                    " is not decrypted (AES-GCM and ChaCha20-Poly1305 suites are): " + who());
    }
    if (version == 0x0303) {
        if (m_secrets->masterSecret.size() != 48)
            return stop("TLS, no key in the key log for this connection: " + who() +
                        " (TLS 1.2 needs its CLIENT_RANDOM line)");
        const TlsKeySchedule::Keys keys = TlsKeySchedule::expand12(
            *m_suite, m_secrets->masterSecret,
            std::string_view(reinterpret_cast<const char *>(m_clientRandom.data()), 32),
            std::string_view(reinterpret_cast<const char *>(random), 32));
        m_side[int(Direction::ClientToServer)].cipher.reset(*m_suite, keys.clientKey, keys.clientIv);
        m_side[int(Direction::ServerToClient)].cipher.reset(*m_suite, keys.serverKey, keys.serverIv);
    } else {
        const TlsSecrets &s = *m_secrets;
        if (s.clientHandshake.empty() || s.serverHandshake.empty() || s.clientTraffic0.empty() ||
            s.serverTraffic0.empty())
            return stop("TLS, no key in the key log for this connection: " + who() +
                        " (TLS 1.3 needs its four *_TRAFFIC_SECRET lines)");
        const std::string *handshake[2] = {&s.clientHandshake, &s.serverHandshake};
        const std::string *traffic[2] = {&s.clientTraffic0, &s.serverTraffic0};
        for (int d = 0; d < 2; ++d) {
            Side &side = m_side[d];
            std::string key, iv;
            TlsKeySchedule::traffic13(*m_suite, *handshake[d], &key, &iv);
            side.cipher.reset(*m_suite, key, iv);
            side.secret = *handshake[d];
            side.nextSecret = *traffic[d];
            side.encrypted = true; // every record after the ServerHello
        }
    }
    m_version = version;
    m_notes.push_back({"TLS decrypted with the key log: " + versionName(version) + ", " + m_suite->name +
                           ", SNI " + (m_sni.empty() ? std::string("(none)") : m_sni),
                       false});
}

} // namespace rpcscope
