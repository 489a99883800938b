// What `run` and `capture` write at the end: the timeline as JSON, a capture file or an export, pictures.

#include "output.h"

#include "filewrite.h"
#include "jsonexport.h"
#include "options.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QBuffer>
#include <QImage>

namespace rpcscope {

bool writeFile(const QString &name, const QByteArray &bytes, std::string *error)
{
    return saveFileAtomically(name, bytes, error);
}

bool writePng(const QImage &image, const std::string &name, std::string *error)
{
    // Encoded in memory and written like any other output, so a failure says the system's reason.
    QByteArray png;
    QBuffer buffer(&png);
    if (!buffer.open(QIODevice::WriteOnly) || !image.save(&buffer, "PNG")) {
        *error = "cannot write " + name + ": the picture could not be encoded as PNG";
        return false;
    }
    return writeFile(QString::fromStdString(name), png, error);
}

bool writeSvg(const TimelineStore &store, const TimelinePainter::Options &picture, const std::string &name,
              std::string *error)
{
    QByteArray svg;
    QBuffer buffer(&svg);
    if (!buffer.open(QIODevice::WriteOnly) || !TimelinePainter::renderSvg(store, 1400, picture, &buffer)) {
        *error = "cannot write " + name + ": the picture could not be drawn as SVG";
        return false;
    }
    buffer.close();
    return writeFile(QString::fromStdString(name), svg, error);
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
    if (auto it = opts.find("--png"); it != opts.end())
        if (!writePng(TimelinePainter::renderImage(model.store(), 1400, picture), it->second, error))
            return false;
    if (auto it = opts.find("--svg"); it != opts.end())
        if (!writeSvg(model.store(), picture, it->second, error)) return false;
    return true;
}

} // namespace rpcscope
