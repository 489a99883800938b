// rpcscope-cli check: every call of a capture judged against the client's retry policy (issue 19).

#include "commands.h"
#include "options.h"
#include "policycheck.h"
#include "retryserviceconfig.h"
#include "timelinestore.h"
#include "useragentindex.h"

#include <QFile>
#include <QJsonDocument>
#include <cstdio>

namespace rpcscope {

namespace {

// A file that cannot be read or a config that does not parse: one line, no usage hint, exit 2.
int inputError(const std::string &message)
{
    std::fprintf(stderr, "rpcscope-cli: %s\n", message.c_str());
    return 2;
}

} // namespace

int cmdCheck(const std::vector<std::string> &args)
{
    std::vector<std::string> files, rest;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--service-config" && i + 1 < args.size()) {
            rest.push_back(args[i]);
            rest.push_back(args[++i]);
        } else if (args[i].rfind("--", 0) == 0) {
            rest.push_back(args[i]);
        } else {
            files.push_back(args[i]);
        }
    }
    std::map<std::string, std::string> opts;
    std::string error;
    if (!parseOptions(rest, {"--service-config"}, {"--json"}, &opts, &error)) return usageError(error);
    if (files.size() != 1)
        return usageError("check needs one capture file, got " + std::to_string(files.size()));
    if (!opts.count("--service-config"))
        return usageError("check needs --service-config FILE: the service config JSON the client was given");

    const QString configPath = QString::fromStdString(opts["--service-config"]);
    QFile configFile(configPath);
    if (!configFile.open(QIODevice::ReadOnly))
        return inputError(opts["--service-config"] + ": " + configFile.errorString().toStdString());
    const std::optional<RetryServiceConfig> config = RetryServiceConfig::parse(configFile.readAll(), &error);
    if (!config) return inputError(opts["--service-config"] + ": " + error);

    TimelineStore store;
    UserAgentIndex agents;
    CaptureInfo info;
    const CaptureReadResult read =
        loadCaptureBatches(QString::fromStdString(files[0]), &info, [&](EventBatch &&batch) {
            agents.record(batch);
            store.apply(batch);
        });
    if (!read.usable()) return inputError(read.message);
    if (read.status == CaptureReadResult::Truncated)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", read.message.c_str());
    for (const std::string &note : read.notes)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
    if (store.calls().empty()) return inputError(files[0] + " holds no calls: there is nothing to check");

    const PolicyCheck check = PolicyCheck::run(store, *config, agents);
    if (opts.count("--json"))
        std::fputs(QJsonDocument(check.toJson()).toJson(QJsonDocument::Indented).constData(), stdout);
    else
        std::fputs(check.text().c_str(), stdout);
    return check.allConform() ? 0 : 1;
}

} // namespace rpcscope
