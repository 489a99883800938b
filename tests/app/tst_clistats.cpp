// rpcscope-cli stats and compare (issue 20) on real lab runs: retry-storm against retry-throttling, saved as
// capture files by `run --out` and compared, and `compare --lab` running both itself. Bad and empty files
// give one clear line and exit 2.

#include "capturewriter.h"
#include "runtool.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;
using testtool::cli;

namespace {

QJsonObject parse(const QString &text)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
    if (error.error != QJsonParseError::NoError) qWarning("not JSON: %s", qPrintable(error.errorString()));
    return doc.object();
}

QJsonObject row(const QJsonObject &doc, const QString &kind, const QString &key = {})
{
    for (const QJsonValue &r : doc.value(QStringLiteral("rows")).toArray()) {
        const QJsonObject o = r.toObject();
        if (o.value(QStringLiteral("kind")).toString() == kind &&
            o.value(QStringLiteral("key")).toString() == key)
            return o;
    }
    return {};
}

QJsonObject measure(const QJsonObject &doc, const char *key)
{
    return row(doc, QStringLiteral("total"))
        .value(QStringLiteral("values"))
        .toObject()
        .value(QLatin1String(key))
        .toObject();
}

} // namespace

class TestCliStats : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_storm, m_throttling;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_storm = m_dir.filePath(QStringLiteral("storm.rpcscope"));
        m_throttling = m_dir.filePath(QStringLiteral("throttling.rpcscope"));
        for (const auto &[scenario, out] : {std::pair{QStringLiteral("retry-storm"), m_storm},
                                            std::pair{QStringLiteral("retry-throttling"), m_throttling}}) {
            const testtool::Result r = cli({QStringLiteral("run"), scenario, QStringLiteral("--out"), out});
            QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        }
    }

    void compareTwoLabRunsAsJson()
    {
        const testtool::Result r =
            cli({QStringLiteral("compare"), m_storm, m_throttling, QStringLiteral("--json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject doc = parse(r.out);
        QCOMPARE(doc.value("a").toObject().value("label").toString(), QStringLiteral("storm.rpcscope"));
        QCOMPARE(doc.value("b").toObject().value("label").toString(), QStringLiteral("throttling.rpcscope"));
        // 20 clients each: every storm call makes 4 attempts, throttling stops most retries.
        const QJsonObject calls = measure(doc, "calls");
        QCOMPARE(calls.value("a").toInt(), 20);
        QCOMPARE(calls.value("b").toInt(), 20);
        QCOMPARE(calls.value("ratio").toDouble(), 1.0);
        const QJsonObject amp = measure(doc, "amplification");
        const double a = amp.value("a").toDouble(), b = amp.value("b").toDouble();
        QVERIFY2(a > b, qPrintable(QStringLiteral("amplification %1 against %2").arg(a).arg(b)));
        QCOMPARE(a, 4.0);
        QVERIFY2(b < 2.0, qPrintable(QString::number(b)));
        QCOMPARE(amp.value("difference").toDouble(), b - a);
        QCOMPARE(amp.value("ratio").toDouble(), b / a);
        const QJsonObject attempts = measure(doc, "attempts");
        QCOMPARE(attempts.value("a").toInt(), 80);
        QCOMPARE(attempts.value("difference").toInt(), attempts.value("b").toInt() - 80);
        // Every storm call failed after its retries; none was OK first try in either, so that ratio is none.
        QCOMPARE(measure(doc, "failed_after_retries").value("a").toInt(), 20);
        QVERIFY(measure(doc, "ok_first_try").value("ratio").isNull());
        QVERIFY(measure(doc, "call_p99_ns").value("a").toInteger() > 0);
        // The lab's method is a row of its own on both sides.
        const QJsonObject method =
            row(doc, QStringLiteral("method"), QStringLiteral("/rpcscope.lab.Lab/Call"));
        QVERIFY(method.value("in_a").toBool() && method.value("in_b").toBool());
    }

    void compareAsTable()
    {
        const testtool::Result r =
            cli({QStringLiteral("compare"), m_storm, m_throttling, QStringLiteral("--label-a"),
                 QStringLiteral("storm"), QStringLiteral("--label-b"), QStringLiteral("throttled")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("A  storm\nB  throttled\n")), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("B/A")));
        const QStringList lines = r.out.split('\n');
        const auto amp = std::find_if(lines.begin(), lines.end(), [](const QString &l) {
            return l.startsWith(QStringLiteral("  amplification"));
        });
        QVERIFY(amp != lines.end());
        QVERIFY2(amp->split(' ', Qt::SkipEmptyParts).value(1) == QStringLiteral("4.00"), qPrintable(*amp));
    }

    void statsOfOneCapture()
    {
        const testtool::Result json = cli({QStringLiteral("stats"), m_storm, QStringLiteral("--json")});
        QVERIFY2(json.code == 0, qPrintable(json.err));
        const QJsonObject doc = parse(json.out);
        QCOMPARE(doc.value("label").toString(), m_storm);
        const QJsonObject total = row(doc, QStringLiteral("total")).value("values").toObject();
        QCOMPARE(total.value("calls").toInt(), 20);
        QCOMPARE(total.value("attempts").toInt(), 80);
        QCOMPARE(total.value("amplification").toDouble(), 4.0);
        const testtool::Result text = cli({QStringLiteral("stats"), m_storm});
        QVERIFY2(text.code == 0, qPrintable(text.err));
        QVERIFY(text.out.contains(QStringLiteral("method /rpcscope.lab.Lab/Call")));
        QVERIFY(!text.out.contains(QStringLiteral("B/A")));
        QVERIFY(text.out.contains(QStringLiteral("  call p99.9")));
    }

    void compareLabRunsBoth()
    {
        const testtool::Result r = cli({QStringLiteral("compare"), QStringLiteral("--lab"),
                                        QStringLiteral("storm-vs-throttling"), QStringLiteral("--json")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonObject doc = parse(r.out);
        QCOMPARE(doc.value("a").toObject().value("label").toString(), QStringLiteral("retry-storm"));
        const QJsonObject amp = measure(doc, "amplification");
        QVERIFY(amp.value("a").toDouble() > amp.value("b").toDouble());
        QVERIFY2(r.err.contains(QStringLiteral("retry-throttling: ")), qPrintable(r.err)); // the summaries
    }

    void badInputs_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        const QString missing = QStringLiteral("no-such-file.rpcscope");
        QTest::newRow("stats missing")
            << QStringList{"stats", missing} << QStringLiteral("no-such-file.rpcscope");
        QTest::newRow("compare missing B")
            << QStringList{"compare", "STORM", missing} << QStringLiteral("no-such-file");
        QTest::newRow("stats empty") << QStringList{"stats", "EMPTY"} << QStringLiteral("is empty (0 bytes)");
        QTest::newRow("compare empty A")
            << QStringList{"compare", "EMPTY", "STORM"} << QStringLiteral("is empty (0 bytes)");
        QTest::newRow("stats garbage")
            << QStringList{"stats", "GARBAGE"} << QStringLiteral("not an rpcscope capture");
        QTest::newRow("stats no calls")
            << QStringList{"stats", "NOCALLS"} << QStringLiteral("holds no calls");
        QTest::newRow("compare no calls")
            << QStringList{"compare", "STORM", "NOCALLS"} << QStringLiteral("holds no calls");
        QTest::newRow("stats no file")
            << QStringList{"stats"} << QStringLiteral("stats needs one capture file");
        QTest::newRow("compare one file")
            << QStringList{"compare", "STORM"} << QStringLiteral("compare needs two");
        QTest::newRow("compare unknown option")
            << QStringList{"compare", "STORM", "STORM", "--csv"} << QStringLiteral("--csv");
        QTest::newRow("compare unknown lab")
            << QStringList{"compare", "--lab", "nope"} << QStringLiteral("unknown comparison 'nope'");
        QTest::newRow("compare unknown scenario") << QStringList{"compare", "--lab", "retry-storm,nope"}
                                                  << QStringLiteral("unknown scenario 'nope'");
    }

    void badInputs()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const QString empty = m_dir.filePath(QStringLiteral("empty.rpcscope"));
        QFile(empty).open(QIODevice::WriteOnly);
        const QString garbage = m_dir.filePath(QStringLiteral("garbage.rpcscope"));
        {
            QFile f(garbage);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is not a capture file, only some text\n");
        }
        const QString noCalls = m_dir.filePath(QStringLiteral("nocalls.rpcscope"));
        CaptureData nothing;
        nothing.info.hasOrigin = true;
        std::string error;
        QVERIFY2(writeCaptureFile(noCalls, nothing, Redaction{}, &error), error.c_str());
        for (QString &a : args) {
            if (a == QLatin1String("EMPTY")) a = empty;
            if (a == QLatin1String("GARBAGE")) a = garbage;
            if (a == QLatin1String("NOCALLS")) a = noCalls;
            if (a == QLatin1String("STORM")) a = m_storm;
        }
        const testtool::Result r = cli(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QVERIFY2(r.err.startsWith(QStringLiteral("rpcscope-cli: ")), qPrintable(r.err));
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCliStats)
#include "tst_clistats.moc"
