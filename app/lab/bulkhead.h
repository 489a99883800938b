#pragma once

#include <chrono>
#include <semaphore>

namespace rpcscope::lab {

// A client-side bulkhead for one method: at most `permits` of its calls at once, so a slow method cannot take
// every worker of a server it shares with healthy ones. A call that gets no permit within the acquire
// timeout fails without a request. Thread-safe.
class Bulkhead
{
public:
    explicit Bulkhead(int permits) : m_permits(permits) {}

    bool tryAcquire(std::chrono::milliseconds timeout) { return m_permits.try_acquire_for(timeout); }
    void release() { m_permits.release(); }

private:
    std::counting_semaphore<1024> m_permits;
};

} // namespace rpcscope::lab
