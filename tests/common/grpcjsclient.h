#pragma once

// The grpc-js test client (tests/integration/grpcjsclient/client.js) and its modules: @grpc/grpc-js at the
// version package-lock.json pins, installed once with npm into a fixture directory of the build tree (Debian
// 12 packages no grpc-js) and shared by the tests that run it. npm runs again only when the lock file
// changed. Needs RPCSCOPE_GRPCJSCLIENT (the client's source directory) and RPCSCOPE_GRPCJSFIXTURE defined.

#include "fixturebuild.h"

#include <QFile>
#include <QProcess>
#include <QString>

namespace grpcjsclient {

inline QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The node_modules directory holding @grpc/grpc-js, or empty with the reason (naming what setup.sh installs)
// in *error.
inline QString install(QString *error)
{
    const QString dir = QStringLiteral(RPCSCOPE_GRPCJSFIXTURE);
    const QString source = QStringLiteral(RPCSCOPE_GRPCJSCLIENT);
    const auto held = fixture::lock(dir, QStringLiteral("grpc-js's modules"), error);
    if (!held) return {};
    const QByteArray lock = readAll(source + QStringLiteral("/package-lock.json"));
    if (lock.isEmpty()) {
        *error = QStringLiteral("no package-lock.json in ") + source;
        return {};
    }
    // Written after npm finished: modules cut short by a timeout are never taken for whole ones.
    const QString installed = dir + QStringLiteral("/installed-lock.json");
    if (readAll(installed) == lock) return dir + QStringLiteral("/node_modules");
    QFile::remove(installed);
    for (const char *name : {"/package.json", "/package-lock.json"}) {
        QFile::remove(dir + name);
        if (!QFile::copy(source + name, dir + name)) {
            *error = QStringLiteral("could not copy ") + source + name + QStringLiteral(" to ") + dir;
            return {};
        }
    }
    // --ignore-scripts: protobufjs's postinstall only prints a notice.
    if (!fixture::runStep(
            "npm", {"ci", "--no-audit", "--no-fund", "--ignore-scripts"},
            QProcessEnvironment::systemEnvironment(), dir, 300,
            QStringLiteral("npm ci of @grpc/grpc-js (is the npm registry reachable?)"),
            QStringLiteral("npm is not installed: nodejs and npm (scripts/setup.sh installs them)"), error))
        return {};
    QFile stamp(installed);
    if (!stamp.open(QIODevice::WriteOnly) || stamp.write(lock) != lock.size()) {
        *error = QStringLiteral("could not write ") + installed;
        return {};
    }
    return dir + QStringLiteral("/node_modules");
}

struct Result
{
    int exitCode = -1;
    QByteArray out, err;
};

// Runs client.js with `args` and `env` (NODE_PATH added) for at most a minute.
inline Result run(const QString &modules, const QStringList &args, QProcessEnvironment env)
{
    env.insert("NODE_PATH", modules);
    QProcess node;
    node.setProcessEnvironment(env);
    node.start("node",
               QStringList{QStringLiteral(RPCSCOPE_GRPCJSCLIENT) + QStringLiteral("/client.js")} + args);
    Result r;
    if (!node.waitForStarted()) {
        r.err = "node is not installed: nodejs (scripts/setup.sh installs it)";
        return r;
    }
    if (!node.waitForFinished(60'000)) {
        node.kill();
        node.waitForFinished();
        r.err = "the grpc-js client did not finish in a minute: ";
    } else if (node.exitStatus() == QProcess::NormalExit) {
        r.exitCode = node.exitCode();
    }
    r.out = node.readAllStandardOutput();
    r.err += node.readAllStandardError();
    return r;
}

} // namespace grpcjsclient
