// Debugging your own services, not the lab: a grpc++ client places orders with a front (Checkout) that
// reserves stock in a backend (Inventory) while serving each one. The main window captures both legs as two
// hops of one session; a W3C traceparent goes from the client through the front to the backend, so every
// backend call nests under the front call it served. The backend fails some calls, the client retries them
// (a retryPolicy in its service config), and the front's own circuit breaker opens, fails calls fast, and
// closes again after a half-open trial, reporting each transition to the session's ingestion endpoint.
//
// With RPCSCOPE_SHOT_DIR set, the window is saved there as own-service-two-hops.png (docs/ holds a copy).

#include "attemptinspector.h"
#include "capturesession.h"
#include "ingest.grpc.pb.h"
#include "mainwindow.h"
#include "shop.grpc.pb.h"
#include "swimlaneview.h"
#include "timelinemodel.h"
#include "timelinepainter.h"

#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QSettings>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <grpcpp/grpcpp.h>
#include <mutex>
#include <thread>

using namespace rpcscope;
using namespace std::chrono_literals;

namespace {

constexpr int kUnavailable = int(grpc::StatusCode::UNAVAILABLE);

std::string hex(std::uint64_t v, int digits)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
    return buf;
}

// Order n's trace, as the client's tracer would start it: one trace id per order, the client's span.
std::string traceIdOf(int order)
{
    return "4bf92f3577b34da6a3ce929d0e0e47" + hex(std::uint64_t(order), 2);
}
std::string clientTraceparent(int order)
{
    return "00-" + traceIdOf(order) + "-00f067aa0ba902" + hex(std::uint64_t(order), 2) + "-01";
}

std::string metadataValue(const grpc::ServerContext *ctx, const std::string &name)
{
    const auto it = ctx->client_metadata().find(name);
    return it == ctx->client_metadata().end() ? std::string()
                                              : std::string(it->second.data(), it->second.size());
}

// The front's resilience library reporting to the capture session: one long ReportEvents stream.
class EventReporter
{
public:
    explicit EventReporter(const std::string &address)
        : m_stub(ingest::Ingest::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())))
    {
        m_ctx.set_deadline(std::chrono::system_clock::now() + 120s);
        m_stream = m_stub->ReportEvents(&m_ctx, &m_reply);
    }
    ~EventReporter()
    {
        if (m_finished) return;
        m_ctx.TryCancel(); // a check failed before finish(): end the stream without waiting for it
        m_stream->Finish();
    }

    void report(const std::string &kind, const std::string &detail, const std::string &label,
                const std::string &traceparent)
    {
        ingest::Event e;
        e.set_time_unix_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
        e.set_kind(kind);
        e.set_detail(detail);
        e.set_label(label);
        e.set_traceparent(traceparent);
        e.set_source("front");
        std::lock_guard lk(m_mu);
        m_written += m_stream->Write(e);
    }

    grpc::Status finish(std::int64_t *accepted, int *written)
    {
        std::lock_guard lk(m_mu);
        m_stream->WritesDone();
        const grpc::Status s = m_stream->Finish();
        m_finished = true;
        *accepted = m_reply.accepted();
        *written = m_written;
        return s;
    }

private:
    std::unique_ptr<ingest::Ingest::Stub> m_stub;
    grpc::ClientContext m_ctx;
    ingest::ReportReply m_reply;
    std::unique_ptr<grpc::ClientWriter<ingest::Event>> m_stream;
    std::mutex m_mu;
    int m_written = 0;
    bool m_finished = false;
};

// The front's own circuit breaker, as a service would write one: opens after `threshold` failures in a row,
// fails calls fast while open, lets one trial call through once `cooldown` has passed (half-open), closes
// when that trial succeeds and opens again when it fails. Every transition is reported with the traceparent
// of the call it happened on.
class Breaker
{
public:
    enum class State
    {
        Closed,
        Open,
        HalfOpen
    };
    using Report = std::function<void(const std::string &transition, const std::string &traceparent)>;

    Breaker(int threshold, std::chrono::milliseconds cooldown, Report report)
        : m_threshold(threshold), m_cooldown(cooldown), m_report(std::move(report))
    {
    }

    // False: fail this call fast.
    bool admit(const std::string &traceparent)
    {
        std::lock_guard lk(m_mu);
        if (m_state == State::Closed) return true;
        if (m_state == State::Open && std::chrono::steady_clock::now() - m_openedAt >= m_cooldown) {
            m_state = State::HalfOpen;
            m_report("open -> half-open", traceparent);
            return true; // the one trial
        }
        return false;
    }

