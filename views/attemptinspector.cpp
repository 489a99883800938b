#include "attemptinspector.h"

#include "headerlog.h"
#include "timelinepainter.h"
#include "timelinestore.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

namespace rpcscope {

namespace {
// Frames are appended in nearly time order (batches of different relays interleave); a margin either side
// of the attempt absorbs that, as in the painter.
constexpr qint64 kFrameSearchMarginNs = 50'000'000;

QString flagsText(const FrameRecord &f)
{
    QStringList out;
    if (f.type == FrameData || f.type == FrameHeaders) {
        if (f.flags & FlagEndStream) out << QStringLiteral("END_STREAM");
        if (f.type == FrameHeaders && (f.flags & FlagEndHeaders)) out << QStringLiteral("END_HEADERS");
    } else if ((f.type == FrameSettings || f.type == FramePing) && (f.flags & FlagAck)) {
        out << QStringLiteral("ACK");
    }
    return out.join(QLatin1Char(' '));
}
} // namespace

AttemptInspector::AttemptInspector(const TimelineStore *store, const HeaderLog *headers, QWidget *parent)
    : QWidget(parent), m_store(store), m_headers(headers)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_title);
    m_tree = new QTreeWidget(this);
    m_tree->setColumnCount(2);
    m_tree->setHeaderLabels({QStringLiteral("What"), QStringLiteral("Value")});
    // Section titles span both columns, so the name column sizes to the names alone.
    m_tree->header()->setSectionResizeMode(0, QHeaderView::Interactive);
    m_tree->setColumnWidth(0, 190);
    m_tree->setUniformRowHeights(true);
    layout->addWidget(m_tree);
    showAttempt(-1, -1);
}

