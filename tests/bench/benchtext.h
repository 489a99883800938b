#pragma once

// What every benchmark prints with: progress lines on stderr (stdout is the table alone), a number as a
// table cell, and the machine's load beside the figures, since these machines are shared.

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace benchtext {

// One line on stderr, after the benchmark's own name.
template <class... Args> void progress(const char *format, Args... args)
{
    std::fprintf(stderr, "%s: ", program_invocation_short_name);
    if constexpr (sizeof...(Args) == 0)
        std::fputs(format, stderr);
    else
        std::fprintf(stderr, format, args...);
    std::fprintf(stderr, "\n");
}

inline std::string fmt(const char *format, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// The 1, 5 and 15 minute load averages, as the kernel gives them.
inline std::string loadAverage()
{
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

// A program's path: the first executable of that name on PATH, else in /usr/sbin (where Debian puts some,
// and an ordinary user's PATH may leave out); empty when there is none.
inline std::string inPath(const char *name)
{
    const char *env = std::getenv("PATH");
    const std::string dirs = env ? env : "/usr/bin:/bin";
    for (size_t start = 0; start <= dirs.size();) {
        const size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string candidate = dirs.substr(start, end - start) + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    const std::string sbin = std::string("/usr/sbin/") + name;
    return access(sbin.c_str(), X_OK) == 0 ? sbin : std::string();
}

} // namespace benchtext
