#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace rpcscope::bench {

// socat as the baseline relay: `socat TCP-LISTEN:PORT,bind=127.0.0.1,reuseaddr,fork TCP:127.0.0.1:TARGET`,
// a child process in its own process group (socat forks one child per connection) that dies with us.
class SocatProxy
{
public:
    ~SocatProxy();
    // Starts socat on a free port and waits until it accepts connections.
    bool start(std::uint16_t targetPort, std::string *error);
    // Ends the processes this object started (socat and its per-connection children), by process group.
    void stop();
    std::uint16_t port() const { return m_port; }
    // The listening socat, whose reaped per-connection children's CPU /proc/PID/stat counts.
    pid_t pid() const { return m_pid; }

private:
    pid_t m_pid = -1;
    std::uint16_t m_port = 0;
};

} // namespace rpcscope::bench