    void record(bool ok, const std::string &traceparent)
    {
        std::lock_guard lk(m_mu);
        if (m_state == State::HalfOpen) {
            m_state = ok ? State::Closed : State::Open;
            m_failures = 0;
            m_openedAt = std::chrono::steady_clock::now();
            m_report(ok ? "half-open -> closed" : "half-open -> open", traceparent);
        } else if (ok) {
            m_failures = 0;
        } else if (++m_failures >= m_threshold && m_state == State::Closed) {
            m_state = State::Open;
            m_openedAt = std::chrono::steady_clock::now();
            m_report("closed -> open", traceparent);
        }
    }

    State state() const
    {
        std::lock_guard lk(m_mu);
        return m_state;
    }
    bool cooldownOver() const
    {
        std::lock_guard lk(m_mu);
        return m_state == State::Open && std::chrono::steady_clock::now() - m_openedAt >= m_cooldown;
    }

private:
    const int m_threshold;
    const std::chrono::milliseconds m_cooldown;
    const Report m_report;
    mutable std::mutex m_mu;
    State m_state = State::Closed;
    int m_failures = 0;
    std::chrono::steady_clock::time_point m_openedAt;
};

// The backend: reserves stock, except that the next `failNext` calls fail with UNAVAILABLE. Each call takes
// its database round trip, so that its bar on the timeline has a length and sits visibly inside its caller's;
// nothing in the test waits on it.
class InventoryService final : public shop::Inventory::Service
{
public:
    static constexpr auto kDatabaseRoundTrip = 12ms;
    std::atomic<int> failNext{0};
    std::atomic<int> calls{0};

    grpc::Status Reserve(grpc::ServerContext *ctx, const shop::Reservation *in, shop::Reserved *out) override
    {
        ++calls;
        {
            std::lock_guard lk(m_mu);
            m_traceparents.push_back(metadataValue(ctx, "traceparent"));
        }
        int n = failNext.load();
        while (n > 0 && !failNext.compare_exchange_weak(n, n - 1)) {
        }
        std::this_thread::sleep_for(kDatabaseRoundTrip);
        if (n > 0) return {grpc::StatusCode::UNAVAILABLE, "inventory db failing over"};
        out->set_sku(in->sku());
        out->set_left(41);
        return grpc::Status::OK;
    }

    std::vector<std::string> traceparents()
    {
        std::lock_guard lk(m_mu);
        return m_traceparents;
    }

private:
    std::mutex m_mu;
    std::vector<std::string> m_traceparents;
};

// The front: serves an order by reserving its stock in the inventory, guarded by its breaker, the caller's
// deadline and trace passed on.
class CheckoutService final : public shop::Checkout::Service
{
public:
    void wire(Breaker *breaker, EventReporter *reporter, const std::string &inventoryAddress)
    {
        m_breaker = breaker;
        m_reporter = reporter;
        m_inventory = shop::Inventory::NewStub(
            grpc::CreateChannel(inventoryAddress, grpc::InsecureChannelCredentials()));
    }

    grpc::Status PlaceOrder(grpc::ServerContext *ctx, const shop::Order *order,
                            shop::Receipt *receipt) override
    {
        const std::string incoming = metadataValue(ctx, "traceparent");
        if (!m_breaker->admit(incoming)) {
            m_reporter->report("custom", "failed fast", "breaker open", incoming);
            return {grpc::StatusCode::UNAVAILABLE, "circuit breaker open: inventory not called"};
        }
        grpc::ClientContext out;
        out.set_deadline(ctx->deadline());
        // A child span of the caller's: same trace id, the front's own span id.
        if (incoming.size() == 55)
            out.AddMetadata("traceparent",
                            incoming.substr(0, 36) + "f0" + hex(std::uint64_t(++m_spans), 14) + "-01");
        shop::Reservation reservation;
        reservation.set_sku(order->sku());
        reservation.set_quantity(order->quantity());
        shop::Reserved reserved;
        const grpc::Status s = m_inventory->Reserve(&out, reservation, &reserved);
        m_breaker->record(s.ok(), incoming);
        if (!s.ok()) return {grpc::StatusCode::UNAVAILABLE, "inventory: " + s.error_message()};
        receipt->set_order_id(order->order_id());
        receipt->set_status("reserved");
        return grpc::Status::OK;
    }

private:
    Breaker *m_breaker = nullptr;
    EventReporter *m_reporter = nullptr;
    std::unique_ptr<shop::Inventory::Stub> m_inventory;
    std::atomic<std::uint64_t> m_spans{0};
};

