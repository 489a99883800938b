#pragma once

#include "hostport.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace rpcscope {

// The head of one HTTP/1.1 request as a CONNECT proxy reads it (RFC 9110 section 9.3.6, RFC 9112): its
// request line and header section, nothing after. Pure: fed what has arrived so far, it says whether that is
// a whole CONNECT, not yet whole, or an answer to give (a status code with the reason for the client).
struct ConnectRequest
{
    enum State
    {
        Incomplete, // more bytes needed
        Complete,   // a CONNECT to `target`; `consumed` bytes are its head, the tunnel starts after them
        Refused     // answer `status` with `reason` and close
    };
    State state = Incomplete;
    HostPort target;       // Complete: the authority, as host and port
    std::string authority; // Complete: the authority as the client wrote it ("example.com:443")
    size_t consumed = 0;   // Complete: bytes of the request head, up to and including its empty line
    int status = 0;        // Refused: 400, 405, 431 or 505
    std::string reason;    // Refused: one line for the client and the timeline
};

// Largest request head read by default; a longer one is refused with 431.
inline constexpr size_t kMaxConnectHeadBytes = 8192;

// `data` is everything the client sent so far (the proxy reads nothing past the head, so the tunnel's first
// bytes may follow it).
ConnectRequest parseConnectRequest(std::string_view data, size_t maxHeadBytes = kMaxConnectHeadBytes);

} // namespace rpcscope
