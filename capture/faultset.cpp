#include "faultset.h"

namespace rpcscope {

FaultSet::FaultSet(std::vector<FaultRule> rules)
    : m_rules(std::move(rules)), m_counters(std::make_unique<Counters[]>(m_rules.size()))
{
}

} // namespace rpcscope
