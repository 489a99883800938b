#pragma once

// Shared by the view tests: a small scene (retry-basic plus a call that runs into its deadline), wire
// events to build others, and pixel counting.

#include "timelinemodel.h"
#include "timelinepainter.h"
#include "wireevents.h"

#include <QColor>
#include <QImage>
#include <QPaintEngine>
#include <QPainter>
#include <QTextItem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope::rendertest {

inline constexpr std::int64_t ms = 1'000'000;

// A connection with no addresses, opened at 0.
inline WireEvent opened(std::uint32_t conn)
{
    return testev::event(EventKind::ConnectionOpened, conn, 0, 0);
}

inline WireEvent headers(std::uint32_t stream, std::int64_t t, Direction dir)
{
    return testev::event(EventKind::Headers, 1, stream, t, dir);
}

inline WireEvent req(std::uint32_t stream, std::int64_t t, std::optional<int> prev, const std::string &id,
                     std::int64_t timeout)
{
    WireEvent e = headers(stream, t, Direction::ClientToServer);
    e.grpc.path = "/rpcscope.lab.Lab/Call";
    e.grpc.previousAttempts = prev;
    e.grpc.callId = id;
    e.grpc.timeoutNs = timeout;
    return e;
}

inline WireEvent end(std::uint32_t stream, std::int64_t t, int status)
{
    WireEvent e = headers(stream, t, Direction::ServerToClient);
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

// retry-basic plus a second call that runs into its 120 ms deadline, so a deadline line is in range.
inline EventBatch scene()
{
    return {opened(1),           req(1, 10 * ms, std::nullopt, "retry-basic-1", 5000 * ms),
            end(1, 12 * ms, 14), req(3, 62 * ms, 1, "retry-basic-1", 4940 * ms),
            end(3, 64 * ms, 14), req(5, 160 * ms, 2, "retry-basic-1", 4840 * ms),
            end(5, 170 * ms, 0), req(7, 20 * ms, std::nullopt, "deadline-1", 120 * ms),
            end(7, 140 * ms, 4)};
}

inline int countColor(const QImage &img, const QRect &r, QColor c)
{
    int n = 0;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            n += QColor(img.pixel(x, y)).rgb() == c.rgb();
    return n;
}

inline int countDark(const QImage &img, const QRect &r)
{
    int n = 0;
    const QRect box = r.intersected(img.rect());
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            n += qGray(img.pixel(x, y)) < 140;
    return n;
}

inline WireEvent frame(std::uint32_t stream, std::int64_t t, Direction dir, std::uint8_t type,
                       std::uint32_t value = 0)
{
    return testev::frame(1, stream, t, dir, type, value);
}

inline WireEvent labEvent(std::int64_t t, const std::string &kind, const std::string &detail,
                          const std::string &call = {})
{
    WireEvent e;
    e.kind = EventKind::LabEvent;
    e.tNs = t;
    e.about = LabDecision{kind, detail};
    e.grpc.callId = call;
    return e;
}

inline QImage render(TimelinePainter &painter, const QRectF &rect)
{
    QImage img(rect.size().toSize(), QImage::Format_RGB32);
    img.fill(Qt::white);
    QPainter p(&img);
    painter.paint(&p, rect);
    return img;
}

// A paint device that keeps the text drawn on it and where (device coordinates), and the dashed lines (a
// deadline's), and draws nothing: which label a pass wrote, whole or elided, and what else it shares its
// place with.
class TextRecorder : public QPaintDevice
{
public:
    struct Text
    {
        QString text;
        QRectF rect;
    };

    explicit TextRecorder(QSize size) : m_size(size), m_engine(this) {}
    QPaintEngine *paintEngine() const override { return &m_engine; }
    const std::vector<Text> &texts() const { return m_texts; }
    const std::vector<QLineF> &dashedLines() const { return m_dashed; }

protected:
    int metric(PaintDeviceMetric m) const override
    {
        switch (m) {
        case PdmWidth:
            return m_size.width();
        case PdmHeight:
            return m_size.height();
        case PdmWidthMM:
            return m_size.width() * 254 / 960;
        case PdmHeightMM:
            return m_size.height() * 254 / 960;
        case PdmDpiX:
        case PdmDpiY:
        case PdmPhysicalDpiX:
        case PdmPhysicalDpiY:
            return 96;
        case PdmDevicePixelRatio:
            return 1;
        case PdmDevicePixelRatioScaled:
            return int(devicePixelRatioFScale());
        default:
            return QPaintDevice::metric(m);
        }
    }

private:
    class Engine : public QPaintEngine
    {
    public:
        explicit Engine(TextRecorder *to) : QPaintEngine(AllFeatures), m_to(to) {}
        bool begin(QPaintDevice *) override { return true; }
        bool end() override { return true; }
        void updateState(const QPaintEngineState &s) override
        {
            if (s.state() & DirtyTransform) m_transform = s.transform();
            if (s.state() & DirtyPen) m_dashedPen = s.pen().style() == Qt::DashLine;
        }
        void drawPixmap(const QRectF &, const QPixmap &, const QRectF &) override {}
        void drawPath(const QPainterPath &) override {}
        void drawRects(const QRectF *, int) override {}
        void drawLines(const QLineF *lines, int count) override
        {
            if (m_dashedPen)
                for (int i = 0; i < count; ++i)
                    m_to->m_dashed.push_back(m_transform.map(lines[i]));
        }
        void drawPolygon(const QPointF *, int, PolygonDrawMode) override {}
        void drawTextItem(const QPointF &at, const QTextItem &item) override
        {
            const QFontMetricsF fm(item.font());
            const QRectF local(at.x(), at.y() - fm.ascent(), fm.horizontalAdvance(item.text()), fm.height());
            m_to->m_texts.push_back({item.text(), m_transform.mapRect(local)});
        }
        Type type() const override { return User; }

    private:
        TextRecorder *m_to;
        QTransform m_transform;
        bool m_dashedPen = false;
    };

    QSize m_size;
    mutable Engine m_engine;
    std::vector<Text> m_texts;
    std::vector<QLineF> m_dashed;
};

// What the painter draws in a picture `width` wide and as tall as its content: its text and dashed lines.
inline std::unique_ptr<TextRecorder> recordPainted(TimelinePainter &painter, int width)
{
    const QRectF rect(0, 0, width, painter.contentHeight(width));
    auto device = std::make_unique<TextRecorder>(rect.size().toSize());
    QPainter p(device.get());
    painter.paint(&p, rect);
    return device;
}

// The fraction of pixels of colour c in r (exact match).
inline bool hasColor(const QImage &img, const QRect &r, QColor c, int atLeast = 1)
{
    return countColor(img, r, c) >= atLeast;
}
} // namespace rpcscope::rendertest
