#pragma once

// The lab's built-in comparisons (issue 20, "Compare two runs"): two scenario runs whose statistics tell a
// story side by side. `rpcscope-cli compare --lab NAME` and the Scenario dock's Compare run both and compare
// them.

#include <map>
#include <string>
#include <vector>

namespace rpcscope::lab {

struct LabComparison
{
    struct Side
    {
        std::string scenario;
        std::map<std::string, std::string> overrides; // parameters changed from the scenario's defaults
        std::string label;                            // how the comparison names this run
    };
    std::string name;  // "storm-vs-throttling"
    std::string title; // one line for menus
    std::string lookFor;
    Side a, b;
};

// storm-vs-throttling: retry-storm against retry-throttling; bulkhead-shared-vs-isolated: the bulkhead
// scenario's shared pool against its per-method bulkheads (its phase parameter).
const std::vector<LabComparison> &labComparisons();
const LabComparison *findLabComparison(const std::string &name);
// A named comparison, or two scenario names joined by a comma ("retry-basic,no-retry-policy"), each run with
// its defaults. False with the reason when neither.
bool resolveLabComparison(const std::string &spec, LabComparison *out, std::string *error);

} // namespace rpcscope::lab
