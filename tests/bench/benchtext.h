#pragma once

// What every benchmark prints with: progress lines on stderr (stdout is the table alone), a number as a
// table cell, and the machine's load beside the figures, since these machines are shared.

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

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

} // namespace benchtext
