// The OTLP metrics export end to end: real lab runs through rpcscope-cli (run, then convert --to
// otlp-metrics; run --out straight from the session) count their retries and transparent retries under
// gRPC's metric names, and a retry storm's metrics add up to its JSON export; bad and empty inputs get a
// clear message; the main window's Save writes the same document, and both Save dialogs offer it.

#include "captureio.h"
#include "mainwindow.h"
#include "otlpmetrics.h"
#include "runtool.h"
#include "timelinemodel.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;
using testtool::cli;
using testtool::Result;

namespace {
QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeAll(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

QJsonArray metricsOf(const QString &path)
{
    return QJsonDocument::fromJson(readAll(path))
        .object()["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        .toArray();
}

// The data points of metric `name`, by their grpc.status ("" for metrics without one).
std::map<QString, QJsonObject> points(const QJsonArray &metrics, const QString &name)
{
    std::map<QString, QJsonObject> out;
    for (const QJsonValue m : metrics) {
        if (m["name"].toString() != name) continue;
        const QJsonValue data = m.toObject().contains("sum") ? m["sum"] : m["histogram"];
        for (const QJsonValue p : data["dataPoints"].toArray()) {
            QString status;
            for (const QJsonValue a : p["attributes"].toArray())
                if (a["key"] == "grpc.status") status = a["value"]["stringValue"].toString();
            out[status] = p.toObject();
        }
    }
    return out;
}

qint64 num(const QJsonValue &v)
{
    return v.toString().toLongLong();
}

// retry-basic: two UNAVAILABLE attempts, then OK, after backoffs of 50 ms and 80 to 120 ms.
void checkRetryBasic(const QString &path)
{
    const QJsonArray metrics = metricsOf(path);
    QVERIFY2(!metrics.isEmpty(), qPrintable(path));
    QCOMPARE(num(points(metrics, "grpc.client.attempt.started").at("")["asInt"]), 3);
    const auto attempts = points(metrics, "grpc.client.attempt.duration");
    QCOMPARE(attempts.size(), size_t(2));
    QCOMPARE(num(attempts.at("UNAVAILABLE")["count"]), 2);
    QCOMPARE(num(attempts.at("OK")["count"]), 1);
    QCOMPARE(num(points(metrics, "grpc.client.call.duration").at("OK")["count"]), 1);
    const QJsonObject retries = points(metrics, "grpc.client.call.retries").at("");
    QCOMPARE(num(retries["count"]), 1);
    QCOMPARE(retries["sum"].toDouble(), 2.0);
    QCOMPARE(num(retries["bucketCounts"][1]), 1); // A96's (1, 2]
    QVERIFY(points(metrics, "grpc.client.call.transparent_retries").empty());
    const double delay = points(metrics, "grpc.client.call.retry_delay").at("")["sum"].toDouble();
    const double call = points(metrics, "grpc.client.call.duration").at("OK")["sum"].toDouble();
    // The wire's gaps, within tst_retrybasic's bounds: 45-58 ms, then 78-126 ms.
    QVERIFY2(delay >= 0.045 + 0.078 && delay <= 0.058 + 0.126 && delay < call,
             qPrintable(QString::number(delay)));
    // The request messages the lab sends are not empty; the failed attempts received no message.
    QVERIFY(
        points(metrics, "grpc.client.attempt.sent_total_compressed_message_size").at("OK")["sum"].toDouble() >
        0);
    QCOMPARE(points(metrics, "grpc.client.attempt.rcvd_total_compressed_message_size")
                 .at("UNAVAILABLE")["sum"]
                 .toDouble(),
             0.0);
}
} // namespace

class TestOtlpMetricsExport : public QObject
{
    Q_OBJECT

private slots:
    void cliConvertAndRun()
    {
        QTemporaryDir dir;
        const QString capture = dir.filePath("rb.rpcscope");
        Result r = cli({"run", "retry-basic", "--out", capture});
        QVERIFY2(r.code == 0, qPrintable(r.err));

        const QString byName = dir.filePath("rb.metrics.otlp.json");
        r = cli({"convert", capture, byName});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("(otlp-metrics)"), qPrintable(r.out));
        checkRetryBasic(byName);

        const QString forced = dir.filePath("forced.out");
        r = cli({"convert", capture, forced, "--to", "otlp-metrics"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(readAll(forced), readAll(byName));

        // Straight from a live session, under the other name.
        const QString live = dir.filePath("live.otlp-metrics.json");
        r = cli({"run", "retry-basic", "--out", live});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        checkRetryBasic(live);
    }

    void transparentRetryCounted()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("tr.metrics.otlp.json");
        const Result r = cli({"run", "transparent-retry", "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray metrics = metricsOf(out);
        const QJsonObject transparent = points(metrics, "grpc.client.call.transparent_retries").at("");
        QCOMPARE(num(transparent["count"]), 1);
        QCOMPARE(transparent["sum"].toDouble(), 1.0);
        // The refused stream was no failure the client saw: the call is OK.
        QCOMPARE(num(points(metrics, "grpc.client.call.duration").at("OK")["count"]), 1);
    }

    void retryStormAgreesWithTheJson()
    {
        // One run written both ways: the metrics add up to what the JSON export lists call by call.
        QTemporaryDir dir;
        const QString json = dir.filePath("storm.json"),
                      metricsFile = dir.filePath("storm.metrics.otlp.json");
        const Result r = cli({"run", "retry-storm", "--json", json, "--out", metricsFile});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray calls = QJsonDocument::fromJson(readAll(json)).object()["calls"].toArray();
        QVERIFY(calls.size() >= 10);
        qint64 attempts = 0, retried = 0, retriedCalls = 0;
        double gaps = 0;
        std::map<QString, qint64> outcomes;
        for (const QJsonValue c : calls) {
            const qint64 n = c["attempts"].toArray().size();
            attempts += n;
            retried += n - 1;
            retriedCalls += n > 1;
            for (const QJsonValue g : c["gaps_ns"].toArray())
                gaps += g.toDouble() / 1e9;
            ++outcomes[c["client_outcome"]["name"].toString()];
        }
        QVERIFY2(retried > 0, "retry-storm retries");

        const QJsonArray metrics = metricsOf(metricsFile);
        QCOMPARE(num(points(metrics, "grpc.client.attempt.started").at("")["asInt"]), attempts);
        qint64 ended = 0;
        for (const auto &[status, point] : points(metrics, "grpc.client.attempt.duration"))
            ended += num(point["count"]);
        QCOMPARE(ended, attempts);
        std::map<QString, qint64> callStatuses;
        for (const auto &[status, point] : points(metrics, "grpc.client.call.duration"))
            callStatuses[status] = num(point["count"]);
        QCOMPARE(callStatuses, outcomes);
        const QJsonObject retries = points(metrics, "grpc.client.call.retries").at("");
        QCOMPARE(num(retries["count"]), retriedCalls);
        QCOMPARE(qint64(retries["sum"].toDouble()), retried);
        const QJsonObject delay = points(metrics, "grpc.client.call.retry_delay").at("");
        QCOMPARE(num(delay["count"]), qint64(calls.size()));
        QVERIFY2(qAbs(delay["sum"].toDouble() - gaps) < 1e-6, qPrintable(QString::number(gaps)));
    }

    void badAndEmptyInputs()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out.metrics.otlp.json");
        writeAll(dir.filePath("empty.rpcscope"), {});
        writeAll(dir.filePath("doc.json"), "{\"resourceMetrics\":[]}");
        struct Case
        {
            QStringList args;
            int code;
            QString message;
        };
        const std::vector<Case> cases{
            {{"convert", dir.filePath("empty.rpcscope"), out}, 1, "is empty"},
            {{"convert", dir.filePath("missing.rpcscope"), out}, 1, "cannot open"},
            {{"convert", dir.filePath("doc.json"), out},
             1,
             "is not an rpcscope capture file (it looks like JSON)"},
            {{"convert", dir.filePath("doc.json"), out, "--to", "otlp-metric"},
             2,
             "unknown format 'otlp-metric' (known: rpcscope, json, chrome, otlp, pcapng, otlp-metrics)"},
        };
        for (const Case &c : cases) {
            const Result r = cli(c.args);
            QVERIFY2(r.code == c.code,
                     qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
            QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + ": " + r.err));
            QVERIFY(!QFile::exists(out));
        }

        // A capture without a call: a valid document without data points, and a note that says why.
        const QString noCalls = dir.filePath("nocalls.rpcscope");
        CaptureData data;
        data.info.hasOrigin = true;
        data.info.originWallNs = 1'700'000'000'000'000'000;
        std::string error;
        QVERIFY2(exportCapture(data, FileFormat::Rpcscope, noCalls, {}, &error), error.c_str());
        const Result r = cli({"convert", noCalls, out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("holds no gRPC call") && r.err.contains("has no data points"),
                 qPrintable(r.err));
        QVERIFY(QJsonDocument::fromJson(readAll(out)).object()["resourceMetrics"].isArray());
        QCOMPARE(metricsOf(out).size(), 0);
    }

    void windowSavesMetrics()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("rpcscope-test"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_otlpmetricsexport"));
        QSettings().clear();
        QTemporaryDir dir;
        const QString capture = dir.filePath("rb.rpcscope");
        const Result r = cli({"run", "retry-basic", "--out", capture});
        QVERIFY2(r.code == 0, qPrintable(r.err));

        TimelineModel model;
        MainWindow window(&model, nullptr, QStringLiteral("retry-basic"));
        window.setPromptOnClose(false);
        QString error;
        QVERIFY2(window.openFile(capture, &error, true), qPrintable(error));
        const QString saved = dir.filePath("saved.metrics.otlp.json");
        QVERIFY2(window.saveFile(saved, &error), qPrintable(error));
        checkRetryBasic(saved);
        QCOMPARE(QJsonDocument::fromJson(readAll(saved)),
                 QJsonDocument::fromJson(timelineToOtlpMetricsBytes(model.store())));
        // The Save dialogs' filter names the format by the extension that selects it.
        QVERIFY(saveFileFilters().contains(QStringLiteral("OTLP metrics JSON (*.metrics.otlp.json)")));
        QCOMPARE(formatFromPath(QStringLiteral("x.metrics.otlp.json")), FileFormat::OtlpMetrics);
        QCOMPARE(formatFromPath(QStringLiteral("x.otlp.json")), FileFormat::Otlp);
        // A name without an extension takes the chosen filter's; one with its own keeps it.
        const QString metricsFilter = QStringLiteral("OTLP metrics JSON (*.metrics.otlp.json)");
        QCOMPARE(withFilterExtension(QStringLiteral("run1"), metricsFilter),
                 QStringLiteral("run1.metrics.otlp.json"));
        QCOMPARE(withFilterExtension(QStringLiteral("run1."), metricsFilter),
                 QStringLiteral("run1.metrics.otlp.json"));
        QCOMPARE(withFilterExtension(QStringLiteral("run1.json"), metricsFilter),
                 QStringLiteral("run1.json"));
        QCOMPARE(
            withFilterExtension(QStringLiteral("run1"), QStringLiteral("pcapng for Wireshark (*.pcapng)")),
            QStringLiteral("run1.pcapng"));
        QCOMPARE(withFilterExtension(QStringLiteral("run1"), QString()), QStringLiteral("run1"));
        QCOMPARE(withFilterExtension(QString(), metricsFilter), QString());
        for (const QString &filter : saveFileFilters().split(QStringLiteral(";;")))
            QVERIFY2(formatFromPath(withFilterExtension(QStringLiteral("x"), filter)) != FileFormat::Unknown,
                     qPrintable(filter));
    }
};

QTEST_MAIN(TestOtlpMetricsExport)
#include "tst_otlpmetricsexport.moc"
