#pragma once

#include "ratestrippass.h"

#include <QRectF>
#include <QString>
#include <QtGlobal>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

class QPainter;

namespace rpcscope {

struct PaintContext;

// The fixed header above the lanes: the title (exports), the ruler with its ticks and the retention cut, the
// policy band (circuit breaker states, fast failures, markers of calls without a lane) and the overview
// histogram of every attempt in the trace.
class RulerPass
{
public:
    void paint(QPainter *p, const PaintContext &ctx);
    // The caption over the label column and its box: the longest wording that fits (large type on a
    // narrow column says less rather than cutting a word off), elided only when none does.
    static QString caption(const PaintContext &ctx);
    static QRectF captionRect(const PaintContext &ctx);
    // An exported picture's title line: the title on the left, the time range on the right, never over each
    // other. A narrow picture drops the range's UTC date first, then elides the range, then drops it; a
    // title wider than the picture is elided. Rects are where each is drawn (empty: not drawn).
    struct TitleLine
    {
        QString title, range;
        QRectF titleRect, rangeRect;
    };
    static TitleLine titleLine(const PaintContext &ctx);
    // The ruler's tick labels and where each is drawn: right of its tick, or ending at it where it would run
    // off the right edge. A label that would then touch the one before it is left out (its tick stays).
    struct TickLabel
    {
        qint64 t;
        QString text;
        QRectF rect;
    };
    static std::vector<TickLabel> tickLabels(const PaintContext &ctx, double rulerTop);
    // Forgets the overview's counts (the store was reset or evicted calls).
    void invalidate()
    {
        m_overviewKey.reset();
        m_rates.invalidate();
    }

private:
    static QString tickLabel(const PaintContext &ctx, qint64 t, qint64 step);
    void paintPolicyBand(QPainter *p, const PaintContext &ctx, const QRectF &band);
    void paintOverview(QPainter *p, const PaintContext &ctx, const QRectF &band);

    // The overview's per-column counts, keyed on (generation, range, width).
    struct OverviewKey
    {
        std::uint64_t generation;
        qint64 start, end;
        int width;
        bool operator==(const OverviewKey &) const = default;
    };
    std::optional<OverviewKey> m_overviewKey;
    std::vector<std::array<int, 6>> m_overviewCounts;
    RateStripPass m_rates;
};

} // namespace rpcscope
