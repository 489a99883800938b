#include "threadpriority.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sched.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rpcscope {

namespace {

// The lowered threads (by id) and how many captures are behind: all that captureFallingBehind() needs.
struct Lowered
{
    std::mutex mutex;
    std::vector<pid_t> threads;
    int behind = 0; // the captures behind, +1 and -1 in any order
};

Lowered &lowered()
{
    static Lowered l;
    return l;
}

int policyFor(int behind)
{
    return behind > 0 || !captureUsesIdlePolicy() ? SCHED_OTHER : SCHED_IDLE;
}

void setPolicy(pid_t tid, int policy)
{
    const sched_param none{};
    // The nice value stays what it was: for the normal and idle policies it is kept across the change.
    sched_setscheduler(tid, policy, &none);
}

// Whether a thread at this process's nice value plus the increment can leave the idle policy again. Tried on
// a thread of its own, so that a failure strands nobody.
bool idlePolicyCanBeUndone(int increment)
{
    bool undone = false;
    std::thread probe([&] {
        errno = 0;
        const int now = getpriority(PRIO_PROCESS, id_t(gettid()));
        if (errno != 0) return;
        setpriority(PRIO_PROCESS, id_t(gettid()), std::min(19, now + increment));
        const sched_param none{};
        if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) return;
        undone = sched_setscheduler(0, SCHED_OTHER, &none) == 0;
    });
    probe.join();
    return undone;
}

} // namespace

int captureNiceIncrement()
{
    constexpr int kDefault = 10;
    const char *env = std::getenv("RPCSCOPE_CAPTURE_NICE");
    if (!env || !*env) return kDefault;
    char *end = nullptr;
    const long n = std::strtol(env, &end, 10);
    return *end || n < 0 || n > 19 ? kDefault : int(n);
}

bool captureUsesIdlePolicy()
{
    static const bool uses = [] {
        const int increment = captureNiceIncrement();
        const char *env = std::getenv("RPCSCOPE_CAPTURE_IDLE");
        if (increment == 0 || (env && std::strcmp(env, "0") == 0)) return false;
        return idlePolicyCanBeUndone(increment);
    }();
    return uses;
}

void lowerThisThreadsPriority()
{
    const int increment = captureNiceIncrement();
    if (increment == 0) return;
    const pid_t self = gettid();
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, id_t(self));
    if (errno == 0) setpriority(PRIO_PROCESS, id_t(self), std::min(19, now + increment));
    if (!captureUsesIdlePolicy()) return;
    Lowered &l = lowered();
    std::lock_guard lk(l.mutex);
    if (std::find(l.threads.begin(), l.threads.end(), self) == l.threads.end()) l.threads.push_back(self);
    setPolicy(self, policyFor(l.behind));
}

void forgetThisThread()
{
    Lowered &l = lowered();
    std::lock_guard lk(l.mutex);
    l.threads.erase(std::remove(l.threads.begin(), l.threads.end(), gettid()), l.threads.end());
}

int capturesBehind()
{
    Lowered &l = lowered();
    std::lock_guard lk(l.mutex);
    return l.behind;
}

void captureFallingBehind(bool behind)
{
    Lowered &l = lowered();
    std::lock_guard lk(l.mutex);
    const int before = policyFor(l.behind);
    // Not clamped: a capture's "caught up" can come in before its "behind" (two threads), and the sum is
    // right once both have.
    l.behind += behind ? 1 : -1;
    const int policy = policyFor(l.behind);
    if (policy == before) return;
    for (const pid_t tid : l.threads)
        setPolicy(tid, policy);
}

} // namespace rpcscope
