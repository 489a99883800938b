#include "nghttpxproxy.h"

#include "benchtext.h"
#include "testnet.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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

NghttpxProxy::~NghttpxProxy()
{
    stop();
}

std::string NghttpxProxy::missing()
{
    return benchtext::inPath("nghttpx").empty()
               ? "nghttpx baseline skipped: nghttpx not found (Debian package "
                 "nghttp2-proxy; scripts/setup.sh "
                 "installs it)"
               : std::string();
}

bool NghttpxProxy::start(std::uint16_t backendPort, const std::string &backendName,
                         const std::string &backendCa, const std::string &certFile,
                         const std::string &keyFile, std::string *error)
{
    const std::string path = benchtext::inPath("nghttpx");
    if (path.empty()) {
        *error = missing();
        return false;
    }
    m_port = testnet::closedPort();
    // One worker, no configuration file, windows large enough that flow control does not throttle a 1 MiB
    // stream (its defaults give the backend a 64 KiB stream window), no logs.
    std::vector<std::string> args = {"nghttpx",
                                     "--conf=/dev/null",
                                     "--frontend=127.0.0.1," + std::to_string(m_port),
                                     "--backend=127.0.0.1," + std::to_string(backendPort) +
                                         ";;tls;proto=h2;sni=" + backendName,
                                     "--cacert=" + backendCa,
                                     "--workers=1",
                                     "--no-ocsp",
                                     "--frontend-http2-window-size=4M",
                                     "--frontend-http2-connection-window-size=16M",
                                     "--backend-http2-window-size=4M",
                                     "--backend-http2-connection-window-size=16M",
                                     "--accesslog-file=/dev/null",
                                     "--errorlog-file=/dev/null",
                                     keyFile,
                                     certFile};
    m_flags.clear();
    for (size_t i = 3; i + 2 < args.size(); ++i)
        if (args[i].rfind("--", 0) == 0 && args[i].find("log-file") == std::string::npos &&
            args[i].find("cacert") == std::string::npos)
            m_flags += (m_flags.empty() ? "" : " ") + args[i];
    std::vector<char *> argv;
    for (std::string &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t parent = getpid();
    m_pid = fork();
    if (m_pid < 0) {
        *error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (m_pid == 0) {
        // Only async-signal-safe calls here: the parent has threads.
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
    setpgid(m_pid, m_pid);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            *error = "nghttpx exited at start (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
            return false;
        }
        if (accepts(m_port)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    *error = "nghttpx did not accept on 127.0.0.1:" + std::to_string(m_port) + " within 10 s";
    return false;
}

void NghttpxProxy::stop()
{
    if (m_pid <= 0) return;
    kill(-m_pid, SIGTERM); // the group this object created: nghttpx's master and its worker
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
}

} // namespace rpcscope::bench
