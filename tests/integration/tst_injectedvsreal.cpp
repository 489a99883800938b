// Issue 19: a client library cannot tell a failure the proxy injected from one the server made. A grpc++
// (C-core) client and a grpc-go client, each under the same retry service config, make the same calls twice
// through `rpcscope-cli capture`: once against a lab server told to fail the first attempts (with
// UNAVAILABLE, with UNAVAILABLE and a retry pushback, with a code the policy does not retry, or with
// UNAVAILABLE after doing the call's side effect), once against a healthy lab server while the proxy's abort
// rule fails those attempts, before the server sees them or after it answered. Both runs must make the same
// attempts per call, with every backoff gap in that client's envelope (model/retryjudge.h) and the pushback
// honoured the same, and `rpcscope-cli check` must find every call conforming.

#include "captureio.h"
#include "captureprocess.h"
#include "clientstack.h"
#include "goclientbuild.h"
#include "labclient.h"
#include "labserver.h"
#include "retryjudge.h"
#include "retryserviceconfig.h"
#include "timelinestore.h"
#include "useragentindex.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;

namespace {

constexpr int kBackoffMs = 100;
constexpr int kPushbackMs = 250;
constexpr int kCalls = 3;

const char *serviceConfig()
{
    return R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":4,)"
           R"("initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,)"
           R"("retryableStatusCodes":["UNAVAILABLE"]}}]})";
}

enum class Stack
{
    Cpp,
    Go
};

// What fails the first attempts of every call: the server, or the proxy in front of a healthy one.
struct Case
{
    const char *name;
    int failFirst;      // attempts that fail, each call
    int pushbackMs;     // 0: none
    const char *rule;   // the proxy's equivalent
    int code = 14;      // the failures' status; the policy retries only UNAVAILABLE
    bool after = false; // the server does the call's side effect first (the rule acts when=after)
};

const Case kCases[] = {
    {"unavailable", 2, 0, "abort status=UNAVAILABLE attempt=1-2"},
    {"pushback", 1, kPushbackMs, "abort status=UNAVAILABLE pushback=250 attempt=1"},
    {"not-retryable", 1, 0, "abort status=INTERNAL attempt=1", 13},
    {"after-the-server", 1, 0, "abort status=UNAVAILABLE when=after attempt=1", 14, true},
};

struct Run
{
    std::vector<Call> calls;         // the calls the client made, in call-id order
    std::vector<ClientStack> stacks; // each call's client, from its user-agent
    QString file;
    std::vector<int> codes; // what the client got, per call
};

QString hexOf(const std::string &bytes)
{
    return QString::fromLatin1(QByteArray::fromStdString(bytes).toHex());
}

} // namespace

