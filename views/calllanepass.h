#pragma once

#include <QFont>
#include <QFontMetricsF>
#include <QRectF>
#include <QtGlobal>
#include <cstddef>
#include <optional>
#include <vector>

class QPainter;

namespace rpcscope {

struct Attempt;
struct Call;
struct PaintContext;

// A backoff gap's label as painted, for hit-testing and tests.
struct GapLabel
{
    QRectF rect;
    qint64 gapNs = 0;
    size_t call = 0;
    size_t attempt = 0; // the attempt the gap leads to
};

// Call lanes: the header (call, method, outcome, chain budget), one row per attempt with its bar, phases,
// frame ticks, own grpc-timeout, the backoff gap before it and its annotations, then the call's markers and
// its deadline.
class CallLanePass
{
public:
    // Forgets the gap labels of the last picture.
    void begin() { m_gapLabels.clear(); }
    // The lane of call `index` at y top.
    void paint(QPainter *p, const PaintContext &ctx, size_t index, double top);
    // The gap labels painted since begin().
    const std::vector<GapLabel> &gapLabels() const { return m_gapLabels; }
    // A lane's name as drawn in `width`: cut at its start, behind its marks ("▸ ", "★ ").
    static QString fittedName(const QFontMetricsF &fm, const QString &name, double width);
    // A compact row's label column: the name, fitted, and beside it at the column's end the attempt count
    // (before the name's start where both do not fit) or else the method, where a few letters of it fit.
    struct RowLabel
    {
        QString name, side; // side empty: none shown
    };
    static RowLabel rowLabel(const QFontMetricsF &nameFm, const QFontMetricsF &smallFm, const Call &call,
                             double nameWidth, double scale);

private:
    static void paintPhases(QPainter *p, const PaintContext &ctx, const Attempt &a, const QRectF &bar);
    // A call on one row (compact lanes): its name in the label column, its attempts side by side with the
    // gaps between them, the outcome after the last bar.
    void paintRow(QPainter *p, const PaintContext &ctx, size_t index, double top);
    // A row's fonts and their metrics, made once per scale instead of once per row.
    struct RowFonts
    {
        double scale = 0;
        QFont name, small, bar;
        std::optional<QFontMetricsF> nameFm, smallFm, barFm;
        double arrowWidth = 0; // "▶" in the small font: an off-view deadline's arrow
    };
    const RowFonts &rowFonts(const PaintContext &ctx);

    std::vector<GapLabel> m_gapLabels;
    RowFonts m_rowFonts;
};

} // namespace rpcscope
