// An attempt the capturing proxy failed on purpose: the model marks it from the relay's FaultInjection notice
// (in whichever order the notice and the injected answer arrive) or from a connection rule's close, the
// .rpcscope file keeps the notice, and the JSON, Chrome trace and OTLP exports carry the rule.

#include "capturefile.h"
#include "chrometrace.h"
#include "faultevents.h"
#include "jsonexport.h"
#include "otlpexport.h"
#include "timelinestore.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t t0 = 7'000'000'000;
const std::string kRule = "abort status=14 before method=/shop.Cart/*";

// Call "c1": attempt 1 on stream 1 is injected (rule 2), attempt 2 on stream 3 is the server's own
// UNAVAILABLE, attempt 3 on stream 5 succeeds. `noticeAt` places the notice of stream 1: 0 before its
// request, 1 between request and answer, 2 after the answer.
EventBatch retriedCall(int noticeAt)
{
    using namespace testev;
    EventBatch b;
    b.push_back(opened(1, t0));
    const WireEvent notice = injectedNotice(1, 1, t0 + 2 * ms, 2, kRule);
    if (noticeAt == 0) b.push_back(notice);
    b.push_back(faultRequest(1, 1, t0 + 1 * ms, "c1", 0));
    if (noticeAt == 1) b.push_back(notice);
    b.push_back(trailers(1, 1, t0 + 2 * ms, 14));
    if (noticeAt == 2) b.push_back(notice);
    b.push_back(faultRequest(1, 3, t0 + 10 * ms, "c1", 1));
    b.push_back(trailers(1, 3, t0 + 12 * ms, 14));
    b.push_back(faultRequest(1, 5, t0 + 30 * ms, "c1", 2));
    b.push_back(trailers(1, 5, t0 + 32 * ms, 0));
    return b;
}

void checkRetriedCall(const TimelineStore &store)
{
    QCOMPARE(store.calls().size(), size_t(1));
    const Call &call = store.calls().front();
    QCOMPARE(call.attempts.size(), size_t(3));
    QVERIFY(call.attempts[0].injected());
    QCOMPARE(call.attempts[0].faultRule, 2u);
    QCOMPARE(call.attempts[0].faultRuleText, kRule);
    QCOMPARE(call.attempts[0].status, std::optional<int>(14));
    QVERIFY(!call.attempts[1].injected()); // the server's own UNAVAILABLE
    QVERIFY(call.attempts[1].faultRuleText.empty());
    QVERIFY(!call.attempts[2].injected());
}

QJsonArray jsonAttempts(const TimelineStore &store)
{
    const QJsonObject root = QJsonDocument::fromJson(timelineToJsonBytes(store, false)).object();
    return root["calls"].toArray()[0].toObject()["attempts"].toArray();
}
} // namespace

class TestFaultInjection : public QObject
{
    Q_OBJECT

private slots:
    void noticeInAnyOrderMarksItsAttempt_data()
    {
        QTest::addColumn<int>("noticeAt");
        QTest::newRow("before the request") << 0;
        QTest::newRow("while open") << 1;
        QTest::newRow("after the answer") << 2;
    }
    void noticeInAnyOrderMarksItsAttempt()
    {
        QFETCH(int, noticeAt);
        TimelineStore store;
        store.apply(retriedCall(noticeAt));
        checkRetriedCall(store);
        // The notice still says what happened on the connection.
        QVERIFY(!store.connections().front().notes.empty());
    }

    void noticeAcrossBatchesMarksItsAttempt()
    {
        // The relay's note and the decoder's answer travel in different batches.
        EventBatch b = retriedCall(-1);
        TimelineStore store;
        StoreChanges ch;
        store.apply(b);
        store.apply({testev::injectedNotice(1, 1, t0 + 40 * ms, 2, kRule)}, &ch);
        checkRetriedCall(store);
        QCOMPARE(ch.changedCalls, std::vector<size_t>{0}); // the view repaints the call
    }

