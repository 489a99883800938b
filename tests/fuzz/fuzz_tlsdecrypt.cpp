// libFuzzer target for the pcap import's TLS decryption (capture/tlskeylog.h, capture/tlsdecryptor.h). The
// input is a key log and a connection's bytes: two bytes give the key log's length, that many bytes are its
// text, and the rest is a sequence of reads, each one byte (its low bit: 0 client, 1 server), a two-byte
// length and that many bytes. The seeds are real OpenSSL connections of every suite the import decrypts
// (tests/capture/tst_tlsdecrypt.cpp writes them with RPCSCOPE_TLS_SEEDS=DIR; the handshakes differ each
// time).
//
// Besides what ASan/UBSan catch, it checks what the import relies on, and aborts when one does not hold:
//  - the same bytes fed in other reads (each read cut in two) give the same plaintext and the same notes:
//    TCP segments fall anywhere;
//  - never more plaintext than bytes in that direction;
//  - a key-log parse that fails says why, on one line.
//
// Built two ways like the others: with clang and -fsanitize=fuzzer (scripts/fuzz.sh FUZZ_TARGET=tlsdecrypt),
// and with the normal compiler plus replay_main.cpp, running the committed corpus as a ctest.

#include "tlsdecryptor.h"
#include "tlskeylog.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

void require(bool ok, const char *what)
{
    if (ok) return;
    std::fprintf(stderr, "fuzz_tlsdecrypt: property broken: %s\n", what);
    std::abort();
}

struct Read
{
    Direction dir;
    const std::uint8_t *data;
    size_t len;
};

struct Outcome
{
    std::string plain[2];
    std::string notes;
};

Outcome run(const TlsKeyLog &keys, const std::vector<Read> &reads, bool split)
{
    TlsDecryptor d(keys);
    Outcome o;
    for (const Read &r : reads) {
        const size_t cut = split ? (r.len ? r.data[0] % (r.len + 1) : 0) : r.len;
        d.feed(r.dir, r.data, cut, &o.plain[int(r.dir)]);
        if (cut < r.len) d.feed(r.dir, r.data + cut, r.len - cut, &o.plain[int(r.dir)]);
        for (const TlsDecryptor::Note &n : d.takeNotes())
            o.notes += n.text + (n.problem ? "!\n" : "\n");
    }
    return o;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const size_t keyLen = std::min(size - 2, size_t(data[0]) << 8 | data[1]);
    TlsKeyLog keys;
    std::string error;
    if (!keys.parse(std::string_view(reinterpret_cast<const char *>(data + 2), keyLen), &error))
        require(!error.empty() && error.find('\n') == std::string::npos,
                "a failed parse says why on one line");
    std::vector<Read> reads;
    size_t total[2] = {0, 0};
    for (size_t at = 2 + keyLen; at + 3 <= size;) {
        const Direction dir = data[at] & 1 ? Direction::ServerToClient : Direction::ClientToServer;
        const size_t len = std::min(size - at - 3, size_t(data[at + 1]) << 8 | data[at + 2]);
        reads.push_back({dir, data + at + 3, len});
        total[int(dir)] += len;
        at += 3 + len;
    }
    const Outcome whole = run(keys, reads, false);
    const Outcome split = run(keys, reads, true);
    for (int d = 0; d < 2; ++d) {
        require(whole.plain[d].size() <= total[d], "no more plaintext than bytes");
        require(whole.plain[d] == split.plain[d], "the same plaintext however the bytes are read");
    }
    require(whole.notes == split.notes, "the same notes however the bytes are read");
    return 0;
}