std::unique_ptr<grpc::Server> serve(grpc::Service *service, int *port)
{
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
    builder.RegisterService(service);
    return builder.BuildAndStart();
}

// What the client's operators configured: three attempts, UNAVAILABLE retried with exponential backoff.
const char kServiceConfig[] =
    "{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Checkout\"}],"
    " \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"0.05s\", \"maxBackoff\": \"0.5s\","
    " \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}";

std::vector<size_t> callsOnHop(const TimelineStore &store, const std::string &hop)
{
    std::vector<size_t> out;
    for (size_t i = 0; i < store.calls().size(); ++i)
        if (store.calls()[i].hop == hop) out.push_back(i);
    return out;
}

bool allEnded(const TimelineStore &store)
{
    for (const Call &c : store.calls())
        if (!c.endNs()) return false;
    return true;
}

// The longest run of `color` pixels on row y, as [first, last] x.
std::pair<int, int> longestRun(const QImage &image, int y, QColor color)
{
    std::pair<int, int> best{-1, -2}, run{-1, -2};
    for (int x = 0; x < image.width(); ++x) {
        if (image.pixelColor(x, y) != color) {
            run = {-1, -2};
            continue;
        }
        if (run.first < 0) run.first = x;
        run.second = x;
        if (run.second - run.first > best.second - best.first) best = run;
    }
    return best;
}

} // namespace