    void noticeOfAnotherStreamMarksNothing()
    {
        EventBatch b = retriedCall(-1);
        b.push_back(testev::injectedNotice(1, 7, t0 + 40 * ms, 2, kRule)); // a stream with no request
        b.push_back(testev::injectedNotice(2, 1, t0 + 40 * ms, 2, kRule)); // same stream, other connection
        WireEvent plain = testev::event(EventKind::Notice, 1, 1, t0 + 41 * ms);
        plain.reason = "fault: something (rule 3)"; // a sentence without FaultInjection marks nothing
        b.push_back(plain);
        TimelineStore store;
        store.apply(b);
        for (const Attempt &a : store.calls().front().attempts)
            QVERIFY(!a.injected());
    }

    void connectionRuleCloseMarksOpenAttempts()
    {
        using namespace testev;
        EventBatch b{opened(1, t0), faultRequest(1, 1, t0 + 1 * ms, "a", 0), trailers(1, 1, t0 + 2 * ms, 0),
                     faultRequest(1, 3, t0 + 3 * ms, "b", 0)};
        WireEvent note = testev::event(EventKind::Notice, 1, 0, t0 + 4 * ms);
        note.reason = "fault: close (rule 1)";
        b.push_back(note);
        WireEvent closed = testev::event(EventKind::ConnectionClosed, 1, 0, t0 + 4 * ms);
        closed.reason = "fault: close (rule 1)";
        b.push_back(closed);
        // An ordinary close marks nothing.
        b.push_back(opened(2, t0 + 5 * ms));
        b.push_back(faultRequest(2, 1, t0 + 6 * ms, "c", 0));
        WireEvent closed2 = testev::event(EventKind::ConnectionClosed, 2, 0, t0 + 7 * ms);
        closed2.reason = "closed by server";
        b.push_back(closed2);
        TimelineStore store;
        store.apply(b);
        QCOMPARE(store.calls().size(), size_t(3));
        QVERIFY(!store.calls()[0].attempts[0].injected()); // ended before the close
        const Attempt &cut = store.calls()[1].attempts[0];
        QVERIFY(cut.injected());
        QCOMPARE(cut.faultRule, 1u);
        QCOMPARE(cut.faultRuleText, std::string("close"));
        QVERIFY(!store.calls()[2].attempts[0].injected());
    }

    void blackholeMarksOpenAndLaterAttempts()
    {
        using namespace testev;
        EventBatch b{opened(1, t0), faultRequest(1, 1, t0 + 1 * ms, "a", 0), trailers(1, 1, t0 + 2 * ms, 0),
                     faultRequest(1, 3, t0 + 3 * ms, "b", 0)};
        WireEvent note = testev::event(EventKind::Notice, 1, 0, t0 + 4 * ms);
        note.reason = "fault: blackhole (rule 2)";
        b.push_back(note);
        // Sent into the hole after it opened: no answer will come either.
        b.push_back(faultRequest(1, 5, t0 + 5 * ms, "c", 0));
        // Other connection notes and connections are not marked.
        b.push_back(opened(2, t0 + 5 * ms));
        b.push_back(faultRequest(2, 1, t0 + 6 * ms, "d", 0));
        WireEvent other = testev::event(EventKind::Notice, 2, 0, t0 + 7 * ms);
        other.reason = "fault: bandwidth (rule 1)";
        b.push_back(other);
        WireEvent closed = testev::event(EventKind::ConnectionClosed, 1, 0, t0 + 9 * ms);
        closed.reason = "closed by client";
        b.push_back(closed);
        TimelineStore store;
        store.apply(b);
        QCOMPARE(store.calls().size(), size_t(4));
        QVERIFY(!store.calls()[0].attempts[0].injected()); // answered before the hole opened
        for (size_t i : {size_t(1), size_t(2)}) {
            const Attempt &a = store.calls()[i].attempts[0];
            QVERIFY(a.injected());
            QCOMPARE(a.faultRule, 2u);
            QCOMPARE(a.faultRuleText, std::string("blackhole"));
        }
        QVERIFY(!store.calls()[3].attempts[0].injected());
        // A later connection with the same id (a store reused after clear) starts clean.
        store.clear();
        store.apply({opened(1, t0 + 20 * ms), faultRequest(1, 1, t0 + 21 * ms, "e", 0)});
        QVERIFY(!store.calls()[0].attempts[0].injected());
    }

