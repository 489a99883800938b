// Merging captures end to end: a deadline chain client->A->B->C->D over real grpc++ hops, recorded by two
// separate capture sessions (as two agents on two hosts would: "edge" relays client->A and A->B, "backend"
// relays B->C and C->D), each saved to its own .rpcscope file with its own origin. Merged, the backend's
// calls nest under the edge's by traceparent; an offset moves exactly one file; the merged timeline
// round-trips; merging a file with itself, with an empty capture or with a newer file's version behaves;
// rpcscope-cli merge and its errors; the Merged captures dock's offsets; the GUI opening two files at once.

#include "capturemerge.h"
#include "capturesession.h"
#include "chainserver.h"
#include "clock.h"
#include "mainwindow.h"
#include "mergepanel.h"
#include "mergeset.h"
#include "modelfeed.h"
#include "runtool.h"
#include "timeformat.h"
#include "timelinemodel.h"

#include <QAbstractItemModelTester>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>
#include <array>
#include <set>

using namespace rpcscope;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t ms = 1'000'000;
constexpr int kWorkMs = 60; // each hop's work before it calls the next
const char *const kKeys[] = {"chain-1", "chain-1>B", "chain-1>C", "chain-1>D"};
const char *const kHops[] = {"edge: client->A", "edge: A->B", "backend: B->C", "backend: C->D"};

using testtool::cli;
using testtool::Result;

std::optional<size_t> callIndex(const TimelineStore &store, const std::string &key)
{
    for (size_t i = 0; i < store.calls().size(); ++i)
        if (store.calls()[i].key == key) return i;
    return std::nullopt;
}

bool ended(const TimelineStore &store, std::initializer_list<const char *> keys)
{
    for (const char *k : keys) {
        const auto i = callIndex(store, k);
        if (!i || !store.calls()[*i].endNs()) return false;
    }
    return true;
}

void replayInto(const CaptureData &data, TimelineStore &store)
{
    store.clear();
    store.setRecordFrames(data.info.recordFrames);
    store.setOrigin(data.info.originNs, data.info.originWallNs);
    for (const EventBatch &b : data.batches)
        store.apply(b);
}

// What the timeline shows of every call, one line each, to compare two models.
QStringList summary(const TimelineStore &store)
{
    QStringList out;
    for (const Call &c : store.calls()) {
        QString line = QStringLiteral("%1 | parent %2 | hop %3 | budget %4")
                           .arg(QString::fromStdString(c.key),
                                c.parentCall ? QString::fromStdString(store.calls()[*c.parentCall].key)
                                             : QStringLiteral("-"),
                                QString::fromStdString(c.hop))
                           .arg(c.budgetNs().value_or(-1));
        for (const Attempt &a : c.attempts)
            line += QStringLiteral(" | %1..%2 status %3")
                        .arg(a.startNs - store.originNs())
                        .arg(a.endNs.value_or(-1) - store.originNs())
                        .arg(a.status.value_or(-1));
        out << line;
    }
    return out;
}

