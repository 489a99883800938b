// The inspector's Messages section: JSON with a schema, raw fields and hex without one, Copy. With
// RPCSCOPE_INSPECTOR_PNG set it also saves the rendered inspector there, to look at.

#include "attemptinspector.h"
#include "headerlog.h"
#include "lab.pb.h"
#include "messagedecoder.h"
#include "timelinemodel.h"
#include "wireevents.h"

#include <QApplication>
#include <QClipboard>
#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;

namespace {

constexpr std::int64_t ms = 1'000'000;

WireEvent headers(std::uint32_t stream, std::int64_t t, Direction dir, std::vector<Header> list)
{
    WireEvent e = testev::event(EventKind::Headers, 1, stream, t, dir);
    e.headers = std::move(list);
    return e;
}

WireEvent request(std::uint32_t stream, std::int64_t t, const std::string &path, const std::string &id)
{
    WireEvent e = headers(stream, t, Direction::ClientToServer,
                          {{":method", "POST"},
                           {":path", path},
                           {"content-type", "application/grpc"},
                           {"rpcscope-call-id", id},
                           {"grpc-timeout", "1S"}});
    e.grpc.path = path;
    e.grpc.callId = id;
    e.grpc.timeoutNs = 1000 * ms;
    return e;
}

WireEvent trailers(std::uint32_t stream, std::int64_t t, int status)
{
    WireEvent e = headers(stream, t, Direction::ServerToClient, {{"grpc-status", std::to_string(status)}});
    e.endStream = true;
    e.grpc.status = status;
    return e;
}

WireEvent message(std::uint32_t stream, std::int64_t t, Direction dir, const std::string &bytes,
                  std::uint32_t length = 0)
{
    WireEvent e = testev::event(EventKind::Message, 1, stream, t, dir);
    e.length = length ? length : std::uint32_t(bytes.size());
    e.truncated = length > bytes.size();
    e.payload = bytes;
    return e;
}

QTreeWidgetItem *find(QTreeWidget *tree, const QString &text, int column = 0)
{
    const auto items = tree->findItems(text, Qt::MatchStartsWith | Qt::MatchRecursive, column);
    return items.isEmpty() ? nullptr : items.front();
}

QStringList childTexts(const QTreeWidgetItem *item)
{
    QStringList out;
    for (int i = 0; i < item->childCount(); ++i)
        out << item->child(i)->text(0);
    return out;
}

} // namespace

