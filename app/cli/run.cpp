// rpcscope-cli run: a lab scenario headless through the capture proxy.

#include "clock.h"
#include "commands.h"
#include "labsession.h"
#include "modelpolicycheck.h"
#include "modelsink.h"
#include "options.h"
#include "output.h"
#include "retryserviceconfig.h"
#include "timelinemodel.h"

#include <QCoreApplication>
#include <cstdio>

namespace rpcscope {

int cmdRun(const std::vector<std::string> &args)
{
    if (args.empty() || args[0].rfind("--", 0) == 0)
        return usageError("run needs a scenario name (rpcscope-cli list shows them)");
    const lab::Scenario *scenario = lab::findScenario(args[0]);
    if (!scenario) return usageError("unknown scenario '" + args[0] + "' (rpcscope-cli list shows them)");
    std::map<std::string, std::string> opts;
    std::string error;
    // --set may repeat, so it is taken out before the other options are parsed.
    std::map<std::string, std::string> overrides;
    std::vector<std::string> rest;
    for (size_t i = 1; i < args.size(); ++i) {
        if (args[i] != "--set") {
            rest.push_back(args[i]);
            continue;
        }
        const std::string kv = i + 1 < args.size() ? args[++i] : std::string();
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return usageError("--set needs KEY=VALUE, got '" + kv + "'");
        overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    const Redaction redaction = takeRedaction(&rest, &error);
    if (!error.empty()) return usageError(error);
    if (!parseOptions(rest, {"--json", "--png", "--svg", "--out", "--to"},
                      {"--frames", "--comfortable", "--no-rates"}, &opts, &error))
        return usageError(error);
    if (opts.count("--to") && !opts.count("--out")) return usageError("--to needs --out");
    if (outputFormat(opts, &error), !error.empty()) return usageError(error);
    lab::ScenarioParams params;
    if (!scenario->resolveParams(overrides, &params, &error)) return usageError(error);
    if (!outputsWritable(opts, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 2;
    }

    // A scenario that hands its client a service config (verify-policy) is judged against it, as
    // `rpcscope-cli check` judges a capture; the user-agents come from the kept headers.
    const std::string &serviceConfig = params.text("service_config");
    TimelineModel model;
    model.setOrigin(clockPairNow());
    if (!serviceConfig.empty()) model.setKeepHeaders(true);
    lab::LabSession lab;
    if (!lab.start(queuedSinkTo(&model), &error)) {
        std::fprintf(stderr, "rpcscope-cli: could not start the lab: %s\n", error.c_str());
        return 1;
    }
    const lab::ScenarioResult result = lab.run(*scenario, params);
    lab.stop(); // flushes every decoded event into the model's queue
    QCoreApplication::sendPostedEvents();
    ModelFeed::of(&model)->drainAll();

    if (!writeOutputs(model, opts,
                      QStringLiteral("rpcscope — %1").arg(QString::fromStdString(scenario->name)), redaction,
                      &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    std::printf("%s: %s\n", scenario->name.c_str(), result.summary.c_str());
    bool conforms = true;
    if (!serviceConfig.empty()) {
        const auto config = RetryServiceConfig::parse(QByteArray::fromStdString(serviceConfig), &error);
        if (config) { // resolveParams() checked it
            const PolicyCheck check = policyCheckOf(model, *config);
            std::fputs(check.text().c_str(), stdout);
            conforms = check.allConform();
            if (!conforms)
                std::fprintf(stderr,
                             "rpcscope-cli: %s: %llu of %llu calls do not conform to the service config\n",
                             scenario->name.c_str(), static_cast<unsigned long long>(check.violations()),
                             static_cast<unsigned long long>(check.calls()));
        }
    }
    if (!result.expectationHeld) {
        std::fprintf(stderr, "rpcscope-cli: %s: expected outcome did not hold: %s\n", scenario->name.c_str(),
                     result.summary.c_str());
        return 1;
    }
    return conforms ? 0 : 1;
}

} // namespace rpcscope
