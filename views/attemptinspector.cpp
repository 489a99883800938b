#include "attemptinspector.h"

#include "attemptduration.h"
#include "clientoutcome.h"
#include "headerlog.h"
#include "messagedecoder.h"
#include "timeformat.h"
#include "timelinestore.h"
#include "tlssummary.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

namespace rpcscope {

namespace {
// Frames are appended in nearly time order (batches of different relays interleave); a margin either side
// of the attempt absorbs that, as in the painter.
constexpr qint64 kFrameSearchMarginNs = 50'000'000;
// A message's rows stay few enough to scroll past: longer JSON and hex are cut, Copy gives it all.
constexpr int kMaxJsonLines = 300;
constexpr size_t kMaxHexBytes = 1024;
constexpr int kMaxLineChars = 240;
// Up to this many messages open expanded; more start collapsed (a long stream).
constexpr size_t kExpandMessages = 4;
constexpr int kMessageTextRole = Qt::UserRole + 1;

QString clipped(const QString &line)
{
    return line.size() > kMaxLineChars
               ? line.left(kMaxLineChars) + QStringLiteral(" … (%1 chars)").arg(line.size())
               : line;
}

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
    // Ctrl+C copies the row, or on a message its JSON (raw fields without a schema).
    auto *copy = new QAction(QStringLiteral("Copy (a message: its JSON)"), m_tree);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(copy, &QAction::triggered, this, &AttemptInspector::copyCurrent);
    m_tree->addAction(copy);
    m_tree->setContextMenuPolicy(Qt::ActionsContextMenu);
    showAttempt(-1, -1);
}

QString AttemptInspector::currentMessageText() const
{
    for (QTreeWidgetItem *i = m_tree->currentItem(); i; i = i->parent())
        if (const QVariant v = i->data(0, kMessageTextRole); v.isValid()) return v.toString();
    return {};
}

void AttemptInspector::copyCurrent()
{
    QString text = currentMessageText();
    if (text.isEmpty()) {
        const QTreeWidgetItem *i = m_tree->currentItem();
        if (!i) return;
        text = i->text(1).isEmpty() ? i->text(0) : i->text(0) + QStringLiteral(": ") + i->text(1);
    }
    QApplication::clipboard()->setText(text);
}

void AttemptInspector::refresh()
{
    const auto &calls = m_store->calls();
    if (m_call >= 0 && size_t(m_call) < calls.size() && calls[size_t(m_call)].key == m_callKey)
        showAttempt(m_call, m_attempt);
    else
        showAttempt(-1, -1);
}

void AttemptInspector::showAttempt(int callIndex, int attemptIndex)
{
    m_tree->clear();
    const auto &calls = m_store->calls();
    m_call = m_attempt = -1;
    m_callKey.clear();
    if (callIndex < 0 || size_t(callIndex) >= calls.size() || attemptIndex < 0 ||
        size_t(attemptIndex) >= calls[callIndex].attempts.size()) {
        m_title->setText(
            QStringLiteral("Click an attempt on the timeline to see its frames, headers and timings."));
        return;
    }
    const Call &call = calls[callIndex];
    const Attempt &a = call.attempts[attemptIndex];
    m_call = callIndex;
    m_attempt = attemptIndex;
    m_callKey = call.key;
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
    // First, so that the proxy's own failure is never read as the server's.
    if (a.injected())
        row(status, QStringLiteral("injected"),
            QStringLiteral("injected by rpcscope: rule %1 %2")
                .arg(a.faultRule)
                .arg(QString::fromStdString(a.faultRuleText)));
    row(status, QStringLiteral("grpc-status"),
        a.ended() ? (a.status ? QStringLiteral("%1 (%2)").arg(grpcStatusName(*a.status)).arg(*a.status)
                              : QStringLiteral("none"))
                  : QStringLiteral("in flight"));
    if (a.statusMessage)
        row(status, QStringLiteral("grpc-message"), QString::fromStdString(*a.statusMessage));
    auto errorCode = [](std::uint32_t code) {
        return QStringLiteral("%1 (%2)").arg(QString::fromStdString(h2ErrorName(code))).arg(code);
    };
    if (a.rstErrorCode)
        row(status, QStringLiteral("RST_STREAM"),
            errorCode(*a.rstErrorCode) + (a.rstByClient ? QStringLiteral(", sent by the client")
                                                        : QStringLiteral(", sent by the server")));
    if (a.goawayErrorCode)
        row(status, QStringLiteral("GOAWAY"),
            QStringLiteral("not processed (stream above the last-stream-id), error code %1")
                .arg(errorCode(*a.goawayErrorCode)));
    if (a.pushbackMs) row(status, QStringLiteral("grpc-retry-pushback-ms"), QString::number(*a.pushbackMs));
    if (a.ended())
        row(status, QStringLiteral("Trailers-Only"),
            a.trailersOnly ? QStringLiteral("yes") : QStringLiteral("no"));
    if (call.transparentRetry(size_t(attemptIndex)))
        row(status, QStringLiteral("retry"),
            QStringLiteral("transparent (the transport refused the previous stream)"));
    // The call's last attempt: what the client got, when the wire only implies it or cannot say.
    if (size_t(attemptIndex) + 1 == call.attempts.size()) {
        const ClientOutcome client = clientOutcome(call, *m_store);
        if (client.implied())
            row(status, QStringLiteral("client got"),
                QStringLiteral("%1 at %2: %3")
                    .arg(QString::fromStdString(client.label()), formatDuration(*client.atNs - origin),
                         QString::fromStdString(client.why)))
                ->setToolTip(1, QString::fromStdString(client.why));
        else if (client.source == ClientOutcome::Source::Unknown)
            row(status, QStringLiteral("client got"),
                QStringLiteral("unknown: ") + QString::fromStdString(client.why));
    } else if (const std::string note = attemptClientNote(call, size_t(attemptIndex)); !note.empty()) {
        row(status, QStringLiteral("client"), QString::fromStdString(note));
    }

    QTreeWidgetItem *timing = section(QStringLiteral("Timings"));
    row(timing, QStringLiteral("start"),
        formatDuration(a.startNs - origin) + QStringLiteral(" after capture start"));
    if (attemptIndex > 0 && call.attempts[attemptIndex - 1].endNs)
        row(timing, QStringLiteral("backoff before it"),
            formatDuration(a.startNs - *call.attempts[attemptIndex - 1].endNs));
    if (a.responseHeadersNs)
        row(timing, QStringLiteral("response headers"),
            QStringLiteral("+") + formatDuration(*a.responseHeadersNs - a.startNs));
    if (a.endNs) row(timing, QStringLiteral("duration"), attemptDurationText(a));
    if (a.timeoutNs) row(timing, QStringLiteral("grpc-timeout"), formatDuration(*a.timeoutNs));
    if (const auto d = call.deadlineNs())
        row(timing, QStringLiteral("call deadline"),
            QStringLiteral("%1 left at this attempt's start").arg(formatDuration(*d - a.startNs)));
    row(timing, QStringLiteral("connection / stream"),
        QStringLiteral("%1 / %2").arg(a.connection).arg(a.stream));
    if (const Connection *conn = m_store->findConnection(a.connection))
        if (const auto tls = TlsSummary::find(conn->notes)) {
            QString text = QString::fromStdString(tls->shortLine());
            if (tls->intercepted)
                text +=
                    QStringLiteral("; cipher %1; target side %2 %3, certificate %4%5")
                        .arg(QString::fromStdString(tls->cipher), QString::fromStdString(tls->targetVersion),
                             QString::fromStdString(tls->targetCipher),
                             QString::fromStdString(tls->certificate),
                             tls->targetUnverified ? QStringLiteral(" (not verified)") : QString());
            row(timing, QStringLiteral("TLS"), text);
        }
    row(timing, QStringLiteral("request"),
        QStringLiteral("%1, %2 B").arg(counted(qint64(a.requestMessages), "message")).arg(a.requestBytes));
    row(timing, QStringLiteral("response"),
        QStringLiteral("%1, %2 B").arg(counted(qint64(a.responseMessages), "message")).arg(a.responseBytes));
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

    addMessages(callIndex, attemptIndex);

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
        if (it->type == FrameRstStream)
            value += QStringLiteral(" · %1").arg(QString::fromStdString(h2ErrorName(it->value)));
        if (it->isRun()) // frames folded into one: how many, over how long
            value += QStringLiteral(" · %1 frames over %2%3")
                         .arg(it->count)
                         .arg(formatDuration(it->tNs - it->firstNs()))
                         .arg(it->isFlood() ? QStringLiteral(" (flood)") : QString());
        row(frames, what, value);
    }
    frames->setText(0, QStringLiteral("Frames (%1; → client to server, ← server to client)").arg(n));
    if (n == 0) row(frames, QString(), QStringLiteral("no frames recorded for this stream"));
}

