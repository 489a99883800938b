#include "socatproxy.h"

#include "benchtext.h"
#include "testnet.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpcscope::bench {

namespace {
bool accepts(std::uint16_t port)
{
    const int fd = testnet::connectLoopback(port);
    if (fd >= 0) close(fd);
    return fd >= 0;
}
} // namespace

SocatProxy::~SocatProxy()
{
    stop();
}

bool SocatProxy::start(std::uint16_t targetPort, std::string *error)
{
    m_port = testnet::closedPort();
    const std::string listen = "TCP-LISTEN:" + std::to_string(m_port) + ",bind=127.0.0.1,reuseaddr,fork";
    const std::string target = "TCP:127.0.0.1:" + std::to_string(targetPort);
    const std::string path = benchtext::inPath("socat");
    if (path.empty()) {
        *error = "socat not found (install it: apt-get install socat)";
        return false;
    }
    std::vector<char *> argv{const_cast<char *>("socat"), const_cast<char *>(listen.c_str()),
                             const_cast<char *>(target.c_str()), nullptr};

    const pid_t parent = getpid();
    m_pid = fork();
    if (m_pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (m_pid == 0) {
        // Only async-signal-safe calls here: the parent has threads.
        // Its own process group, so stop() reaches the per-connection children; and it dies with us, so an
        // interrupted benchmark leaves no socat listening.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        execv(path.c_str(), argv.data());
        _exit(127);
    }
    setpgid(m_pid, m_pid); // also from here, so kill(-pid) works whichever of the two runs first
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            *error = "socat exited at start (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
            return false;
        }
        if (accepts(m_port)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    *error = "socat did not accept on 127.0.0.1:" + std::to_string(m_port) + " within 5 s";
    return false;
}

void SocatProxy::stop()
{
    if (m_pid <= 0) return;
    kill(-m_pid, SIGTERM); // the group this object created: socat and its forked children
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
}

} // namespace rpcscope::bench
