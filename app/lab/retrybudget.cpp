#include "retrybudget.h"

#include <sstream>

namespace rpcscope::lab {

void RetryBudget::deposit()
{
    std::lock_guard lk(m_mu);
    ++m_requests;
}

bool RetryBudget::withdraw(std::string *why)
{
    std::lock_guard lk(m_mu);
    const double tokens = m_min + m_ratio * m_requests - m_retries;
    if (tokens >= 1 - 1e-9) {
        ++m_retries;
        return true;
    }
    std::ostringstream percent;
    percent.precision(0);
    percent << std::fixed << m_ratio * 100;
    *why = "retry budget spent: " + std::to_string(m_retries) + " retries for " + std::to_string(m_requests) +
           " requests at " + percent.str() + "% (+" + std::to_string(m_min) + ")";
    return false;
}

} // namespace rpcscope::lab
