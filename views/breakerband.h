#pragma once

#include "timelinestore.h"

#include <QString>
#include <QtGlobal>
#include <vector>

namespace rpcscope {

struct PaintContext;

// The circuit breaker's states over time as the policy band draws them, in one place for the painter and
// hit-testing: each state a span at least minWidth() wide, so a half-open that lasts one probe call stays
// visible at any zoom, and each transition a mark at its boundary however short the states around it.
struct BreakerBand
{
    struct Segment
    {
        QString state;
        qint64 fromNs = 0;
        qint64 toNs = 0;       // the capture's latest event for the state still current
        bool current = false;  // the breaker is still in this state at the end of the capture
        double x1 = 0, x2 = 0; // as drawn, widened to minWidth() where the state is shorter
        bool widened = false;
    };
    struct Transition
    {
        const LabEventRecord *event = nullptr;
        double x = 0;
    };

    std::vector<Segment> segments;       // in time order, those in view
    std::vector<Transition> transitions; // in time order, those in view

    // The band in this picture, between the time axis's left edge and right.
    static BreakerBand build(const PaintContext &ctx, double right);
    // The narrowest a state is drawn: 6 px, more when everything is scaled up (workshop mode).
    static double minWidth(double scale) { return 6 * scale; }
    // The legend bit (LegendUse) of a state's colour.
    static int legendUse(const QString &state);
};

} // namespace rpcscope
