// libFuzzer target for the CONNECT proxy's request parser (capture/connectrequest.h). The input's first two
// bytes pick the head-size limit (16 bytes up to 8 KiB), the rest is what a client sent.
//
// Besides what ASan/UBSan catch, it checks what the proxy relies on, and aborts when one does not hold:
//  - a Complete request consumed no more than the limit and no more than it was given, names a port other
//    than 0, and is Complete with the same target for exactly its head (so the proxy may read past it: the
//    tunnel's first bytes are not part of the request);
//  - every prefix of a Complete head is Incomplete: a client sending byte by byte is never refused;
//  - a refusal is final: whatever more the client sends, the parser still refuses (the proxy answers at
//  once);
//  - a refusal has a status among those the proxy answers with, and a reason.
//
// Built two ways like the others: with clang and -fsanitize=fuzzer (scripts/fuzz.sh FUZZ_TARGET=connect), and
// with the normal compiler plus replay_main.cpp, running the committed corpus as a ctest.

#include "connectrequest.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace rpcscope;

namespace {

void require(bool ok, const char *what)
{
    if (ok) return;
    std::fprintf(stderr, "fuzz_connectrequest: property broken: %s\n", what);
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const size_t limit = 16 + (size_t(data[0]) << 8 | data[1]) % 8177;
    const std::string_view input(reinterpret_cast<const char *>(data + 2), size - 2);
    const ConnectRequest whole = parseConnectRequest(input, limit);
    switch (whole.state) {
    case ConnectRequest::Complete: {
        require(whole.consumed <= input.size() && whole.consumed <= limit, "consumed within input and limit");
        require(whole.target.port != 0 && !whole.target.host.empty(), "a target with host and port");
        const ConnectRequest head = parseConnectRequest(input.substr(0, whole.consumed), limit);
        require(head.state == ConnectRequest::Complete && head.consumed == whole.consumed &&
                    head.authority == whole.authority,
                "the head alone parses the same");
        // Every prefix up to the head's end; inputs are short enough to try each.
        for (size_t n = 0; n < whole.consumed; ++n)
            require(parseConnectRequest(input.substr(0, n), limit).state == ConnectRequest::Incomplete,
                    "a prefix of a whole head is incomplete");
        break;
    }
    case ConnectRequest::Refused: {
        const int s = whole.status;
        require(s == 400 || s == 405 || s == 431 || s == 505, "a status the proxy answers with");
        require(!whole.reason.empty(), "a refusal says why");
        for (const char *more : {"", "\r\n", "\r\n\r\n", " HTTP/1.1\r\n\r\n", "x"}) {
            const ConnectRequest longer = parseConnectRequest(std::string(input) + more, limit);
            require(longer.state == ConnectRequest::Refused, "a refusal is final");
        }
        break;
    }
    case ConnectRequest::Incomplete:
        require(input.size() < limit, "an incomplete head is within the limit");
        break;
    }
    return 0;
}
