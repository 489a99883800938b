#pragma once

#include <QColor>
#include <QRectF>
#include <QtGlobal>
#include <map>
#include <vector>

class QPainter;

namespace rpcscope {

struct PaintContext;

// Sub-pixel merging: spans added in x order that touch or overlap the previous one of their colour group
// become one rect, so 100,000 items collapse into at most one rect per pixel column per colour.
class RunMerger
{
public:
    void add(int group, double x1, double x2, double top, double h)
    {
        auto &runs = m_runs[group];
        x2 = std::max(x2, x1 + 1); // every item gets at least 1 px
        if (!runs.empty() && runs.back().top() == top && runs.back().height() == h &&
            x1 <= runs.back().right() + 0.5) {
            runs.back().setRight(std::max(runs.back().right(), x2));
            return;
        }
        runs.emplace_back(x1, top, x2 - x1, h);
    }
    // One fill call per colour group.
    void fill(QPainter *p, const QColor *colors);

private:
    std::map<int, std::vector<QRectF>> m_runs;
};

// White diagonal stripes over a bar (a transparent retry). Drawn as lines rather than a pattern brush, which
// SVG readers cannot resolve.
void hatch(QPainter *p, const QRectF &r);
// An attempt the capturing proxy failed on purpose (a fault rule): dense dark stripes leaning the other way
// from hatch()'s, edged in white, so it reads on every status colour and never looks like the server's own
// failure or a transparent retry. `scale` is the metrics' scale (2 in workshop mode).
void injectedHatch(QPainter *p, const QRectF &r, double scale);

// A lab event's diamond, filled, of half-width r around c. Markers on the timeline are antialiased; the
// legend's swatch is not, like the rest of the legend.
void diamond(QPainter *p, const QPointF &c, double r, const QColor &fill, bool antialiased);

// The ruler's tick step in this picture (wider apart for wall-clock labels, which are longer).
qint64 rulerStepNs(const PaintContext &ctx);
// The ruler's ticks in view: round multiples of the step from the capture start, or in wall-clock time
// (TimelineOptions::wallClock) round in wall time (whole seconds, 100 ms ...), not offsets from the origin.
std::vector<qint64> rulerTicks(const PaintContext &ctx, qint64 step);
// True when the ruler reads wall-clock time.
bool wallClockRuler(const PaintContext &ctx);

// Vertical grid lines from top to bottom, aligned with the ruler's ticks.
void paintGrid(QPainter *p, const PaintContext &ctx, double top, double bottom);

} // namespace rpcscope
