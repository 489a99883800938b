// The hostile-traffic suite: the real `rpcscope-cli capture --keep 16` in front of a real grpc++ server (the
// lab's), under each flood of tests/common/hostileflood.h for a few seconds, while a real grpc++ client makes
// normal unary calls through the same proxy. Every call must succeed, the capture must live through it and
// write a readable file holding those calls, and the memory it reports must stay within --keep. Peak RSS and
// latencies are figures for the benchmark (scripts/bench.sh --hostile); this test only prints them.

#include "captureprocess.h"
#include "capturereader.h"
#include "hostileflood.h"
#include "hostileserver.h"
#include "lab.pb.h"
#include "labclient.h"
#include "labserver.h"
#include "timelinemodel.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

using namespace rpcscope;
using namespace std::chrono_literals;

Q_DECLARE_METATYPE(hostile::Flood)

namespace {

constexpr int kKeepMb = 16;
constexpr size_t kKeepBytes = size_t(kKeepMb) << 20;
// What the live capture reports is the most it held since the line before, looked at every 100 ms: how far
// the feed's queue and the decoders have filled at those moments, and how much arrived since retention last
// ran, depend on how busy the machine is. It is a figure for the benchmark; this test only makes sure the
// budget was not ignored (before, floods reached 383 MB and more with --keep 16). The budget's accounting
// itself is asserted on the capture's file below, replayed batch by batch, where no timing enters.
constexpr double kReportedLimit = kKeepMb * 2.0 * (1 << 20);
constexpr double kFloodSeconds = 3;

// Normal unary calls through the proxy, one every 50 ms, on a thread of their own until stopped.
class Caller
{
public:
    explicit Caller(std::uint16_t port, const std::string &prefix)
        : m_client("127.0.0.1:" + std::to_string(port), std::string()), m_prefix(prefix)
    {
    }
    ~Caller() { stop(); }

    lab::CallResult callOnce()
    {
        lab::CallRequest req;
        req.set_call_id(m_prefix + std::to_string(m_next++));
        req.set_payload(std::string(100, 'q'));
        req.set_response_size(100);
        // Generous: a call that does not come back within this failed, however loaded the machine.
        const lab::CallResult r = m_client.call(req, 30s);
        std::lock_guard lk(m_mu);
        if (r.code == 0) {
            m_ok.insert(r.callId);
        } else if (m_failures++ == 0) {
            m_firstFailure = r.callId + " ended with code " + std::to_string(r.code) + ": " + r.message;
        }
        return r;
    }
    void start()
    {
        m_thread = std::thread([this] {
            while (!m_stop) {
                const auto due = std::chrono::steady_clock::now() + 50ms;
                callOnce();
                std::unique_lock lk(m_mu);
                m_cv.wait_until(lk, due, [&] { return bool(m_stop); });
            }
        });
    }
    void stop()
    {
        {
            std::lock_guard lk(m_mu);
            m_stop = true;
            m_cv.notify_all();
        }
        if (m_thread.joinable()) m_thread.join();
    }
    std::set<std::string> succeeded() const
    {
        std::lock_guard lk(m_mu);
        return m_ok;
    }
    int failures() const
    {
        std::lock_guard lk(m_mu);
        return m_failures;
    }
    std::string firstFailure() const
    {
        std::lock_guard lk(m_mu);
        return m_firstFailure;
    }

private:
    lab::LabClient m_client;
    const std::string m_prefix;
    int m_next = 0;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::set<std::string> m_ok;
    int m_failures = 0;
    std::string m_firstFailure;
};

QString mb(double bytes)
{
    return QString::number(bytes / (1 << 20), 'f', 1) + QStringLiteral(" MB");
}

} // namespace

class TestHostile : public QObject
{
    Q_OBJECT

private slots:
    void flood_data();
    void flood();
};

void TestHostile::flood_data()
{
    QTest::addColumn<hostile::Flood>("kind");
    for (hostile::Flood f : hostile::allFloods())
        QTest::newRow(hostile::floodName(f)) << f;
}