std::vector<WireEvent> flat(const CaptureData &d)
{
    std::vector<WireEvent> out;
    for (const EventBatch &b : d.batches)
        out.insert(out.end(), b.begin(), b.end());
    return out;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeAll(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

} // namespace

class TestMerge : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_edge, m_backend, m_empty;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    // Both files, as rpcscope-cli agents would have written them, merged (backend offset `offsetNs`).
    bool mergeFiles(std::int64_t offsetNs, CaptureData *out, MergeResult *result = nullptr)
    {
        MergeSet set;
        if (!set.add(m_edge).usable() || !set.add(m_backend).usable()) return false;
        set.setOffset(1, offsetNs);
        const MergeResult r = set.merge(out);
        if (result) *result = r;
        return r.ok;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // Each hop must know where the next hop's relay listens, so the relays' addresses come first.
        std::array<QString, 4> relay;
        for (QString &a : relay)
            a = CaptureSession::freeLoopbackAddress();
        std::array<std::unique_ptr<lab::ChainServer>, 4> hops;
        std::string error;
        for (int i = 3; i >= 0; --i) {
            lab::HopConfig c;
            c.name = std::string(1, "ABCD"[i]);
            c.nextName = i < 3 ? std::string(1, "ABCD"[i + 1]) : std::string();
            c.next = i < 3 ? relay[size_t(i + 1)].toStdString() : std::string();
            c.workMs = kWorkMs;
            hops[size_t(i)] = std::make_unique<lab::ChainServer>(c);
            QVERIFY2(hops[size_t(i)]->start(&error), error.c_str());
        }
        auto target = [&](int i) { return QString::fromStdString(hops[size_t(i)]->address()); };

        // Two agents, two sessions, two origins: the edge's starts first.
        TimelineModel edgeModel, backendModel, idleModel;
        CaptureSession edge(&edgeModel), backend(&backendModel), idle(&idleModel);
        QString why;
        QVERIFY2(edge.start({{QStringLiteral("client->A"), relay[0], target(0)},
                             {QStringLiteral("A->B"), relay[1], target(1)}},
                            false, &why),
                 qPrintable(why));
        // The backend's agent starts a while later, so that its origin is far from the edge's: placing its
        // events by the wall clock, not by where its origin is, is then what puts them right.
        const std::int64_t edgeStart = edgeModel.store().originWallNs();
        QTRY_VERIFY_WITH_TIMEOUT(wallNowNs() - edgeStart > 150 * ms, 5000);
        QVERIFY2(backend.start({{QStringLiteral("B->C"), relay[2], target(2)},
                                {QStringLiteral("C->D"), relay[3], target(3)}},
                               false, &why),
                 qPrintable(why));
        QVERIFY(edgeModel.store().originWallNs() <= backendModel.store().originWallNs());
        QVERIFY(edgeModel.store().originNs() != backendModel.store().originNs());

        const lab::CallResult r = lab::callChain(relay[0].toStdString(), kKeys[0], 1000ms);
        QCOMPARE(r.code, 0);
        for (int i = 0; i < 4; ++i)
            QVERIFY2(hops[size_t(i)]->waitFor(kKeys[i], true, 10s), kKeys[i]);
        QTRY_VERIFY_WITH_TIMEOUT(ended(edgeModel.store(), {kKeys[0], kKeys[1]}) &&
                                     ended(backendModel.store(), {kKeys[2], kKeys[3]}),
                                 10000);
        edge.stop();
        backend.stop();
        // A session that recorded nothing: an empty capture.
        QVERIFY2(idle.start({{QStringLiteral("idle"), CaptureSession::freeLoopbackAddress(), target(0)}},
                            false, &why),
                 qPrintable(why));
        idle.stop();
        QCoreApplication::sendPostedEvents(); // the connections' close events
        for (TimelineModel *m : {&edgeModel, &backendModel, &idleModel})
            ModelFeed::of(m)->drainAll();
        for (auto it = hops.rbegin(); it != hops.rend(); ++it)
            (*it)->stop();

        // Each agent's part of the chain only.
        QCOMPARE(int(edgeModel.store().calls().size()), 2);
        QCOMPARE(int(backendModel.store().calls().size()), 2);
        QCOMPARE(int(idleModel.store().calls().size()), 0);
        m_edge = path(QStringLiteral("edge.rpcscope"));
        m_backend = path(QStringLiteral("backend.rpcscope"));
        m_empty = path(QStringLiteral("idle.rpcscope"));
        for (const auto &[model, file] : {std::pair{&edgeModel, m_edge}, std::pair{&backendModel, m_backend},
                                          std::pair{&idleModel, m_empty}})
            QVERIFY2(exportSession(model->store(), model->eventLog(), FileFormat::Rpcscope, file, {}, &error),
                     error.c_str());
    }

    void eachFileAloneHoldsHalfTheChain()
    {
        for (const QString &file : {m_edge, m_backend}) {
            CaptureData d;
            QCOMPARE(readCaptureFile(file, &d).status, CaptureReadResult::Ok);
            TimelineStore store;
            replayInto(d, store);
            QCOMPARE(int(store.calls().size()), 2);
            const Call &first = store.calls()[0], &second = store.calls()[1];
            // Its first call is a root: its caller is in the other file.
            QVERIFY(!first.parentCall);
            QCOMPARE(second.parentCall, std::optional<size_t>(0));
        }
    }

    void mergedChainNestsAcrossFiles()
    {
        // Where the merge placed the backend's calls, less where they really were on this machine's steady
        // clock: the error of aligning two files by their wall-clock origins. The edge's file is the
        // reference.
        CaptureData edgeFile, backendFile;
        QCOMPARE(readCaptureFile(m_edge, &edgeFile).status, CaptureReadResult::Ok);
        QCOMPARE(readCaptureFile(m_backend, &backendFile).status, CaptureReadResult::Ok);
        const std::int64_t backendError = backendFile.info.originWallNs - edgeFile.info.originWallNs -
                                          (backendFile.info.originNs - edgeFile.info.originNs);
        auto alignmentError = [&](const std::string &hop) {
            return hop.rfind("backend:", 0) == 0 ? backendError : std::int64_t(0);
        };
        CaptureData merged;
        MergeResult r;
        QVERIFY(mergeFiles(0, &merged, &r));
        QCOMPARE(r.reference, size_t(0)); // the edge started first
        QVERIFY(r.notes.empty());
        TimelineModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.replay(merged);
        const TimelineStore &store = model.store();
        QCOMPARE(int(store.calls().size()), 4);

        std::optional<size_t> parent;
        for (int i = 0; i < 4; ++i) {
            const auto index = callIndex(store, kKeys[i]);
            QVERIFY2(index, kKeys[i]);
            const Call &c = store.calls()[*index];
            QCOMPARE(c.parentCall, parent);
            QCOMPARE(store.nestingDepth(*index), i);
            QCOMPARE(QString::fromStdString(c.hop), QString::fromLatin1(kHops[i]));
            QCOMPARE(int(c.attempts.size()), 1);
            QCOMPARE(c.attempts[0].status.value_or(-1), 0);
            QVERIFY(c.budgetNs());
            QVERIFY(!c.deadlineReset && !c.deadlineDropped);
            if (parent) {
                const Call &up = store.calls()[*parent];
                QCOMPARE(c.traceId, up.traceId);
                // grpc-timeout strictly decreasing down the chain, by about a hop's work each time.
                QVERIFY2(*c.budgetNs() < *up.budgetNs() - kWorkMs / 2 * ms,
                         qPrintable(QStringLiteral("%1: %2 ns after %3 ns")
                                        .arg(kKeys[i])
                                        .arg(*c.budgetNs())
                                        .arg(*up.budgetNs())));
                // Across files too: what this hop gave away is what it had left, clocks aligned to a few ms.
                QVERIFY(c.parentBudgetNs);
                QVERIFY2(std::abs(*c.budgetNs() - *c.parentBudgetNs) < 40 * ms,
                         qPrintable(QStringLiteral("%1: sent %2 ns, had %3 ns left")
                                        .arg(kKeys[i])
                                        .arg(*c.budgetNs())
                                        .arg(*c.parentBudgetNs)));
                QVERIFY(c.startNs() > up.startNs());
                // The callee answers before its caller does. Across files, the two ends can be closer than
                // the wall-clock alignment's error (bounded below), so they are compared where they really
                // were: each file's own steady clock, shared on this machine.
                QVERIFY2(*c.endNs() - alignmentError(c.hop) <= *up.endNs() - alignmentError(up.hop),
                         qPrintable(QStringLiteral("%1 ends %2 ns after its caller")
                                        .arg(kKeys[i])
                                        .arg(*c.endNs() - alignmentError(c.hop) - *up.endNs() +
                                             alignmentError(up.hop))));
            }
            parent = index;
        }
        // Both agents ran on this machine, on one steady clock, 150 ms apart: placed by nothing but the
        // files' wall-clock origins, every backend call lands where it really was, to within the time between
        // reading the two clocks at each origin; and exactly where the wall-clock difference puts it.
        QVERIFY(backendFile.info.originWallNs - edgeFile.info.originWallNs > 150 * ms);
        TimelineStore backendAlone;
        replayInto(backendFile, backendAlone);
        for (int i = 2; i < 4; ++i) {
            const std::int64_t real = backendAlone.calls()[*callIndex(backendAlone, kKeys[i])].startNs();
            const std::int64_t placed = store.calls()[*callIndex(store, kKeys[i])].startNs();
            QCOMPARE(placed - store.originNs(), real - backendFile.info.originNs +
                                                    backendFile.info.originWallNs -
                                                    edgeFile.info.originWallNs);
            QCOMPARE(placed - real, backendError);
            QVERIFY2(
                std::abs(placed - real) < 10 * ms,
                qPrintable(
                    QStringLiteral("%1 placed %2 ns from where it was").arg(kKeys[i]).arg(placed - real)));
        }

        // Four connections, none sharing an id.
        std::set<std::uint32_t> ids;
        for (const Connection &c : store.connections())
            ids.insert(c.id);
        QCOMPARE(int(store.connections().size()), 4);
        QCOMPARE(int(ids.size()), 4);
    }

    void offsetMovesExactlyThatFile()
    {
        CaptureData zero, shifted, far;
        MergeResult r0, r1;
        QVERIFY(mergeFiles(0, &zero, &r0));
        const std::int64_t x = 12'500'000; // +12.5 ms
        QVERIFY(mergeFiles(x, &shifted, &r1));
        QCOMPARE(shifted.info.originNs, zero.info.originNs);
        QCOMPARE(r1.shiftNs[1] - r0.shiftNs[1], x);
        QCOMPARE(r1.shiftNs[0], r0.shiftNs[0]);
        // Event by event: the backend's (connections after the edge's) moved by exactly x, the edge's not at
        // all.
        const std::uint32_t base = r0.connectionBase[1];
        QVERIFY(base > 0);
        auto part = [base](const CaptureData &d, bool backend) {
            std::vector<WireEvent> out;
            for (const WireEvent &e : flat(d))
                if ((e.connection > base) == backend) out.push_back(e);
            return out;
        };
        const auto edge0 = part(zero, false), edge1 = part(shifted, false);
        const auto back0 = part(zero, true), back1 = part(shifted, true);
        QVERIFY(!edge0.empty() && !back0.empty());
        QVERIFY(edge1 == edge0);
        QCOMPARE(back1.size(), back0.size());
        for (size_t i = 0; i < back0.size(); ++i) {
            WireEvent moved = back0[i];
            moved.tNs += x;
            QVERIFY(back1[i] == moved);
        }
        // On the timeline: the backend's calls start exactly x later, the edge's where they were; still
        // nested.
        TimelineStore a, b;
        replayInto(zero, a);
        replayInto(shifted, b);
        for (int i = 0; i < 4; ++i) {
            const Call &ca = a.calls()[*callIndex(a, kKeys[i])], &cb = b.calls()[*callIndex(b, kKeys[i])];
            QCOMPARE(cb.startNs() - ca.startNs(), i < 2 ? std::int64_t(0) : x);
            QCOMPARE(bool(cb.parentCall), i > 0);
        }
        // A clock a second off breaks the chain: B->C then starts before its caller did.
        QVERIFY(mergeFiles(-1000 * ms, &far));
        TimelineStore c;
        replayInto(far, c);
        QVERIFY(!c.calls()[*callIndex(c, kKeys[2])].parentCall);
    }

    void unrelatedSteadyClocksDoNotMatter()
    {
        // Another host's steady clock counts from its own boot: an hour further here. Only wall clocks align.
        CaptureData edge, backend, reference, merged;
        QCOMPARE(readCaptureFile(m_edge, &edge).status, CaptureReadResult::Ok);
        QCOMPARE(readCaptureFile(m_backend, &backend).status, CaptureReadResult::Ok);
        QVERIFY(mergeCaptures({{&edge, "edge", 0}, {&backend, "backend", 0}}, &reference).ok);
        const std::int64_t boot = 3'600'000 * ms;
        backend.info.originNs += boot;
        for (EventBatch &b : backend.batches)
            for (WireEvent &e : b)
                e.tNs += boot;
        QVERIFY(mergeCaptures({{&edge, "edge", 0}, {&backend, "backend", 0}}, &merged).ok);
        QVERIFY(flat(merged) == flat(reference));
    }

    void mergedTimelineRoundTrips()
    {
        CaptureData merged;
        QVERIFY(mergeFiles(7 * ms, &merged));
        TimelineStore expected;
        replayInto(merged, expected);
        const QStringList want = summary(expected);
        QCOMPARE(want.size(), 4);

        // Saved as the CLI saves it, and as the GUI saves its session after a merge.
        const QString direct = path(QStringLiteral("merged-direct.rpcscope"));
        std::string error;
        QVERIFY2(exportCapture(merged, FileFormat::Rpcscope, direct, {}, &error), error.c_str());
        TimelineModel shown;
        shown.replay(merged);
        const QString session = path(QStringLiteral("merged-session.rpcscope"));
        QVERIFY2(exportSession(shown.store(), shown.eventLog(), FileFormat::Rpcscope, session, {}, &error),
                 error.c_str());
        for (const QString &file : {direct, session}) {
            CaptureData back;
            const CaptureReadResult r = readCaptureFile(file, &back);
            QCOMPARE(r.status, CaptureReadResult::Ok);
            QCOMPARE(back.info.originNs, merged.info.originNs);
            QCOMPARE(back.info.originWallNs, merged.info.originWallNs);
            QVERIFY(flat(back) == flat(merged));
            TimelineStore reopened;
            replayInto(back, reopened);
            QCOMPARE(summary(reopened), want);
        }
    }

    void mergeWithItself()
    {
        MergeSet set;
        QVERIFY(set.add(m_edge).usable());
        QVERIFY(set.add(m_edge).usable());
        QCOMPARE(QString::fromStdString(set.sources()[1].label), QStringLiteral("edge (2)"));
        CaptureData merged;
        QVERIFY(set.merge(&merged).ok);
        TimelineStore store;
        replayInto(merged, store);
        QCOMPARE(int(store.calls().size()), 4);
        QCOMPARE(int(store.connections().size()), 4);
        std::set<std::uint32_t> ids;
        for (const Connection &c : store.connections())
            ids.insert(c.id);
        QCOMPARE(int(ids.size()), 4);
        for (const char *key : {"chain-1", "chain-1>B", "edge (2)/chain-1", "edge (2)/chain-1>B"}) {
            const auto i = callIndex(store, key);
            QVERIFY2(i, key);
            QCOMPARE(int(store.calls()[*i].attempts.size()), 1);
        }
        QCOMPARE(QString::fromStdString(store.calls()[*callIndex(store, "edge (2)/chain-1>B")].hop),
                 QStringLiteral("edge (2): A->B"));
        // Each A->B call nests under a client->A call (the copies are identical in time, so either copy's).
        for (const char *key : {"chain-1>B", "edge (2)/chain-1>B"}) {
            const Call &c = store.calls()[*callIndex(store, key)];
            QVERIFY(c.parentCall);
            QVERIFY(
                QString::fromStdString(store.calls()[*c.parentCall].key).endsWith(QLatin1String("chain-1")));
        }
    }

    void mergeWithEmptyCapture()
    {
        CaptureData empty;
        QCOMPARE(readCaptureFile(m_empty, &empty).status, CaptureReadResult::Ok);
        QCOMPARE(empty.eventCount(), size_t(0));
        QVERIFY(empty.info.hasOrigin);
        // It was taken after the others, but were it earlier it still would not move them.
        MergeSet alone, both;
        QVERIFY(alone.add(m_edge).usable());
        QVERIFY(both.add(m_empty).usable());
        QVERIFY(both.add(m_edge).usable());
        CaptureData a, b;
        QVERIFY(alone.merge(&a).ok);
        const MergeResult r = both.merge(&b);
        QVERIFY2(r.ok, r.error.c_str());
        QCOMPARE(r.reference, size_t(1));
        QVERIFY(flat(b) == flat(a));
        QCOMPARE(b.info.originNs, a.info.originNs);
        QCOMPARE(r.notes, std::vector<std::string>{"idle holds no events"});
    }

    void badFilesAreRefused()
    {
        // A newer format version: refused with the reason, nothing added.
        QByteArray bytes = readAll(m_edge);
        QVERIFY(bytes.size() > 12);
        bytes[8] = 2;
        const QString v2 = path(QStringLiteral("v2.rpcscope"));
        QVERIFY(writeAll(v2, bytes));
        MergeSet set;
        QVERIFY(set.add(m_backend).usable());
        const CaptureReadResult r = set.add(v2);
        QCOMPARE(r.status, CaptureReadResult::Failed);
        QVERIFY2(QString::fromStdString(r.message).contains(
                     QStringLiteral("was written by a newer rpcscope (capture format version 2;")),
                 r.message.c_str());
        QCOMPARE(int(set.size()), 1);
        // A file cut short: what is intact is merged, and it says so.
        const QString cut = path(QStringLiteral("cut.rpcscope"));
        QVERIFY(writeAll(cut, readAll(m_edge).left(readAll(m_edge).size() - 10)));
        const CaptureReadResult rc = set.add(cut);
        QCOMPARE(rc.status, CaptureReadResult::Truncated);
        CaptureData merged;
        QVERIFY(set.merge(&merged).ok);
        QVERIFY(merged.eventCount() > set.sources()[0].data.eventCount());
    }

    void cliMerge()
    {
        const QString out = path(QStringLiteral("cli-merged.rpcscope"));
        const QString png = path(QStringLiteral("cli-merged.png"));
        const Result r = cli({QStringLiteral("merge"), m_edge, m_backend, QStringLiteral("--offset"),
                              QStringLiteral("backend.rpcscope=+12.5ms"), QStringLiteral("--out"), out,
                              QStringLiteral("--png"), png});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("merged 2 captures (")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("  backend (")) &&
                     r.out.contains(QStringLiteral("offset +12.500 ms")),
                 qPrintable(r.out));
        CaptureData written, expected;
        QCOMPARE(readCaptureFile(out, &written).status, CaptureReadResult::Ok);
        QVERIFY(mergeFiles(12'500'000, &expected));
        QVERIFY(flat(written) == flat(expected));
        const QImage image(png);
        QVERIFY(!image.isNull());
        QVERIFY(image.width() >= 1400);
        // --label names a file's lanes; the offset may then use the label.
        const QString labelled = path(QStringLiteral("labelled.json"));
        const Result r2 = cli({QStringLiteral("merge"), m_edge, m_backend, QStringLiteral("--label"),
                               QStringLiteral("backend.rpcscope=db-host"), QStringLiteral("--offset"),
                               QStringLiteral("db-host=-3us"), QStringLiteral("--out"), labelled});
        QVERIFY2(r2.code == 0, qPrintable(r2.err));
        QVERIFY(readAll(labelled).contains("\"hop\": \"db-host: C->D\""));
    }

    void cliErrors_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("no unit") << QStringList{"--offset", "backend.rpcscope=12.5"} << 2
                                 << "--offset backend.rpcscope=12.5: bad offset '12.5': give a unit";
        QTest::newRow("bad number") << QStringList{"--offset", "backend=+x1ms"} << 2
                                    << "--offset backend=+x1ms: bad offset '+x1ms': expected a number";
        QTest::newRow("no file") << QStringList{"--offset", "+1ms"} << 2 << "--offset needs FILE=OFFSET";
        QTest::newRow("unknown file")
            << QStringList{"--offset", "nosuch=+1ms"} << 2
            << "--offset nosuch=+1ms: no input named 'nosuch' (give its path, file name "
               "or label: edge, backend)";
        QTest::newRow("label taken") << QStringList{"--label", "backend=edge"} << 2
                                     << "--label backend=edge: the label 'edge' is taken by";
        QTest::newRow("unknown option") << QStringList{"--shift", "1ms"} << 2 << "unknown option '--shift'";
    }

    void cliErrors()
    {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, message);
        const Result r = cli(QStringList{QStringLiteral("merge"), m_edge, m_backend} + args +
                             QStringList{QStringLiteral("--out"), path(QStringLiteral("never.rpcscope"))});
        QCOMPARE(r.code, code);
        QVERIFY2(r.err.startsWith(QStringLiteral("rpcscope-cli: ") + message), qPrintable(r.err));
        QVERIFY(!QFile::exists(path(QStringLiteral("never.rpcscope"))));
    }

    void cliBadInputs()
    {
        const QString text = path(QStringLiteral("notes.txt"));
        QVERIFY(writeAll(text, "hello\n"));
        QByteArray bytes = readAll(m_edge);
        bytes[8] = 2;
        const QString v2 = path(QStringLiteral("v2cli.rpcscope"));
        QVERIFY(writeAll(v2, bytes));
        const QString out = path(QStringLiteral("never2.rpcscope"));
        struct Case
        {
            QStringList args;
            int code;
            QString message;
        };
        const QString missing = path(QStringLiteral("missing.rpcscope"));
        const Case cases[] = {
            {{m_edge, missing, "--out", out}, 2, "cannot open " + missing + ": No such file or directory"},
            {{m_edge, text, "--out", out}, 2, text + " is not an rpcscope capture file"},
            {{m_edge, v2, "--out", out},
             2,
             v2 + " was written by a newer rpcscope (capture format version 2"},
            {{m_edge, m_backend}, 2, "merge needs --out FILE"},
            {{"--out", out}, 2, "merge needs the capture files to merge"},
            {{m_edge, m_backend, "--out", m_dir.filePath("no-such-dir/x.rpcscope")}, 1, "cannot write"},
        };
        for (const Case &c : cases) {
            const Result r = cli(QStringList{QStringLiteral("merge")} + c.args);
            QCOMPARE(r.code, c.code);
            QVERIFY2(r.err.startsWith(QStringLiteral("rpcscope-cli: ") + c.message), qPrintable(r.err));
            QVERIFY(!QFile::exists(out));
        }
    }

    void panelOffsetsAreNanoseconds()
    {
        MergeSet set;
        QVERIFY(set.add(m_edge).usable());
        QVERIFY(set.add(m_backend).usable());
        set.setOffset(1, -2'500'000);
        MergePanel panel;
        panel.setSources(&set, 0, {"a note"});
        QCOMPARE(panel.rows(), 2);
        QCOMPARE(panel.offsetBox(1)->value(), -2.5);
        QCOMPARE(panel.labelEdit(0)->text(), QStringLiteral("edge"));
        // How far apart the files' clocks start, in the unit that reads (it said "886417.9 ms later"), and
        // which way.
        auto startsText = [&] {
            QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete); // the rows before a rebuild
            QStringList said;
            for (const QLabel *l : panel.findChildren<QLabel *>())
                if (l->text().contains(QStringLiteral(" · starts "))) said << l->text();
            return said;
        };
        const std::int64_t apart =
            set.sources()[1].data.info.originWallNs - set.sources()[0].data.info.originWallNs;
        QVERIFY(apart != 0);
        const QString later = QStringLiteral(" · starts %1 %2")
                                  .arg(formatDuration(std::abs(apart)), apart > 0 ? "later" : "earlier");
        QCOMPARE(startsText().size(), 1);
        QVERIFY2(startsText().front().endsWith(later), qPrintable(startsText().front()));
        panel.setSources(&set, 1, {});
        const QString earlier = QStringLiteral(" · starts %1 %2")
                                    .arg(formatDuration(std::abs(apart)), apart > 0 ? "earlier" : "later");
        QCOMPARE(startsText().size(), 1);
        QVERIFY2(startsText().front().endsWith(earlier), qPrintable(startsText().front()));
        panel.setSources(&set, 0, {"a note"});
        QSignalSpy offsets(&panel, &MergePanel::offsetChanged);
        panel.offsetBox(1)->setValue(12.5);
        panel.offsetBox(0)->setValue(-0.001);
        QCOMPARE(offsets.count(), 2);
        QCOMPARE(offsets[0][0].toInt(), 1);
        QCOMPARE(offsets[0][1].toLongLong(), 12'500'000LL);
        QCOMPARE(offsets[1][0].toInt(), 0);
        QCOMPARE(offsets[1][1].toLongLong(), -1'000LL);
        // The arrow keys step a millisecond.
        QTest::keyClick(panel.offsetBox(1), Qt::Key_Up);
        QCOMPARE(offsets.last()[1].toLongLong(), 13'500'000LL);
        QSignalSpy labels(&panel, &MergePanel::labelEdited);
        panel.labelEdit(0)->setText(QStringLiteral("front"));
        QTest::keyClick(panel.labelEdit(0), Qt::Key_Return);
        QCOMPARE(labels.count(), 1);
        QCOMPARE(labels[0][0].toInt(), 0);
        QCOMPARE(labels[0][1].toString(), QStringLiteral("front"));
        // Rebuilt for one file: one row.
        set.remove(1);
        panel.setSources(&set, 0, {});
        QCOMPARE(panel.rows(), 1);
    }

    void windowRealignsLive()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_merge"));
        QSettings().clear();
        TimelineModel model;
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        QString error;
        // A file opened as usual, then another added to its timeline: the opened one becomes the first file.
        QVERIFY2(window.openFile(m_edge, &error, true), qPrintable(error));
        QCOMPARE(int(model.store().calls().size()), 2);
        QVERIFY2(window.addToTimeline({m_backend}, &error, true), qPrintable(error));
        QCOMPARE(int(window.mergeSet().size()), 2);
        QCOMPARE(QString::fromStdString(window.mergeSet().sources()[0].label), QStringLiteral("edge"));
        QCOMPARE(QString::fromStdString(window.mergeSet().sources()[1].label), QStringLiteral("backend"));
        MergePanel *panel = window.mergePanel();
        QCOMPARE(panel->rows(), 2);
        const TimelineStore &store = model.store();
        auto call = [&store](int i) -> const Call & { return store.calls()[*callIndex(store, kKeys[i])]; };
        QCOMPARE(int(store.calls().size()), 4);
        QCOMPARE(call(2).parentCall, callIndex(store, kKeys[1]));
        std::int64_t before[4];
        for (int i = 0; i < 4; ++i)
            before[i] = call(i).startNs();

        // The backend's offset, typed into the dock: the timeline re-aligns by exactly that much.
        panel->offsetBox(1)->setValue(12.5);
        QTRY_COMPARE_WITH_TIMEOUT(call(2).startNs() - before[2], std::int64_t(12'500'000), 5000);
        QCOMPARE(call(3).startNs() - before[3], std::int64_t(12'500'000));
        QCOMPARE(call(0).startNs(), before[0]);
        QCOMPARE(call(1).startNs(), before[1]);
        QCOMPARE(call(2).parentCall, callIndex(store, kKeys[1]));
        // Renamed in the dock: its lanes say so.
        panel->labelEdit(1)->setText(QStringLiteral("db"));
        QTest::keyClick(panel->labelEdit(1), Qt::Key_Return);
        QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(call(2).hop), QStringLiteral("db: B->C"), 5000);
        QCOMPARE(call(2).startNs() - before[2], std::int64_t(12'500'000));

        // Saved, the merged timeline reopens as it is shown.
        const QString saved = path(QStringLiteral("window-merged.rpcscope"));
        QVERIFY2(window.saveFile(saved, &error), qPrintable(error));
        CaptureData back;
        QCOMPARE(readCaptureFile(saved, &back).status, CaptureReadResult::Ok);
        TimelineStore reopened;
        replayInto(back, reopened);
        QCOMPARE(summary(reopened), summary(store));

        // Anything else on the timeline leaves the merge.
        model.clear();
        QCOMPARE(int(window.mergeSet().size()), 0);
        QCOMPARE(panel->rows(), 0);
    }

    void guiOpensSeveralFilesMerged()
    {
        const QString shot = path(QStringLiteral("gui-merged.png"));
        const Result r = testtool::runTool(
            QStringLiteral(RPCSCOPE_GUI),
            {QStringLiteral("--no-lab"), QStringLiteral("--screenshot"), shot, m_edge, m_backend});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QImage image(shot);
        QVERIFY(!image.isNull());
    }

    void cleanupTestCase()
    {
        // RPCSCOPE_KEEP_FILES=DIR keeps the captures and pictures, to look at them.
        const QString keep = QString::fromLocal8Bit(qgetenv("RPCSCOPE_KEEP_FILES"));
        if (keep.isEmpty()) return;
        QDir().mkpath(keep);
        for (const QString &name : QDir(m_dir.path()).entryList(QDir::Files)) {
            QFile::remove(QDir(keep).filePath(name));
            QFile::copy(m_dir.filePath(name), QDir(keep).filePath(name));
        }
    }
};

QTEST_MAIN(TestMerge)
#include "tst_merge.moc"
