#pragma once

#include "faultrule.h"
#include "labclient.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rpcscope {
class FaultSet;
} // namespace rpcscope

namespace rpcscope::lab {

class LabServer;

// An editable scenario parameter. Values travel as text (GUI fields, CLI --set key=value). Every parameter is
// a number: a count or a duration is a whole number, a percentage may have a fraction. The bounds keep a run
// within what one machine can do (a storm of 100,000 clients runs out of threads) and within what gRPC takes
// as a duration.
struct ScenarioParam
{
    enum class Kind
    {
        Count,
        Milliseconds,
        Percent,
        // Text, at most `max` characters: a gRPC service config JSON, read as retryserviceconfig.h reads it,
        ServiceConfig,
        // and fault rules in the compact syntax (faultrule.h), separated by ';' or new lines; may be empty.
        FaultRules
    };
    std::string key;
    std::string defaultValue;
    std::string description;
    Kind kind = Kind::Count;
    int max = 0; // the largest value allowed; the smallest is 0

    // Whether `value` is one this parameter takes; if not, says why in *error.
    bool accepts(const std::string &value, std::string *error) const;
    bool isText() const { return kind == Kind::ServiceConfig || kind == Kind::FaultRules; }
};

// The rules of a FaultRules parameter, split on ';' and new lines outside quotes; false with the first bad
// rule's reason (numbered from 1) in *error.
bool parseFaultRuleList(const std::string &text, std::vector<FaultRule> *out, std::string *error);

class ScenarioParams
{
public:
    ScenarioParams() = default;
    explicit ScenarioParams(std::map<std::string, std::string> values) : m_values(std::move(values)) {}
    int integer(const std::string &key) const;
    double number(const std::string &key) const;
    const std::string &text(const std::string &key) const;

private:
    std::map<std::string, std::string> m_values;
};

// What a scenario needs to run: where to send calls, the server to check against, fresh call ids.
struct ScenarioContext
{
    std::string target; // the capture proxy in front of the lab server
    const LabServer *server = nullptr;
    std::function<std::string()> nextCallId;
    // Records a client policy's decision on the timeline (breaker transitions, fast failures, ...).
    std::function<void(const std::string &kind, const std::string &detail, const std::string &callId)>
        labEvent;
    // Starts one more capture relay, labelled `label` on the timeline, in front of `target` ("host:port"),
    // and returns the address to dial. It feeds the same timeline and lives until the scenario run ends.
    // Empty on failure, with the reason in *error.
    std::function<std::string(const std::string &label, const std::string &target, std::string *error)>
        openHop;
    // The same with fault rules acting on the hop's connections (the rules for its label, or for any hop).
    std::function<std::string(const std::string &label, const std::string &target,
                              std::shared_ptr<FaultSet> faults, std::string *error)>
        openFaultHop;
};

// One call the scenario made, and what C-core 1.51 should do with it (grpc-core-retry-behaviour.md).
struct ExpectedCall
{
    std::string callId;
    int attempts = 0;    // attempts the server should see (= attempts on the wire)
    int finalStatus = 0; // grpc::StatusCode the client should get
};

struct ScenarioResult
{
    bool expectationHeld = false;
    std::string summary; // one line: what happened, and what was expected when it did not hold
    std::vector<CallResult> calls;
    std::vector<ExpectedCall> expected;
};

// A scenario: its code (name and run) and its data (title, explanation and parameters, which
// resources/scenarios/*.json hold and allScenarios() gives it).
struct Scenario
{
    using Run = std::function<ScenarioResult(const ScenarioContext &, const ScenarioParams &)>;
    // Initialised, so that registering only a name and a run ({.name = ..., .run = ...}) is warning-free.
    std::string name;
    std::string title{};
    std::string explanation{}; // what to look for on the timeline, and where C-core differs from grpc-go
    std::vector<ScenarioParam> params{};
    Run run{};

    // The defaults, overridden by `overrides`; unknown keys and malformed values are reported in `error`.
    bool resolveParams(const std::map<std::string, std::string> &overrides, ScenarioParams *out,
                       std::string *error) const;
};

// Every scenario, with its data, in the order the GUI and `rpcscope-cli list` show them. Scenario data that
// is missing or malformed is a broken build: the first call says why on stderr and aborts.
const std::vector<Scenario> &allScenarios();
const Scenario *findScenario(const std::string &name);
// The scenario groups, as name and run only (allScenarios() adds their data): seed 000, gRPC's own retries
// (scenarios.cpp); seed 001's deadline chains (scenarios_chain.cpp) and the rest (scenarios_governance.cpp,
// scenarios_connection.cpp).
void appendRetryScenarios(std::vector<Scenario> &out);
void appendChainScenarios(std::vector<Scenario> &out);
void appendGovernanceScenarios(std::vector<Scenario> &out);
// Issue 19's "verify your policy": a retry policy judged through injected faults (scenarios_policy.cpp).
void appendPolicyScenarios(std::vector<Scenario> &out);

} // namespace rpcscope::lab
