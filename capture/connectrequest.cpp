#include "connectrequest.h"

#include <algorithm>

namespace rpcscope {

namespace {

// RFC 9110 section 5.6.2.
bool isTokenChar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool isToken(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), isTokenChar);
}

// A reg-name or IPv4 address (RFC 3986 section 3.2.2): unreserved, pct-encoded and sub-delims.
bool isRegNameChar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("-._~%!$&'()*+,;=").find(c) != std::string_view::npos;
}

// What is printable in a request line or a field line: visible ASCII, space, tab and obs-text.
bool isFieldByte(char c)
{
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
}

ConnectRequest refuse(int status, std::string reason)
{
    ConnectRequest r;
    r.state = ConnectRequest::Refused;
    r.status = status;
    r.reason = std::move(reason);
    return r;
}

// Shown in a reason: at most 80 bytes, control bytes as '?'.
std::string quoted(std::string_view s)
{
    std::string out;
    for (char c : s.substr(0, 80))
        out += isFieldByte(c) && c != '\t' ? c : '?';
    if (s.size() > 80) out += "...";
    return "'" + out + "'";
}

// The authority-form of a CONNECT target (RFC 9110 section 9.3.6): host and port, the port required.
bool parseAuthority(std::string_view text, HostPort *out, std::string *why)
{
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *why = "expected [IPV6]:PORT";
            return false;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos) {
            *why = "not an IPv6 address in brackets";
            return false;
        }
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            *why = "the port is missing (CONNECT needs HOST:PORT)";
            return false;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.empty()) {
            *why = "the host is empty";
            return false;
        }
        if (!std::all_of(host.begin(), host.end(), isRegNameChar)) {
            *why = host.find(':') != std::string_view::npos ? "an IPv6 address needs brackets"
                                                            : "the host has characters a host name cannot";
            return false;
        }
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
        *why = "the port is not a number";
        return false;
    }
    const int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) {
        *why = "the port is not between 1 and 65535";
        return false;
    }
    out->host = std::string(host);
    out->port = std::uint16_t(p);
    return true;
}

// The next line from `pos`, without its CRLF (or bare LF); false when it has not all arrived.
bool nextLine(std::string_view data, size_t pos, std::string_view *line, size_t *next)
{
    const size_t lf = data.find('\n', pos);
    if (lf == std::string_view::npos) return false;
    size_t end = lf;
    if (end > pos && data[end - 1] == '\r') --end;
    *line = data.substr(pos, end - pos);
    *next = lf + 1;
    return true;
}

} // namespace

ConnectRequest parseConnectRequest(std::string_view data, size_t maxHeadBytes)
{
    auto tooLarge = [&] {
        return refuse(431, "request header section larger than " + std::to_string(maxHeadBytes) + " bytes");
    };
    // RFC 9112 section 2.2: empty lines before the request line are skipped.
    size_t pos = 0;
    while (pos < data.size() && pos < 16 && (data[pos] == '\r' || data[pos] == '\n'))
        ++pos;

    std::string_view line;
    size_t next = 0;
    if (!nextLine(data, pos, &line, &next)) {
        // A method is known before its line ends: a request that is not a CONNECT is refused as soon as it
        // says so, whatever follows.
        const std::string_view soFar = data.substr(pos);
        const size_t sp = soFar.find(' ');
        if (sp != std::string_view::npos && isToken(soFar.substr(0, sp)) && soFar.substr(0, sp) != "CONNECT")
            return refuse(405,
                          "method " + quoted(soFar.substr(0, sp)) + " not allowed: this is a CONNECT proxy");
        if (data.size() >= maxHeadBytes) return tooLarge();
        return {};
    }
    if (!std::all_of(line.begin(), line.end(), isFieldByte) || line.find('\r') != std::string_view::npos)
        return refuse(400, "malformed request line: control characters");
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos)
        return refuse(400, "malformed request line " + quoted(line) + ": expected METHOD TARGET HTTP/1.1");
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (!isToken(method)) return refuse(400, "malformed request line: bad method " + quoted(method));
    if (method != "CONNECT")
        return refuse(405, "method " + quoted(method) + " not allowed: this is a CONNECT proxy");
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
        version[5] > '9' || version[7] < '0' || version[7] > '9')
        return refuse(400, "malformed request line: bad HTTP version " + quoted(version));
    if (version[5] != '1')
        return refuse(505, "HTTP version " + quoted(version) + " not supported; use HTTP/1.1");
    HostPort authority;
    std::string why;
    if (!parseAuthority(target, &authority, &why))
        return refuse(400, "bad CONNECT target " + quoted(target) + ": " + why);

    // The header section: field lines up to an empty line. Their values do not matter to a tunnel, but a
    // malformed one means the client and the proxy disagree about where the head ends.
    pos = next;
    for (;;) {
        if (!nextLine(data, pos, &line, &next)) {
            if (data.size() >= maxHeadBytes) return tooLarge();
            return {};
        }
        if (next > maxHeadBytes) return tooLarge();
        if (line.empty()) break;
        if (line.front() == ' ' || line.front() == '\t')
            return refuse(400, "malformed header section: obsolete line folding");
        if (!std::all_of(line.begin(), line.end(), isFieldByte))
            return refuse(400, "malformed header field: control characters");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || !isToken(line.substr(0, colon)))
            return refuse(400, "malformed header field " + quoted(line));
        pos = next;
    }
    ConnectRequest r;
    r.state = ConnectRequest::Complete;
    r.target = authority;
    r.authority = std::string(target);
    r.consumed = next;
    return r;
}

} // namespace rpcscope
