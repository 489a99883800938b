#pragma once

#include <mutex>
#include <string>

namespace rpcscope::lab {

// A client-side retry budget shared by every call of one client, as in Finagle or Envoy: each request
// deposits `ratio` tokens, `minRetries` come free, and each retry spends one. Thread-safe.
class RetryBudget
{
public:
    RetryBudget(double ratio, int minRetries) : m_ratio(ratio), m_min(minRetries) {}

    void deposit();
    // Spends a token if one is left; otherwise says why not.
    bool withdraw(std::string *why);

private:
    std::mutex m_mu;
    const double m_ratio;
    const int m_min;
    int m_requests = 0;
    int m_retries = 0;
};

} // namespace rpcscope::lab
