// What `run` and `capture` write at the end: the timeline as JSON, a capture file or an export, pictures.

#include "output.h"

#include "jsonexport.h"
#include "options.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QImage>
#include <QSaveFile>

namespace rpcscope {

bool writeFile(const QString &name, const QByteArray &bytes, std::string *error)
{
    QSaveFile f(name); // atomic: a temporary file renamed over the target
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
        *error = "cannot write " + name.toStdString() + ": " + f.errorString().toStdString();
        return false;
    }
    return true;
}

bool writeOutputs(const TimelineModel &model, const std::map<std::string, std::string> &opts,
                  const QString &title, const Redaction &redaction, std::string *error)
{
    if (auto it = opts.find("--json"); it != opts.end())
        if (!writeFile(QString::fromStdString(it->second),
                       timelineToJsonBytes(model.store(), opts.count("--frames")), error))
            return false;
    if (auto it = opts.find("--out"); it != opts.end()) {
        const FileFormat format = outputFormat(opts, error);
        ExportOptions options;
        options.redaction = redaction;
        options.withFrames = opts.count("--frames");
        if (!exportSession(model.store(), model.eventLog(), format, QString::fromStdString(it->second),
                           options, error, "rpcscope-cli"))
            return false;
    }
    // Pictures nest chains (calls made while serving another under it) whenever the capture has any.
    TimelinePainter::Options picture{title, true};
    for (const Call &c : model.store().calls())
        if (c.parentCall) picture.grouping = LaneGrouping::Chain;
    if (opts.count("--comfortable")) picture.density = LaneDensity::Comfortable;
    picture.rates = !opts.count("--no-rates");
    if (auto it = opts.find("--png"); it != opts.end()) {
        const QImage image = TimelinePainter::renderImage(model.store(), 1400, picture);
        if (!image.save(QString::fromStdString(it->second), "PNG")) {
            *error = "cannot write " + it->second;
            return false;
        }
    }
    if (auto it = opts.find("--svg"); it != opts.end())
        if (!TimelinePainter::renderSvg(model.store(), 1400, picture, QString::fromStdString(it->second))) {
            *error = "cannot write " + it->second;
            return false;
        }
    return true;
}

} // namespace rpcscope
