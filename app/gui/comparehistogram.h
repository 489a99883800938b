#pragma once

#include "callstats.h"

#include <QString>
#include <QWidget>
#include <array>

namespace rpcscope {

// Two latency histograms overlaid on LatencyBuckets' logarithmic buckets, A and B side by side in each
// bucket in two colours, with a legend. The Compare window's own small drawing; the Statistics dock's
// histogram widget can take its place once it overlays series.
class CompareHistogram : public QWidget
{
    Q_OBJECT
public:
    using Counts = std::array<std::uint64_t, LatencyBuckets::kCount>;
    explicit CompareHistogram(QWidget *parent = nullptr);

    void setSeries(const QString &title, const Counts &a, const QString &labelA, const Counts &b,
                   const QString &labelB);
    const Counts &countsA() const { return m_a; }
    const Counts &countsB() const { return m_b; }
    QString title() const { return m_title; }
    // The colours of A and B, readable on a light and on a dark window.
    static QColor colourA(bool dark);
    static QColor colourB(bool dark);

    QSize sizeHint() const override { return {420, 220}; }
    QSize minimumSizeHint() const override { return {240, 140}; }

protected:
    void paintEvent(QPaintEvent *) override;

private:
    QString m_title, m_labelA, m_labelB;
    Counts m_a{}, m_b{};
};

} // namespace rpcscope
