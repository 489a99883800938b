#include "threadpriority.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>

namespace rpcscope {

int captureNiceIncrement()
{
    constexpr int kDefault = 10;
    const char *env = std::getenv("RPCSCOPE_CAPTURE_NICE");
    if (!env || !*env) return kDefault;
    char *end = nullptr;
    const long n = std::strtol(env, &end, 10);
    return *end || n < 0 || n > 19 ? kDefault : int(n);
}

void lowerThisThreadsPriority()
{
    const int increment = captureNiceIncrement();
    if (increment == 0) return;
    const id_t self = id_t(gettid());
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, self);
    if (errno == 0) setpriority(PRIO_PROCESS, self, std::min(19, now + increment));
}

} // namespace rpcscope
