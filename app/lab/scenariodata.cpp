#include "scenariodata.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <map>
#include <set>

namespace rpcscope::lab {

namespace {

const QString kResourceDir = QStringLiteral(":/scenarios");

// Reads JSON values for one scenario; the first problem wins and names where it is.
class Reader
{
public:
    explicit Reader(std::string where) : m_where(std::move(where)) {}

    bool ok() const { return m_error.empty(); }
    const std::string &error() const { return m_error; }
    void fail(const std::string &what)
    {
        if (m_error.empty()) m_error = m_where + ": " + what;
    }

    // Fails on a field not in `known`: a misspelt optional field would otherwise vanish without a word.
    void onlyFields(const QJsonObject &o, const std::set<QString> &known, const std::string &what)
    {
        for (const QString &k : o.keys())
            if (!known.count(k)) fail(what + " has an unknown field \"" + k.toStdString() + "\"");
    }
    std::string text(const QJsonObject &o, const QString &key, bool required = true)
    {
        const QJsonValue v = o.value(key);
        if (v.isUndefined() && !required) return {};
        if (!v.isString() || v.toString().isEmpty()) {
            fail("\"" + key.toStdString() + "\" must be a non-empty string");
            return {};
        }
        return v.toString().toStdString();
    }
    // An array of non-empty strings (sentences), joined by single spaces.
    std::string sentences(const QJsonObject &o, const QString &key, bool required = true)
    {
        const QJsonValue v = o.value(key);
        if (v.isUndefined() && !required) return {};
        std::string joined;
        if (!v.isArray() || v.toArray().isEmpty())
            fail("\"" + key.toStdString() + "\" must be a non-empty array of strings");
        for (const QJsonValue &s : v.toArray()) {
            if (!s.isString() || s.toString().isEmpty()) {
                fail("\"" + key.toStdString() + "\" must be a non-empty array of strings");
                return {};
            }
            joined += (joined.empty() ? "" : " ") + s.toString().toStdString();
        }
        return joined;
    }
    ScenarioParam param(const QJsonValue &v)
    {
        ScenarioParam p;
        if (!v.isObject()) {
            fail("every parameter must be an object");
            return p;
        }
        const QJsonObject o = v.toObject();
        onlyFields(o, {"key", "default", "kind", "max", "description"}, "a parameter");
        p.key = text(o, "key");
        p.defaultValue = text(o, "default");
        p.description = text(o, "description");
        static const std::map<QString, ScenarioParam::Kind> kinds = {
            {"count", ScenarioParam::Kind::Count},
            {"milliseconds", ScenarioParam::Kind::Milliseconds},
            {"percent", ScenarioParam::Kind::Percent},
            {"service-config", ScenarioParam::Kind::ServiceConfig},
            {"fault-rules", ScenarioParam::Kind::FaultRules}};
        const auto kind = kinds.find(o.value("kind").toString());
        if (kind == kinds.end())
            fail("parameter " + p.key +
                 ": \"kind\" must be \"count\", \"milliseconds\", \"percent\", \"service-config\" or "
                 "\"fault-rules\"");
        else
            p.kind = kind->second;
        const QJsonValue max = o.value("max");
        if (!max.isDouble() || max.toDouble() != double(max.toInt(-1)) || max.toInt(-1) < 0)
            fail("parameter " + p.key + ": \"max\" must be a non-negative whole number");
        else
            p.max = max.toInt();
        std::string why;
        if (ok() && !p.accepts(p.defaultValue, &why)) fail("the default of " + why);
        return p;
    }

private:
    const std::string m_where;
    std::string m_error;
};

} // namespace

bool parseScenarioData(const std::string &json, const std::string &source, std::vector<ScenarioText> *out,
                       std::string *error)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &parseError);
    if (doc.isNull()) {
        *error = source + ": not JSON: " + parseError.errorString().toStdString() + " at offset " +
                 std::to_string(parseError.offset);
        return false;
    }
    const QJsonObject root = doc.object();
    if (!doc.isObject() || root.size() != 1 || !root.value("scenarios").isArray() ||
        root.value("scenarios").toArray().isEmpty()) {
        *error = source + ": must be an object with one field, \"scenarios\", a non-empty array";
        return false;
    }
    int index = 0;
    for (const QJsonValue &v : root.value("scenarios").toArray()) {
        const QJsonObject o = v.toObject();
        const std::string name = o.value("name").toString().toStdString();
        Reader read(source + ": scenario " + (name.empty() ? "#" + std::to_string(index + 1) : name));
        ++index;
        if (!v.isObject()) {
            read.fail("must be an object");
            *error = read.error();
            return false;
        }
        read.onlyFields(o, {"name", "title", "explanation", "lookFor", "notes", "params"}, "it");
        ScenarioText t;
        t.source = source;
        t.name = read.text(o, "name");
        t.title = read.text(o, "title");
        t.explanation = read.sentences(o, "explanation");
        if (const std::string lookFor = read.text(o, "lookFor", false); !lookFor.empty())
            t.explanation += " Look for: " + lookFor;
        if (const std::string notes = read.sentences(o, "notes", false); !notes.empty())
            t.explanation += " " + notes;
        if (!o.value("params").isArray()) read.fail("\"params\" must be an array (empty for none)");
        std::set<std::string> keys;
        for (const QJsonValue &p : o.value("params").toArray()) {
            t.params.push_back(read.param(p));
            if (read.ok() && !keys.insert(t.params.back().key).second)
                read.fail("parameter " + t.params.back().key + " is there twice");
        }
        if (!read.ok()) {
            *error = read.error();
            return false;
        }
        out->push_back(std::move(t));
    }
    return true;
}

std::vector<std::string> scenarioDataFiles()
{
    std::vector<std::string> files;
    for (const QString &f : QDir(kResourceDir).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
        files.push_back(f.toStdString());
    return files;
}

bool loadScenarioData(std::vector<ScenarioText> *out, std::string *error)
{
    const std::vector<std::string> files = scenarioDataFiles();
    if (files.empty()) {
        *error = "no scenario data compiled in (" + kResourceDir.toStdString() + "/*.json)";
        return false;
    }
    for (const std::string &name : files) {
        QFile f(kResourceDir + "/" + QString::fromStdString(name));
        if (!f.open(QIODevice::ReadOnly)) {
            *error = name + ": cannot read it: " + f.errorString().toStdString();
            return false;
        }
        if (!parseScenarioData(f.readAll().toStdString(), name, out, error)) return false;
    }
    return true;
}

bool bindScenarioData(std::vector<Scenario> *scenarios, const std::vector<ScenarioText> &texts,
                      std::string *error)
{
    std::map<std::string, const ScenarioText *> byName;
    for (const ScenarioText &t : texts)
        if (!byName.emplace(t.name, &t).second) {
            *error =
                "scenario " + t.name + " has data twice (" + byName[t.name]->source + ", " + t.source + ")";
            return false;
        }
    std::set<std::string> names;
    for (Scenario &s : *scenarios) {
        if (!names.insert(s.name).second) {
            *error = "scenario " + s.name + " is registered twice";
            return false;
        }
        const auto it = byName.find(s.name);
        if (it == byName.end()) {
            *error = "scenario " + s.name + " has no data (resources/scenarios/*.json)";
            return false;
        }
        s.title = it->second->title;
        s.explanation = it->second->explanation;
        s.params = it->second->params;
    }
    for (const ScenarioText &t : texts)
        if (!names.count(t.name)) {
            *error = t.source + ": scenario " + t.name + " has data but no code (no scenario registers it)";
            return false;
        }
    return true;
}

} // namespace rpcscope::lab