    void memoryCountsTheRuleText()
    {
        const std::string longText(4000, 'x');
        auto bytesWith = [](const std::string &text) {
            using namespace testev;
            TimelineStore store;
            store.apply({opened(1, t0), faultRequest(1, 1, t0 + ms, "c1", 0),
                         injectedNotice(1, 1, t0 + 2 * ms, 1, text), trailers(1, 1, t0 + 2 * ms, 14)});
            return store.approxBytes();
        };
        QVERIFY2(bytesWith(longText) >= bytesWith("abort") + longText.size(),
                 "the attempt's rule text is part of the store's memory");
    }

    void captureFileKeepsTheInjection()
    {
        TimelineStore live;
        CaptureData data;
        data.info.hasOrigin = true;
        data.info.originNs = t0;
        data.batches.push_back(retriedCall(2));
        replayCapture(data, live);
        checkRetriedCall(live);

        const QByteArray bytes = captureToBytes(data, Redaction{});
        CaptureData back;
        const CaptureReadResult r = readCaptureBytes(bytes, "faults.rpcscope", &back);
        QVERIFY2(r.status == CaptureReadResult::Ok, qPrintable(QString::fromStdString(r.message)));
        bool found = false;
        for (const EventBatch &batch : back.batches)
            for (const WireEvent &e : batch)
                if (const FaultInjection *f = e.injection()) {
                    found = true;
                    QCOMPARE(f->rule, 2u);
                    QCOMPARE(f->text, kRule);
                    QCOMPARE(e.stream, 1u);
                }
        QVERIFY(found);
        QCOMPARE(back.batches, data.batches);
        TimelineStore reloaded;
        replayCapture(back, reloaded);
        checkRetriedCall(reloaded);
    }

    void exportsCarryTheRule()
    {
        TimelineStore store;
        store.apply(retriedCall(1));
        const QJsonArray attempts = jsonAttempts(store);
        QCOMPARE(attempts.size(), 3);
        const QJsonObject injected = attempts[0].toObject();
        QCOMPARE(injected["injected"].toBool(false), true);
        QCOMPARE(injected["fault_rule"].toObject()["number"].toInteger(), 2);
        QCOMPARE(injected["fault_rule"].toObject()["text"].toString(), QString::fromStdString(kRule));
        QCOMPARE(attempts[1].toObject()["injected"].toBool(true), false);
        QVERIFY(attempts[1].toObject()["fault_rule"].isNull());

        const QJsonObject chrome = QJsonDocument::fromJson(timelineToChromeTraceBytes(store)).object();
        int chromeInjected = 0;
        for (const QJsonValue &ev : chrome["traceEvents"].toArray()) {
            const QJsonObject args = ev.toObject()["args"].toObject();
            if (args["injected"].toBool()) {
                ++chromeInjected;
                QVERIFY(args["fault_rule"].toString().startsWith("2: abort"));
            }
        }
        QCOMPARE(chromeInjected, 1);

        const QByteArray otlp = timelineToOtlpBytes(store);
        QVERIFY(otlp.contains("\"rpcscope.injected\""));
        QVERIFY(otlp.contains("\"rpcscope.fault_rule_text\""));
        QCOMPARE(otlp.count("\"rpcscope.injected\""), 1);
    }
};

QTEST_GUILESS_MAIN(TestFaultInjection)
#include "tst_faultinjection.moc"