class TestOwnService : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_ownservice"));
        QSettings().clear();
    }

    void twoHopsWithOwnBreaker()
    {
        InventoryService inventory;
        CheckoutService checkout;
        int backendPort = 0, frontPort = 0;
        const auto backend = serve(&inventory, &backendPort);
        const auto front = serve(&checkout, &frontPort);
        QVERIFY(backend && front);

        // The window as `rpcscope --no-lab --capture client->front@... --capture front->backend@...` opens
        // it.
        TimelineModel model;
        model.setKeepHeaders(true);
        MainWindow window(&model, nullptr, QString());
        window.setPromptOnClose(false);
        QString error;
        QVERIFY2(window.startCapture({{QStringLiteral("client->front"), QStringLiteral("127.0.0.1:0"),
                                       QStringLiteral("127.0.0.1:%1").arg(frontPort)},
                                      {QStringLiteral("front->backend"), QStringLiteral("127.0.0.1:0"),
                                       QStringLiteral("127.0.0.1:%1").arg(backendPort)}},
                                     &error),
                 qPrintable(error));
        CaptureSession *session = window.captureSession();
        QCOMPARE(session->hops().size(), size_t(2));

        EventReporter reporter(session->ingestGrpcAddress().toStdString());
        Breaker breaker(3, 500ms, [&reporter](const std::string &transition, const std::string &traceparent) {
            reporter.report("breaker", transition, {}, traceparent);
        });
        checkout.wire(&breaker, &reporter, session->hops()[1].listen.toStdString());

        grpc::ChannelArguments args;
        args.SetServiceConfigJSON(kServiceConfig);
        auto stub = shop::Checkout::NewStub(grpc::CreateCustomChannel(
            session->hops()[0].listen.toStdString(), grpc::InsecureChannelCredentials(), args));
        auto placeOrder = [&](int n) {
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + 3s);
            ctx.AddMetadata("traceparent", clientTraceparent(n));
            shop::Order order;
            order.set_order_id("order-" + std::to_string(n));
            order.set_sku("sku-42");
            order.set_quantity(1);
            shop::Receipt receipt;
            return stub->PlaceOrder(&ctx, order, &receipt);
        };

        // 1: all well. 2: one transient backend failure, retried. 3: the backend keeps failing, the client's
        // attempts run out and the third failure in a row opens the breaker. 4: the breaker fails every
        // attempt fast, the backend is not called. 5: after the cooldown, a half-open trial succeeds and
        // closes it.
        QVERIFY(placeOrder(1).ok());
        inventory.failNext = 1;
        QVERIFY(placeOrder(2).ok());
        inventory.failNext = 3;
        const grpc::Status third = placeOrder(3);
        QCOMPARE(int(third.error_code()), kUnavailable);
        QCOMPARE(breaker.state(), Breaker::State::Open);
        const grpc::Status fourth = placeOrder(4);
        QCOMPARE(int(fourth.error_code()), kUnavailable);
        QVERIFY2(fourth.error_message().find("circuit breaker open") != std::string::npos,
                 fourth.error_message().c_str());
        QCOMPARE(inventory.calls.load(), 6);
        QTRY_VERIFY_WITH_TIMEOUT(breaker.cooldownOver(), 5000);
        QVERIFY(placeOrder(5).ok());
        QCOMPARE(breaker.state(), Breaker::State::Closed);
        QCOMPARE(inventory.calls.load(), 7);
        std::int64_t accepted = 0;
        int written = 0;
        const grpc::Status reported = reporter.finish(&accepted, &written);
        QVERIFY2(reported.ok(), reported.error_message().c_str());
        QCOMPARE(written, 6); // three transitions, three fast failures
        QCOMPARE(accepted, std::int64_t(6));

        // The backend saw the trace carried on, under the front's own span ids.
        for (const std::string &tp : inventory.traceparents()) {
            QCOMPARE(tp.size(), size_t(55));
            QCOMPARE(tp.substr(36, 2), std::string("f0"));
        }

        const TimelineStore &store = model.store();
        QTRY_VERIFY_WITH_TIMEOUT(callsOnHop(store, "client->front").size() == 5 &&
                                     callsOnHop(store, "front->backend").size() == 7 && allEnded(store) &&
                                     store.labEvents().size() == 6,
                                 10000);

        // Each order is one call on the client->front hop (its retries grouped with it), and every backend
        // call nests under the order it served, inside the attempt that made it.
        const std::vector<size_t> orders = callsOnHop(store, "client->front");
        const std::vector<std::vector<int>> expectedAttempts = {{0},
                                                                {kUnavailable, 0},
                                                                {kUnavailable, kUnavailable, kUnavailable},
                                                                {kUnavailable, kUnavailable, kUnavailable},
                                                                {0}};
        const std::vector<std::vector<int>> expectedBackend = {
            {0}, {kUnavailable, 0}, {kUnavailable, kUnavailable, kUnavailable}, {}, {0}};
        for (size_t n = 0; n < orders.size(); ++n) {
            const Call &call = store.calls()[orders[n]];
            const QByteArray which = QByteArray("order ") + QByteArray::number(qsizetype(n + 1));
            QVERIFY2(call.traceId == traceIdOf(int(n + 1)), which);
            QVERIFY2(!call.parentCall, which);
            QCOMPARE(call.method, std::string("/shop.Checkout/PlaceOrder"));
            QCOMPARE(call.attempts.size(), expectedAttempts[n].size());
            for (size_t k = 0; k < call.attempts.size(); ++k) {
                QCOMPARE(call.attempts[k].status.value_or(-1), expectedAttempts[n][k]);
                QCOMPARE(call.attempts[k].previousAttempts.value_or(-1), int(k));
            }
            std::vector<size_t> nested;
            for (size_t b : callsOnHop(store, "front->backend"))
                if (store.calls()[b].parentCall == orders[n]) nested.push_back(b);
            QVERIFY2(nested.size() == expectedBackend[n].size(), which);
            for (size_t k = 0; k < nested.size(); ++k) {
                const Call &b = store.calls()[nested[k]];
                QCOMPARE(b.method, std::string("/shop.Inventory/Reserve"));
                QCOMPARE(b.traceId, call.traceId);
                QVERIFY2(b.spanId != call.spanId, "the front passes on its own span");
                QCOMPARE(store.nestingDepth(nested[k]), 1);
                QCOMPARE(b.attempts.size(), size_t(1));
                QCOMPARE(b.attempts[0].status.value_or(-1), expectedBackend[n][k]);
                // The caller's deadline went along: the backend had what the order had left.
                QVERIFY2(b.parentBudgetNs && b.budgetNs(), which);
                QVERIFY2(!b.deadlineReset && !b.deadlineDropped, which);
                const Attempt &by = call.attempts[k]; // each admitted attempt made one backend call
                QVERIFY2(b.startNs() >= by.startNs && *b.endNs() <= *by.endNs, which);
            }
        }
        const Call &fastFailed = store.calls()[orders[3]];
        for (const Attempt &a : fastFailed.attempts)
            QCOMPARE(QString::fromStdString(a.statusMessage.value_or("")),
                     QStringLiteral("circuit breaker open: inventory not called"));

        // The breaker's reports are on the model, each tied to the order it happened on, at its time.
        std::vector<const LabEventRecord *> transitions, fastFails;
        for (const LabEventRecord &e : store.labEvents())
            (e.kind == "breaker" ? transitions : fastFails).push_back(&e);
        QCOMPARE(transitions.size(), size_t(3));
        QCOMPARE(transitions[0]->detail, std::string("closed -> open [front]"));
        QCOMPARE(transitions[1]->detail, std::string("open -> half-open [front]"));
        QCOMPARE(transitions[2]->detail, std::string("half-open -> closed [front]"));
        const Call &opened = store.calls()[orders[2]], &trial = store.calls()[orders[4]];
        QCOMPARE(transitions[0]->callId, opened.key);
        QCOMPARE(transitions[1]->callId, trial.key);
        QCOMPARE(transitions[2]->callId, trial.key);
        // Reported on the wall clock, placed on the capture's: within the attempt it happened in (1 ms slack
        // for the two clocks being read apart).
        constexpr std::int64_t kSlack = 1'000'000;
        QVERIFY(transitions[0]->tNs >= opened.attempts[2].startNs - kSlack &&
                transitions[0]->tNs <= *opened.attempts[2].endNs + kSlack);
        QVERIFY(transitions[1]->tNs >= trial.startNs() - kSlack &&
                transitions[2]->tNs <= *trial.endNs() + kSlack);
        QCOMPARE(fastFails.size(), size_t(3));
        for (size_t k = 0; k < fastFails.size(); ++k) {
            QCOMPARE(fastFails[k]->kind, std::string("custom"));
            QCOMPARE(fastFails[k]->detail, std::string("breaker open: failed fast [front]"));
            QCOMPARE(fastFails[k]->callId, fastFailed.key);
            QVERIFY(fastFails[k]->tNs >= fastFailed.attempts[k].startNs - kSlack &&
                    fastFails[k]->tNs <= *fastFailed.attempts[k].endNs + kSlack);
        }

        // On screen: chains nested, the breaker band over the lanes, open from the transition that opened it
        // to the half-open trial.
        auto *grouping = window.findChild<QComboBox *>(QStringLiteral("grouping"));
        QVERIFY(grouping);
        grouping->setCurrentIndex(grouping->findData(int(LaneGrouping::Chain)));
        if (auto *scenario = window.findChild<QDockWidget *>(QStringLiteral("scenario")))
            scenario->hide(); // the lab's panel: nothing to do with this session
        window.resize(1600, 1400);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto *calls = window.findChild<QDockWidget *>(QStringLiteral("calls"));
        auto *capture = window.findChild<QDockWidget *>(QStringLiteral("capture"));
        QVERIFY(calls && capture);
        window.resizeDocks({calls}, {250}, Qt::Vertical);
        window.resizeDocks({capture}, {300}, Qt::Horizontal);
        SwimlaneView *view = window.swimlanes();
        view->fitAll();
        view->selectAttempt(int(orders[3]), 0); // the inspector shows a fast-failed attempt
        QVERIFY(window.inspector()->isVisible());
        // The status bar's line catches up within its one-second refresh.
        auto *status = window.findChild<QLabel *>(QStringLiteral("sessionStatus"));
        QVERIFY(status);
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("12 calls")), 5000);

        const QByteArray dir = qgetenv("RPCSCOPE_SHOT_DIR");
        if (!dir.isEmpty()) {
            const QString path =
                QDir(QString::fromLocal8Bit(dir)).filePath(QStringLiteral("own-service-two-hops.png"));
            QVERIFY2(window.grab().save(path), qPrintable(path));
        }
        const QImage lanes = view->grab().toImage();
        TimelinePainter &painter = view->timelinePainter();
        const TimeAxis ax = painter.axis(view->canvas());
        const int bandTop = painter.metrics().rulerHeight + 1;
        const int y = bandTop + 4; // inside the state's fill, above its label
        const auto open = longestRun(lanes, y, painter.theme().breakerOpen);
        QVERIFY2(open.first >= 0, "the breaker band shows an open state");
        // Each transition's mark (3 px, drawn over the boundary in the band's top strip) covers the state's
        // edge by a pixel or two.
        QVERIFY2(std::abs(open.first - ax.timeToX(transitions[0]->tNs)) <= 4 &&
                     std::abs(open.second - ax.timeToX(transitions[1]->tNs)) <= 4,
                 qPrintable(QStringLiteral("open drawn over x %1..%2, expected %3..%4")
                                .arg(open.first)
                                .arg(open.second)
                                .arg(ax.timeToX(transitions[0]->tNs))
                                .arg(ax.timeToX(transitions[1]->tNs))));
        QVERIFY2(longestRun(lanes, y, painter.theme().breakerClosed).first >= 0, "closed before and after");

        session->stop();
    }
};

QTEST_MAIN(TestOwnService)
#include "tst_ownservice.moc"
