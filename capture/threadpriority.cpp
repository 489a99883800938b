#include "threadpriority.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace rpcscope {

namespace {

// The lowered threads on the idle policy's terms, by id, in slots a signal handler can walk without a lock
// (stopUsingIdlePolicy()); and how many captures are behind.
constexpr size_t kSlots = 256;
std::atomic<pid_t> g_threads[kSlots];
std::atomic<bool> g_noIdle{false};
std::mutex g_mutex; // orders captureFallingBehind() and lowerThisThreadsPriority()'s choice
int g_behind = 0;   // the captures behind, +1 and -1 in any order

int policyFor(int behind)
{
    return behind > 0 || g_noIdle.load() || !captureUsesIdlePolicy() ? SCHED_OTHER : SCHED_IDLE;
}

// A plain system call: async-signal-safe (errno is kept, for a signal handler's sake). False when the kernel
// refused it.
bool setPolicy(pid_t tid, int policy)
{
    const int saved = errno;
    const sched_param none{};
    // The nice value stays what it was: for the normal and idle policies it is kept across the change.
    const bool done = syscall(SYS_sched_setscheduler, tid, policy, &none) == 0;
    errno = saved;
    return done;
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
    std::lock_guard lk(g_mutex);
    bool listed = false;
    for (size_t i = 0; i < kSlots && !listed; ++i) {
        pid_t expected = 0;
        listed = g_threads[i].load() == self || g_threads[i].compare_exchange_strong(expected, self);
    }
    if (!listed) return; // with no slot left it keeps the nice step only
    // A stop signal is for a thread that runs now: on this one, which may wait for a busy machine, the
    // handler (stopUsingIdlePolicy()) would run only as late as the work it is to hurry.
    sigset_t stops;
    sigemptyset(&stops);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        sigaddset(&stops, sig);
    pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    // Refused (a sandbox's seccomp filter, say): the thread keeps the nice step alone, and is not listed for
    // later changes it would refuse too.
    if (!setPolicy(self, policyFor(g_behind))) forgetThisThread();
}

void forgetThisThread()
{
    const pid_t self = gettid();
    for (std::atomic<pid_t> &slot : g_threads) {
        pid_t expected = self;
        slot.compare_exchange_strong(expected, 0);
    }
}

int capturesBehind()
{
    std::lock_guard lk(g_mutex);
    return g_behind;
}

void captureFallingBehind(bool behind)
{
    std::lock_guard lk(g_mutex);
    const int before = policyFor(g_behind);
    // Not clamped: a capture's "caught up" can come in before its "behind" (two threads), and the sum is
    // right once both have.
    g_behind += behind ? 1 : -1;
    const int policy = policyFor(g_behind);
    if (policy == before) return;
    for (const std::atomic<pid_t> &slot : g_threads)
        if (const pid_t tid = slot.load()) setPolicy(tid, policy);
}

void stopUsingIdlePolicy()
{
    if (g_noIdle.exchange(true)) return;
    for (const std::atomic<pid_t> &slot : g_threads)
        if (const pid_t tid = slot.load()) setPolicy(tid, SCHED_OTHER);
}

} // namespace rpcscope
