#include "circuitbreaker.h"

namespace rpcscope::lab {

const char *CircuitBreaker::name(State s)
{
    switch (s) {
    case State::Closed:
        return "closed";
    case State::Open:
        return "open";
    case State::HalfOpen:
        return "half-open";
    }
    return "?";
}

CircuitBreaker::State CircuitBreaker::state() const
{
    std::lock_guard lk(m_mu);
    return m_state;
}

void CircuitBreaker::transition(State to, std::unique_lock<std::mutex> &lock)
{
    const State from = m_state;
    m_state = to;
    if (to == State::Open) m_probeOut = false;
    if (to == State::Closed) m_outcomes.clear();
    lock.unlock();
    if (m_listener) m_listener(from, to);
    lock.lock();
}

bool CircuitBreaker::allow(std::int64_t nowNs)
{
    std::unique_lock lk(m_mu);
    if (m_state == State::Closed) return true;
    if (m_state == State::Open) {
        if (nowNs - m_openedNs < m_options.openNs) return false;
        transition(State::HalfOpen, lk);
    }
    // Half-open: exactly one probe at a time.
    if (m_probeOut) return false;
    m_probeOut = true;
    return true;
}

void CircuitBreaker::record(bool success, std::int64_t nowNs)
{
    std::unique_lock lk(m_mu);
    if (m_state == State::HalfOpen) {
        m_probeOut = false;
        if (!success) m_openedNs = nowNs;
        transition(success ? State::Closed : State::Open, lk);
        return;
    }
    if (m_state != State::Closed) return;
    m_outcomes.push_back(success);
    while (int(m_outcomes.size()) > m_options.window)
        m_outcomes.pop_front();
    if (int(m_outcomes.size()) < m_options.minRequests) return;
    int failures = 0;
    for (bool ok : m_outcomes)
        failures += !ok;
    if (double(failures) / double(m_outcomes.size()) >= m_options.errorRate) {
        m_openedNs = nowNs;
        transition(State::Open, lk);
    }
}

} // namespace rpcscope::lab
