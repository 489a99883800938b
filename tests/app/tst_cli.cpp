// The command-line contract: exit codes, messages, and real captures through rpcscope-cli.

#include "labclient.h"
#include "labserver.h"
#include "testnet.h"

#include "runtool.h"

#include <QDeadlineTimer>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

namespace {

using testtool::cli;
using testtool::Result;
using testtool::runTool;

// A listening socket on 127.0.0.1 that holds its port for the test's lifetime.
struct Listener
{
    int fd = -1;
    int port = 0;
    Listener()
    {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        listen(fd, 4);
        socklen_t len = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
        port = ntohs(a.sin_port);
    }
    ~Listener() { close(fd); }
};

int closedPort()
{
    Listener l;
    return l.port; // closed again when l goes away
}

// Starts `rpcscope-cli capture ARGS...` in p and returns the port it prints in 'listening on 127.0.0.1:PORT',
// or 0 when it prints no such line within 10 s (what it printed instead is left in *printed).
int startCapture(QProcess &p, const QStringList &args, QString *printed)
{
    p.start(QStringLiteral(RPCSCOPE_CLI), QStringList{"capture"} + args);
    if (!p.waitForStarted())
        return 0;
    QDeadlineTimer deadline(10000);
    while (!printed->contains('\n') && !deadline.hasExpired() && p.state() == QProcess::Running) {
        p.waitForReadyRead(100);
        *printed += QString::fromUtf8(p.readAllStandardOutput());
    }
    const auto m = QRegularExpression(R"(listening on 127\.0\.0\.1:(\d+))").match(*printed);
    return m.hasMatch() ? m.captured(1).toInt() : 0;
}

} // namespace

