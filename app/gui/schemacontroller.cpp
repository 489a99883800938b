#include "schemacontroller.h"

#include "reflectionclient.h"
#include "schemadialog.h"
#include "timeformat.h"

#include <QAction>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QWidget>
#include <algorithm>

namespace rpcscope {

namespace {
const char *const kFiles = "decode/protoFiles";
const char *const kPaths = "decode/importPaths";
const char *const kTargets = "decode/reflectionTargets";
constexpr int kFetchTimeoutMs = 5000;

std::vector<std::string> toStd(const QStringList &list)
{
    std::vector<std::string> out;
    for (const QString &s : list)
        out.push_back(s.toStdString());
    return out;
}
} // namespace

SchemaController::SchemaController(QWidget *window) : QObject(window), m_window(window)
{
    m_menu = new QMenu(window);
    m_loadAction =
        m_menu->addAction(QStringLiteral("Load .proto files…"), this, &SchemaController::openDialog);
    m_loadAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+P")));
    m_loadAction->setToolTip(
        QStringLiteral("Decode messages with your .proto files and import paths (Ctrl+Shift+P)"));
    m_fetchAction =
        m_menu->addAction(QStringLiteral("Fetch by reflection…"), this, &SchemaController::fetchInteractive);
    m_fetchAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+R")));
    m_fetchAction->setToolTip(
        QStringLiteral("Ask a server for its schemas by gRPC server reflection (Ctrl+Shift+R)"));
    m_menu->addAction(QStringLiteral("Forget all schemas"), this, &SchemaController::forget);
    m_menu->addSeparator();
    m_summaryAction = m_menu->addAction(QString());
    m_summaryAction->setEnabled(false);
    updateMenu();
}

SchemaController::~SchemaController()
{
    // A fetch gives up within its timeout; its result, queued to this object, is then dropped.
    if (m_worker.joinable()) m_worker.join();
}

bool SchemaController::loadProtos(const QStringList &files, const QStringList &importPaths,
                                  QStringList *errors)
{
    std::vector<std::string> problems;
    const std::size_t before = m_decoder.fileCount();
    const bool ok = m_decoder.loadProtoFiles(toStd(files), toStd(importPaths), &problems);
    if (errors)
        for (const std::string &p : problems)
            *errors << QString::fromStdString(p);
    updateMenu();
    emit schemasChanged();
    emit message(ok ? QStringLiteral("Loaded .proto files: %1").arg(summary())
                    : QStringLiteral("Loading .proto files: %1 (%2 before, %3 now)")
                          .arg(counted(qint64(problems.size()), "problem"), counted(qint64(before), "file"))
                          .arg(m_decoder.fileCount()),
                 8000);
    return ok;
}

void SchemaController::loadRemembered()
{
    QSettings settings;
    const QStringList files = settings.value(QLatin1String(kFiles)).toStringList();
    if (files.isEmpty()) return;
    QStringList errors;
    if (!loadProtos(files, settings.value(QLatin1String(kPaths)).toStringList(), &errors))
        emit message(QStringLiteral("The remembered .proto files did not all load: %1 (Schemas ▸ Load .proto "
                                    "files shows every problem)")
                         .arg(errors.value(0)),
                     15000);
}

QString SchemaController::summary() const
{
    if (m_decoder.fileCount() == 0)
        return QStringLiteral("No schemas loaded: messages show as raw protobuf fields.");
    QStringList services;
    for (const std::string &s : m_decoder.serviceNames())
        services << QString::fromStdString(s);
    return QStringLiteral("%1, services: %2")
        .arg(counted(qint64(m_decoder.fileCount()), "schema file"))
        .arg(services.isEmpty() ? QStringLiteral("none") : services.join(QStringLiteral(", ")));
}

void SchemaController::forget()
{
    m_decoder.clear();
    m_asked.clear();
    updateMenu();
    emit schemasChanged();
    emit message(QStringLiteral("Schemas forgotten: messages show as raw protobuf fields"), 5000);
}

void SchemaController::updateMenu()
{
    QString text = summary();
    if (text.size() > 90) text = text.left(90) + QStringLiteral("…");
    m_summaryAction->setText(text);
}

SchemaDialogHooks SchemaController::dialogHooks()
{
    return {[this](const QStringList &files, const QStringList &importPaths, QStringList *errors) {
                return loadProtos(files, importPaths, errors);
            },
            [this] { return summary(); }};
}

void SchemaController::openDialog()
{
    SchemaDialog dialog(dialogHooks(), m_window);
    dialog.exec();
}

void SchemaController::fetchInteractive()
{
    if (m_fetching) {
        emit message(QStringLiteral("A reflection fetch is running already"), 4000);
        return;
    }
    QStringList offered = m_targets ? m_targets() : QStringList();
    for (const QString &t : QSettings().value(QLatin1String(kTargets)).toStringList())
        if (!offered.contains(t)) offered << t;
    bool ok = false;
    const QString target =
        QInputDialog::getItem(m_window, QStringLiteral("Fetch schemas by reflection"),
                              QStringLiteral("Server (HOST:PORT) with gRPC server reflection turned on:"),
                              offered, 0, true, &ok)
            .trimmed();
    if (!ok || target.isEmpty()) return;
    QStringList recent = QSettings().value(QLatin1String(kTargets)).toStringList();
    recent.removeAll(target);
    recent.prepend(target);
    while (recent.size() > 8)
        recent.removeLast();
    QSettings().setValue(QLatin1String(kTargets), recent);
    fetch(target, false);
}

bool SchemaController::fetch(const QString &target, bool quiet)
{
    if (m_fetching) return false;
    if (m_worker.joinable()) m_worker.join();
    m_fetching = true;
    m_fetchAction->setEnabled(false);
    const QStringList symbols = m_capturedServices ? m_capturedServices() : QStringList();
    for (const QString &s : symbols)
        m_asked.insert(s.toStdString());
    emit message(QStringLiteral("Fetching schemas from %1 by reflection…").arg(target), 0);
    m_worker = std::thread([this, target, symbols = toStd(symbols), quiet] {
        ReflectionResult r = fetchByReflection(target.toStdString(), symbols, kFetchTimeoutMs);
        // The destructor joins this thread first, so the object is there to queue to; an event still queued
        // when it goes is dropped with it.
        QMetaObject::invokeMethod(
            this, [this, target, r = std::move(r), quiet] { applyFetch(target, r, quiet); },
            Qt::QueuedConnection);
    });
    return true;
}

void SchemaController::fetchMissing(const QString &target)
{
    if (m_fetching || !m_capturedServices) return;
    bool missing = false;
    const auto known = m_decoder.serviceNames();
    for (const QString &s : m_capturedServices()) {
        const std::string name = s.toStdString();
        if (!std::binary_search(known.begin(), known.end(), name) && !m_asked.count(name)) missing = true;
    }
    if (missing) fetch(target, true);
}

void SchemaController::applyFetch(const QString &target, const ReflectionResult &r, bool quiet)
{
    m_fetching = false;
    m_fetchAction->setEnabled(true);
    if (!r.ok()) {
        const QString error = QString::fromStdString(r.error);
        emit message(QStringLiteral("Reflection: %1").arg(error), 10000);
        if (!quiet) QMessageBox::warning(m_window, QStringLiteral("Fetch by reflection failed"), error);
        emit fetchFinished(false, error);
        return;
    }
    std::vector<std::string> errors;
    m_decoder.addFileDescriptors(r.files, &errors);
    updateMenu();
    emit schemasChanged();
    QStringList problems;
    for (const std::string &p : r.problems)
        problems << QString::fromStdString(p);
    for (const std::string &e : errors)
        problems << QString::fromStdString(e);
    const QString text = QStringLiteral("Fetched %1 from %2: %3%4")
                             .arg(counted(qint64(r.files.size()), "file"))
                             .arg(target, summary(),
                                  problems.isEmpty() ? QString()
                                                     : QStringLiteral(" (%1: %2)")
                                                           .arg(counted(problems.size(), "problem"))
                                                           .arg(problems.front()));
    emit message(text, 8000);
    if (!quiet && !problems.isEmpty())
        QMessageBox::information(m_window, QStringLiteral("Fetched with problems"),
                                 text + QStringLiteral("\n\n") + problems.join(QLatin1Char('\n')));
    emit fetchFinished(true, text);
}

} // namespace rpcscope
