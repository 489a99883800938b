#include "labcomparison.h"

#include "scenario.h"

namespace rpcscope::lab {

const std::vector<LabComparison> &labComparisons()
{
    static const std::vector<LabComparison> comparisons{
        {"storm-vs-throttling",
         "Retry storm against retryThrottling",
         "amplification 4 against close to 1: throttling stops the retries once its tokens run low.",
         {"retry-storm", {}, "retry-storm"},
         {"retry-throttling", {}, "retry-throttling"}},
        {"bulkhead-shared-vs-isolated",
         "Bulkhead: shared pool against isolated pools",
         "the healthy Call method's latency drops from a slow call's time to a few ms; the surplus Search "
         "calls are rejected before the wire.",
         {"bulkhead", {{"phase", "1"}}, "bulkhead (shared pool)"},
         {"bulkhead", {{"phase", "2"}}, "bulkhead (isolated)"}},
    };
    return comparisons;
}

const LabComparison *findLabComparison(const std::string &name)
{
    for (const LabComparison &c : labComparisons())
        if (c.name == name) return &c;
    return nullptr;
}

bool resolveLabComparison(const std::string &spec, LabComparison *out, std::string *error)
{
    if (const LabComparison *c = findLabComparison(spec)) {
        *out = *c;
        return true;
    }
    std::string known;
    for (const LabComparison &c : labComparisons())
        known += (known.empty() ? "" : ", ") + c.name;
    const size_t comma = spec.find(',');
    if (comma == std::string::npos) {
        *error = "unknown comparison '" + spec + "' (known: " + known + "; or two scenarios as A,B)";
        return false;
    }
    const std::string a = spec.substr(0, comma), b = spec.substr(comma + 1);
    for (const std::string &name : {a, b}) {
        if (!findScenario(name)) {
            *error = "unknown scenario '" + name + "' in '" + spec + "' (rpcscope-cli list shows them)";
            return false;
        }
    }
    *out = LabComparison{spec, a + " against " + b, {}, {a, {}, a}, {b, {}, b}};
    return true;
}

} // namespace rpcscope::lab