void AttemptInspector::showAttempt(int callIndex, int attemptIndex)
{
    m_tree->clear();
    const auto &calls = m_store->calls();
    if (callIndex < 0 || size_t(callIndex) >= calls.size() || attemptIndex < 0 ||
        size_t(attemptIndex) >= calls[callIndex].attempts.size()) {
        m_title->setText(
            QStringLiteral("Click an attempt on the timeline to see its frames, headers and timings."));
        return;
    }
    const Call &call = calls[callIndex];
    const Attempt &a = call.attempts[attemptIndex];
    const qint64 origin = m_store->originNs();
    m_title->setText(QStringLiteral("<b>%1</b> · attempt %2 of %3<br>%4")
                         .arg(QString::fromStdString(call.key).toHtmlEscaped())
                         .arg(attemptIndex + 1)
                         .arg(call.attempts.size())
                         .arg(QString::fromStdString(call.method).toHtmlEscaped()));

    auto section = [&](const QString &name) {
        auto *item = new QTreeWidgetItem(m_tree, {name});
        QFont f = item->font(0);
        f.setBold(true);
        item->setFont(0, f);
        item->setFirstColumnSpanned(true);
        item->setExpanded(true);
        return item;
    };
    auto row = [](QTreeWidgetItem *parent, const QString &k, const QString &v) {
        return new QTreeWidgetItem(parent, {k, v});
    };

    QTreeWidgetItem *status = section(QStringLiteral("Outcome"));
    row(status, QStringLiteral("grpc-status"),
        a.ended() ? (a.status ? QStringLiteral("%1 (%2)").arg(grpcStatusName(*a.status)).arg(*a.status)
                              : QStringLiteral("none"))
                  : QStringLiteral("in flight"));
    if (a.statusMessage)
        row(status, QStringLiteral("grpc-message"), QString::fromStdString(*a.statusMessage));
    if (a.rstErrorCode) row(status, QStringLiteral("RST_STREAM"), QString::number(*a.rstErrorCode));
    if (a.pushbackMs) row(status, QStringLiteral("grpc-retry-pushback-ms"), QString::number(*a.pushbackMs));
    if (a.ended())
        row(status, QStringLiteral("Trailers-Only"),
            a.trailersOnly ? QStringLiteral("yes") : QStringLiteral("no"));
    if (call.transparentRetry(size_t(attemptIndex)))
        row(status, QStringLiteral("retry"),
            QStringLiteral("transparent (the transport refused the previous stream)"));

    QTreeWidgetItem *timing = section(QStringLiteral("Timings"));
    row(timing, QStringLiteral("start"),
        formatDuration(a.startNs - origin) + QStringLiteral(" after capture start"));
    if (attemptIndex > 0 && call.attempts[attemptIndex - 1].endNs)
        row(timing, QStringLiteral("backoff before it"),
            formatDuration(a.startNs - *call.attempts[attemptIndex - 1].endNs));
    if (a.responseHeadersNs)
        row(timing, QStringLiteral("response headers"),
            QStringLiteral("+") + formatDuration(*a.responseHeadersNs - a.startNs));
    if (a.endNs) row(timing, QStringLiteral("duration"), formatDuration(*a.endNs - a.startNs));
    if (a.timeoutNs) row(timing, QStringLiteral("grpc-timeout"), formatDuration(*a.timeoutNs));
    if (const auto d = call.deadlineNs())
        row(timing, QStringLiteral("call deadline"),
            QStringLiteral("%1 left at this attempt's start").arg(formatDuration(*d - a.startNs)));
    row(timing, QStringLiteral("connection / stream"),
        QStringLiteral("%1 / %2").arg(a.connection).arg(a.stream));
    row(timing, QStringLiteral("request"),
        QStringLiteral("%1 message(s), %2 B").arg(a.requestMessages).arg(a.requestBytes));
    row(timing, QStringLiteral("response"),
        QStringLiteral("%1 message(s), %2 B").arg(a.responseMessages).arg(a.responseBytes));
    if (!a.encoding.empty()) row(timing, QStringLiteral("grpc-encoding"), QString::fromStdString(a.encoding));

    // Header blocks in order: the first request block, the first response block without END_STREAM, and the
    // block that ends the stream (trailers, or Trailers-Only).
    if (const auto *blocks = m_headers ? m_headers->blocks(a.connection, a.stream) : nullptr) {
        bool sawResponse = false;
        for (const HeaderLog::Block &b : *blocks) {
            QString name;
            if (b.dir == Direction::ClientToServer)
                name = QStringLiteral("Request headers");
            else if (b.endStream)
                name = sawResponse ? QStringLiteral("Trailers") : QStringLiteral("Trailers-Only response");
            else
                name = QStringLiteral("Response headers");
            sawResponse = sawResponse || b.dir == Direction::ServerToClient;
            QTreeWidgetItem *s =
                section(QStringLiteral("%1  (+%2)").arg(name, formatDuration(b.tNs - a.startNs)));
            for (const Header &h : b.headers)
                row(s, QString::fromStdString(h.name), QString::fromStdString(h.value));
            if (b.truncated) row(s, QStringLiteral("…"), QStringLiteral("cut at the header-list limit"));
        }
    } else {
        row(section(QStringLiteral("Headers")), QString(),
            QStringLiteral("not kept (the inspector keeps the most recent streams)"));
    }

    QTreeWidgetItem *frames = section(QStringLiteral("Frames"));
    const auto &all = m_store->frames();
    const qint64 end = a.endNs.value_or(m_store->latestNs());
    auto it = std::partition_point(all.begin(), all.end(), [&](const FrameRecord &f) {
        return f.tNs < a.startNs - kFrameSearchMarginNs;
    });
    int n = 0;
    for (; it != all.end() && it->tNs <= end + kFrameSearchMarginNs; ++it) {
        if (it->connection != a.connection || it->stream != a.stream) continue;
        ++n;
        QString what = QStringLiteral("%1 %2").arg(it->dir == Direction::ClientToServer ? QStringLiteral("→")
                                                                                        : QStringLiteral("←"),
                                                   QString::fromLatin1(frameTypeName(it->type)));
        QString value = QStringLiteral("+%1 · %2 B").arg(formatDuration(it->tNs - a.startNs)).arg(it->length);
        if (const QString f = flagsText(*it); !f.isEmpty()) value += QStringLiteral(" · ") + f;
        if (it->type == FrameRstStream) value += QStringLiteral(" · error %1").arg(it->value);
        row(frames, what, value);
    }
    frames->setText(0, QStringLiteral("Frames (%1; → client to server, ← server to client)").arg(n));
    if (n == 0) row(frames, QString(), QStringLiteral("no frames recorded for this stream"));
}

} // namespace rpcscope
