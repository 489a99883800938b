#include "timelinepainter.h"

#include <QFile>
#include <QPainter>
#include <QSvgGenerator>

namespace rpcscope {

namespace {
TimelinePainter preparedPainter(const TimelineStore &store, const TimelinePainter::Options &options,
                                std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter(&store);
    TimelinePainter::Options o = options;
    // An exported picture explains itself: a title with the time range, and the legend.
    o.legend = true;
    if (o.title.isEmpty()) o.title = QStringLiteral("rpcscope timeline");
    painter.setOptions(o);
    const auto [lo, hi] = range.value_or(painter.fullRange());
    painter.setRange(lo, hi);
    return painter;
}
} // namespace

void TimelinePainter::fitLegendToPicture(int width)
{
    // The whole picture once, clipped to a pixel, to learn what it draws: the legend then takes the rows its
    // entries need and no more. Every lane is in view, so the second paint draws the same.
    QImage probe(1, 1, QImage::Format_ARGB32_Premultiplied);
    {
        QPainter p(&probe);
        paint(&p, QRectF(0, 0, width, contentHeight(width) + 8));
    }
    m_legendRoomFor = m_drawn;
}

QImage TimelinePainter::renderImage(const TimelineStore &store, int width, const Options &options,
                                    qreal scale, std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter = preparedPainter(store, options, range);
    painter.fitLegendToPicture(width);
    const int height = painter.contentHeight(width) + 8;
    QImage image(QSize(int(width * scale), int(height * scale)), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(painter.theme().background);
    QPainter p(&image);
    painter.paint(&p, QRectF(0, 0, width, height));
    return image;
}

bool TimelinePainter::renderSvg(const TimelineStore &store, int width, const Options &options,
                                QIODevice *device, std::optional<std::pair<qint64, qint64>> range)
{
    TimelinePainter painter = preparedPainter(store, options, range);
    painter.fitLegendToPicture(width);
    const int height = painter.contentHeight(width) + 8;
    QSvgGenerator svg;
    svg.setOutputDevice(device);
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle(options.title);
    svg.setDescription(QStringLiteral("rpcscope timeline"));
    QPainter p;
    if (!p.begin(&svg)) return false;
    painter.paint(&p, QRectF(0, 0, width, height));
    return p.end();
}

bool TimelinePainter::renderSvg(const TimelineStore &store, int width, const Options &options,
                                const QString &fileName, std::optional<std::pair<qint64, qint64>> range)
{
    QFile file(fileName);
    return file.open(QIODevice::WriteOnly) && renderSvg(store, width, options, &file, range) && file.flush();
}

} // namespace rpcscope
