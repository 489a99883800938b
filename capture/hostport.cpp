#include "hostport.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

AddrInfo::~AddrInfo()
{
    if (list) freeaddrinfo(list);
}

std::string peerName(const sockaddr_storage &ss)
{
    char host[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto *sin = reinterpret_cast<const sockaddr_in *>(&ss);
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        return HostPort{host, ntohs(sin->sin_port)}.toString();
    }
    const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
    return HostPort{host, ntohs(sin6->sin6_port)}.toString();
}

void setNonBlocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

bool resolve(const HostPort &hp, bool passive, AddrInfo *out, std::string *error)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const std::string port = std::to_string(hp.port);
    const int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &out->list);
    if (rc != 0) {
        if (error) *error = "cannot resolve '" + hp.host + "': " + gai_strerror(rc);
        return false;
    }
    return true;
}

std::string HostPort::toString() const
{
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

bool parseHostPort(const std::string &text, HostPort *out, std::string *errorOut)
{
    std::string dummy;
    std::string *error = errorOut ? errorOut : &dummy;
    std::string host, port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *error = "expected [IPV6]:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        if (host.empty()) {
            *error = "empty host in '" + text + "'";
            return false;
        }
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0) {
            *error = "expected HOST:PORT, got '" + text + "'";
            return false;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string::npos) {
            *error = "an IPv6 address needs brackets: write '" + text + "' as [" + host + "]:" + port;
            return false;
        }
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) > 65535) {
        *error = "bad port '" + port + "' in '" + text + "' (expected 0-65535)";
        return false;
    }
    out->host = host;
    out->port = std::uint16_t(std::stoi(port));
    return true;
}

bool isLoopbackHost(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool canListen(const HostPort &listen, std::string *error)
{
    AddrInfo ai;
    if (!resolve(listen, true, &ai, error)) return false;
    // Like Relay::start: the first address that binds is the one used.
    int err = 0;
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        const bool ok = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        err = errno;
        close(fd);
        if (ok) return true;
    }
    *error = err == EADDRINUSE      ? "port " + std::to_string(listen.port) + " is in use"
             : err == EADDRNOTAVAIL ? listen.host + " is not an address of this machine"
                                    : "cannot listen on " + listen.toString() + ": " + std::strerror(err);
    return false;
}

int listenSocket(const HostPort &listen, std::string *error)
{
    AddrInfo ai;
    if (!resolve(listen, true, &ai, error)) return -1;
    int lastErrno = 0;
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            lastErrno = errno;
            continue;
        }
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) return fd;
        lastErrno = errno;
        close(fd);
    }
    *error = "cannot listen on " + listen.toString() + ": " + std::strerror(lastErrno);
    return -1;
}

bool probeTarget(const HostPort &target, int timeoutMs, std::string *errorOut)
{
    std::string dummy;
    std::string *error = errorOut ? errorOut : &dummy;
    AddrInfo ai;
    if (!resolve(target, false, &ai, error)) return false;
    std::string last = "no address";
    for (addrinfo *a = ai.list; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        setNonBlocking(fd);
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const int ready = poll(&p, 1, timeoutMs);
            if (ready == 1) {
                int soerr = 0;
                socklen_t len = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                rc = soerr == 0 ? 0 : -1;
                errno = soerr;
            } else {
                rc = -1;
                errno = ready == 0 ? ETIMEDOUT : errno;
            }
        }
        const int err = errno;
        close(fd);
        if (rc == 0) return true;
        last = std::strerror(err);
    }
    *error = "target " + target.toString() + " is unreachable: " + last;
    return false;
}

} // namespace rpcscope
