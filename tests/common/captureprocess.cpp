#include "captureprocess.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace hostile {

namespace {

// "12.5 MB in memory" or "640 KB in memory" in a progress line, in bytes; -1 when the line has none.
double reportedBytes(const std::string &line)
{
    const size_t at = line.find(" in memory");
    if (at == std::string::npos) return -1;
    const size_t unitAt = line.rfind(' ', at - 1);
    if (unitAt == std::string::npos) return -1;
    const std::string unit = line.substr(unitAt + 1, at - unitAt - 1);
    const size_t numAt = line.rfind(' ', unitAt - 1);
    const std::string number = line.substr(numAt == std::string::npos ? 0 : numAt + 1, unitAt - numAt - 1);
    char *end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (end == number.c_str()) return -1;
    if (unit == "KB") return v * 1024;
    if (unit == "MB") return v * 1024 * 1024;
    return -1;
}

long statusKb(pid_t pid, const char *field)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const std::string key = std::string(field) + ":";
    while (std::getline(f, line))
        if (line.compare(0, key.size(), key) == 0) return std::atol(line.c_str() + key.size());
    return 0;
}

} // namespace

std::string CaptureProcess::Exit::describe() const
{
    std::string s;
    if (hung) s = "did not end within the time given and was killed; ";
    if (exited) return s + "exited with code " + std::to_string(code);
    return s + "ended by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

CaptureProcess::~CaptureProcess()
{
    if (m_pid > 0 && !m_stopped) {
        kill(m_pid, SIGKILL);
        waitpid(m_pid, nullptr, 0);
    }
    if (m_reader.joinable()) m_reader.join();
}

bool CaptureProcess::start(const std::string &cli, std::uint16_t targetPort, const std::string &out,
                           const std::vector<std::string> &extra, std::string *error)
{
    int outPipe[2], errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
        *error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    std::vector<std::string> args{
        cli, "capture", "--progress", "--target", "127.0.0.1:" + std::to_string(targetPort), "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char *> argv;
    for (std::string &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2);
    const int rc = posix_spawn(&m_pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(outPipe[1]);
    close(errPipe[1]);
    if (rc != 0) {
        close(outPipe[0]);
        close(errPipe[0]);
        m_pid = -1;
        *error = "cannot run " + cli + ": " + std::strerror(rc);
        return false;
    }
    m_reader = std::thread([this, o = outPipe[0], e = errPipe[0]] { readLoop(o, e); });
    std::unique_lock lk(m_mu);
    m_cv.wait_for(lk, std::chrono::seconds(20), [&] { return m_listenPort != 0 || m_eof; });
    if (m_listenPort) return true;
    *error = "rpcscope-cli capture did not say where it listens; stdout: " + m_out + " stderr: " + m_err;
    return false;
}

void CaptureProcess::readLoop(int outFd, int errFd)
{
    std::string partial[2];
    pollfd fds[2] = {{outFd, POLLIN, 0}, {errFd, POLLIN, 0}};
    int open = 2;
    char buf[16 * 1024];
    while (open > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open;
                if (!partial[i].empty()) takeLine(i == 1, partial[i]);
                continue;
            }
            partial[i].append(buf, size_t(n));
            size_t nl;
            while ((nl = partial[i].find('\n')) != std::string::npos) {
                takeLine(i == 1, partial[i].substr(0, nl));
                partial[i].erase(0, nl + 1);
            }
        }
    }
    std::lock_guard lk(m_mu);
    m_eof = true;
    m_cv.notify_all();
}

void CaptureProcess::takeLine(bool err, const std::string &line)
{
    std::lock_guard lk(m_mu);
    (err ? m_err : m_out) += line + "\n";
    if (!err && line.compare(0, 13, "listening on ") == 0) {
        const size_t colon = line.rfind(':');
        if (colon != std::string::npos) m_listenPort = std::uint16_t(std::atoi(line.c_str() + colon + 1));
    }
    if (err) {
        const double bytes = reportedBytes(line);
        if (bytes >= 0) {
            m_last = bytes;
            m_max = std::max(m_max, bytes);
            ++m_lines;
        }
    }
    m_cv.notify_all();
}

bool CaptureProcess::running() const
{
    if (m_pid <= 0 || m_stopped) return false;
    siginfo_t info{};
    // WNOWAIT: only looks, so stop() still reaps it with its rusage.
    if (waitid(P_PID, id_t(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
    return info.si_pid == 0;
}

double CaptureProcess::lastReported() const
{
    std::lock_guard lk(m_mu);
    return m_last;
}

double CaptureProcess::maxReported() const
{
    std::lock_guard lk(m_mu);
    return m_max;
}

int CaptureProcess::progressLines() const
{
    std::lock_guard lk(m_mu);
    return m_lines;
}

bool CaptureProcess::waitProgressLines(int count, int timeoutMs) const
{
    std::unique_lock lk(m_mu);
    return m_cv.wait_for(lk, std::chrono::milliseconds(timeoutMs), [&] {
        return m_lines >= count || m_eof;
    }) && m_lines >= count;
}

long CaptureProcess::rssKb() const
{
    return m_pid > 0 && !m_stopped ? statusKb(m_pid, "VmRSS") : 0;
}

long CaptureProcess::hwmKb() const
{
    return m_pid > 0 && !m_stopped ? statusKb(m_pid, "VmHWM") : 0;
}

std::string CaptureProcess::stdoutText() const
{
    std::lock_guard lk(m_mu);
    return m_out;
}

std::string CaptureProcess::stderrText() const
{
    std::lock_guard lk(m_mu);
    return m_err;
}

CaptureProcess::Exit CaptureProcess::stop(int timeoutMs)
{
    Exit e;
    if (m_pid <= 0 || m_stopped) return e;
    kill(m_pid, SIGINT);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    pid_t got = 0;
    // Writing its output may still grow it: the high-water mark is read until it is gone.
    for (;;) {
        e.peakRssKb = std::max(e.peakRssKb, statusKb(m_pid, "VmHWM"));
        got = waitpid(m_pid, &status, WNOHANG);
        if (got != 0 || std::chrono::steady_clock::now() >= deadline) break;
        usleep(10'000);
    }
    if (got == 0) {
        e.hung = true;
        kill(m_pid, SIGKILL);
        got = waitpid(m_pid, &status, 0);
    }
    m_stopped = true;
    if (m_reader.joinable()) m_reader.join();
    if (got == m_pid && WIFEXITED(status)) {
        e.exited = !e.hung;
        e.code = WEXITSTATUS(status);
    } else if (got == m_pid && WIFSIGNALED(status)) {
        e.signal = WTERMSIG(status);
    }
    return e;
}

} // namespace hostile
