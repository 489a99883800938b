// rpcscope-cli ca, and the TLS options of capture: the CA is made once in the user's config directory (key
// 0600), printed without its key, reused and replaced on request; TLS options that do not fit are refused.

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <sys/stat.h>

namespace {
struct Result
{
    int code = -1;
    QString out;
    QString err;
};

Result cli(const QStringList &args, const QString &configHome)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CONFIG_HOME", configHome);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(RPCSCOPE_CLI), args);
    Result r;
    if (!p.waitForFinished(30000)) return r;
    r.code = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}
} // namespace

class TstCliCa : public QObject
{
    Q_OBJECT
private slots:
    void caIsMadeOnceAndRegenerated()
    {
        QTemporaryDir cfg;
        const QString certPath = cfg.filePath("rpcscope/rpcscope-ca.pem");
        const QString keyPath = cfg.filePath("rpcscope/rpcscope-ca.key");
        const Result first = cli({"ca"}, cfg.path());
        QCOMPARE(first.code, 0);
        QVERIFY2(first.out.startsWith(certPath + "\n-----BEGIN CERTIFICATE-----"), qPrintable(first.out));
        QVERIFY(!first.out.contains("PRIVATE"));
        QVERIFY2(first.err.contains("made") && first.err.contains(keyPath), qPrintable(first.err));
        struct stat st
        {
        };
        QCOMPARE(stat(keyPath.toLocal8Bit().constData(), &st), 0);
        QCOMPARE(st.st_mode & 0777, mode_t(0600));

        const Result again = cli({"ca"}, cfg.path());
        QCOMPARE(again.code, 0);
        QCOMPARE(again.out, first.out);
        QVERIFY2(again.err.contains("using"), qPrintable(again.err));

        const Result fresh = cli({"ca", "--regenerate"}, cfg.path());
        QCOMPARE(fresh.code, 0);
        QVERIFY(fresh.out.startsWith(certPath + "\n"));
        QVERIFY(fresh.out != first.out);

        QCOMPARE(cli({"ca", "--bogus"}, cfg.path()).code, 2);
    }

    void tlsOptionsThatDoNotFit()
    {
        QTemporaryDir cfg;
        struct Case
        {
            QStringList args;
            const char *says;
        };
        const QList<Case> cases = {
            {{"--keylog", cfg.filePath("k")}, "--keylog needs --tls-intercept"},
            {{"--target-insecure"}, "--target-insecure needs --tls-intercept"},
            {{"--tls-intercept", "--target-insecure", "--target-ca", cfg.filePath("ca.pem")}, "contradict"},
            {{"--tls-intercept", "--target-cert", cfg.filePath("c.pem")}, "go together"},
            {{"--tls-intercept", "--target-ca", cfg.filePath("missing.pem")}, "cannot be read"},
        };
        for (const Case &c : cases) {
            const Result r = cli(
                QStringList{"capture", "--target", "127.0.0.1:1", "--out", cfg.filePath("x.json")} + c.args,
                cfg.path());
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains(c.says), qPrintable(r.err));
        }
    }
};

QTEST_GUILESS_MAIN(TstCliCa)
#include "tst_clica.moc"
