#pragma once

// The cores threads may run on, for tests of the relay's CPU steering (capture/cpusteering.h).

#include "testnet.h"

#include <dirent.h>
#include <fstream>
#include <functional>
#include <sched.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace threadcpus {

inline std::vector<int> cpusOf(const cpu_set_t &set)
{
    std::vector<int> out;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) out.push_back(i);
    return out;
}

// The cores this thread may use.
inline std::vector<int> allowedCpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
    return cpusOf(set);
}

// For every thread of this process named `name`, the cores it may run on.
inline std::vector<std::vector<int>> namedThreadsCpus(const std::string &name)
{
    std::vector<std::vector<int>> out;
    DIR *d = opendir("/proc/self/task");
    if (!d) return out;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string got;
        std::getline(comm, got);
        if (got != name) continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(pid_t(std::stol(e->d_name)), sizeof set, &set) == 0) out.push_back(cpusOf(set));
    }
    closedir(d);
    return out;
}

// Runs `work` on a thread allowed only core `cpu`; false if it could not be pinned or `work` failed.
inline bool onCore(int cpu, const std::function<bool()> &work)
{
    bool ok = false;
    std::thread t([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) return;
        ok = work();
    });
    t.join();
    return ok;
}

// Whether the kernel reports the core a loopback sender sent from as the receiving socket's incoming core
// (SO_INCOMING_CPU), which steering relies on: a byte sent from each of `cpus` in turn.
inline bool loopbackReportsSendersCore(const std::vector<int> &cpus)
{
#ifdef SO_INCOMING_CPU
    const int l = testnet::listenLoopback();
    if (l < 0) return false;
    const int from = testnet::connectLoopback(testnet::localPort(l));
    const int to = from >= 0 ? accept(l, nullptr, nullptr) : -1;
    bool ok = to >= 0;
    if (ok) testnet::setIoTimeouts(to, 10);
    for (size_t i = 0; ok && i < cpus.size(); ++i) {
        ok = onCore(cpus[i], [&] { return send(from, "p", 1, 0) == 1; });
        char c;
        int got = -1;
        socklen_t len = sizeof got;
        ok = ok && recv(to, &c, 1, 0) == 1 && getsockopt(to, SOL_SOCKET, SO_INCOMING_CPU, &got, &len) == 0 &&
             got == cpus[i];
    }
    for (int fd : {from, to, l})
        if (fd >= 0) close(fd);
    return ok;
#else
    (void)cpus;
    return false;
#endif
}

} // namespace threadcpus
