// The retry policy check's parts (issue 19): the service config parser and its precedence, the client
// implementations and their backoff envelopes, and the verdicts on hand-built calls.

#include "clientstack.h"
#include "gapenvelopes.h"
#include "policycheck.h"
#include "retryjudge.h"
#include "retryserviceconfig.h"
#include "timelinestore.h"
#include "useragentindex.h"

#include <QtTest>
#include <algorithm>
#include <map>

using namespace rpcscope;
using Kind = RetryVerdict::Kind;

namespace {

constexpr std::int64_t kMs = 1'000'000;
const char kCCore[] = "grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)";
const char kNode[] = "grpc-node-js/1.14.7";
const char kGo[] = "grpc-go/1.33.3";

QByteArray labConfig(int maxAttempts, const char *extra = "", const char *initial = "0.05s")
{
    return QStringLiteral(R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":)"
                          R"({"maxAttempts":%1,"initialBackoff":"%3","maxBackoff":"10s",)"
                          R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]%2})")
        .arg(maxAttempts)
        .arg(QLatin1String(extra), QLatin1String(initial))
        .toUtf8();
}

MethodRetryPolicy policyOf(const QByteArray &json)
{
    std::string error;
    const auto config = RetryServiceConfig::parse(json, &error);
    if (!config) qFatal("config does not parse: %s", error.c_str());
    const auto p = config->forMethod("/rpcscope.lab.Lab/Call");
    if (!p) qFatal("no policy for the lab method");
    return *p;
}

// A call whose attempts end with `statuses` (14 = UNAVAILABLE, 0 = OK), each attempt lasting 2 ms and the
// gaps between them as given (in ms).
Call makeCall(const std::vector<int> &statuses, const std::vector<double> &gapsMs)
{
    Call c;
    c.key = "call-1";
    c.method = "/rpcscope.lab.Lab/Call";
    std::int64_t t = 1000 * kMs;
    for (size_t i = 0; i < statuses.size(); ++i) {
        Attempt a;
        a.connection = 1;
        a.stream = std::uint32_t(1 + 2 * i);
        a.startNs = t;
        a.endNs = t + 2 * kMs;
        a.status = statuses[i];
        a.trailersOnly = true;
        if (i > 0) a.previousAttempts = int(i);
        c.attempts.push_back(a);
        t = *a.endNs + (i < gapsMs.size() ? std::int64_t(gapsMs[i] * kMs) : 0);
    }
    return c;
}

RetryVerdict judge(const Call &call, const QByteArray &config, const char *ua)
{
    return RetryJudge::judge(call, policyOf(config), ClientStack::fromUserAgent(ua), {});
}

} // namespace

class TestRetryPolicy : public QObject
{
    Q_OBJECT

private slots:
    void parsesTheLabConfig()
    {
        const MethodRetryPolicy p = policyOf(labConfig(3));
        QVERIFY(p.hasRetry);
        QCOMPARE(p.maxAttempts, 3);
        QCOMPARE(p.initialBackoffMs, 50.0);
        QCOMPARE(p.maxBackoffMs, 10000.0);
        QCOMPARE(p.backoffMultiplier, 2.0);
        QCOMPARE(p.retryableCodes, (std::set<int>{14}));
        QCOMPARE(p.matchedBy, std::string("rpcscope.lab.Lab"));
    }

    void durationsAndCodes()
    {
        QCOMPARE(RetryServiceConfig::durationMs("0.1s"), std::optional<double>(100.0));
        QCOMPARE(RetryServiceConfig::durationMs(".01s"), std::optional<double>(10.0));
        QCOMPARE(RetryServiceConfig::durationMs("3s"), std::optional<double>(3000.0));
        QCOMPARE(RetryServiceConfig::durationMs("100ms"), std::nullopt);
        QCOMPARE(RetryServiceConfig::durationMs("-1s"), std::nullopt);
        QCOMPARE(RetryServiceConfig::durationMs("s"), std::nullopt);
        QCOMPARE(RetryServiceConfig::durationMs("1.5"), std::nullopt);
        QCOMPARE(RetryServiceConfig::statusCode("UNAVAILABLE"), 14);
        QCOMPARE(RetryServiceConfig::statusCode("unavailable"), 14);
        QCOMPARE(RetryServiceConfig::statusCode("4"), 4);
        QCOMPARE(RetryServiceConfig::statusCode("17"), -1);
        QCOMPARE(RetryServiceConfig::statusCode("UNAVAILBLE"), -1);
    }

