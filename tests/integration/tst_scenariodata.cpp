// The scenarios' data (resources/scenarios/*.json, compiled in): every registered scenario has its data and
// every data file's scenario is registered; malformed data is refused with a reason; the kit's service
// configs are what gRPC has always been given.

#include "scenario.h"
#include "scenariodata.h"
#include "serviceconfig.h"

#include <QDir>
#include <QtTest>
#include <set>

using namespace rpcscope;

namespace {

std::vector<lab::Scenario> registered()
{
    std::vector<lab::Scenario> list;
    lab::appendRetryScenarios(list);
    lab::appendChainScenarios(list);
    lab::appendGovernanceScenarios(list);
    lab::appendPolicyScenarios(list);
    return list;
}

const char *const kValid = R"({"scenarios": [{
    "name": "demo", "title": "A demo",
    "explanation": ["First sentence.", "Second one."],
    "lookFor": "the hint.",
    "notes": ["A note."],
    "params": [{"key": "calls", "default": "4", "kind": "count", "max": 10, "description": "how many"},
               {"key": "wait_ms", "default": "50", "kind": "milliseconds", "max": 60000, "description": "wait"},
               {"key": "share_percent", "default": "2.5", "kind": "percent", "max": 100, "description": "share"}]
}]})";

} // namespace

class TestScenarioData : public QObject
{
    Q_OBJECT
private slots:
    void everyScenarioHasItsData()
    {
        std::vector<lab::ScenarioText> texts;
        std::string error;
        QVERIFY2(lab::loadScenarioData(&texts, &error), error.c_str());
        std::set<std::string> dataNames;
        for (const lab::ScenarioText &t : texts)
            QVERIFY2(dataNames.insert(t.name).second, t.name.c_str());
        std::set<std::string> codeNames;
        for (const lab::Scenario &s : registered())
            codeNames.insert(s.name);
        QCOMPARE(dataNames, codeNames);

        std::vector<lab::Scenario> list = registered();
        QVERIFY2(lab::bindScenarioData(&list, texts, &error), error.c_str());
        QCOMPARE(lab::allScenarios().size(), list.size());
        for (const lab::Scenario &s : lab::allScenarios()) {
            QVERIFY2(!s.title.empty() && !s.explanation.empty(), s.name.c_str());
            QVERIFY2(s.run, s.name.c_str());
            lab::ScenarioParams params;
            QVERIFY2(s.resolveParams({}, &params, &error), error.c_str());
        }
    }

    // A file in resources/scenarios that the lab's CMake list forgot would never be compiled in.
    void everyDataFileIsCompiledIn()
    {
        std::vector<std::string> inSource;
        for (const QString &f :
             QDir(QStringLiteral(RPCSCOPE_SCENARIO_DATA_DIR)).entryList({"*.json"}, QDir::Files, QDir::Name))
            inSource.push_back(f.toStdString());
        QVERIFY(!inSource.empty());
        QCOMPARE(lab::scenarioDataFiles(), inSource);
    }

    void readsTheData()
    {
        std::vector<lab::ScenarioText> texts;
        std::string error;
        QVERIFY2(lab::parseScenarioData(kValid, "demo.json", &texts, &error), error.c_str());
        QCOMPARE(texts.size(), size_t(1));
        const lab::ScenarioText &t = texts[0];
        QCOMPARE(t.title, std::string("A demo"));
        QCOMPARE(t.explanation, std::string("First sentence. Second one. Look for: the hint. A note."));
        QCOMPARE(t.params.size(), size_t(3));
        QCOMPARE(t.params[1].key, std::string("wait_ms"));
        QCOMPARE(t.params[1].defaultValue, std::string("50"));
        QVERIFY(t.params[1].kind == lab::ScenarioParam::Kind::Milliseconds);
        QCOMPARE(t.params[1].max, 60000);

        lab::Scenario s{.name = "demo", .params = t.params};
        lab::ScenarioParams params;
        QVERIFY(!s.resolveParams({{"wait_ms", "60001"}}, &params, &error));
        QCOMPARE(error, std::string("parameter wait_ms is at most 60000 (1 minute), got '60001'"));
        QVERIFY(!s.resolveParams({{"calls", "1.5"}}, &params, &error));
        QCOMPARE(error, std::string("parameter calls needs a non-negative whole number, got '1.5'"));
        QVERIFY(s.resolveParams({{"share_percent", "12.5"}}, &params, &error));
        QCOMPARE(params.number("share_percent"), 12.5);
    }

