#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace rpcscope::bench {

// nghttpx (Debian's nghttp2-proxy) as the TLS baseline: a TLS-terminating HTTP/2 reverse proxy on loopback in
// front of a TLS h2 backend, verified against `backendCa`. A child process in its own process group that dies
// with us.
class NghttpxProxy
{
public:
    ~NghttpxProxy();
    // Empty when nghttpx is on the PATH; otherwise the one line to print instead of its rows.
    static std::string missing();
    // Serves `certFile`/`keyFile` to clients (ALPN h2) and forwards to 127.0.0.1:backendPort over TLS with
    // SNI `backendName`; waits until it accepts connections.
    bool start(std::uint16_t backendPort, const std::string &backendName, const std::string &backendCa,
               const std::string &certFile, const std::string &keyFile, std::string *error);
    void stop();
    std::uint16_t port() const { return m_port; }
    pid_t pid() const { return m_pid; }
    // The flags it ran with, for the table's notes.
    const std::string &flags() const { return m_flags; }

private:
    pid_t m_pid = -1;
    std::uint16_t m_port = 0;
    std::string m_flags;
};

} // namespace rpcscope::bench