class TestCli : public QObject
{
    Q_OBJECT
private slots:
    void badArguments_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("no args") << QStringList{} << 2 << "usage";
        QTest::newRow("bad command") << QStringList{"frobnicate"} << 2 << "unknown command 'frobnicate'";
        QTest::newRow("bad flag") << QStringList{"run", "retry-basic", "--bogus"} << 2 << "unknown option '--bogus'";
        QTest::newRow("missing value") << QStringList{"run", "retry-basic", "--json"} << 2 << "--json needs a value";
        QTest::newRow("unknown parameter") << QStringList{"run", "retry-basic", "--set", "nope=1"} << 2
                                           << "has no parameter 'nope'";
        QTest::newRow("bad parameter value") << QStringList{"run", "retry-basic", "--set", "max_attempts=abc"} << 2
                                             << "needs a non-negative number";
        QTest::newRow("set without value") << QStringList{"run", "retry-basic", "--set", "max_attempts"} << 2
                                           << "--set needs KEY=VALUE";
        QTest::newRow("no scenario") << QStringList{"run"} << 2 << "needs a scenario name";
        QTest::newRow("unknown scenario") << QStringList{"run", "nope"} << 2 << "unknown scenario 'nope'";
        QTest::newRow("capture missing target")
            << QStringList{"capture", "--listen", "127.0.0.1:0", "--out", "x.json"} << 2 << "capture needs --target";
        QTest::newRow("capture missing out")
            << QStringList{"capture", "--target", "127.0.0.1:1"} << 2 << "capture needs --out";
        QTest::newRow("bad listen") << QStringList{"capture", "--listen", "localhost", "--target", "127.0.0.1:1",
                                                   "--out", "x.json"}
                                    << 2 << "expected HOST:PORT";
        QTest::newRow("bad port") << QStringList{"capture", "--listen", "127.0.0.1:70000", "--target",
                                                 "127.0.0.1:1", "--out", "x.json"}
                                  << 2 << "bad port '70000'";
        QTest::newRow("remote bind needs a flag")
            << QStringList{"capture", "--listen", "0.0.0.0:0", "--target", "127.0.0.1:1", "--out", "x.json"} << 2
            << "pass --allow-remote";
        QTest::newRow("bad limit") << QStringList{"capture", "--target", "127.0.0.1:1", "--out", "x.json",
                                                  "--max-header-list", "lots"}
                                   << 2 << "--max-header-list needs a byte count";
        QTest::newRow("bad keep") << QStringList{"capture", "--target", "127.0.0.1:1", "--out", "x.json", "--keep",
                                                 "-5"}
                                  << 2 << "--keep needs a number of megabytes";
        QTest::newRow("bad duration") << QStringList{"capture", "--listen", "127.0.0.1:0", "--target",
                                                     "127.0.0.1:1", "--out", "x.json", "--duration", "soon"}
                                      << 2 << "--duration needs a positive number";
        // Outputs are checked before anything runs: before the target is probed, before a scenario starts.
        QTest::newRow("capture into a missing directory")
            << QStringList{"capture", "--target", "127.0.0.1:1", "--out", "/nonexistent-rpcscope-dir/x.json"} << 2
            << "cannot write /nonexistent-rpcscope-dir/x.json: there is no directory /nonexistent-rpcscope-dir";
        QTest::newRow("capture onto a directory")
            << QStringList{"capture", "--target", "127.0.0.1:1", "--out", "/tmp", "--to", "json"} << 2
            << "cannot write /tmp: it is a directory";
        QTest::newRow("run into a missing directory")
            << QStringList{"run", "retry-basic", "--png", "/nonexistent-rpcscope-dir/a.png"} << 2
            << "cannot write /nonexistent-rpcscope-dir/a.png: there is no directory";
    }
    void badArguments()
    {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, message);
        const Result r = cli(args);
        QCOMPARE(r.code, code);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
    }

    void portInUse()
    {
        Listener taken, target;
        const Result r = cli({"capture", "--listen", QStringLiteral("127.0.0.1:%1").arg(taken.port), "--target",
                              QStringLiteral("127.0.0.1:%1").arg(target.port), "--out", "unused.json"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(QStringLiteral("cannot listen on 127.0.0.1:%1").arg(taken.port)) &&
                     r.err.contains("in use"),
                 qPrintable(r.err));
    }

    void targetUnreachable()
    {
        const int port = closedPort();
        const Result r = cli({"capture", "--listen", "127.0.0.1:0", "--target",
                              QStringLiteral("127.0.0.1:%1").arg(port), "--out", "unused.json"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("unreachable"), qPrintable(r.err));
    }

    void list()
    {
        const Result r = cli({"list"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("retry-basic"));
    }

    void runRetryBasic()
    {
        QTemporaryDir dir;
        const QString json = dir.filePath("out.json");
        const QString png = dir.filePath("out.png");
        const QString svg = dir.filePath("out.svg");
        const Result r = cli({"run", "retry-basic", "--json", json, "--png", png, "--svg", svg});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(!r.err.contains("XDG_RUNTIME_DIR"), qPrintable(r.err));

        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(doc["format"].toString(), QStringLiteral("rpcscope-json"));
        QVERIFY(doc["origin_wall_ns"].toInteger() > 0);
        const QJsonArray calls = doc["calls"].toArray();
        QCOMPARE(calls.size(), 1);
        const QJsonObject call = calls[0].toObject();
        QCOMPARE(call["attempts"].toArray().size(), 3);
        QCOMPARE(call["gaps_ns"].toArray().size(), 2);
        QCOMPARE(call["outcome"].toObject()["name"].toString(), QStringLiteral("OK"));
        QVERIFY(!doc.contains("frames"));

        const QImage image(png);
        QVERIFY(!image.isNull());
        QCOMPARE(image.width(), 1400);
        QVERIFY(image.height() > 150);

        // The SVG is the same painter's output: vector text with the gap labels and the lane header.
        QFile s(svg);
        QVERIFY(s.open(QIODevice::ReadOnly));
        const QByteArray svgText = s.readAll();
        QVERIFY(svgText.contains("<svg"));
        QVERIFY(svgText.contains("backoff"));
        QVERIFY(svgText.contains("retry-basic-1"));
    }

    void captureRealCalls()
    {
        rpcscope::lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        QTemporaryDir dir;
        const QString out = dir.filePath("capture.json");

        QProcess p;
        QString printed;
        // No --listen: the default is loopback with a free port.
        const int port = startCapture(
            p, {"--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out, "--frames"}, &printed);
        QVERIFY2(port > 0, qPrintable(printed));
        {
            rpcscope::lab::LabClient client(QStringLiteral("127.0.0.1:%1").arg(port).toStdString(), {});
            for (int i = 0; i < 2; ++i) {
                rpcscope::lab::CallRequest req;
                req.set_call_id("cap-" + std::to_string(i));
                QCOMPARE(client.call(req, std::chrono::seconds(5)).code, 0);
            }
        }
        ::kill(pid_t(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(!QString::fromUtf8(p.readAllStandardError()).contains("dropped")); // the default budget is far off

        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray calls = doc["calls"].toArray();
        QCOMPARE(calls.size(), 2);
        QCOMPARE(calls[0].toObject()["key"].toString(), QStringLiteral("cap-0"));
        QCOMPARE(calls[1].toObject()["outcome"].toObject()["code"].toInt(), 0);
        const QJsonArray frames = doc["frames"].toArray();
        QVERIFY(frames.size() > 8);
        int headers = 0;
        for (const auto &fr : frames)
            headers += fr.toObject()["type"].toString() == "HEADERS";
        QVERIFY(headers >= 6); // request, response headers and trailers for each of two calls
        server.stop();
    }

    // --keep bounds a long capture's memory: the oldest calls go, the newest stay, and a warning says so.
    void captureKeepsTheNewestWithinItsBudget()
    {
        rpcscope::lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        QTemporaryDir dir;
        const QString out = dir.filePath("kept.json");
        QProcess p;
        QString printed;
        const int port = startCapture(
            p, {"--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out, "--keep", "1"}, &printed);
        QVERIFY2(port > 0, qPrintable(printed));
        constexpr int kCalls = 4000; // a few MB of timeline
        {
            rpcscope::lab::LabClient client(QStringLiteral("127.0.0.1:%1").arg(port).toStdString(), {});
            rpcscope::lab::CallRequest req;
            for (int i = 0; i < kCalls; ++i) {
                req.set_call_id("k-" + std::to_string(i));
                QCOMPARE(client.call(req, std::chrono::seconds(5)).code, 0);
            }
        }
        ::kill(pid_t(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        const auto warned =
            QRegularExpression(R"(the (\d+) oldest calls were dropped to keep the capture within 1 MB)").match(err);
        QVERIFY2(warned.hasMatch(), qPrintable(err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray calls = QJsonDocument::fromJson(f.readAll()).object()["calls"].toArray();
        qInfo("--keep 1: kept the newest %lld of %d calls", qint64(calls.size()), kCalls);
        QVERIFY2(calls.size() > 100 && calls.size() < kCalls, qPrintable(QString::number(calls.size())));
        QCOMPARE(calls.size() + warned.captured(1).toInt(), kCalls); // every call either kept or counted as dropped
        QCOMPARE(calls.last().toObject()["key"].toString(), QStringLiteral("k-%1").arg(kCalls - 1));
        server.stop();
    }

    // The output's directory disappears while capturing: the capture is not lost but saved to the temporary
    // directory, and the message says where.
    void captureOutlivesItsOutputDirectory()
    {
        rpcscope::lab::LabServer server;
        std::string error;
        QVERIFY2(server.start(&error), error.c_str());
        QTemporaryDir dir, tmp;
        QVERIFY(QDir(dir.path()).mkdir("gone"));
        const QString out = dir.filePath("gone/capture.json");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("TMPDIR", tmp.path());
        p.setProcessEnvironment(env);
        QString printed;
        const int port = startCapture(p, {"--target", QStringLiteral("127.0.0.1:%1").arg(server.port()), "--out", out},
                                      &printed);
        QVERIFY2(port > 0, qPrintable(printed));
        {
            rpcscope::lab::LabClient client(QStringLiteral("127.0.0.1:%1").arg(port).toStdString(), {});
            rpcscope::lab::CallRequest req;
            req.set_call_id("kept");
            QCOMPARE(client.call(req, std::chrono::seconds(5)).code, 0);
        }
        QVERIFY(QDir(dir.filePath("gone")).removeRecursively());
        ::kill(pid_t(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 1);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        const auto saved = QRegularExpression(R"(the capture \(1 call\) was saved to (\S+\.rpcscope) instead)").match(err);
        QVERIFY2(err.contains("cannot write " + out) && saved.hasMatch(), qPrintable(err));
        const QString rescue = saved.captured(1);
        QVERIFY2(rescue.startsWith(tmp.path() + "/rpcscope-capture-"), qPrintable(rescue));
        // It is a whole capture file: converting it gives the call.
        const QString json = tmp.filePath("rescued.json");
        const Result c = cli({"convert", rescue, json});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray calls = QJsonDocument::fromJson(f.readAll()).object()["calls"].toArray();
        QCOMPARE(calls.size(), 1);
        QCOMPARE(calls[0].toObject()["key"].toString(), QStringLiteral("kept"));
        server.stop();
    }

    void guiWithoutDisplay()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("DISPLAY");
        env.remove("WAYLAND_DISPLAY");
        env.remove("QT_QPA_PLATFORM");
        const Result r = runTool(QStringLiteral(RPCSCOPE_GUI), {}, env);
        QCOMPARE(r.code, 3);
        QVERIFY2(r.err.contains("no display") && r.err.contains("rpcscope-cli"), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1); // one clear line
    }

    void guiScreenshot()
    {
        QTemporaryDir dir;
        const QString shot = dir.filePath("gui.png");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        const Result r = runTool(QStringLiteral(RPCSCOPE_GUI), {"--screenshot", shot}, env);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QImage image(shot);
        QVERIFY(!image.isNull());
        QVERIFY(image.width() >= 640);
    }

    // The GUI opens a capture file given on its command line, and says clearly when it cannot.
    void guiOpensCaptureFile()
    {
        QTemporaryDir dir;
        const QString capture = dir.filePath("chain.rpcscope");
        const Result run = runTool(QStringLiteral(RPCSCOPE_CLI), {"run", "deadline-chain", "--out", capture});
        QVERIFY2(run.code == 0, qPrintable(run.err));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        const QString shot = dir.filePath("opened.png");
        const Result r = runTool(QStringLiteral(RPCSCOPE_GUI), {"--no-lab", "--screenshot", shot, capture}, env);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(!QImage(shot).isNull());

        const QString junk = dir.filePath("junk.rpcscope");
        QFile f(junk);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("definitely not a capture\n");
        f.close();
        const Result bad = runTool(QStringLiteral(RPCSCOPE_GUI), {"--no-lab", "--screenshot", shot, junk}, env);
        QCOMPARE(bad.code, 1);
        QVERIFY2(bad.err.contains("junk.rpcscope"), qPrintable(bad.err));
    }

    void guiCaptureFlag()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        const Result r = runTool(QStringLiteral(RPCSCOPE_GUI), {"--capture", "127.0.0.1:7000"}, env);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("expects [LABEL@]LISTEN=TARGET"), qPrintable(r.err));
        const Result unreachable = runTool(
            QStringLiteral(RPCSCOPE_GUI),
            {"--no-lab", "--capture", QStringLiteral("api@127.0.0.1:0=127.0.0.1:%1").arg(testnet::closedPort())}, env);
        QCOMPARE(unreachable.code, 1);
        QVERIFY2(unreachable.err.contains("api: target") && unreachable.err.contains("unreachable"),
                 qPrintable(unreachable.err));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
