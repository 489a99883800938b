#pragma once

// Runs one of the project's programs (rpcscope-cli, rpcscope) the way a user would, for the tests that check
// exit codes and messages. A program that hangs is killed after a minute and reads as code -1.

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace testtool {

struct Result
{
    int code = -1; // -1 when it crashed or was killed
    QString out;
    QString err;
};

inline Result runTool(const QString &program, const QStringList &args, const QProcessEnvironment &env = {})
{
    QProcess p;
    if (!env.isEmpty()) p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

#ifdef RPCSCOPE_CLI
inline Result cli(const QStringList &args)
{
    return runTool(QStringLiteral(RPCSCOPE_CLI), args);
}
#endif

} // namespace testtool