void TestHostile::flood()
{
    QFETCH(hostile::Flood, kind);
    const QString name = QString::fromLatin1(hostile::floodName(kind));
    lab::LabServer server;
    server.setOptions(hostile::serverOptions());
    std::string error;
    QVERIFY2(server.start(&error), error.c_str());
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath(name + QStringLiteral(".rpcscope"));
    hostile::CaptureProcess capture;
    QVERIFY2(capture.start(RPCSCOPE_CLI, std::uint16_t(server.port()), out.toStdString(),
                           {"--keep", std::to_string(kKeepMb)}, &error),
             error.c_str());

    Caller caller(capture.listenPort(), "hostile-" + name.toStdString() + "-");
    const lab::CallResult first = caller.callOnce(); // the proxy works before the flood
    QVERIFY2(first.code == 0, first.message.c_str());
    caller.start();
    hostile::FloodClient client;
    const hostile::FloodResult fr =
        client.run(kind, capture.listenPort(),
                   hostile::paced(std::uint64_t(hostile::suiteRate(kind) * kFloodSeconds), kFloodSeconds));
    // What the flood sent may still be on its way into the model: two more progress lines (a second each),
    // with the flood's connections still open and the calls still going.
    capture.waitProgressLines(capture.progressLines() + 2, 20000);
    caller.stop();
    const bool survived = capture.running();
    client.close();
    const double reported = capture.maxReported();
    const hostile::CaptureProcess::Exit exit = capture.stop(60000);
    const std::set<std::string> ok = caller.succeeded();

    // The file: readable to the end, and holding every call that succeeded through the proxy. Read into a
    // timeline under the same budget, its statistics are what the capture's were.
    CaptureInfo info;
    std::set<std::string> inFile;
    size_t events = 0;
    // The accounting invariant, on what the flood made of the capture: appended batch by batch as the capture
    // appended them, under the capture's budget and with the room it leaves the feed's queue and the decoders
    // (half of it, app/cli/capture.cpp), what the timeline holds plus that room stays within the budget, but
    // for what arrives between two checks of retention (a tenth).
    TimelineModel replayed;
    replayed.setExternalReserve(kKeepBytes / 2);
    replayed.setRetention({kKeepBytes, 0, 0});
    size_t replayedPeak = 0;
    const CaptureReadResult read = readCaptureFile(out, &info, [&](EventBatch &&batch) {
        events += batch.size();
        for (const WireEvent &e : batch)
            if (e.kind == EventKind::Headers && e.dir == Direction::ClientToServer && ok.count(e.grpc.callId))
                inFile.insert(e.grpc.callId);
        replayed.appendBatch(batch);
        replayedPeak = std::max(replayedPeak, replayed.memoryBytes());
    });

    // Figures, for the record only (the benchmark holds their goals).
    qInfo("%s: flood %s", qPrintable(name), fr.summary().c_str());
    qInfo("%s: %zu calls succeeded, %d failed; reported at most %s in memory (--keep %d); peak RSS %s; "
          "capture %s; file %s, %zu events; replayed under the budget, at most %s held",
          qPrintable(name), ok.size(), caller.failures(), qPrintable(mb(reported)), kKeepMb,
          qPrintable(mb(double(exit.peakRssKb) * 1024)), exit.describe().c_str(),
          read.usable() ? "readable" : qPrintable(QString::fromStdString(read.message)), events,
          qPrintable(mb(double(replayedPeak))));

    QVERIFY2(fr.error.empty(), fr.error.c_str());
    QVERIFY2(caller.failures() == 0,
             qPrintable(
                 QStringLiteral("%1 of %2 calls through the proxy failed during the %3 flood; the first: %4")
                     .arg(caller.failures())
                     .arg(caller.failures() + int(ok.size()))
                     .arg(name, QString::fromStdString(caller.firstFailure()))));
    QVERIFY2(ok.size() >= 2, "the calls made no progress during the flood");
    QVERIFY2(survived,
             qPrintable(QStringLiteral("the capture did not live through the %1 flood: %2; stderr: %3")
                            .arg(name, QString::fromStdString(exit.describe()),
                                 QString::fromStdString(capture.stderrText()))));
    QVERIFY2(exit.exited && exit.code == 0,
             qPrintable(QStringLiteral("after the %1 flood, the capture %2; stderr: %3")
                            .arg(name, QString::fromStdString(exit.describe()),
                                 QString::fromStdString(capture.stderrText()))));
    QVERIFY2(read.status == CaptureReadResult::Ok, read.message.c_str());
    QCOMPARE(inFile.size(), ok.size());
    QVERIFY2(capture.progressLines() >= 2, "the capture printed no progress lines");
    QVERIFY2(
        replayedPeak + kKeepBytes / 2 <= kKeepBytes + kKeepBytes / 10,
        qPrintable(QStringLiteral("the %1 flood's capture, replayed under --keep %2 with half of it left "
                                  "to the others, held %3")
                       .arg(name)
                       .arg(kKeepMb)
                       .arg(mb(double(replayedPeak)))));
    QVERIFY2(reported <= kReportedLimit,
             qPrintable(QStringLiteral("under the %1 flood the capture reported %2 in memory with --keep %3 "
                                       "(limit %4)")
                            .arg(name, mb(reported))
                            .arg(kKeepMb)
                            .arg(mb(kReportedLimit))));
    if (kind == hostile::Flood::DistinctPaths) {
        // A statistics row each for thousands of paths would outlive every eviction: past the budget's row
        // limit their calls count in one row, and the capture says so once.
        const size_t maxRows = TimelineModel::statsRowsFor(size_t(kKeepMb) << 20);
        QVERIFY2(fr.units > maxRows * 2, fr.summary().c_str());
        const QString err = QString::fromStdString(capture.stderrText());
        const QRegularExpressionMatch said =
            QRegularExpression(
                R"(more than (\d+) distinct methods: the (\d+) calls of those seen after the first)")
                .match(err);
        QVERIFY2(said.hasMatch(), qPrintable(err));
        QCOMPARE(said.captured(1).toULongLong(), qulonglong(maxRows));
        // Every request is a call the server answered, unless the capture shed decoding under the load.
        QVERIFY2(said.captured(2).toULongLong() >= (fr.units - maxRows) / 2, qPrintable(said.captured(0)));
        QCOMPARE(err.count(QStringLiteral("distinct methods")), 1);
        const CallStats &stats = replayed.stats();
        qInfo("%s: %zu method rows (%s) for %llu calls, %llu of them in \"%s\"", qPrintable(name),
              stats.methods().size(), qPrintable(mb(double(stats.rowBytes()))),
              static_cast<unsigned long long>(stats.total().calls),
              static_cast<unsigned long long>(stats.foldedMethodCalls()), CallStats::kOtherMethods);
        // Each kept method, the other methods, and "" (none here).
        QVERIFY2(stats.methods().size() <= maxRows + 2, qPrintable(QString::number(stats.methods().size())));
        const StatsRow *other = stats.find(StatsRow::Kind::Method, CallStats::kOtherMethods);
        QVERIFY(other);
        QCOMPARE(other->calls, stats.foldedMethodCalls());
        QVERIFY2(other->calls >= (fr.units - maxRows) / 2, qPrintable(QString::number(other->calls)));
    }
}

QTEST_GUILESS_MAIN(TestHostile)
#include "tst_hostile.moc"
