#pragma once

// The grpc-go test client (tests/integration/goclient), built once into a fixture directory of the build
// tree and shared by the tests that run it: a go build takes minutes on a loaded machine, so it runs only
// when the program is missing or older than its source. Needs RPCSCOPE_GOCLIENT (main.go), RPCSCOPE_GOCACHE
// and RPCSCOPE_GOFIXTURE defined.

#include "fixturebuild.h"

#include <QFileInfo>
#include <QProcess>
#include <QString>

namespace goclient {

// The program's path, or empty with the reason (naming the packages setup.sh installs) in *error.
inline QString build(QString *error)
{
    const QString dir = QStringLiteral(RPCSCOPE_GOFIXTURE);
    const auto held = fixture::lock(dir, QStringLiteral("the grpc-go client"), error);
    if (!held) return {};
    const QString program = dir + QStringLiteral("/goclient");
    const QFileInfo built(program), source(QStringLiteral(RPCSCOPE_GOCLIENT));
    if (built.exists() && built.lastModified() >= source.lastModified()) return program;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("GO111MODULE", "off");
    env.insert("GOPATH", "/usr/share/gocode"); // where Debian's golang-*-dev packages put sources
    env.insert("GOCACHE", QStringLiteral(RPCSCOPE_GOCACHE));
    env.insert("GOFLAGS", "");
    // Built beside, then renamed: a program cut short by a timeout is never taken for a whole one.
    if (!fixture::runStep(
            "go", {"build", "-o", program + QStringLiteral(".new"), QStringLiteral(RPCSCOPE_GOCLIENT)}, env,
            dir, 480,
            QStringLiteral("building the grpc-go client (golang-google-grpc-dev "
                           "missing? scripts/setup.sh installs it)"),
            QStringLiteral("go is not installed: golang-go (scripts/setup.sh installs it)"), error))
        return {};
    QFile::remove(program);
    if (!QFile::rename(program + QStringLiteral(".new"), program)) {
        *error = QStringLiteral("could not move the grpc-go client into place in ") + dir;
        return {};
    }
    return program;
}

// Runs the client in its -retry mode with `args` (after -retry), retries switched on (grpc-go 1.33 retries
// only when asked to), for at most a minute. Its output lines, one per call; what it printed to stderr goes
// to *errors.
inline QStringList runRetry(const QString &program, const QStringList &args, QByteArray *errors)
{
    QProcess go;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("GRPC_GO_RETRY", "on");
    go.setProcessEnvironment(env);
    go.start(program, QStringList{QStringLiteral("-retry")} + args);
    if (!go.waitForFinished(60'000)) {
        go.kill();
        go.waitForFinished();
    }
    *errors = go.readAllStandardError();
    return QString::fromLocal8Bit(go.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
}

} // namespace goclient
