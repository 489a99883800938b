// capture's fault options: the rules that make the proxy misbehave, and what they did.

#include "faultoptions.h"

#include "faultsfile.h"

#include <cstdio>

namespace rpcscope {

std::shared_ptr<FaultSet> takeFaults(std::vector<std::string> *args, std::string *error)
{
    std::vector<FaultRule> rules;
    std::vector<std::string> rest;
    for (size_t i = 0; i < args->size(); ++i) {
        const std::string &a = (*args)[i];
        if (a != "--fault" && a != "--faults") {
            rest.push_back(a);
            continue;
        }
        if (i + 1 >= args->size() || (*args)[i + 1].rfind("--", 0) == 0) {
            *error = "option " + a +
                     (a == "--fault" ? " needs a rule, as --fault \"blackhole nth=1\""
                                     : " needs a JSON file of rules");
            return nullptr;
        }
        const std::string &value = (*args)[++i];
        if (a == "--fault") {
            FaultRule rule;
            std::string why;
            const std::string where = "--fault '" + value + "'";
            if (!parseFaultRule(value, &rule, &why)) {
                *error = where + ": " + why;
                return nullptr;
            }
            rules.push_back(std::move(rule));
        } else {
            std::vector<FaultRule> fromFile;
            if (!loadFaultsFile(QString::fromStdString(value), &fromFile, error)) {
                *error = "--faults " + *error;
                return nullptr;
            }
            for (FaultRule &r : fromFile)
                rules.push_back(std::move(r));
        }
    }
    *args = std::move(rest);
    if (rules.empty()) return nullptr;
    return std::make_shared<FaultSet>(std::move(rules));
}

void reportFaultHits(const FaultSet &faults)
{
    const auto rules = faults.snapshot();
    for (size_t i = 0; i < rules->rules.size(); ++i) {
        const std::uint64_t hits = faults.hits(i);
        std::fprintf(stderr, "rpcscope-cli: fault rule %zu (%s): %llu %s\n", i + 1,
                     rules->rules[i].text.c_str(), static_cast<unsigned long long>(hits),
                     hits == 1 ? "hit" : "hits");
    }
}

} // namespace rpcscope
