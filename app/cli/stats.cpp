// rpcscope-cli stats and compare: one capture's statistics, or two runs' side by side (issue 20).

#include "capturestats.h"
#include "clock.h"
#include "commands.h"
#include "labcomparison.h"
#include "labsession.h"
#include "modelsink.h"
#include "options.h"
#include "statscompare.h"
#include "timelinemodel.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QJsonDocument>
#include <cstdio>
#include <memory>

namespace rpcscope {

namespace {

// A file that cannot be compared is not a usage error: one line, no usage hint, exit 2 all the same.
int fileError(const std::string &message)
{
    std::fprintf(stderr, "rpcscope-cli: %s\n", message.c_str());
    return 2;
}

void printNotes(const std::vector<std::string> &notes)
{
    for (const std::string &note : notes)
        std::fprintf(stderr, "rpcscope-cli: note: %s\n", note.c_str());
}

void print(const StatsComparison &c, bool json)
{
    if (json) {
        std::fputs(QJsonDocument(comparisonToJson(c)).toJson(QJsonDocument::Indented).constData(), stdout);
    } else {
        std::fputs(comparisonTable(c).c_str(), stdout);
    }
}

// Splits args into files and options (valued ones listed in `valued`).
bool split(const std::vector<std::string> &args, const std::set<std::string> &valued,
           const std::set<std::string> &bare, std::vector<std::string> *files,
           std::map<std::string, std::string> *opts, std::string *error)
{
    std::vector<std::string> rest;
    for (size_t i = 0; i < args.size(); ++i) {
        if (valued.count(args[i]) && i + 1 < args.size()) {
            rest.push_back(args[i]);
            rest.push_back(args[++i]);
        } else if (args[i].rfind("--", 0) == 0) {
            rest.push_back(args[i]);
        } else {
            files->push_back(args[i]);
        }
    }
    return parseOptions(rest, valued, bare, opts, error);
}

// One side of a lab comparison: the scenario run through the capture proxy into `model`.
bool runSide(const lab::LabComparison::Side &side, TimelineModel &model, std::string *error)
{
    const lab::Scenario *scenario = lab::findScenario(side.scenario);
    lab::ScenarioParams params;
    if (!scenario->resolveParams(side.overrides, &params, error)) return false;
    model.setOrigin(clockPairNow());
    lab::LabSession lab;
    if (!lab.start(queuedSinkTo(&model), error)) {
        *error = "could not start the lab: " + *error;
        return false;
    }
    const lab::ScenarioResult result = lab.run(*scenario, params);
    lab.stop(); // flushes every decoded event into the model's queue
    QCoreApplication::sendPostedEvents();
    ModelFeed::of(&model)->drainAll();
    // On stderr, so that --json leaves stdout to the document.
    std::fprintf(stderr, "%s: %s%s\n", side.label.c_str(), result.summary.c_str(),
                 result.expectationHeld ? "" : " (its expected outcome did not hold)");
    return true;
}

int compareLab(const std::string &spec, const std::map<std::string, std::string> &opts)
{
    lab::LabComparison c;
    std::string error;
    if (!lab::resolveLabComparison(spec, &c, &error)) return usageError(error);
    if (opts.count("--label-a")) c.a.label = opts.at("--label-a");
    if (opts.count("--label-b")) c.b.label = opts.at("--label-b");
    TimelineModel a, b;
    if (!runSide(c.a, a, &error) || !runSide(c.b, b, &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    print(compareStats(a.stats(), b.stats(), c.a.label, c.b.label), opts.count("--json"));
    return 0;
}

} // namespace

int cmdStats(const std::vector<std::string> &args)
{
    std::vector<std::string> files;
    std::map<std::string, std::string> opts;
    std::string error;
    if (!split(args, {}, {"--json"}, &files, &opts, &error)) return usageError(error);
    if (files.size() != 1)
        return usageError("stats needs one capture file, got " + std::to_string(files.size()));
    StatsFeed feed;
    std::vector<std::string> notes;
    if (!loadCaptureStats(QString::fromStdString(files[0]), &feed, &error, &notes)) return fileError(error);
    printNotes(notes);
    print(singleStats(feed.stats(), files[0]), opts.count("--json"));
    return 0;
}

int cmdCompare(const std::vector<std::string> &args)
{
    std::vector<std::string> files;
    std::map<std::string, std::string> opts;
    std::string error;
    if (!split(args, {"--label-a", "--label-b", "--lab"}, {"--json"}, &files, &opts, &error))
        return usageError(error);
    if (opts.count("--lab")) {
        if (!files.empty()) return usageError("compare --lab runs its own two scenarios: give no files");
        return compareLab(opts["--lab"], opts);
    }
    if (files.size() != 2)
        return usageError("compare needs two capture files (or --lab NAME), got " +
                          std::to_string(files.size()));
    // Named by their file names, unless those are the same (two runs/x.rpcscope): then by their paths.
    std::string labels[2];
    for (int i = 0; i < 2; ++i)
        labels[i] = QFileInfo(QString::fromStdString(files[size_t(i)])).fileName().toStdString();
    if (labels[0] == labels[1]) labels[0] = files[0], labels[1] = files[1];
    if (opts.count("--label-a")) labels[0] = opts["--label-a"];
    if (opts.count("--label-b")) labels[1] = opts["--label-b"];
    StatsFeed feeds[2];
    for (int i = 0; i < 2; ++i) {
        std::vector<std::string> notes;
        if (!loadCaptureStats(QString::fromStdString(files[size_t(i)]), &feeds[i], &error, &notes))
            return fileError(error);
        printNotes(notes);
    }
    print(compareStats(feeds[0].stats(), feeds[1].stats(), labels[0], labels[1]), opts.count("--json"));
    return 0;
}

} // namespace rpcscope