    void refusesMalformedData_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("reason");
        QTest::newRow("not JSON") << R"({"scenarios": [)"
                                  << "not JSON";
        QTest::newRow("no scenarios") << R"({"scenarios": []})"
                                      << "one field, \"scenarios\"";
        QTest::newRow("another root field") << R"({"scenarios": [], "x": 1})"
                                            << "one field";
        QTest::newRow("no title") << R"({"scenarios": [{"name": "a", "explanation": ["x."], "params": []}]})"
                                  << "scenario a: \"title\" must be a non-empty string";
        QTest::newRow("explanation a string")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": "x.", "params": []}]})"
            << "\"explanation\" must be a non-empty array of strings";
        QTest::newRow("misspelt field")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "lookfor": "y", "params": []}]})"
            << "unknown field \"lookfor\"";
        QTest::newRow("no params") << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."]}]})"
                                   << "\"params\" must be";
        QTest::newRow("unknown kind")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": "1", "kind": "seconds", "max": 5, "description": "d"}]}]})"
            << "parameter n: \"kind\" must be";
        QTest::newRow("fractional max")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": "1", "kind": "count", "max": 5.5, "description": "d"}]}]})"
            << "\"max\" must be a non-negative whole number";
        QTest::newRow("default above max")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": "6", "kind": "count", "max": 5, "description": "d"}]}]})"
            << "the default of parameter n is at most 5";
        QTest::newRow("default not a number")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": "many", "kind": "count", "max": 5, "description": "d"}]}]})"
            << "the default of parameter n needs a non-negative whole number";
        QTest::newRow("default a number")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": 1, "kind": "count", "max": 5, "description": "d"}]}]})"
            << "\"default\" must be a non-empty string";
        QTest::newRow("parameter twice")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "n", "default": "1", "kind": "count", "max": 5, "description": "d"},
                   {"key": "n", "default": "2", "kind": "count", "max": 5, "description": "d"}]}]})"
            << "parameter n is there twice";
        QTest::newRow("service config default not a config")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "c", "default": "[3]", "kind": "service-config", "max": 100,
                    "description": "d"}]}]})"
            << "the default of parameter c: ";
        QTest::newRow("fault rules default with a bad rule")
            << R"({"scenarios": [{"name": "a", "title": "A", "explanation": ["x."], "params": [
                   {"key": "f", "default": "abort percent=40; explode", "kind": "fault-rules", "max": 100,
                    "description": "d"}]}]})"
            << "the default of parameter f: fault rule 2: ";
    }

    // verify-policy's text parameters: a service config and fault rules, each checked as the run would
    // read it, with the reason in the words the Scenario dock shows under the box.
    void textParameters()
    {
        const lab::Scenario *s = lab::findScenario("verify-policy");
        QVERIFY(s);
        lab::ScenarioParams params;
        std::string error;
        QVERIFY2(s->resolveParams({}, &params, &error), error.c_str());
        std::vector<FaultRule> rules;
        QVERIFY2(lab::parseFaultRuleList(params.text("faults"), &rules, &error), error.c_str());
        QCOMPARE(rules.size(), size_t(2));
        QCOMPARE(rules[0].pushbackMs.value_or(0), std::int64_t(300));
        QCOMPARE(rules[1].percent, 40.0);

        QVERIFY(!s->resolveParams(
            {{"service_config", R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":"x"}}]})"}},
            &params, &error));
        QVERIFY2(error.starts_with("parameter service_config: methodConfig[0].retryPolicy.maxAttempts"),
                 error.c_str());
        QVERIFY(!s->resolveParams({{"faults", "abort status=14; abort status=99"}}, &params, &error));
        QVERIFY2(error.starts_with("parameter faults: fault rule 2: "), error.c_str());
        QVERIFY(!s->resolveParams({{"service_config", std::string(30'000, ' ')}}, &params, &error));
        QVERIFY2(error.find("at most 20000 characters") != std::string::npos, error.c_str());
        // Separators inside quotes belong to the rule; empty lines are no rules.
        QVERIFY2(lab::parseFaultRuleList("abort message='a;b'\n\n ;abort status=UNAVAILABLE", &rules, &error),
                 error.c_str());
        QCOMPARE(rules.size(), size_t(2));
        QCOMPARE(rules[0].message, std::string("a;b"));
        QVERIFY2(lab::parseFaultRuleList("", &rules, &error) && rules.empty(), error.c_str());
    }

    void refusesMalformedData()
    {
        QFETCH(QString, json);
        QFETCH(QString, reason);
        std::vector<lab::ScenarioText> texts;
        std::string error;
        QVERIFY(!lab::parseScenarioData(json.toStdString(), "broken.json", &texts, &error));
        QVERIFY2(error.starts_with("broken.json: "), error.c_str());
        QVERIFY2(QString::fromStdString(error).contains(reason), error.c_str());
    }

    void refusesDataAndCodeThatDoNotMatch()
    {
        std::vector<lab::ScenarioText> texts;
        std::string error;
        QVERIFY2(lab::parseScenarioData(kValid, "demo.json", &texts, &error), error.c_str());

        std::vector<lab::Scenario> noData = {{.name = "demo"}, {.name = "other"}};
        QVERIFY(!lab::bindScenarioData(&noData, texts, &error));
        QCOMPARE(error, std::string("scenario other has no data (resources/scenarios/*.json)"));

        std::vector<lab::Scenario> noCode;
        QVERIFY(!lab::bindScenarioData(&noCode, texts, &error));
        QCOMPARE(error,
                 std::string("demo.json: scenario demo has data but no code (no scenario registers it)"));

        std::vector<lab::ScenarioText> twice = texts;
        twice.push_back(texts[0]);
        twice.back().source = "again.json";
        std::vector<lab::Scenario> one = {{.name = "demo"}};
        QVERIFY(!lab::bindScenarioData(&one, twice, &error));
        QCOMPARE(error, std::string("scenario demo has data twice (demo.json, again.json)"));

        std::vector<lab::Scenario> ok = {{.name = "demo"}};
        QVERIFY2(lab::bindScenarioData(&ok, texts, &error), error.c_str());
        QCOMPARE(ok[0].title, std::string("A demo"));
    }

    // The service configs the scenarios have always handed to gRPC, byte for byte.
    void serviceConfigs()
    {
        QCOMPARE(lab::ServiceConfig::retry(3, 50),
                 std::string(
                     R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":)"
                     R"({"maxAttempts":3,"initialBackoff":"0.05s","maxBackoff":"1s","backoffMultiplier":2,)"
                     R"("retryableStatusCodes":["UNAVAILABLE"]}}]})"));
        QCOMPARE(lab::ServiceConfig::throttledRetry(4, 50, 10, 0.1),
                 std::string(
                     R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":)"
                     R"({"maxAttempts":4,"initialBackoff":"0.05s","maxBackoff":"1s","backoffMultiplier":2,)"
                     R"("retryableStatusCodes":["UNAVAILABLE"]}}],)"
                     R"("retryThrottling":{"maxTokens":10,"tokenRatio":0.1}})"));
        QCOMPARE(lab::ServiceConfig::hedging(3, 200),
                 std::string(
                     R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"hedgingPolicy":)"
                     R"({"maxAttempts":3,"hedgingDelay":"0.2s","nonFatalStatusCodes":["UNAVAILABLE"]}}]})"));
    }
};

QTEST_GUILESS_MAIN(TestScenarioData)
#include "tst_scenariodata.moc"
