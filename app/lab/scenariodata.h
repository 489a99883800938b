#pragma once

#include "scenario.h"

#include <string>
#include <vector>

namespace rpcscope::lab {

// A scenario's data: what resources/scenarios/*.json say about it (its title, explanation, "look for" hint
// and parameters), so its text can be edited without touching its code. The explanation a Scenario carries
// is the explanation's sentences, then "Look for: " and the hint, then the notes, joined by single spaces.
struct ScenarioText
{
    std::string source; // the data file it came from
    std::string name;
    std::string title;
    std::string explanation;
    std::vector<ScenarioParam> params;
};

// Reads one data file ({"scenarios": [...]}) into *out; false, with the reason and `source` in *error, when
// it is malformed: not JSON, a field missing, of the wrong type or unknown, a parameter twice, a default it
// would refuse as a value.
bool parseScenarioData(const std::string &json, const std::string &source, std::vector<ScenarioText> *out,
                       std::string *error);
// Every data file compiled into the lab (the Qt resource :/scenarios/*.json), in name order.
bool loadScenarioData(std::vector<ScenarioText> *out, std::string *error);
// The data files compiled in, by name ("retry.json").
std::vector<std::string> scenarioDataFiles();
// Gives each scenario its data, matched by name. Every scenario must have data, once, and all data a
// scenario.
bool bindScenarioData(std::vector<Scenario> *scenarios, const std::vector<ScenarioText> &texts,
                      std::string *error);

} // namespace rpcscope::lab
