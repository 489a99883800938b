#include "hugepageheap.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace rpcscope {

namespace {
// Set for the second start: GLIBC_TUNABLES as the user had it ("=" and its value), or "-" when unset.
constexpr char kRestarted[] = "RPCSCOPE_HEAP_RESTARTED";
constexpr char kTunable[] = "glibc.malloc.hugetlb";

void restoreTunables(const char *was)
{
    if (was[0] == '=')
        setenv("GLIBC_TUNABLES", was + 1, 1);
    else
        unsetenv("GLIBC_TUNABLES");
}

bool kernelHasHugePages()
{
    std::FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
    if (!f) return false;
    char line[128] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    // "always [madvise] never": the bracketed one is in force. madvise is what glibc asks for.
    return read && !std::strstr(line, "[never]");
}
} // namespace

void restartWithHugePageHeap(char **argv)
{
#if defined(__linux__) && defined(__GLIBC__)
    if (const char *was = std::getenv(kRestarted)) {
        const std::string copy = was; // restoreTunables and unsetenv may free it
        restoreTunables(copy.c_str());
        unsetenv(kRestarted);
        return;
    }
    // Only when asked for (hugepageheap.h says why not by default).
    if (const char *opt = std::getenv("RPCSCOPE_HUGEPAGES"); !opt || std::strcmp(opt, "1") != 0) return;
    // Something is preloaded: a memory tool (valgrind, which would not follow the new start, or heaptrack) or
    // another allocator, which glibc's tunable does not concern.
    if (const char *preload = std::getenv("LD_PRELOAD"); preload && *preload) return;
    const char *tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, kTunable)) return; // the user's own choice stands
    if (!kernelHasHugePages()) return;
    const std::string was = tunables ? std::string("=") + tunables : std::string("-");
    const std::string with =
        (tunables && *tunables ? std::string(tunables) + ":" : std::string()) + kTunable + "=1";
    setenv(kRestarted, was.c_str(), 1);
    setenv("GLIBC_TUNABLES", with.c_str(), 1);
    // By the binary's own path, not /proc/self/exe: the kernel names the process after the file it runs
    // (ps, top and pgrep would say "exe").
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        execv(self, argv);
    }
    // Could not start again (no /proc, the binary gone): go on as we are.
    restoreTunables(was.c_str());
    unsetenv(kRestarted);
#else
    (void)argv;
#endif
}

} // namespace rpcscope