class TestInjectedVsReal : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_goClient;
    QString m_config;

    // Runs the calls of `c` with `stack` through a capture proxy in front of `server`; `injected` adds the
    // case's abort rule and asks the server for no failures.
    bool runCase(Stack stack, const Case &c, bool injected, lab::LabServer &server, Run *out)
    {
        const QString tag =
            QStringLiteral("%1-%2-%3")
                .arg(stack == Stack::Cpp ? "cpp" : "go", c.name, injected ? "injected" : "real");
        out->file = m_dir.filePath(tag + QStringLiteral(".rpcscope"));
        std::vector<std::string> extra;
        if (injected) extra = {"--fault", c.rule};
        hostile::CaptureProcess capture;
        std::string error;
        if (!capture.start(RPCSCOPE_CLI, std::uint16_t(server.port()), out->file.toStdString(), extra,
                           &error)) {
            qWarning("%s: the capture did not start: %s", qPrintable(tag), error.c_str());
            return false;
        }
        const std::string target = "127.0.0.1:" + std::to_string(capture.listenPort());
        std::vector<lab::CallRequest> requests;
        for (int i = 0; i < kCalls; ++i) {
            lab::CallRequest r;
            r.set_call_id(tag.toStdString() + "-" + std::to_string(i + 1));
            r.set_fail_first_n(injected ? 0 : c.failFirst);
            r.set_fail_code(c.code);
            r.set_side_effect(c.after);
            if (!injected && c.pushbackMs > 0) r.set_pushback_ms(c.pushbackMs); // optional: 0 would be sent
            r.set_payload(std::string(100, 'q'));
            r.set_response_size(100);
            requests.push_back(r);
        }
        if (stack == Stack::Cpp) {
            lab::LabClient client(target, m_config.toStdString());
            for (const lab::CallRequest &r : requests)
                out->codes.push_back(client.call(r, std::chrono::seconds(10)).code);
        } else {
            QStringList args{m_config, QString::fromStdString(target)};
            for (const lab::CallRequest &r : requests)
                args << QString::fromStdString(r.call_id()) << hexOf(r.SerializeAsString());
            QByteArray errors;
            const QStringList lines = goclient::runRetry(m_goClient, args, &errors);
            for (const QString &line : lines)
                out->codes.push_back(line.section(' ', 1).toInt());
            if (int(out->codes.size()) != kCalls)
                qWarning("%s: the grpc-go client said: %s %s", qPrintable(tag), qPrintable(lines.join(" | ")),
                         errors.constData());
        }
        const auto exit = capture.stop(20'000);
        if (!exit.exited || exit.code != 0) {
            qWarning("%s: the capture %s: %s", qPrintable(tag), exit.describe().c_str(),
                     capture.stderrText().c_str());
            return false;
        }
        TimelineStore store;
        UserAgentIndex agents;
        CaptureInfo info;
        const CaptureReadResult read = loadCaptureBatches(out->file, &info, [&](EventBatch &&batch) {
            agents.record(batch);
            store.apply(batch);
        });
        if (!read.usable()) {
            qWarning("%s: %s", qPrintable(tag), read.message.c_str());
            return false;
        }
        for (const lab::CallRequest &r : requests)
            for (const Call &call : store.calls())
                if (call.key == r.call_id()) {
                    out->calls.push_back(call);
                    out->stacks.push_back(ClientStack::fromUserAgent(
                        agents.forConnection(call.attempts.empty() ? 0 : call.attempts.front().connection)));
                }
        return true;
    }

    // rpcscope-cli check's exit code on a capture, with what it printed.
    int check(const QString &file, QString *output)
    {
        const QString configFile = m_dir.filePath(QStringLiteral("config.json"));
        QProcess cli;
        cli.start(RPCSCOPE_CLI, {"check", file, "--service-config", configFile});
        if (!cli.waitForFinished(60'000)) return -1;
        *output = QString::fromLocal8Bit(cli.readAllStandardOutput() + cli.readAllStandardError());
        return cli.exitCode();
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_config = QString::fromLatin1(serviceConfig());
        QFile f(m_dir.filePath(QStringLiteral("config.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(m_config.toUtf8());
        f.close();
        QString error;
        m_goClient = goclient::build(&error);
        QVERIFY2(!m_goClient.isEmpty(), qPrintable(error));
    }

    void sameAttemptsGapsAndPushback_data()
    {
        QTest::addColumn<int>("stack");
        QTest::addColumn<int>("which");
        for (int s : {int(Stack::Cpp), int(Stack::Go)})
            for (int i = 0; i < int(std::size(kCases)); ++i)
                QTest::addRow("%s-%s", s == int(Stack::Cpp) ? "grpc++" : "grpc-go", kCases[i].name) << s << i;
    }

    void sameAttemptsGapsAndPushback()
    {
        QFETCH(int, stack);
        QFETCH(int, which);
        const Case &c = kCases[which];
        std::string error;
        const auto config = RetryServiceConfig::parse(m_config.toUtf8(), &error);
        QVERIFY2(config, error.c_str());
        const auto policy = config->forMethod("/rpcscope.lab.Lab/Call");
        QVERIFY(policy);

        lab::LabServer server;
        QVERIFY2(server.start(&error), error.c_str());
        Run real, injected;
        QVERIFY(runCase(Stack(stack), c, false, server, &real));
        QVERIFY(runCase(Stack(stack), c, true, server, &injected));
        const ClientStack::Kind want =
            stack == int(Stack::Cpp) ? ClientStack::Kind::CCore : ClientStack::Kind::Go;
        // A code the policy retries: the failures, then one success. Any other: the first failure ends it.
        const bool retried = c.code == 14;
        const int attempts = retried ? c.failFirst + 1 : 1;
        const int finalCode = retried ? 0 : c.code;

        for (const Run *run : {&real, &injected}) {
            const char *side = run == &real ? "server's failures" : "injected failures";
            QCOMPARE(int(run->calls.size()), kCalls);
            QCOMPARE(int(run->codes.size()), kCalls);
            for (int i = 0; i < kCalls; ++i) {
                const Call &call = run->calls[size_t(i)];
                QVERIFY2(run->codes[size_t(i)] == finalCode, qPrintable(QStringLiteral("%1: call %2 ended %3")
                                                                            .arg(side)
                                                                            .arg(i + 1)
                                                                            .arg(run->codes[size_t(i)])));
                QCOMPARE(run->stacks[size_t(i)].kind(), want);
                // Each client makes every attempt the failures imply.
                QVERIFY2(int(call.attempts.size()) == attempts,
                         qPrintable(QStringLiteral("%1: call %2 made %3 attempts, expected %4")
                                        .arg(side)
                                        .arg(i + 1)
                                        .arg(call.attempts.size())
                                        .arg(attempts)));
                const RetryVerdict v = RetryJudge::judge(call, policy, run->stacks[size_t(i)], {});
                QVERIFY2(v.kind == RetryVerdict::Kind::Conforms,
                         qPrintable(QStringLiteral("%1: call %2: %3")
                                        .arg(side)
                                        .arg(i + 1)
                                        .arg(QString::fromStdString(v.reason))));
                // The pushback reached the client and set its wait, whoever sent it.
                if (c.pushbackMs > 0) {
                    QCOMPARE(call.attempts.front().pushbackMs.value_or(-1), std::int64_t(c.pushbackMs));
                    const double gapMs = double(call.attempts[1].startNs - *call.attempts[0].endNs) / 1e6;
                    QVERIFY2(gapMs >= c.pushbackMs - RetryJudge::kEarlyMs &&
                                 gapMs <=
                                     c.pushbackMs * (1 + RetryJudge::kLateFraction) + RetryJudge::kLateMs,
                             qPrintable(QStringLiteral("%1: pushback gap %2 ms").arg(side).arg(gapMs)));
                }
            }
            QString output;
            QVERIFY2(check(run->file, &output) == 0, qPrintable(QStringLiteral("%1: %2").arg(side, output)));
            QVERIFY2(output.contains(QStringLiteral("calls conform")), qPrintable(output));
        }
        // The gaps as measured, for the reference notes on each client's retries.
        for (const Run *run : {&real, &injected}) {
            QStringList gaps;
            for (const Call &call : run->calls)
                for (size_t k = 1; k < call.attempts.size(); ++k)
                    if (call.attempts[k - 1].endNs)
                        gaps << QString::number(
                            double(call.attempts[k].startNs - *call.attempts[k - 1].endNs) / 1e6, 'f', 1);
            qInfo("%s, %s: gaps %s ms", QTest::currentDataTag(),
                  run == &real ? "server's failures" : "injected",
                  qPrintable(gaps.join(QStringLiteral(", "))));
        }
        // Failures injected before the server reached no server: it saw only the attempts that succeeded.
        // After it, the server did the work of every attempt, as when it failed them itself.
        for (int i = 0; i < kCalls; ++i) {
            const std::string id = injected.calls[size_t(i)].key;
            QCOMPARE(int(server.arrivalsFor(id).size()), c.after ? attempts : (retried ? 1 : 0));
            if (c.after) {
                QCOMPARE(server.sideEffectsFor(id), attempts);
                QCOMPARE(server.sideEffectsFor(real.calls[size_t(i)].key), attempts);
            }
        }
        // C-core waits exactly initialBackoff before its first retry, under either failure.
        if (stack == int(Stack::Cpp) && c.pushbackMs == 0 && retried)
            for (const Run *run : {&real, &injected})
                for (const Call &call : run->calls) {
                    const double gapMs = double(call.attempts[1].startNs - *call.attempts[0].endNs) / 1e6;
                    QVERIFY2(std::abs(gapMs - kBackoffMs) <= RetryJudge::kLateMs,
                             qPrintable(QStringLiteral("first gap %1 ms").arg(gapMs)));
                }
    }
};

QTEST_GUILESS_MAIN(TestInjectedVsReal)
#include "tst_injectedvsreal.moc"
