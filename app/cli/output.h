#pragma once

#include "captureio.h"

#include <QByteArray>
#include <QString>
#include <map>
#include <string>

namespace rpcscope {

class TimelineModel;

// Writes `bytes` to `name` atomically (a temporary file renamed over it); false with a one-line error.
bool writeFile(const QString &name, const QByteArray &bytes, std::string *error);
// Writes what --json, --out (as --to or its name says), --png and --svg ask for, from the model.
bool writeOutputs(const TimelineModel &model, const std::map<std::string, std::string> &opts,
                  const QString &title, const Redaction &redaction, std::string *error);

} // namespace rpcscope
