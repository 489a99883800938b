#include "faultsfile.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace rpcscope {

bool parseFaultsJson(const QByteArray &json, std::vector<FaultRule> *out, std::string *error)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (doc.isNull()) {
        *error = "not JSON: " + parseError.errorString().toStdString() + " at byte " +
                 std::to_string(parseError.offset);
        return false;
    }
    QJsonArray rules;
    if (doc.isArray()) {
        rules = doc.array();
    } else {
        const QJsonObject top = doc.object();
        for (auto it = top.begin(); it != top.end(); ++it)
            if (it.key() != QLatin1String("faults")) {
                *error = "unknown key '" + it.key().toStdString() + "' (expected {\"faults\": [...]})";
                return false;
            }
        if (!top.value(QLatin1String("faults")).isArray()) {
            *error = "expected an array of rules, or {\"faults\": [...]}";
            return false;
        }
        rules = top.value(QLatin1String("faults")).toArray();
    }
    std::vector<FaultRule> parsed;
    for (qsizetype i = 0; i < rules.size(); ++i) {
        const std::string which = "rule " + std::to_string(i + 1) + ": ";
        if (!rules[i].isObject()) {
            *error = which + "expected an object such as {\"action\": \"blackhole\"}";
            return false;
        }
        const QJsonObject o = rules[i].toObject();
        std::vector<std::pair<std::string, std::string>> fields;
        for (auto it = o.begin(); it != o.end(); ++it) {
            QString value;
            if (it.value().isString()) {
                value = it.value().toString();
            } else if (it.value().isDouble()) {
                value = QString::number(it.value().toDouble(), 'g', 15);
            } else {
                *error = which + "the value of '" + it.key().toStdString() + "' must be a string or a number";
                return false;
            }
            fields.emplace_back(it.key().toStdString(), value.toStdString());
        }
        FaultRule rule;
        std::string why;
        if (!faultRuleFromFields(fields, &rule, &why)) {
            *error = which + why;
            return false;
        }
        parsed.push_back(std::move(rule));
    }
    *out = std::move(parsed);
    return true;
}

bool loadFaultsFile(const QString &path, std::vector<FaultRule> *out, std::string *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = "cannot read " + path.toStdString() + ": " + file.errorString().toStdString();
        return false;
    }
    std::string why;
    if (!parseFaultsJson(file.readAll(), out, &why)) {
        *error = path.toStdString() + ": " + why;
        return false;
    }
    return true;
}

} // namespace rpcscope
