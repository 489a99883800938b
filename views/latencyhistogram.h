#pragma once

#include "callstats.h"

#include <QColor>
#include <QString>
#include <QWidget>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace rpcscope {

// A latency histogram over LatencyBuckets (1-2-5 logarithmic buckets, callstats.h): one bar per bucket from
// the lowest to the highest one used, its count above it, round edges below, and p50/p99 marks. Several
// series (two runs compared, say) share the axes: each bucket holds a bar per series side by side, in the
// series' colour, with a legend. Colours of the frame and text follow the widget's palette and font, so the
// window's dark and workshop looks apply. A click on a bucket emits bucketClicked().
class LatencyHistogram : public QWidget
{
    Q_OBJECT
public:
    struct Series
    {
        QString label;
        QColor colour;
        std::array<std::uint64_t, LatencyBuckets::kCount> counts{};
        // Marked with a dashed line in the series' colour, where they fall inside their bucket.
        std::optional<std::int64_t> p50Ns, p99Ns;
    };
    // A series from a recorder: its buckets, p50 and p99.
    static Series fromRecorder(const LatencyRecorder &recorder, const QString &label, const QColor &colour);

    explicit LatencyHistogram(QWidget *parent = nullptr);

    void setSeries(std::vector<Series> series);
    const std::vector<Series> &series() const { return m_series; }
    // Shown while every series is empty ("No ended calls yet").
    void setEmptyText(const QString &text);
    // The bucket drawn as selected (a filter follows it), or -1.
    void setSelectedBucket(int bucket);
    int selectedBucket() const { return m_selected; }
    // The buckets drawn: [first, last]; first > last when every series is empty.
    std::pair<int, int> shownBuckets() const;
    // The bucket under a point in widget coordinates, or -1.
    int bucketAt(const QPoint &pos) const;
    // Where bucket b's bars are, in widget coordinates (empty when it is not shown).
    QRectF bucketRect(int bucket) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void bucketClicked(int bucket);

protected:
    void paintEvent(QPaintEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    bool event(QEvent *event) override;

private:
    QRectF plotRect() const;
    double xOf(std::int64_t ns) const;

    std::vector<Series> m_series;
    QString m_emptyText;
    int m_selected = -1;
};

} // namespace rpcscope
