#pragma once
// What the ingestion-burst test and benchmark need around a real rpcscope process (Linux): its ingestion
// endpoint's JSON port, a burst of JSON lines sent to it, and, from outside, how its GUI thread and memory
// fare.

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <set>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/types.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace burstprobe {

inline int connectLoopback(std::uint16_t port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
}

// A loopback port that accepts connections and nothing more: the capture's target, which the window checks is
// reachable before it starts (no client ever connects through the relay).
struct Target
{
    int fd = -1;
    std::uint16_t port = 0;
    Target()
    {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 && ::listen(fd, 16) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
            port = ntohs(a.sin_port);
    }
    ~Target() { ::close(fd); }
    Target(const Target &) = delete;
    Target &operator=(const Target &) = delete;
};

// TCP ports process `pid` listens on, from its socket inodes and /proc/net/tcp.
inline std::vector<std::uint16_t> listeningPorts(pid_t pid)
{
    std::set<std::string> inodes;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    if (DIR *d = ::opendir(dir.c_str())) {
        while (dirent *e = ::readdir(d)) {
            char target[256];
            const ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
            if (n <= 0) continue;
            const std::string t(target, size_t(n));
            if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
        }
        ::closedir(d);
    }
    std::vector<std::uint16_t> ports;
    std::ifstream tcp("/proc/net/tcp");
    std::string line;
    std::getline(tcp, line);
    while (std::getline(tcp, line)) {
        std::istringstream in(line);
        std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
        in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
        if (state != "0A" || !inodes.count(inode)) continue;
        ports.push_back(std::uint16_t(std::stoul(local.substr(local.find(':') + 1), nullptr, 16)));
    }
    return ports;
}

// Which of `ports` answers a JSON line with "ok": the ingestion endpoint's JSON port, or 0.
inline std::uint16_t findJsonPort(const std::vector<std::uint16_t> &ports)
{
    for (std::uint16_t port : ports) {
        const int fd = connectLoopback(port);
        if (fd < 0) continue;
        const std::string probe = "{\"kind\":\"custom\",\"label\":\"probe\"}\n";
        [[maybe_unused]] const ssize_t w = ::send(fd, probe.data(), probe.size(), MSG_NOSIGNAL);
        pollfd p{fd, POLLIN, 0};
        char buf[16] = {};
        const bool ok =
            ::poll(&p, 1, 2000) > 0 && ::read(fd, buf, sizeof buf - 1) >= 2 && buf[0] == 'o' && buf[1] == 'k';
        ::close(fd);
        if (ok) return port;
    }
    return 0;
}

// One burst of `count` JSON-lines events on one connection: written as fast as the endpoint reads them (TCP
// backpressure holds the writer), its answers counted on a thread of their own.
class Burst
{
public:
    Burst(std::uint16_t port, int count) : m_count(count)
    {
        m_fd = connectLoopback(port);
        if (m_fd < 0) return;
        m_reader = std::thread([this] {
            char buf[65536];
            ssize_t n;
            while ((n = ::read(m_fd, buf, sizeof buf)) > 0)
                for (ssize_t k = 0; k < n; ++k)
                    if (buf[k] == '\n') ++m_answers;
        });
        m_writer = std::thread([this] {
            std::string chunk;
            for (int i = 0; i < m_count && !m_stop; ++i) {
                chunk += "{\"kind\":\"";
                chunk += i % 10 == 0 ? "rejection" : "custom";
                chunk += "\",\"label\":\"burst\",\"detail\":\"event " + std::to_string(i) + "\"}\n";
                if (chunk.size() < 65536 && i + 1 < m_count) continue;
                for (size_t off = 0; off < chunk.size() && !m_stop;) {
                    const ssize_t w = ::send(m_fd, chunk.data() + off, chunk.size() - off, MSG_NOSIGNAL);
                    if (w <= 0) {
                        m_stop = true;
                        break;
                    }
                    off += size_t(w);
                }
                m_written = i + 1;
                chunk.clear();
            }
            m_writeDone = true;
        });
    }
    ~Burst()
    {
        m_stop = true;
        if (m_fd >= 0) ::shutdown(m_fd, SHUT_RDWR);
        if (m_writer.joinable()) m_writer.join();
        if (m_reader.joinable()) m_reader.join();
        if (m_fd >= 0) ::close(m_fd);
    }
    bool connected() const { return m_fd >= 0; }
    bool writeDone() const { return m_writeDone; }
    int written() const { return m_written; }  // lines handed to the socket
    int answered() const { return m_answers; } // "ok" (or error) lines received

private:
    int m_count;
    int m_fd = -1;
    std::atomic<bool> m_stop{false}, m_writeDone{false};
    std::atomic<int> m_written{0}, m_answers{0};
    std::thread m_writer, m_reader;
};

// The process's peak resident memory so far (VmHWM), in bytes; 0 once it is gone.
inline std::uint64_t peakRss(pid_t pid)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    std::uint64_t kb = 0;
    while (status >> key) {
        if (key == "VmHWM:") {
            status >> kb;
            return kb * 1024;
        }
        std::string rest;
        std::getline(status, rest);
    }
    return 0;
}

// CPU time the process's main (GUI) thread has used so far, in seconds.
inline double mainThreadCpuSeconds(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat");
    std::string all;
    std::getline(f, all);
    const size_t paren = all.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream in(all.substr(paren + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

// Samples the main (GUI) thread's scheduler state every millisecond: an event loop with nothing to do sleeps
// in poll(), so the longest stretch without a sleeping sample bounds how long the loop went without a turn
// (input, repaints and a quit all wait for one).
class LoopWatch
{
public:
    explicit LoopWatch(pid_t pid)
        : m_path("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat")
    {
        m_thread = std::thread([this] {
            auto lastSleep = std::chrono::steady_clock::now();
            while (!m_stop) {
                const char s = state();
                const auto now = std::chrono::steady_clock::now();
                if (s == 0) break;
                const double at = std::chrono::duration<double>(now.time_since_epoch()).count();
                if (s != 'R') {
                    lastSleep = now;
                    m_sleptAt = at;
                } else {
                    m_ranAt = at;
                }
                const double busy = std::chrono::duration<double>(now - lastSleep).count();
                if (busy > m_longest) m_longest = busy;
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
    }
    ~LoopWatch()
    {
        m_stop = true;
        m_thread.join();
    }
    void reset() { m_longest = 0; }
    double longestBusySeconds() const { return m_longest; }
    // Seconds since the thread was last seen waiting.
    double busyForSeconds() const
    {
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        return m_sleptAt == 0 ? 0 : now - m_sleptAt;
    }

    // Seconds since the thread was last seen running.
    double idleForSeconds() const
    {
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        return m_ranAt == 0 ? 0 : now - m_ranAt;
    }

private:
    char state() const
    {
        std::ifstream f(m_path);
        std::string all;
        std::getline(f, all);
        const size_t paren = all.rfind(')');
        return paren == std::string::npos || paren + 2 >= all.size() ? 0 : all[paren + 2];
    }
    std::string m_path;
    std::atomic<bool> m_stop{false};
    std::atomic<double> m_longest{0}, m_sleptAt{0}, m_ranAt{0};
    std::thread m_thread;
};

} // namespace burstprobe