class TestInspectorDecode : public QObject
{
    Q_OBJECT
private slots:
    void messagesShowAsJsonOrRawFields()
    {
        TimelineModel model;
        model.setOrigin(0, 0);
        HeaderLog log;
        MessageDecoder decoder;
        std::vector<std::string> errors;
        QVERIFY(decoder.loadProtoFiles({"lab.proto"}, {RPCSCOPE_PROTO_DIR}, &errors));

        rpcscope::lab::CallRequest req;
        req.set_call_id("checkout-42");
        req.set_fail_first_n(1);
        req.set_fail_code(14);
        req.set_fail_message("inventory service restarting");
        req.set_payload("order=1234;sku=AB-99");
        req.set_response_size(24);
        rpcscope::lab::CallReply reply;
        reply.set_call_id("checkout-42");
        reply.set_arrival(2);
        reply.set_payload(std::string(24, 'r'));
        // An unknown service's message: field 1 varint 150, field 2 "EUR", field 3 a message {1: 7}.
        const std::string unknown = std::string("\x08\x96\x01\x12\x03"
                                                "EUR"
                                                "\x1a\x02\x08\x07",
                                                12);
        WireEvent open;
        open.kind = EventKind::ConnectionOpened;
        open.connection = 1;
        const EventBatch b{
            open,
            request(1, 10 * ms, "/rpcscope.lab.Lab/Call", "checkout-42"),
            message(1, 10 * ms + 200'000, Direction::ClientToServer, req.SerializeAsString()),
            headers(1, 14 * ms, Direction::ServerToClient, {{":status", "200"}}),
            message(1, 14 * ms + 100'000, Direction::ServerToClient, reply.SerializeAsString()),
            trailers(1, 14 * ms + 300'000, 0),
            request(3, 30 * ms, "/acme.billing.v1.Billing/Charge", "charge-1"),
            message(3, 30 * ms + 50'000, Direction::ClientToServer, unknown),
            trailers(3, 31 * ms, 12)};
        log.record(b);
        model.appendBatch(b);

        AttemptInspector inspector(&model.store(), &log);
        inspector.setDecoder(&decoder);
        inspector.resize(620, 900);
        inspector.showAttempt(0, 0);
        QTreeWidget *tree = inspector.tree();

        QTreeWidgetItem *section = find(tree, QStringLiteral("Messages (2; 1 schema file loaded)"));
        QVERIFY(section);
        QTreeWidgetItem *sent = find(tree, QStringLiteral("→ request 1"));
        QVERIFY(sent);
        QVERIFY2(sent->text(1).endsWith(
                     QStringLiteral("· %1 B · rpcscope.lab.CallRequest").arg(req.ByteSizeLong())),
                 qPrintable(sent->text(1)));
        QVERIFY(sent->isExpanded());
        const QStringList lines = childTexts(sent);
        QCOMPARE(lines.value(0), QStringLiteral("{"));
        QCOMPARE(lines.value(1), QStringLiteral("  \"call_id\": \"checkout-42\","));
        QVERIFY(lines.contains(QStringLiteral("  \"fail_message\": \"inventory service restarting\",")));
        QVERIFY(lines.contains(QStringLiteral("  \"response_size\": 24")));
        QVERIFY(lines.contains(QStringLiteral("}")));
        QVERIFY(lines.contains(QStringLiteral("Raw fields (6)")));
        QVERIFY(lines.contains(QStringLiteral("Hex (%1 B)").arg(req.ByteSizeLong())));
        QTreeWidgetItem *got = find(tree, QStringLiteral("← response 1"));
        QVERIFY(got);
        QVERIFY(childTexts(got).contains(QStringLiteral("  \"arrival\": 2,")));

        // Ctrl+C on any row of a message copies its whole JSON.
        tree->setCurrentItem(sent->child(3));
        QCOMPARE(inspector.currentMessageText().toStdString(),
                 decoder.decode("/rpcscope.lab.Lab/Call", true, req.SerializeAsString()).json);
        inspector.copyCurrent();
        QCOMPARE(QApplication::clipboard()->text(), inspector.currentMessageText());

        if (qEnvironmentVariableIsSet("RPCSCOPE_INSPECTOR_PNG")) {
            // The messages in view, collapsed headers and frames out of the way.
            for (int i = 0; i < tree->topLevelItemCount(); ++i)
                if (!tree->topLevelItem(i)->text(0).startsWith(QStringLiteral("Messages")))
                    tree->topLevelItem(i)->setExpanded(false);
            tree->scrollToItem(section, QAbstractItemView::PositionAtTop);
            QVERIFY(inspector.grab().save(qEnvironmentVariable("RPCSCOPE_INSPECTOR_PNG")));
        }

        // No schema for the method: raw fields (numbers, wire types, values) and hex.
        inspector.showAttempt(1, 0);
        QTreeWidgetItem *raw = find(tree, QStringLiteral("→ request 1"));
        QVERIFY(raw);
        QVERIFY2(raw->text(1).endsWith(QStringLiteral("· 12 B")), qPrintable(raw->text(1)));
        QCOMPARE(raw->child(0)->text(0),
                 QStringLiteral("no schema for /acme.billing.v1.Billing/Charge: raw protobuf fields"));
        QTreeWidgetItem *fields = find(tree, QStringLiteral("Raw fields (3)"));
        QVERIFY(fields);
        QVERIFY(fields->isExpanded());
        QCOMPARE(fields->child(0)->text(0), QStringLiteral("#1 varint"));
        QCOMPARE(fields->child(0)->text(1), QStringLiteral("150"));
        QCOMPARE(fields->child(1)->text(0), QStringLiteral("#2 len"));
        QCOMPARE(fields->child(1)->text(1), QStringLiteral("\"EUR\""));
        QCOMPARE(fields->child(2)->text(1), QStringLiteral("message, 2 B"));
        QCOMPARE(fields->child(2)->child(0)->text(0), QStringLiteral("#1 varint"));
        QCOMPARE(fields->child(2)->child(0)->text(1), QStringLiteral("7"));
        QTreeWidgetItem *hex = find(tree, QStringLiteral("Hex (12 B)"));
        QVERIFY(hex);
        QCOMPARE(hex->child(0)->text(0),
                 QStringLiteral("0000  08 96 01 12 03 45 55 52  1a 02 08 07              |.....EUR....|"));

        // Schemas forgotten: refresh shows the same attempt raw.
        inspector.showAttempt(0, 0);
        decoder.clear();
        inspector.refresh();
        QTreeWidgetItem *again = find(tree, QStringLiteral("→ request 1"));
        QVERIFY(again);
        QVERIFY(!again->text(1).contains(QStringLiteral("CallRequest")));
        QVERIFY(find(tree, QStringLiteral("Messages (2; no schemas")));
        QVERIFY(find(tree, QStringLiteral("#4 len")));
    }

    void logKeepsMessagesWithinItsBudget()
    {
        HeaderLog log(100, 1000); // 1000 payload bytes
        EventBatch b;
        for (std::uint32_t s = 1; s <= 9; s += 2) {
            b.push_back(request(s, s * ms, "/a.B/C", "x"));
            b.push_back(message(s, s * ms, Direction::ClientToServer, std::string(300, 'p')));
        }
        log.record(b);
        // 5 streams of 300 bytes: the oldest two are forgotten, headers and all.
        QVERIFY(!log.messages(1, 1) && !log.blocks(1, 1));
        QVERIFY(!log.messages(1, 3));
        QVERIFY(log.messages(1, 5) && log.messages(1, 9));
        QCOMPARE(log.messageBytes(), size_t(900));

        // A long stream keeps its first messages and counts the rest.
        HeaderLog stream;
        EventBatch many{request(1, 0, "/a.B/C", "y")};
        for (int i = 0; i < 70; ++i)
            many.push_back(message(1, i * ms, Direction::ServerToClient, "m"));
        stream.record(many);
        QCOMPARE(stream.messages(1, 1)->size(), HeaderLog::kMaxMessagesPerStream);
        QCOMPARE(stream.messagesNotKept(1, 1), size_t(70) - HeaderLog::kMaxMessagesPerStream);
    }
};

QTEST_MAIN(TestInspectorDecode)
#include "tst_inspectordecode.moc"
