#include "connectionlanepass.h"

#include "paintcontext.h"
#include "paintkit.h"
#include "timeformat.h"
#include "timelinestyle.h"
#include "tlssummary.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <functional>

namespace rpcscope {

namespace {
// Frames are appended in arrival order; batches of different relays (a chain's hops) interleave, so the
// time index is only nearly sorted. Searching a margin either side of the view absorbs that.
constexpr qint64 kFrameSearchMarginNs = 50'000'000;

// A PING no ACK answered stays open until its connection ends (or up to now while it lasts): a dashed line
// from the PING, which a keepalive failure ends with the client closing the connection.
void paintOpenPings(QPainter *p, const PaintContext &ctx, size_t first, size_t last, double y,
                    const std::function<void(double, QString)> &label)
{
    const TimeAxis &ax = ctx.axis;
    const double right = ctx.rect.right();
    const double w = std::max(1.0, ctx.metrics.scale);
    const auto &conns = ctx.store.connections();
    for (size_t c = first; c < last && c < conns.size(); ++c) {
        const Connection &conn = conns[c];
        for (const Connection::OpenPing &ping : conn.openPings) {
            const qint64 endNs = conn.closedNs.value_or(std::max<qint64>(ctx.store.latestNs(), ctx.endNs()));
            const double x1 = std::floor(ax.timeToX(ping.sentNs));
            const double x2 = std::max(ax.timeToX(endNs), x1 + 1);
            if (x2 < ax.left || x1 > right || !conn.unanswered(ping, endNs)) continue;
            ctx.mark(kUseUnansweredPing);
            p->setPen(QPen(ctx.theme.rst, 2 * w, Qt::DashLine, Qt::FlatCap));
            p->drawLine(QPointF(std::max(x1, ax.left), y), QPointF(std::min(x2, right), y));
            if (x1 >= ax.left) p->fillRect(QRectF(x1, y - 4 * w, 2 * w, 8 * w), ctx.theme.rst);
            if (conn.closedNs && x2 <= right)
                p->fillRect(QRectF(x2 - w, y - 4 * w, 2 * w, 8 * w), ctx.theme.rst);
            const QString text =
                conn.closedNs
                    ? QStringLiteral("PING: no ACK in %1").arg(formatDuration(*conn.closedNs - ping.sentNs))
                    : QStringLiteral("PING: no ACK yet");
            // Near the right edge the words move left, over the line, rather than go unsaid.
            const double tw = QFontMetricsF(ctx.font(10, true)).horizontalAdvance(text);
            label(std::max(std::min(x1, right - tw - 4), ax.left), text);
        }
    }
}
} // namespace

void ConnectionLanePass::paintGroupHeader(QPainter *p, const PaintContext &ctx, size_t group, double top)
{
    const QRectF &rect = ctx.rect;
    const TimelineTheme &th = ctx.theme;
    const TimelineLayout::Group &g = ctx.layout.groups()[group];
    const QRectF r(rect.left(), top, rect.width(), ctx.metrics.groupHeader);
    p->fillRect(r, th.headerBand.darker(th.background.lightness() > 128 ? 108 : 80));
    p->setPen(th.text);
    p->setFont(ctx.font(14, true));
    p->drawText(r.adjusted(10, 0, -10, 0), Qt::AlignVCenter | Qt::AlignLeft,
                QStringLiteral("%1   ·  %2 call%3 · %4 failed")
                    .arg(QStringLiteral("▾ ") + g.title) // a click folds the group into one row
                    .arg(g.calls)
                    .arg(g.calls == 1 ? "" : "s")
                    .arg(g.failed));
}

QString ConnectionLanePass::title(const PaintContext &ctx, size_t connIndex)
{
    const auto &conns = ctx.store.connections();
    const QFontMetricsF fm(ctx.font(12, true));
    const double width = ctx.metrics.labelWidth - 14;
    if (connIndex >= conns.size())
        return fm.elidedText(QStringLiteral("%1 connections").arg(conns.size()), Qt::ElideRight, width);
    const Connection &conn = conns[connIndex];
    const QString id = QStringLiteral("connection %1").arg(conn.id);
    if (conn.label.empty()) return fm.elidedText(id, Qt::ElideRight, width);
    // The connection's number stays whole (it tells the lanes apart); its label gives way, in its middle,
    // which keeps both of its ends (a hop's side and its target), unless not even a few letters would fit.
    const QString lead = id + QStringLiteral(" · ");
    const QString label = QString::fromStdString(conn.label);
    const double room = width - fm.horizontalAdvance(lead);
    if (room >= fm.horizontalAdvance(QStringLiteral("MMM…")))
        return lead + fm.elidedText(label, Qt::ElideMiddle, room);
    return fm.elidedText(lead + label, Qt::ElideRight, width);
}

QString ConnectionLanePass::subtitle(const Connection &conn, bool *warns)
{
    if (warns) *warns = false;
    if (!conn.decodeError.empty())
        return QStringLiteral("undecodable: ") + QString::fromStdString(conn.decodeError);
    if (const ProtocolViolation *broken = conn.protocolError()) {
        if (warns) *warns = true;
        return QString::asprintf("%s broke HTTP/2: %s (%s)",
                                 broken->by == Direction::ClientToServer ? "client" : "server",
                                 broken->rule.c_str(), h2ErrorName(broken->errorCode).c_str());
    }
    QString sub =
        QString::fromStdString(conn.client) + QStringLiteral(" → ") + QString::fromStdString(conn.server);
    // TLS first: the peers' addresses are in the tooltip, and the subtitle, elided at its end, keeps its
    // start.
    if (const auto tls = TlsSummary::find(conn.notes))
        sub = QString::fromStdString(tls->shortLine()) + QStringLiteral("  ·  ") + sub;
    return sub;
}

QString ConnectionLanePass::shownSubtitle(const QFontMetricsF &fm, const Connection *conn, double width,
                                          bool *warns)
{
    if (warns) *warns = false;
    if (!conn) {
        const QString hint = QStringLiteral("group by connection for one lane each");
        return fm.horizontalAdvance(hint) <= width
                   ? hint
                   : fm.elidedText(QStringLiteral("all in one lane"), Qt::ElideRight, width);
    }
    bool warn = false;
    QString sub = subtitle(*conn, &warn);
    if (warns) *warns = warn;
    // A warning, why it could not be decoded, and a TLS line ahead of the peers keep their start.
    if (warn || !conn->decodeError.empty() || TlsSummary::find(conn->notes))
        return fm.elidedText(sub, Qt::ElideRight, width);
    // Peers too long for the column (workshop type): the server, which names the service, before the
    // client's ephemeral port; cut in the middle they read as neither ("127.0.0.1:4…0.0.1:44757").
    if (fm.horizontalAdvance(sub) > width) sub = QStringLiteral("→ ") + QString::fromStdString(conn->server);
    return fm.elidedText(sub, Qt::ElideMiddle, width);
}

void ConnectionLanePass::paint(QPainter *p, const PaintContext &ctx, size_t connIndex, double top)
{
    const QRectF &rect = ctx.rect;
    const TimeAxis &ax = ctx.axis;
    const TimelineTheme &th = ctx.theme;
    const LaneMetrics &m = ctx.metrics;
    const bool all = connIndex == kAllConnections;
    const auto &conns = ctx.store.connections();
    const double h = m.connectionHeight;
    const double right = rect.right();
    const double mid = top + h / 2;
    p->fillRect(QRectF(rect.left(), top, rect.width(), h), th.headerBand);
    paintGrid(p, ctx, top, top + h);

    // Label: which connection, its peers, and what it knows about itself.
    p->setPen(th.text);
    p->setFont(ctx.font(12, true));
    p->drawText(QRectF(rect.left() + 10, top + 1, m.labelWidth - 14, h / 2), Qt::AlignVCenter | Qt::AlignLeft,
                ConnectionLanePass::title(ctx, connIndex));
    p->setFont(ctx.font(11));
    bool subWarns = false; // the subtitle says something went wrong on the wire
    const QString sub = shownSubtitle(QFontMetricsF(p->font()), all ? nullptr : &conns[connIndex],
                                      m.labelWidth - 14, &subWarns);
    p->setPen(subWarns ? th.rst : th.muted);
    p->drawText(QRectF(rect.left() + 10, top + h / 2, m.labelWidth - 14, h / 2 - 1),
                Qt::AlignVCenter | Qt::AlignLeft, sub);

    // Lifetimes as a thin line (merged: one rect per run of open time).
    const int width = std::max(1, int(right - ax.left) + 1);
    RunMerger runs;
    enum Group
    {
        Life,
        StallC2S,
        StallS2C,
        Settings,
        Ping,
        Rst,
        Goaway,
        GroupCount
    };
    const QColor colors[GroupCount] = {th.connLine, th.stall, th.stall, th.settings,
                                       th.ping,     th.rst,   th.goaway};
    std::vector<const TimelineIndex::ConnIndex *> lanes;
    for (size_t c = all ? 0 : connIndex; c < (all ? conns.size() : connIndex + 1); ++c) {
        const Connection &conn = conns[c];
        const double o1 = std::max(ax.timeToX(conn.openedNs), ax.left);
        const double o2 = std::min(
            ax.timeToX(conn.closedNs.value_or(std::max<qint64>(ctx.store.latestNs(), ctx.endNs()))), right);
        if (o2 > o1) {
            runs.add(Life, std::floor(o1), std::ceil(o2), std::floor(mid), 1);
            ctx.mark(kUseConnection);
        }
        if (const TimelineIndex::ConnIndex *ci = ctx.index.connection(conn.id)) lanes.push_back(ci);
    }

    // One mark per pixel column and kind, whatever the number of frames: `seen` dedupes across connections.
    std::vector<std::uint8_t> seen(size_t(width), 0);
    auto column = [&](double x) { return std::clamp(int(x - ax.left), 0, width - 1); };
    auto once = [&](double x, int bit) {
        std::uint8_t &s = seen[size_t(column(x))];
        if (s & (1u << bit)) return false;
        s |= std::uint8_t(1u << bit);
        return true;
    };
    struct Label
    {
        double x;
        QString text;
        int group;
        bool upper;
    };
    std::vector<Label> labels;
    // Words are only worth placing while they can be read: beyond this many marks in view they would overlap.
    constexpr size_t kMaxLabelCandidates = 400;
    auto firstAt = [&](const std::vector<std::uint32_t> &v, auto timeOf) {
        return std::partition_point(v.begin(), v.end(), [&](std::uint32_t i) {
            return timeOf(i) < ctx.startNs() - kFrameSearchMarginNs;
        });
    };
    const auto &frames = ctx.store.frames();
    const double tickW = std::max(1.0, m.scale);
    for (const TimelineIndex::ConnIndex *ci : lanes) {
        // Stalls: the stalled sender's half (client above the line, server below), at least 1 px.
        for (std::uint32_t si : ci->stalls) {
            const FlowStall &st = ctx.store.stalls()[si];
            const double x1 = std::max(ax.timeToX(st.startNs), ax.left);
            const double x2 = std::min(ax.timeToX(st.endNs.value_or(ctx.store.latestNs())), right);
            if (x2 < ax.left || x1 > right) continue;
            const bool c2s = st.dir == Direction::ClientToServer;
            runs.add(c2s ? StallC2S : StallS2C, std::floor(x1), std::ceil(x2), c2s ? top + 3 : mid + 1,
                     h / 2 - 4);
            ctx.mark(kUseStall);
            if (x2 - x1 > 60 * m.scale)
                labels.push_back({x1,
                                  QStringLiteral("flow-control stall (%1)").arg(c2s ? "client" : "server"),
                                  c2s ? StallC2S : StallS2C, c2s});
        }
        // Frame marks: binary search the visible slice of this connection's marker frames (nearly
        // time-ordered).
        for (auto f = firstAt(ci->marks, [&](std::uint32_t i) { return frames[i].tNs; });
             f != ci->marks.end(); ++f) {
            const FrameRecord &fr = frames[*f];
            if (fr.tNs > ctx.endNs() + kFrameSearchMarginNs) break;
            const double x = std::floor(ax.timeToX(fr.tNs));
            if (fr.isRun()) {
                // Frames folded into a run: a bar over its span on the ping row, and how many of what.
                const double x1 = std::max(std::floor(ax.timeToX(fr.firstNs())), ax.left);
                if (x < ax.left || x1 > right || !once(std::min(x, right), 5)) continue;
                runs.add(Ping, x1, std::max(std::min(x, right), x1 + 1) + tickW,
                         top + h - 6 * m.scale - 2 * tickW, 4 * tickW);
                ctx.mark(kUsePing);
                labels.push_back({x1,
                                  QStringLiteral("%1 × %2%3")
                                      .arg(QString::fromLatin1(frameTypeName(fr.type)))
                                      .arg(fr.count)
                                      .arg(fr.isFlood() ? QStringLiteral(" (flood)") : QString()),
                                  Ping, false});
                continue;
            }
            if (x < ax.left || x > right) continue;
            if (fr.type == FrameSettings) {
                const bool c2s = fr.dir == Direction::ClientToServer;
                if (!once(x, c2s ? 0 : 1)) continue;
                runs.add(Settings, x, x + tickW, c2s ? top + 4 : mid, h / 2 - 4);
                ctx.mark(kUseSettings);
                labels.push_back({x, QStringLiteral("SETTINGS"), Settings, c2s});
            } else if (fr.type == FrameRstStream) {
                if (!once(x, 2)) continue;
                runs.add(Rst, x, x + 2 * tickW, top + 3, h - 6);
                ctx.mark(kUseRst);
                labels.push_back({x,
                                  QStringLiteral("RST_STREAM %1 (stream %2)")
                                      .arg(QString::fromStdString(h2ErrorName(fr.value)))
                                      .arg(fr.stream),
                                  Rst, true});
            } else {
                if (!once(x, 3)) continue;
                runs.add(Goaway, x, x + 3 * tickW, top + 1, h - 2);
                ctx.mark(kUseGoaway);
                labels.push_back({x, QStringLiteral("GOAWAY"), Goaway, false});
            }
        }
        // PINGs: a span from the PING to its ACK (the RTT) and a tick at the ACK, labelled with the RTT.
        const double py = top + h - 6 * m.scale;
        for (auto pi = firstAt(ci->pings, [&](std::uint32_t i) { return ctx.store.pings()[i].tNs; });
             pi != ci->pings.end(); ++pi) {
            const PingRecord &pr = ctx.store.pings()[*pi];
            if (pr.tNs > ctx.endNs() + kFrameSearchMarginNs) break;
            const double x2 = std::floor(ax.timeToX(pr.tNs));
            const double x1 = std::max(std::floor(ax.timeToX(pr.tNs - pr.rttNs)), ax.left);
            if (x2 < ax.left || x1 > right || !once(x2, 4)) continue;
            runs.add(Ping, x1, std::max(x2, x1 + 1), py - tickW, 2 * tickW);
            runs.add(Ping, x2, x2 + tickW, py - 4 * m.scale, 4 * m.scale + 2);
            ctx.mark(kUsePing);
            labels.push_back({x2, QStringLiteral("PING %1").arg(formatDuration(pr.rttNs)), Ping, false});
        }
    }
    runs.fill(p, colors);
    paintOpenPings(p, ctx, all ? 0 : connIndex, all ? conns.size() : connIndex + 1, top + h - 6 * m.scale,
                   [&](double x, QString text) {
                       labels.push_back({x, std::move(text), Rst, true});
                   });

    // Words where they fit, left to right; none once there are too many marks to read them.
    if (labels.size() > kMaxLabelCandidates)
        std::erase_if(labels, [](const Label &l) { return l.group != Goaway; });
    // GOAWAY first (it always gets its word), then left to right; a word never covers another in its row.
    std::stable_sort(labels.begin(), labels.end(), [](const Label &a, const Label &b) {
        return (a.group == Goaway) != (b.group == Goaway) ? a.group == Goaway : a.x < b.x;
    });
    p->setFont(ctx.font(10, true));
    const QFontMetricsF fm(p->font());
    std::vector<std::pair<double, double>> placed[2];
    for (const Label &l : labels) {
        auto &row = placed[l.upper ? 0 : 1];
        const double tw = fm.horizontalAdvance(l.text);
        double x = l.x + 3;
        if (x + tw > right) {
            // At the right edge a GOAWAY still gets its word, on the left of its mark.
            if (l.group != Goaway || l.x - 4 - tw < ax.left) continue;
            x = l.x - 4 - tw;
        }
        const bool covers = std::any_of(row.begin(), row.end(), [&](const std::pair<double, double> &r) {
            return x < r.second + 6 && x + tw + 6 > r.first;
        });
        if (covers) continue;
        const QRectF box(x, l.upper ? top : mid, tw + 2, h / 2);
        // A word sits on the lane's background, so a neighbouring tick never shows through its letters.
        if (l.group != StallC2S && l.group != StallS2C) p->fillRect(box.adjusted(0, 2, 0, -2), th.headerBand);
        p->setPen(l.group == StallC2S || l.group == StallS2C ? th.text : colors[l.group]);
        p->drawText(box, Qt::AlignVCenter | Qt::AlignLeft, l.text);
        row.emplace_back(x, x + tw);
    }
}

} // namespace rpcscope
