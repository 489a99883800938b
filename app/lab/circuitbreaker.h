#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

namespace rpcscope::lab {

// A count-based circuit breaker, as in seed 001: an error-rate window with a minimum number of requests, an
// open duration, and one half-open probe whose outcome closes or re-opens it. Thread-safe.
class CircuitBreaker
{
public:
    enum class State
    {
        Closed,
        Open,
        HalfOpen
    };
    struct Options
    {
        int window = 10;        // last N outcomes
        int minRequests = 5;    // no verdict before this many
        double errorRate = 0.5; // open at or above this failure ratio
        std::int64_t openNs = 200'000'000;
    };
    // Called on every transition, with the new state, under no lock.
    using Listener = std::function<void(State from, State to)>;

    CircuitBreaker(Options options, Listener listener) : m_options(options), m_listener(std::move(listener))
    {
    }

    // Whether a call may go out now; an open breaker past its open duration lets one probe through.
    bool allow(std::int64_t nowNs);
    void record(bool success, std::int64_t nowNs);
    State state() const;

    static const char *name(State s);

private:
    void transition(State to, std::unique_lock<std::mutex> &lock);

    const Options m_options;
    const Listener m_listener;
    mutable std::mutex m_mu;
    State m_state = State::Closed;
    std::deque<bool> m_outcomes;
    std::int64_t m_openedNs = 0;
    bool m_probeOut = false;
};

} // namespace rpcscope::lab
