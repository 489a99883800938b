#pragma once

#include "captureio.h"
#include "timelinepainter.h"

#include <QByteArray>
#include <QImage>
#include <QString>
#include <map>
#include <string>

namespace rpcscope {

class TimelineModel;

// Writes `bytes` to `name` atomically (a temporary file renamed over it); false with a one-line error.
bool writeFile(const QString &name, const QByteArray &bytes, std::string *error);
// The --png and --svg pictures, written like writeFile: a failure says the system's reason.
bool writePng(const QImage &image, const std::string &name, std::string *error);
bool writeSvg(const TimelineStore &store, const TimelinePainter::Options &picture, const std::string &name,
              std::string *error);
// Writes what --json, --out (as --to or its name says), --png and --svg ask for, from the model.
bool writeOutputs(const TimelineModel &model, const std::map<std::string, std::string> &opts,
                  const QString &title, const Redaction &redaction, std::string *error);

} // namespace rpcscope
