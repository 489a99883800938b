#pragma once

// What the tests' client fixtures (the grpc-go client, grpc-js's modules) share: a lock on the fixture's
// directory, so that two tests running at once do not build it together, and a build step run with a time
// limit whose failure says what is missing.

#include <QDir>
#include <QLockFile>
#include <QProcess>
#include <QString>
#include <memory>

namespace fixture {

// The directory's build lock, waited for up to 10 minutes; null with the reason in *error. A build may take
// minutes: the lock is never taken from a live builder.
inline std::unique_ptr<QLockFile> lock(const QString &dir, const QString &what, QString *error)
{
    QDir().mkpath(dir);
    auto held = std::make_unique<QLockFile>(dir + QStringLiteral("/build.lock"));
    held->setStaleLockTime(0);
    if (!held->tryLock(600'000)) {
        *error =
            QStringLiteral("another test held the build lock of ") + what + QStringLiteral(" for 10 minutes");
        return nullptr;
    }
    return held;
}

// Runs `program args` with `env` in `workDir` for at most `seconds`. True when it exited with 0; otherwise
// the reason in *error: `notInstalled` when the program could not start, what it printed to stderr when it
// failed.
inline bool runStep(const QString &program, const QStringList &args, const QProcessEnvironment &env,
                    const QString &workDir, int seconds, const QString &what, const QString &notInstalled,
                    QString *error)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(workDir);
    p.start(program, args);
    if (!p.waitForStarted()) {
        *error = notInstalled;
        return false;
    }
    if (!p.waitForFinished(seconds * 1000)) {
        p.kill();
        p.waitForFinished();
        *error = what + QStringLiteral(" did not finish in %1 s").arg(seconds);
        return false;
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        *error = what + QStringLiteral(" failed: ") + QString::fromLocal8Bit(p.readAllStandardError());
        return false;
    }
    return true;
}

} // namespace fixture
