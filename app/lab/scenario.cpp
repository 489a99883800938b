#include "scenario.h"

#include "retryserviceconfig.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rpcscope::lab {

namespace {

// A bound in milliseconds, as a reader takes it in: "600000 (10 minutes)".
std::string millisText(int ms)
{
    auto unit = [](int n, const char *name) { return std::to_string(n) + " " + name + (n == 1 ? "" : "s"); };
    const std::string n = std::to_string(ms);
    if (ms >= 60'000 && ms % 60'000 == 0) return n + " (" + unit(ms / 60'000, "minute") + ")";
    if (ms >= 1'000 && ms % 1'000 == 0) return n + " (" + unit(ms / 1'000, "second") + ")";
    return n;
}

} // namespace

int ScenarioParams::integer(const std::string &key) const
{
    return std::stoi(text(key));
}

double ScenarioParams::number(const std::string &key) const
{
    return std::stod(text(key));
}

const std::string &ScenarioParams::text(const std::string &key) const
{
    static const std::string empty;
    auto it = m_values.find(key);
    return it == m_values.end() ? empty : it->second;
}

bool parseFaultRuleList(const std::string &text, std::vector<FaultRule> *out, std::string *error)
{
    // A quoted message may hold ';' or a new line, so split only outside quotes.
    std::vector<std::string> parts(1);
    char quote = 0;
    for (char ch : text) {
        if (quote) {
            quote = ch == quote ? 0 : quote;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else if (ch == ';' || ch == '\n') {
            parts.emplace_back();
            continue;
        }
        parts.back() += ch;
    }
    std::vector<FaultRule> rules;
    int number = 0;
    for (const std::string &part : parts) {
        if (part.find_first_not_of(" \t\r") == std::string::npos) continue;
        ++number;
        FaultRule rule;
        std::string why;
        if (!parseFaultRule(part, &rule, &why)) {
            *error = "fault rule " + std::to_string(number) + ": " + why;
            return false;
        }
        rules.push_back(std::move(rule));
    }
    *out = std::move(rules);
    return true;
}

bool ScenarioParam::accepts(const std::string &value, std::string *error) const
{
    if (isText()) {
        if (value.size() > size_t(max)) {
            *error = "parameter " + key + " is at most " + std::to_string(max) + " characters, got " +
                     std::to_string(value.size());
            return false;
        }
        std::string why;
        std::vector<FaultRule> rules;
        const bool ok = kind == Kind::ServiceConfig
                            ? RetryServiceConfig::parse(QByteArray::fromStdString(value), &why).has_value()
                            : parseFaultRuleList(value, &rules, &why);
        if (!ok) *error = "parameter " + key + ": " + why;
        return ok;
    }
    // Reject text early rather than fail mid-run. Everything but a percentage is read with integer(), so
    // "1e3" or "1.5" is refused rather than read as 1.
    const bool percent = kind == Kind::Percent;
    const bool digitsOnly = !value.empty() && std::all_of(value.begin(), value.end(),
                                                          [](char ch) { return ch >= '0' && ch <= '9'; });
    std::istringstream in(value);
    double d = 0;
    const bool parsed =
        percent ? (in >> d) && in.eof() && std::isfinite(d) && d >= 0 : digitsOnly && (in >> d);
    if (!parsed) {
        *error = "parameter " + key + " needs a non-negative " + (percent ? "number" : "whole number") +
                 ", got '" + value + "'";
        return false;
    }
    if (d > max) {
        *error = "parameter " + key + " is at most " +
                 (kind == Kind::Milliseconds ? millisText(max) : std::to_string(max)) + ", got '" + value +
                 "'";
        return false;
    }
    return true;
}

bool Scenario::resolveParams(const std::map<std::string, std::string> &overrides, ScenarioParams *out,
                             std::string *error) const
{
    std::map<std::string, std::string> values;
    for (const ScenarioParam &p : params)
        values[p.key] = p.defaultValue;
    for (const auto &[key, value] : overrides) {
        const auto param =
            std::find_if(params.begin(), params.end(), [&](const ScenarioParam &p) { return p.key == key; });
        if (param == params.end()) {
            std::string known;
            for (const ScenarioParam &p : params)
                known += (known.empty() ? "" : ", ") + p.key;
            *error = "scenario " + name + " has no parameter '" + key + "'" +
                     (known.empty() ? std::string(" (it takes none)") : " (it takes: " + known + ")");
            return false;
        }
        if (!param->accepts(value, error)) return false;
        values[key] = value;
    }
    *out = ScenarioParams(std::move(values));
    return true;
}

} // namespace rpcscope::lab
