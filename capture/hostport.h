#pragma once

#include <cstdint>
#include <string>

struct addrinfo;
struct sockaddr_storage;

namespace rpcscope {

struct HostPort
{
    std::string host;
    std::uint16_t port = 0;
    std::string toString() const;
};

// "HOST:PORT" or "[V6]:PORT"; error names what is wrong.
bool parseHostPort(const std::string &text, HostPort *out, std::string *error);
// localhost, 127.0.0.0/8 or ::1: a proxy listening there is not reachable from other machines.
bool isLoopbackHost(const std::string &host);
// Whether HOST:PORT could be bound for listening right now (false with the reason, e.g. "port 4000 is in
// use").
bool canListen(const HostPort &listen, std::string *error);
// A socket listening on the first address of HOST:PORT that binds (close-on-exec, address reuse, backlog
// 128); -1 with "cannot listen on HOST:PORT: reason" in error.
int listenSocket(const HostPort &listen, std::string *error);
// A blocking TCP connect with a timeout, to tell the user "target unreachable" before they start.
bool probeTarget(const HostPort &target, int timeoutMs, std::string *error);

// The addresses a HostPort resolves to (getaddrinfo), freed with this.
struct AddrInfo
{
    addrinfo *list = nullptr;
    AddrInfo() = default;
    ~AddrInfo();
    AddrInfo(const AddrInfo &) = delete;
    AddrInfo &operator=(const AddrInfo &) = delete;
};

// passive: addresses to listen on. False with "cannot resolve ..." in error.
bool resolve(const HostPort &hp, bool passive, AddrInfo *out, std::string *error);
// A socket address as HOST:PORT ("[V6]:PORT").
std::string peerName(const sockaddr_storage &ss);
void setNonBlocking(int fd);

} // namespace rpcscope