void AttemptInspector::addMessages(int callIndex, int attemptIndex)
{
    const Call &call = m_store->calls()[size_t(callIndex)];
    const Attempt &a = call.attempts[size_t(attemptIndex)];
    const auto *messages = m_headers ? m_headers->messages(a.connection, a.stream) : nullptr;
    if (!m_headers || (!messages && a.requestMessages + a.responseMessages == 0)) return;
    auto *section = new QTreeWidgetItem(m_tree);
    QFont bold = section->font(0);
    bold.setBold(true);
    section->setFont(0, bold);
    section->setFirstColumnSpanned(true);
    section->setExpanded(true);
    if (!messages) {
        section->setText(0, QStringLiteral("Messages"));
        new QTreeWidgetItem(section,
                            {QString(), QStringLiteral("not kept (the inspector keeps the most recent "
                                                       "streams' messages)")});
        return;
    }
    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    // At the tree's size, which workshop mode scales.
    if (m_tree->font().pointSizeF() > 0) mono.setPointSizeF(m_tree->font().pointSizeF());
    QColor noteColor = palette().color(QPalette::PlaceholderText);
    auto spanned = [&](QTreeWidgetItem *parent, const QString &text, bool monospace) {
        auto *item = new QTreeWidgetItem(parent, {text});
        item->setFirstColumnSpanned(true);
        if (monospace) item->setFont(0, mono);
        return item;
    };
    // The response's grpc-encoding, for compressed responses (the request's is the attempt's).
    std::string responseEncoding;
    if (const auto *blocks = m_headers->blocks(a.connection, a.stream))
        for (const HeaderLog::Block &b : *blocks)
            if (b.dir == Direction::ServerToClient)
                for (const Header &h : b.headers)
                    if (h.name == "grpc-encoding") responseEncoding = h.value;
    const size_t notKept = m_headers->messagesNotKept(a.connection, a.stream);
    section->setText(
        0,
        QStringLiteral("Messages (%1%2; %3)")
            .arg(messages->size())
            .arg(notKept ? QStringLiteral(" of %1").arg(messages->size() + notKept) : QString())
            .arg(m_decoder && m_decoder->fileCount()
                     ? QStringLiteral("%1 loaded").arg(counted(qint64(m_decoder->fileCount()), "schema file"))
                     : QStringLiteral("no schemas: Schemas ▸ Load .proto files or Fetch by "
                                      "reflection")));
    int requests = 0, responses = 0;
    for (const HeaderLog::Message &m : *messages) {
        const bool request = m.dir == Direction::ClientToServer;
        const int n = request ? ++requests : ++responses;
        DecodedMessage decoded;
        if (m_decoder) {
            decoded = m_decoder->decode(call.method, request, m.payload, m.truncated, m.compressed,
                                        request ? a.encoding : responseEncoding);
        } else {
            decoded.bytes = m.payload;
            decoded.raw = scanRawFields(m.payload);
        }
        QString size = QStringLiteral("%1 B").arg(m.length);
        if (m.truncated) size += QStringLiteral(" (%1 B kept)").arg(m.payload.size());
        QString value = QStringLiteral("+%1 · %2").arg(formatDuration(m.tNs - a.startNs), size);
        if (!decoded.typeName.empty())
            value += QStringLiteral(" · ") + QString::fromStdString(decoded.typeName);
        auto *item = new QTreeWidgetItem(
            section, {QStringLiteral("%1 %2 %3")
                          .arg(request ? QStringLiteral("→") : QStringLiteral("←"),
                               request ? QStringLiteral("request") : QStringLiteral("response"))
                          .arg(n),
                      value});
        item->setExpanded(messages->size() <= kExpandMessages);
        item->setData(
            0, kMessageTextRole,
            QString::fromStdString(decoded.typed ? decoded.json : formatRawFields(decoded.raw.fields)));
        if (!decoded.note.empty()) {
            QTreeWidgetItem *note = spanned(item, QString::fromStdString(decoded.note), false);
            note->setForeground(0, noteColor);
            QFont italic = note->font(0);
            italic.setItalic(true);
            note->setFont(0, italic);
        }
        if (decoded.typed) {
            const QStringList lines = QString::fromStdString(decoded.json).split(QLatin1Char('\n'));
            for (int i = 0; i < lines.size() && i < kMaxJsonLines; ++i)
                spanned(item, clipped(lines[i]), true);
            if (lines.size() > kMaxJsonLines)
                spanned(item,
                        QStringLiteral("… %1 more lines (Ctrl+C copies the whole JSON)")
                            .arg(lines.size() - kMaxJsonLines),
                        false);
        }
        // Raw fields: the content when there is no schema, a closed fold under the JSON otherwise.
        auto *raw =
            new QTreeWidgetItem(item, {QStringLiteral("Raw fields (%1%2)")
                                           .arg(decoded.raw.fields.size())
                                           .arg(decoded.raw.capped ? QStringLiteral("+") : QString())});
        raw->setFirstColumnSpanned(true);
        raw->setExpanded(!decoded.typed);
        std::function<void(QTreeWidgetItem *, const std::vector<RawField> &)> addFields =
            [&](QTreeWidgetItem *parent, const std::vector<RawField> &fields) {
                for (const RawField &f : fields) {
                    auto *row = new QTreeWidgetItem(
                        parent,
                        {QStringLiteral("#%1 %2").arg(f.number).arg(QLatin1String(wireTypeName(f.wireType))),
                         clipped(QString::fromStdString(rawFieldValue(f)))});
                    row->setFont(1, mono);
                    if (!f.children.empty()) {
                        row->setExpanded(!decoded.typed);
                        addFields(row, f.children);
                    }
                }
            };
        addFields(raw, decoded.raw.fields);
        if (!decoded.raw.stopped.empty()) {
            QTreeWidgetItem *stop = spanned(raw, QString::fromStdString(decoded.raw.stopped), false);
            stop->setForeground(0, noteColor);
        }
        auto *hex = new QTreeWidgetItem(item, {QStringLiteral("Hex (%1 B)").arg(decoded.bytes.size())});
        hex->setFirstColumnSpanned(true);
        for (const std::string &line : hexDumpLines(decoded.bytes, kMaxHexBytes))
            spanned(hex, QString::fromStdString(line), true);
    }
    if (notKept)
        spanned(section,
                QStringLiteral("%1 of this stream not kept").arg(counted(qint64(notKept), "later message")),
                false);
}

} // namespace rpcscope
