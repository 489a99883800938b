#pragma once

#include "faultset.h"

#include <memory>
#include <string>
#include <vector>

namespace rpcscope {

// "--fault RULE" (repeatable) and "--faults FILE.json" (repeatable), taken out of args before the other
// options are parsed: the rules in the order given, numbered from 1; null when there are none. A malformed
// rule sets `error` to one line naming it and what is wrong.
std::shared_ptr<FaultSet> takeFaults(std::vector<std::string> *args, std::string *error);

// At the end of a capture, on stderr: each rule and how often it acted.
void reportFaultHits(const FaultSet &faults);

} // namespace rpcscope