    // gRPC's precedence: the exact method, then the service, then the default name.
    void precedence()
    {
        const QByteArray json = R"({"methodConfig":[
            {"name":[{}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s",
             "backoffMultiplier":1,"retryableStatusCodes":[14]}},
            {"name":[{"service":"a.S"}],"timeout":"2s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s",
             "maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE",10]}},
            {"name":[{"service":"a.S","method":"M"}],"retryPolicy":{"MaxAttempts":4,"InitialBackoff":"0.2s",
             "MaxBackoff":"2s","BackoffMultiplier":3,"RetryableStatusCodes":["aborted"]}}]})";
        std::string error;
        const auto config = RetryServiceConfig::parse(json, &error);
        QVERIFY2(config, error.c_str());
        const auto exact = config->forMethod("/a.S/M");
        QVERIFY(exact);
        QCOMPARE(exact->maxAttempts, 4);
        QCOMPARE(exact->matchedBy, std::string("/a.S/M"));
        QCOMPARE(exact->retryableCodes, (std::set<int>{10}));
        const auto service = config->forMethod("/a.S/Other");
        QVERIFY(service);
        QCOMPARE(service->maxAttempts, 3);
        QCOMPARE(service->timeoutMs, std::optional<double>(2000.0));
        QCOMPARE(service->retryableCodes, (std::set<int>{10, 14}));
        const auto fallback = config->forMethod("/b.T/M");
        QVERIFY(fallback);
        QCOMPARE(fallback->maxAttempts, 2);
        QCOMPARE(fallback->matchedBy, std::string("default"));
        // Without a default name, an unnamed method has no policy at all.
        const auto only = RetryServiceConfig::parse(labConfig(3), &error);
        QVERIFY(!only->forMethod("/b.T/M"));
    }

    void badConfigsNameTheField_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("error");
        QTest::newRow("not JSON") << QByteArray("{\"methodConfig\": [") << "not JSON";
        QTest::newRow("array") << QByteArray("[]") << "the service config must be a JSON object";
        QTest::newRow("maxAttempts 1")
            << labConfig(1) << "methodConfig[0].retryPolicy.maxAttempts: 1 must be 2";
        QTest::newRow("ms duration")
            << QByteArray(R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,)"
                          R"("initialBackoff":"100ms","maxBackoff":"1s","backoffMultiplier":2,)"
                          R"("retryableStatusCodes":[14]}}]})")
            << "methodConfig[0].retryPolicy.initialBackoff: \"100ms\" is not a duration";
        QTest::newRow("unknown code")
            << QByteArray(R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,)"
                          R"("initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,)"
                          R"("retryableStatusCodes":["UNAVAILABLE","UNAVAILBLE"]}}]})")
            << "methodConfig[0].retryPolicy.retryableStatusCodes[1]: \"UNAVAILBLE\" is not a gRPC status "
               "code";
        QTest::newRow("no codes")
            << QByteArray(R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,)"
                          R"("initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,)"
                          R"("retryableStatusCodes":[]}}]})")
            << "methodConfig[0].retryPolicy.retryableStatusCodes: must be a non-empty array";
        QTest::newRow("missing multiplier")
            << QByteArray(R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,)"
                          R"("initialBackoff":"1s","maxBackoff":"1s","retryableStatusCodes":[14]}}]})")
            << "methodConfig[0].retryPolicy.backoffMultiplier: missing";
        QTest::newRow("method without service")
            << QByteArray(R"({"methodConfig":[{"name":[{"method":"M"}]}]})")
            << "methodConfig[0].name[0].method: \"M\" names a method without a service";
        QTest::newRow("duplicate")
            << QByteArray(R"({"methodConfig":[{"name":[{"service":"a.S"}]},{"name":[{"service":"a.S"}]}]})")
            << "methodConfig[1].name[0]: duplicate name \"a.S\"";
        QTest::newRow("throttling") << labConfig(3, R"(,"retryThrottling":{"maxTokens":0,"tokenRatio":0.1})")
                                    << "retryThrottling.maxTokens: 0 must be a number in (0, 1000]";
    }

    void badConfigsNameTheField()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, error);
        std::string message;
        QVERIFY(!RetryServiceConfig::parse(json, &message));
        QVERIFY2(QString::fromStdString(message).startsWith(error), message.c_str());
        QVERIFY(message.find('\n') == std::string::npos);
    }

    void identifiesClients()
    {
        QCOMPARE(ClientStack::fromUserAgent(kCCore).kind(), ClientStack::Kind::CCore);
        QCOMPARE(ClientStack::fromUserAgent(kCCore).name(), std::string("grpc-c++ 1.51.1 (C-core)"));
        const ClientStack python =
            ClientStack::fromUserAgent("grpc-python/1.51.1 grpc-c/29.0.0 (linux; chttp2)");
        QCOMPARE(python.kind(), ClientStack::Kind::CCore);
        QCOMPARE(python.name(), std::string("grpc-python 1.51.1 (C-core)"));
        QCOMPARE(ClientStack::fromUserAgent("myapp/2.0 grpc-go/1.33.3").kind(), ClientStack::Kind::Go);
        QCOMPARE(ClientStack::fromUserAgent("myapp/2.0 grpc-go/1.33.3").name(),
                 std::string("grpc-go 1.33.3"));
        QCOMPARE(ClientStack::fromUserAgent(kNode).kind(), ClientStack::Kind::Node);
        QCOMPARE(ClientStack::fromUserAgent("grpc-java-netty/1.58.0").kind(), ClientStack::Kind::Java);
        QCOMPARE(ClientStack::fromUserAgent("grpc-java-netty/1.58.0").retryBufferBytes(), 1u << 20);
        const ClientStack curl = ClientStack::fromUserAgent("curl/8.0");
        QCOMPARE(curl.kind(), ClientStack::Kind::Unknown);
        QCOMPARE(curl.name(), std::string("unknown client (curl/8.0)"));
        QCOMPARE(ClientStack::fromUserAgent("").name(), std::string("unknown client"));
    }

    void backoffEnvelopes()
    {
        using R = std::pair<double, double>;
        const ClientStack core = ClientStack::of(ClientStack::Kind::CCore);
        QCOMPARE(core.backoffMs(1, 50, 2, 1000), R(50, 50)); // no jitter on the first retry
        QCOMPARE(core.backoffMs(2, 50, 2, 1000), R(80, 120));
        QCOMPARE(core.backoffMs(3, 50, 2, 1000), R(160, 240));
        QCOMPARE(core.backoffMs(6, 50, 2, 1000), R(800, 1200)); // 1600 capped at maxBackoff
        const ClientStack node = ClientStack::of(ClientStack::Kind::Node);
        QCOMPARE(node.backoffMs(1, 50, 2, 1000), R(40, 60));
        QCOMPARE(node.backoffMs(2, 50, 2, 1000), R(80, 120));
        const ClientStack go = ClientStack::of(ClientStack::Kind::Go);
        QCOMPARE(go.backoffMs(1, 50, 2, 1000), R(0, 50));
        QCOMPARE(go.backoffMs(3, 50, 2, 150), R(0, 150));
        QCOMPARE(ClientStack::of(ClientStack::Kind::Unknown).backoffMs(1, 50, 2, 1000), R(0, 60));
        for (auto k : {ClientStack::Kind::CCore, ClientStack::Kind::Go, ClientStack::Kind::Node})
            QCOMPARE(ClientStack::of(k).maxAttemptsLimit(), 5);
    }

    // What the timeline shades for a captured call given a config: each gap's range as judge() counts it,
    // a pushback exactly (and the count starting over after it), none before the first attempt, none after a
    // stopping pushback, none without a retryPolicy.
    void envelopesPerGap()
    {
        using R = std::optional<std::pair<std::int64_t, std::int64_t>>;
        auto r = [](double lo, double hi) { return R{{std::int64_t(lo * kMs), std::int64_t(hi * kMs)}}; };
        Call call = makeCall({14, 14, 14, 14, 0}, {50, 100, 300, 50});
        call.attempts[2].pushbackMs = 300;
        const MethodRetryPolicy policy = policyOf(labConfig(5));
        const auto core = RetryJudge::envelopesNs(call, policy, ClientStack::fromUserAgent(kCCore));
        QCOMPARE(core, (std::vector<R>{std::nullopt, r(50, 50), r(80, 120), r(300, 300), r(50, 50)}));
        const auto node = RetryJudge::envelopesNs(call, policy, ClientStack::fromUserAgent(kNode));
        QCOMPARE(node, (std::vector<R>{std::nullopt, r(40, 60), r(80, 120), r(300, 300), r(40, 60)}));
        call.attempts[1].pushbackMs = -1;
        QCOMPARE(RetryJudge::envelopesNs(call, policy, ClientStack::fromUserAgent(kCCore)),
                 (std::vector<R>{std::nullopt, r(50, 50), R{}, R{}, R{}}));
        QCOMPARE(RetryJudge::envelopesNs(call, std::nullopt, ClientStack::fromUserAgent(kCCore)),
                 std::vector<R>(5));
    }

    void conformingRetries()
    {
        const Call call = makeCall({14, 14, 0}, {50.6, 101.0});
        const RetryVerdict v = judge(call, labConfig(3), kCCore);
        QVERIFY2(v.kind == Kind::Conforms, v.reason.c_str());
        QCOMPARE(v.reason, std::string("3 attempts"));
    }

    // C-core waits exactly initialBackoff on the first retry: a first gap drawn from [0.8, 1.2] is not
    // C-core's, though grpc-js would draw it. With a 1 s backoff, 820 ms is far outside C-core's noise.
    void jitteredFirstGapIsNotCCore()
    {
        const QByteArray oneSecond = labConfig(3, "", "1s");
        const Call call = makeCall({14, 0}, {820.0});
        const RetryVerdict v = judge(call, oneSecond, kCCore);
        QCOMPARE(v.kind, Kind::Gap);
        QCOMPARE(v.attempt, 2);
        QVERIFY2(v.reason.find("820.0 ms") != std::string::npos, v.reason.c_str());
        QVERIFY2(v.reason.find("exactly initialBackoff") != std::string::npos, v.reason.c_str());
        QCOMPARE(judge(call, oneSecond, kNode).kind, Kind::Conforms);
        QCOMPARE(judge(call, oneSecond, kGo).kind, Kind::Conforms);
        QCOMPARE(judge(makeCall({14, 0}, {1180.0}), oneSecond, kCCore).kind, Kind::Gap);
        QCOMPARE(judge(makeCall({14, 0}, {1180.0}), oneSecond, kNode).kind, Kind::Conforms);
        // The envelope's edges: 1000 ms - 10 ms - 2 %, and + 25 ms + 10 %.
        QCOMPARE(judge(makeCall({14, 0}, {969.0}), oneSecond, kCCore).kind, Kind::Gap);
        QCOMPARE(judge(makeCall({14, 0}, {971.0}), oneSecond, kCCore).kind, Kind::Conforms);
        QCOMPARE(judge(makeCall({14, 0}, {1124.0}), oneSecond, kCCore).kind, Kind::Conforms);
        QCOMPARE(judge(makeCall({14, 0}, {1126.0}), oneSecond, kCCore).kind, Kind::Gap);
        // Far too late is a gap out of the envelope for every client.
        const Call late = makeCall({14, 0}, {400.0});
        QCOMPARE(judge(late, labConfig(3), kNode).kind, Kind::Gap);
        QCOMPARE(judge(late, labConfig(3), kGo).kind, Kind::Gap);
        // C-core's cached clock: its exact 50 ms reads a few ms short at the proxy, relay hops make it
        // longer.
        QCOMPARE(judge(makeCall({14, 0}, {42.2}), labConfig(3), kCCore).kind, Kind::Conforms);
        QCOMPARE(judge(makeCall({14, 0}, {58.0}), labConfig(3), kCCore).kind, Kind::Conforms);
        QCOMPARE(judge(makeCall({14, 0}, {38.0}), labConfig(3), kCCore).kind, Kind::Gap);
    }

    // A retry after its attempt's connection was lost waits for a new connection as well as its backoff
    // (grpc-go's reconnect took 89 ms on a loaded machine, past a 50 ms backoff's envelope). It conforms when
    // it followed that connection's opening promptly, and not otherwise: a gap past the envelope on the same
    // connection, or long after the new connection was up, is still one.
    void retryWaitsForANewConnection()
    {
        Call call = makeCall({14, 0}, {120.0});
        call.attempts[1].connection = 2;
        call.attempts[1].stream = 1;
        const std::int64_t lostAt = *call.attempts[0].endNs;
        std::int64_t openedAt = lostAt + 100 * kMs;
        RetryJudge::Options options;
        options.connectionOpenedNs = [&](std::uint32_t id) -> std::optional<std::int64_t> {
            if (id == 2) return openedAt;
            return std::nullopt;
        };
        const MethodRetryPolicy policy = policyOf(labConfig(3));
        for (const char *ua : {kCCore, kGo, kNode}) {
            const ClientStack stack = ClientStack::fromUserAgent(ua);
            openedAt = lostAt + 100 * kMs; // the retry went 20 ms after its connection was up
            RetryVerdict v = RetryJudge::judge(call, policy, stack, options);
            QVERIFY2(v.kind == Kind::Conforms, v.reason.c_str());
            // Without the connection's opening known, the same gap is out of the envelope.
            QCOMPARE(RetryJudge::judge(call, policy, stack, {}).kind, Kind::Gap);
            // The new connection was up 10 ms after the failure: the retry had no reason to wait 120 ms.
            openedAt = lostAt + 10 * kMs;
            v = RetryJudge::judge(call, policy, stack, options);
            QCOMPARE(v.kind, Kind::Gap);
            QVERIFY2(v.reason.find("new connection opened 10.0 ms after attempt 1") != std::string::npos,
                     v.reason.c_str());
            // A connection opened before the attempt ended was there to use all along.
            openedAt = lostAt - 5 * kMs;
            QCOMPARE(RetryJudge::judge(call, policy, stack, options).kind, Kind::Gap);
        }
        // The same late gap on the same connection is not forgiven.
        Call same = makeCall({14, 0}, {120.0});
        openedAt = *same.attempts[0].endNs + 100 * kMs;
        QCOMPARE(RetryJudge::judge(same, policy, ClientStack::fromUserAgent(kGo), options).kind, Kind::Gap);
    }

    // maxAttempts 10 is judged against the clamp: 5 attempts conform, 4 are too few, 6 too many.
    void clampedMaxAttempts()
    {
        const std::vector<double> gaps = {50.5, 100, 200, 400, 800};
        const RetryVerdict five = judge(makeCall({14, 14, 14, 14, 14}, gaps), labConfig(10), kCCore);
        QVERIFY2(five.kind == Kind::Conforms, five.reason.c_str());
        const RetryVerdict four = judge(makeCall({14, 14, 14, 14}, gaps), labConfig(10), kCCore);
        QCOMPARE(four.kind, Kind::Attempts);
        QVERIFY2(four.reason.find("stopped after 4 attempts") != std::string::npos, four.reason.c_str());
        QVERIFY2(four.reason.find("maxAttempts 10, clamped to 5 by grpc-c++") != std::string::npos,
                 four.reason.c_str());
        const RetryVerdict six = judge(makeCall({14, 14, 14, 14, 14, 14}, gaps), labConfig(10), kCCore);
        QCOMPARE(six.kind, Kind::Attempts);
        QCOMPARE(six.attempt, 6);
        QVERIFY2(six.reason.find("6 attempts where 5 are allowed") != std::string::npos, six.reason.c_str());
        // Under the clamp, maxAttempts itself is the limit.
        const RetryVerdict three = judge(makeCall({14, 14, 14, 14}, gaps), labConfig(3), kCCore);
        QCOMPARE(three.kind, Kind::Attempts);
        QVERIFY2(three.reason.find("4 attempts where 3 are allowed (maxAttempts 3)") != std::string::npos,
                 three.reason.c_str());
    }

    void nonRetryableCode()
    {
        const RetryVerdict v = judge(makeCall({13, 0}, {50.5}), labConfig(3), kCCore);
        QCOMPARE(v.kind, Kind::NonRetryable);
        QVERIFY2(v.reason.find("INTERNAL (13), not in retryableStatusCodes [UNAVAILABLE]") !=
                     std::string::npos,
                 v.reason.c_str());
        // A single INTERNAL is what the policy says.
        QCOMPARE(judge(makeCall({13}, {}), labConfig(3), kCCore).kind, Kind::Conforms);
    }

    void pushback()
    {
        Call early = makeCall({14, 0}, {120.0});
        early.attempts[0].pushbackMs = 300;
        const RetryVerdict v = judge(early, labConfig(3), kCCore);
        QCOMPARE(v.kind, Kind::Pushback);
        QVERIFY2(v.reason.find("120.0 ms") != std::string::npos && v.reason.find("300") != std::string::npos,
                 v.reason.c_str());
        Call honoured = makeCall({14, 0}, {302.0});
        honoured.attempts[0].pushbackMs = 300;
        QCOMPARE(judge(honoured, labConfig(3), kCCore).kind, Kind::Conforms);
        // The backoff restarts after a pushback: the next retry is a first retry again (exactly 50 ms).
        Call reset = makeCall({14, 14, 0}, {302.0, 50.5});
        reset.attempts[0].pushbackMs = 300;
        QCOMPARE(judge(reset, labConfig(3), kCCore).kind, Kind::Conforms);
        Call stop = makeCall({14, 0}, {50.5});
        stop.attempts[0].pushbackMs = -1;
        QCOMPARE(judge(stop, labConfig(3), kCCore).kind, Kind::Pushback);
        Call stopped = makeCall({14}, {});
        stopped.attempts[0].pushbackMs = -1;
        QCOMPARE(judge(stopped, labConfig(3), kCCore).kind, Kind::Conforms);
    }

    void retryAfterCommit()
    {
        Call headers = makeCall({14, 0}, {50.5});
        headers.attempts[0].responseHeadersNs = headers.attempts[0].startNs + kMs;
        headers.attempts[0].trailersOnly = false;
        const RetryVerdict v = judge(headers, labConfig(3), kCCore);
        QCOMPARE(v.kind, Kind::AfterCommit);
        QVERIFY2(v.reason.find("response headers") != std::string::npos, v.reason.c_str());
        // 300 KiB is over C-core's 256 KiB retry buffer but within grpc-js's 1 MiB.
        Call big = makeCall({14, 0}, {50.5});
        big.attempts[0].requestBytes = 300 * 1024;
        const RetryVerdict b = judge(big, labConfig(3), kCCore);
        QCOMPARE(b.kind, Kind::AfterCommit);
        QVERIFY2(b.reason.find("300 KiB, over grpc-c++ 1.51.1 (C-core)'s 256 KiB") != std::string::npos,
                 b.reason.c_str());
        Call bigNode = makeCall({14, 0}, {45.0});
        bigNode.attempts[0].requestBytes = 300 * 1024;
        QCOMPARE(judge(bigNode, labConfig(3), kNode).kind, Kind::Conforms);
        // A committed call that stops after one attempt conforms.
        Call once = makeCall({14}, {});
        once.attempts[0].responseHeadersNs = once.attempts[0].startNs + kMs;
        QCOMPARE(judge(once, labConfig(3), kCCore).kind, Kind::Conforms);
    }

    void pastTheDeadline()
    {
        Call call = makeCall({14, 14, 0}, {50.5, 230.0});
        call.attempts[0].timeoutNs = 250 * kMs;
        const RetryVerdict v = judge(call, labConfig(5), kCCore);
        // attempt 3 starts at 2 + 50.5 + 2 + 230 = 284.5 ms > 250 ms.
        QCOMPARE(v.kind, Kind::PastDeadline);
        QCOMPARE(v.attempt, 3);
        QVERIFY2(v.reason.find("284.5 ms") != std::string::npos &&
                     v.reason.find("250.0 ms") != std::string::npos,
                 v.reason.c_str());
        // Cut short by the deadline is no missing retry: the next backoff would end after it.
        Call cut = makeCall({14, 14}, {50.5});
        cut.attempts[0].timeoutNs = 250 * kMs;
        cut.attempts[1].status.reset();
        cut.attempts[1].rstByClient = true;
        QCOMPARE(judge(cut, labConfig(5), kCCore).kind, Kind::Conforms);
        // Attempt 2 ends at 54.5 ms; the second retry waits at least 80 ms, past a 120 ms deadline.
        Call ended = makeCall({14, 14}, {50.5});
        ended.attempts[0].timeoutNs = 120 * kMs;
        QCOMPARE(judge(ended, labConfig(5), kCCore).kind, Kind::Conforms);
        // With a 200 ms deadline it had time for another attempt.
        ended.attempts[0].timeoutNs = 200 * kMs;
        QCOMPARE(judge(ended, labConfig(5), kCCore).kind, Kind::Attempts);
    }

    void noPolicyMeansOneAttempt()
    {
        std::string error;
        const auto config =
            RetryServiceConfig::parse(R"({"methodConfig":[{"name":[{"service":"x.Y"}]}]})", &error);
        QVERIFY(config);
        const Call call = makeCall({14, 0}, {50.5});
        const RetryVerdict v =
            RetryJudge::judge(call, config->forMethod(call.method), ClientStack::fromUserAgent(kCCore), {});
        QCOMPARE(v.kind, Kind::Attempts);
        QVERIFY2(v.reason.find("2 attempts where 1 is allowed (no methodConfig names the method)") !=
                     std::string::npos,
                 v.reason.c_str());
    }

    // A refused stream replayed at once is the client's transparent retry: not an attempt of the policy's.
    void transparentRetryIsNotCounted()
    {
        Call call = makeCall({14, 14, 0}, {0.1, 50.5});
        call.attempts[0].status.reset();
        call.attempts[0].rstErrorCode = 7; // REFUSED_STREAM
        call.attempts[1].previousAttempts.reset();
        call.attempts[2].previousAttempts = 1;
        const RetryVerdict v = judge(call, labConfig(2), kCCore);
        QVERIFY2(v.kind == Kind::Conforms, v.reason.c_str());
        QCOMPARE(v.reason, std::string("2 attempts"));
    }

    void inFlightAndCaptureEnd()
    {
        Call open = makeCall({14, 0}, {50.5});
        open.attempts[1].endNs.reset();
        open.attempts[1].status.reset();
        QCOMPARE(judge(open, labConfig(3), kCCore).kind, Kind::InFlight);
        const Call failed = makeCall({14}, {});
        RetryJudge::Options options;
        options.captureEndNs = *failed.attempts[0].endNs + 10 * kMs;
        QCOMPARE(
            RetryJudge::judge(failed, policyOf(labConfig(3)), ClientStack::fromUserAgent(kCCore), options)
                .kind,
            Kind::InFlight);
        // The client closed its connection 1 ms after the failure: it is done, one attempt short.
        options.clientClosedNs = *failed.attempts[0].endNs + kMs;
        QCOMPARE(
            RetryJudge::judge(failed, policyOf(labConfig(3)), ClientStack::fromUserAgent(kCCore), options)
                .kind,
            Kind::Attempts);
        options.clientClosedNs.reset();
        options.captureEndNs = *failed.attempts[0].endNs + 1000 * kMs;
        QCOMPARE(
            RetryJudge::judge(failed, policyOf(labConfig(3)), ClientStack::fromUserAgent(kCCore), options)
                .kind,
            Kind::Attempts);
        options.throttled = true;
        QCOMPARE(
            RetryJudge::judge(failed, policyOf(labConfig(3)), ClientStack::fromUserAgent(kCCore), options)
                .kind,
            Kind::Conforms);
    }

    // The whole path from events: the user-agent comes off the request headers, per connection.
    void checkFromEvents()
    {
        auto headers = [](std::uint32_t conn, std::uint32_t stream, std::int64_t t, Direction dir, bool end,
                          std::vector<Header> hs) {
            WireEvent e;
            e.kind = EventKind::Headers;
            e.connection = conn;
            e.stream = stream;
            e.tNs = t;
            e.dir = dir;
            e.endStream = end;
            e.headers = std::move(hs);
            for (const Header &h : e.headers) {
                if (h.name == ":path") e.grpc.path = h.value;
                if (h.name == "grpc-status") e.grpc.status = std::stoi(h.value);
                if (h.name == "rpcscope-call-id") e.grpc.callId = h.value;
                if (h.name == "grpc-previous-rpc-attempts") e.grpc.previousAttempts = std::stoi(h.value);
            }
            return e;
        };
        auto open = [](std::uint32_t conn) {
            WireEvent e;
            e.kind = EventKind::ConnectionOpened;
            e.connection = conn;
            e.about = PeerNames{"127.0.0.1:4000" + std::to_string(conn), "127.0.0.1:50051"};
            return e;
        };
        EventBatch batch{open(1), open(2)};
        // Connection 1 is grpc-c++ with an 820 ms first gap after a 1 s initialBackoff; connection 2 is
        // grpc-js with the same call.
        for (std::uint32_t conn : {1u, 2u}) {
            const std::string ua = conn == 1 ? kCCore : kNode;
            const std::string id = "c" + std::to_string(conn);
            const std::int64_t t0 = conn * 10'000 * kMs;
            batch.push_back(
                headers(conn, 1, t0, Direction::ClientToServer, true,
                        {{":path", "/rpcscope.lab.Lab/Call"}, {"user-agent", ua}, {"rpcscope-call-id", id}}));
            batch.push_back(headers(conn, 1, t0 + 2 * kMs, Direction::ServerToClient, true,
                                    {{":status", "200"}, {"grpc-status", "14"}}));
            batch.push_back(headers(conn, 3, t0 + 822 * kMs, Direction::ClientToServer, true,
                                    {{":path", "/rpcscope.lab.Lab/Call"},
                                     {"user-agent", ua},
                                     {"rpcscope-call-id", id},
                                     {"grpc-previous-rpc-attempts", "1"}}));
            batch.push_back(headers(conn, 3, t0 + 824 * kMs, Direction::ServerToClient, true,
                                    {{":status", "200"}, {"grpc-status", "0"}}));
        }
        TimelineStore store;
        UserAgentIndex agents;
        agents.record(batch);
        store.apply(batch);
        QCOMPARE(store.calls().size(), size_t(2));
        QCOMPARE(agents.forConnection(2), std::string(kNode));
        std::string error;
        const auto config = RetryServiceConfig::parse(labConfig(3, "", "1s"), &error);
        const PolicyCheck check = PolicyCheck::run(store, *config, agents);
        QCOMPARE(check.rows().size(), size_t(1));
        QCOMPARE(check.rows()[0].calls, 2u);
        QCOMPARE(check.rows()[0].count(Kind::Conforms), 1u);
        QCOMPARE(check.rows()[0].count(Kind::Gap), 1u);
        QCOMPARE(check.findings().size(), size_t(1));
        QCOMPARE(check.findings()[0].call, std::string("c1"));
        const QString text = QString::fromStdString(check.text());
        QVERIFY2(text.contains("1 of 2 calls do not conform") && text.contains("gap outside envelope"),
                 qPrintable(text));
        QCOMPARE(check.toJson().value("nonConforming").toArray().size(), 1);
    }

    // The live check (LivePolicyCheck) judges again only what changed, yet after every batch it says what a
    // full check of the same store says: calls whose attempts span batches, calls left without their retry
    // (in flight until the capture's end passes their due time), a connection whose client becomes known
    // later, and evictions in between. The ranges it gives the timeline are the full check's too.
    // Both ways an update reads the store: from its change log, and every call (a log bounded to one serial
    // no longer reaches back, so the updates read every call, evictions included).
    void liveCheckEqualsAFullOne_data()
    {
        QTest::addColumn<int>("changeLogMax");
        QTest::newRow("change log") << 0;
        QTest::newRow("every call") << 1;
    }

    void liveCheckEqualsAFullOne()
    {
        QFETCH(int, changeLogMax);
        auto event = [](EventKind kind, std::uint32_t conn, std::uint32_t stream, std::int64_t t) {
            WireEvent e;
            e.kind = kind;
            e.connection = conn;
            e.stream = stream;
            e.tNs = t;
            return e;
        };
        auto request = [&](std::uint32_t conn, std::uint32_t stream, std::int64_t t, const std::string &id,
                           int previous) {
            WireEvent e = event(EventKind::Headers, conn, stream, t);
            e.dir = Direction::ClientToServer;
            e.grpc.path = "/rpcscope.lab.Lab/Call";
            e.grpc.callId = id;
            if (previous) e.grpc.previousAttempts = previous;
            e.headers = {{":path", e.grpc.path}, {"rpcscope-call-id", id}};
            return e;
        };
        auto response = [&](std::uint32_t conn, std::uint32_t stream, std::int64_t t, int status) {
            WireEvent e = event(EventKind::Headers, conn, stream, t);
            e.dir = Direction::ServerToClient;
            e.endStream = true;
            e.grpc.status = status;
            e.headers = {{":status", "200"}, {"grpc-status", std::to_string(status)}};
            return e;
        };
        auto agent = [&](std::uint32_t conn) {
            WireEvent e = event(EventKind::Headers, conn, 1, 0);
            e.dir = Direction::ClientToServer;
            e.headers = {{"user-agent", conn <= 3 ? kCCore : kNode}};
            return EventBatch{e};
        };
        std::string error;
        const auto config = RetryServiceConfig::parse(labConfig(3), &error);
        QVERIFY2(config, error.c_str());
        TimelineStore store;
        if (changeLogMax) store.setChangeLogMax(size_t(changeLogMax));
        UserAgentIndex agents;
        EventBatch opened;
        for (std::uint32_t conn = 1; conn <= 6; ++conn) {
            opened.push_back(event(EventKind::ConnectionOpened, conn, 0, 0));
            if (conn < 6) agents.record(agent(conn)); // connection 6's client is told later
        }
        store.apply(opened);
        LivePolicyCheck live(*config);
        // Call i on connection 1 + i % 6, 100 ms after call i-1; attempts 1 and 2 in different batches.
        // Gaps: 50 ms (C-core's exact first backoff), 45 ms (grpc-js's jitter; C-core's if within slack),
        // 500 ms (nobody's), or no retry at all after UNAVAILABLE.
        std::map<std::int64_t, EventBatch> byBatch;
        std::uint32_t nextStream[7] = {0, 1, 1, 1, 1, 1, 1};
        for (int i = 0; i < 60; ++i) {
            const std::uint32_t conn = std::uint32_t(1 + i % 6);
            const std::int64_t t = std::int64_t(i) * 100 * kMs + kMs;
            const std::string id = "live-" + std::to_string(i);
            const std::uint32_t s1 = nextStream[conn], s2 = s1 + 2;
            nextStream[conn] += 4;
            const int shape = i % 4;
            byBatch[t / (250 * kMs)].push_back(request(conn, s1, t, id, 0));
            byBatch[(t + 2 * kMs) / (250 * kMs)].push_back(
                response(conn, s1, t + 2 * kMs, shape == 0 ? 0 : 14));
            if (shape == 0 || shape == 3) continue; // done, or never retried
            const std::int64_t gap = shape == 1 ? 50 * kMs : (i % 8 == 2 ? 45 * kMs : 500 * kMs);
            const std::int64_t t2 = t + 2 * kMs + gap;
            byBatch[t2 / (250 * kMs)].push_back(request(conn, s2, t2, id, 1));
            byBatch[(t2 + 3 * kMs) / (250 * kMs)].push_back(response(conn, s2, t2 + 3 * kMs, 0));
        }
        int evictions = 0, steps = 0;
        size_t mostViolations = 0;
        for (auto &[slot, batch] : byBatch) {
            std::sort(batch.begin(), batch.end(),
                      [](const WireEvent &a, const WireEvent &b) { return a.tNs < b.tNs; });
            store.apply(batch);
            std::vector<std::uint32_t> learned;
            if (++steps == 12) {
                agents.record(agent(6));
                learned.push_back(6);
            }
            // A pinned call outlives the evictions around it: the serials the live check holds then skip.
            if (steps == 2 && store.calls().size() > 1) store.setPinned(1, true);
            if (steps % 9 == 0) {
                RetentionPolicy keep;
                keep.maxCalls = 20;
                evictions += int(store.enforce(keep).size());
            }
            GapEnvelopes fullRanges;
            live.update(store, agents, learned);
            const GapEnvelopes &liveRanges = *live.envelopes();
            const PolicyCheck full = PolicyCheck::run(store, *config, agents, &fullRanges);
            QCOMPARE(live.check().text(), full.text());
            QCOMPARE(live.check().findings().size(), full.findings().size());
            for (size_t f = 0; f < full.findings().size(); ++f)
                QCOMPARE(live.check().findings()[f].callIndex, full.findings()[f].callIndex);
            // Each finding found by its call's serial (as the findings list asks), and no other call's.
            size_t listed = 0;
            for (const Call &call : store.calls())
                if (const std::optional<PolicyCheck::Finding> one = live.finding(call.serial)) {
                    QVERIFY(listed < full.findings().size());
                    QCOMPARE(one->serial, full.findings()[listed].serial);
                    QCOMPARE(one->callIndex, full.findings()[listed].callIndex);
                    QCOMPARE(one->call, full.findings()[listed].call);
                    ++listed;
                }
            QCOMPARE(listed, full.findings().size());
            for (size_t i = 0; i < store.calls().size(); ++i)
                for (size_t k = 0; k <= store.calls()[i].attempts.size(); ++k)
                    QCOMPARE(liveRanges.given(store.calls()[i], k), fullRanges.given(store.calls()[i], k));
            QCOMPARE(liveRanges.reachNs(), fullRanges.reachNs());
            mostViolations = std::max(mostViolations, size_t(full.violations()));
        }
        QVERIFY(evictions > 0);
        QVERIFY(mostViolations > 0);
        QVERIFY(store.calls().front().pinned);
        QVERIFY(store.calls().back().serial - store.calls().front().serial + 1 > store.calls().size());
        // Nothing new: only calls waiting on time are judged again.
        live.update(store, agents);
        QVERIFY2(
            live.lastJudged() < store.calls().size() / 2,
            qPrintable(
                QStringLiteral("%1 of %2 judged again").arg(live.lastJudged()).arg(store.calls().size())));
        QCOMPARE(live.check().text(), PolicyCheck::run(store, *config, agents).text());
    }
};

QTEST_GUILESS_MAIN(TestRetryPolicy)
#include "tst_retrypolicy.moc"
